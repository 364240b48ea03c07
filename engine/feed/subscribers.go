package feed

import (
	"slices"
	"sync"
	"sync/atomic"
)

// listeners holds listeners by key (a subscription by the tree or thread it follows, a stop watch
// by its thread), with their count, so that a publisher skips the lock when there are none.
type listeners[K comparable, V any] struct {
	n  atomic.Int32
	mu sync.Mutex
	by map[K][]*V
}

func (l *listeners[K, V]) add(key K, v *V) *V {
	l.mu.Lock()
	if l.by == nil {
		l.by = map[K][]*V{}
	}
	l.by[key] = append(l.by[key], v)
	l.mu.Unlock()
	l.n.Add(1)
	return v
}

// Active reports that there are listeners: without any, there is no one to tell.
func (l *listeners[K, V]) Active() bool { return l.n.Load() > 0 }

func (l *listeners[K, V]) remove(key K, v *V) {
	l.mu.Lock()
	list := l.by[key]
	if i := slices.Index(list, v); i >= 0 {
		list = append(list[:i:i], list[i+1:]...)
	}
	if len(list) == 0 {
		delete(l.by, key)
	} else {
		l.by[key] = list
	}
	l.mu.Unlock()
	l.n.Add(-1)
}

// Subscribers fans events out to this process's subscribers of a tree of threads (Converse).
// Publishing never blocks: each subscription queues what it has not taken yet. by holds the
// subscriptions of a tree or of one thread.
type Subscribers struct {
	listeners[subKey, Subscription]
	// trees and threads count the subscriptions of each kind, so that publishing looks up only
	// the kinds that exist (Converse's follow trees, Subscribe's threads).
	trees, threads atomic.Int32
}

// subKey names what a subscription follows: a tree (by its root's id) or one thread. A struct,
// not a prefixed string, so that publishing an event builds no key on the heap.
type subKey struct {
	tree bool
	id   string
}

// Subscription is one subscriber's queue of events.
type Subscription struct {
	key     subKey
	mu      sync.Mutex
	queue   []Event
	lagged  bool          // the queue overflowed: events were dropped (recorded ones can be re-read)
	poked   bool          // another process committed events: re-read the store
	bounded bool          // the queue holds at most maxQueued (Subscribe's; Converse's takes every event)
	signal  chan struct{} // capacity 1: events were queued since the last take
}

// maxQueued bounds a subscription's queue: a subscriber that stops reading costs at most this.
const maxQueued = 4096

// Tree adds a subscription to the events of the tree whose root is root (Converse's), its queue
// unbounded; queue is its first queue (empty; nil, or with room to reuse).
func (s *Subscribers) Tree(root string, queue []Event) *Subscription {
	return s.add(subKey{tree: true, id: root}, false, queue)
}

// add adds a subscription whose queue starts as queue (empty; nil, or with room to reuse).
func (s *Subscribers) add(key subKey, bounded bool, queue []Event) *Subscription {
	s.kind(key).Add(1)
	return s.listeners.add(key, &Subscription{key: key, bounded: bounded, queue: queue, signal: make(chan struct{}, 1)})
}

// Remove ends a subscription.
func (s *Subscribers) Remove(sub *Subscription) {
	s.listeners.remove(sub.key, sub)
	s.kind(sub.key).Add(-1)
}

func (s *Subscribers) kind(key subKey) *atomic.Int32 {
	if key.tree {
		return &s.trees
	}
	return &s.threads
}

// PublishAll queues events to their thread's and tree's subscribers and then signals each
// subscriber once, so that it takes them in one batch.
func (s *Subscribers) PublishAll(evs []Event) {
	var buf [4]*Subscription
	woken := buf[:0] // a handful: a thread's own and its tree's
	s.mu.Lock()
	// Read under the lock: a subscription in the map was counted before it was put there.
	trees, threads := s.trees.Load() > 0, s.threads.Load() > 0
	for _, ev := range evs {
		if ev.RootID != "" && trees {
			for _, sub := range s.by[subKey{tree: true, id: ev.RootID}] {
				sub.enqueue(ev)
				woken = appendNew(woken, sub)
			}
		}
		if threads {
			for _, sub := range s.by[subKey{id: ev.ThreadID}] {
				sub.enqueue(ev)
				woken = appendNew(woken, sub)
			}
		}
	}
	s.mu.Unlock()
	for _, sub := range woken {
		sub.wake()
	}
}

func appendNew(list []*Subscription, sub *Subscription) []*Subscription {
	if slices.Contains(list, sub) {
		return list
	}
	return append(list, sub)
}

// enqueue queues an event without signalling.
func (sub *Subscription) enqueue(ev Event) {
	sub.mu.Lock()
	if sub.bounded && len(sub.queue) >= maxQueued {
		sub.lagged = true
	} else {
		sub.queue = append(sub.queue, ev)
	}
	sub.mu.Unlock()
}

// wake signals the subscriber that events were queued.
func (sub *Subscription) wake() {
	select {
	case sub.signal <- struct{}{}:
	default:
	}
}

// Poke tells the subscribers of one thread ("" = of every thread) that another process committed
// events they may not have: they re-read the store.
func (s *Subscribers) Poke(threadID string) {
	if s.n.Load() == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, list := range s.by {
		if threadID != "" && key != (subKey{id: threadID}) {
			continue
		}
		for _, sub := range list {
			sub.mu.Lock()
			sub.poked = true
			sub.mu.Unlock()
			sub.wake()
		}
	}
}

// Ready is signalled when events were queued since the last Take.
func (sub *Subscription) Ready() <-chan struct{} { return sub.signal }

// Take returns the queued events and empties the queue; lagged reports events dropped since the
// last take, poked that the store has events from elsewhere.
//
// spare is the batch the caller got from the previous take and has finished with: emptied, it
// becomes the next queue, so that a steady stream reuses two slices instead of growing a new one
// for every batch.
func (sub *Subscription) Take(spare []Event) (q []Event, lagged, poked bool) {
	clear(spare)
	sub.mu.Lock()
	q, lagged, poked = sub.queue, sub.lagged, sub.poked
	sub.queue, sub.lagged, sub.poked = spare[:0], false, false
	sub.mu.Unlock()
	return q, lagged, poked
}
