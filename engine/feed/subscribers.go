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

// Subscribers fans events out to this process's subscribers: of a tree of threads (Converse), of
// one thread (Subscribe) or of some event types in every thread (Watch: a server's global
// stream). Publishing never blocks: each subscription queues what it has not taken yet. by holds
// the subscriptions by what they follow, and the lock of listeners guards their queues too: a
// publisher takes one lock for a whole batch, whoever it wakes. Engines that replace each other (a
// definitions reload) may share one, so that a subscription outlives the swap.
type Subscribers struct {
	listeners[subKey, Subscription]
	// trees, threads and watches count the subscriptions of each kind, so that publishing looks
	// up only the kinds that exist (Converse's follow trees, Subscribe's threads, Watch's every
	// thread).
	trees, threads, watches atomic.Int32
}

// subKey names what a subscription follows: a tree (by its root's id), one thread, or every
// thread (all: a Watch). A struct, not a prefixed string, so that publishing an event builds no
// key on the heap.
type subKey struct {
	tree bool   // a tree's (Converse's)
	all  bool   // every thread's (a Watch's)
	id   string // the tree's root, or the thread ("" for a Watch)
}

// Subscription is one subscriber's queue of events. queue, lagged and poked are guarded by the
// lock of the Subscribers it belongs to; the other fields do not change once it is added.
type Subscription struct {
	subs   *Subscribers  // the feed it belongs to, whose lock guards its queue
	key    subKey        // what it follows
	queue  []Event       // the events queued since the last take
	types  []string      // the event types a Watch's subscription takes (nil: every type)
	lagged bool          // the queue overflowed: events were dropped (recorded ones can be re-read)
	poked  bool          // another process committed events: re-read the store
	limit  int           // the most events the queue holds (0: unbounded, Converse's)
	signal chan struct{} // capacity 1: events were queued since the last take
}

// maxQueued bounds the queue of a thread's subscription (Subscribe's): a subscriber that stops
// reading costs at most this.
const maxQueued = 4096

// Tree adds a subscription to the events of the tree whose root is root (Converse's), its queue
// unbounded; queue is its first queue (empty; nil, or with room to reuse).
func (s *Subscribers) Tree(root string, queue []Event) *Subscription {
	return s.add(&Subscription{key: subKey{tree: true, id: root}, queue: queue})
}

// add adds a subscription (its key, limit, types and first queue set).
func (s *Subscribers) add(sub *Subscription) *Subscription {
	sub.subs, sub.signal = s, make(chan struct{}, 1)
	s.kind(sub.key).Add(1)
	return s.listeners.add(sub.key, sub)
}

// Remove ends a subscription.
func (s *Subscribers) Remove(sub *Subscription) {
	s.listeners.remove(sub.key, sub)
	s.kind(sub.key).Add(-1)
}

func (s *Subscribers) kind(key subKey) *atomic.Int32 {
	switch {
	case key.tree:
		return &s.trees
	case key.all:
		return &s.watches
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
	trees, threads, watches := s.trees.Load() > 0, s.threads.Load() > 0, s.watches.Load() > 0
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
		if watches {
			s.enqueueWatches(ev)
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

// enqueue queues an event without signalling, under the Subscribers' lock.
func (sub *Subscription) enqueue(ev Event) {
	if sub.limit > 0 && len(sub.queue) >= sub.limit {
		sub.lagged = true
	} else {
		sub.queue = append(sub.queue, ev)
	}
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
		if key.all || threadID != "" && key != (subKey{id: threadID}) {
			continue // a Watch reads nothing from the store
		}
		for _, sub := range list {
			sub.poked = true
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
	mu := &sub.subs.mu
	mu.Lock()
	q, lagged, poked = sub.queue, sub.lagged, sub.poked
	sub.queue, sub.lagged, sub.poked = spare[:0], false, false
	mu.Unlock()
	return q, lagged, poked
}
