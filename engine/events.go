package engine

import (
	"context"
	"encoding/json"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/weft-agents/weft"
)

// subscribers fans events out to this process's subscribers of a tree of threads (Converse).
// Publishing never blocks: each subscription queues what it has not taken yet.
type subscribers struct {
	n  atomic.Int32 // live subscriptions (emit skips the lock when there are none)
	mu sync.Mutex
	// by holds the subscriptions of a tree or of one thread.
	by map[subKey][]*subscription
}

// subKey names what a subscription follows: a tree (by its root's id) or one thread. A struct,
// not a prefixed string, so that publishing an event builds no key on the heap.
type subKey struct {
	tree bool
	id   string
}

// subscription is one subscriber's queue of events.
type subscription struct {
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

func (s *subscribers) add(key subKey, bounded bool) *subscription {
	sub := &subscription{key: key, bounded: bounded, signal: make(chan struct{}, 1)}
	s.mu.Lock()
	if s.by == nil {
		s.by = map[subKey][]*subscription{}
	}
	s.by[key] = append(s.by[key], sub)
	s.mu.Unlock()
	s.n.Add(1)
	return sub
}

func (s *subscribers) remove(sub *subscription) {
	s.mu.Lock()
	list := s.by[sub.key]
	for i, x := range list {
		if x == sub {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.by, sub.key)
	} else {
		s.by[sub.key] = list
	}
	s.mu.Unlock()
	s.n.Add(-1)
}

func (s *subscribers) publish(ev Event) {
	s.mu.Lock()
	if ev.RootID != "" {
		for _, sub := range s.by[subKey{tree: true, id: ev.RootID}] {
			sub.push(ev)
		}
	}
	for _, sub := range s.by[subKey{id: ev.ThreadID}] {
		sub.push(ev)
	}
	s.mu.Unlock()
}

func (sub *subscription) push(ev Event) {
	sub.mu.Lock()
	if sub.bounded && len(sub.queue) >= maxQueued {
		sub.lagged = true
	} else {
		sub.queue = append(sub.queue, ev)
	}
	sub.mu.Unlock()
	select {
	case sub.signal <- struct{}{}:
	default:
	}
}

// poke tells the subscribers of one thread ("" = of every thread) that another process committed
// events they may not have: they re-read the store.
func (s *subscribers) poke(threadID string) {
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
			select {
			case sub.signal <- struct{}{}:
			default:
			}
		}
	}
}

// take returns the queued events and empties the queue; lagged reports events dropped since the
// last take, poked that the store has events from elsewhere.
//
// spare is the batch the caller got from the previous take and has finished with: emptied, it
// becomes the next queue, so that a steady stream reuses two slices instead of growing a new one
// for every batch.
func (sub *subscription) take(spare []Event) (q []Event, lagged, poked bool) {
	clear(spare)
	sub.mu.Lock()
	q, lagged, poked = sub.queue, sub.lagged, sub.poked
	sub.queue, sub.lagged, sub.poked = spare[:0], false, false
	sub.mu.Unlock()
	return q, lagged, poked
}

// Subscribe yields a thread's events: first those recorded after the cursor after (Event.Seq;
// 0 = from the oldest kept), then live ones as they happen, until ctx ends. Recorded events come
// exactly once and in order, also across a dropped connection or a restart: a client passes the
// Seq of the last event it received. Streamed text deltas (Seq 0) are live only. Without
// Options.RecordEvents nothing is replayed and every event is live only. A subscriber that falls
// far behind loses live deltas, never recorded events (they are read again from the store).
//
// Live events are this process's; while Serve runs on a store that several processes share
// (weft.Notifier), another process's committed events wake the subscription, which reads them
// from the store.
func (e *Engine) Subscribe(ctx context.Context, threadID string, after int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		t, err := e.store.Thread(ctx, threadID)
		if err != nil {
			yield(Event{}, err)
			return
		}
		sub := e.subs.add(subKey{id: threadID}, true)
		defer e.subs.remove(sub)
		last := after
		// replay yields the recorded events after last; false when the consumer stopped.
		replay := func() bool {
			for {
				recs, err := e.store.Events(ctx, threadID, last, 500)
				if err != nil {
					if ctx.Err() == nil {
						yield(Event{}, err)
					}
					return false
				}
				for _, rec := range recs {
					last = rec.Seq
					if !yield(eventOf(rec, rootOf(t)), nil) {
						return false
					}
				}
				if len(recs) < 500 {
					return true
				}
			}
		}
		if !replay() {
			return
		}
		var q []Event
		for {
			select {
			case <-sub.signal:
			case <-ctx.Done():
				return
			}
			var lagged, poked bool
			q, lagged, poked = sub.take(q)
			if (lagged || poked) && !replay() {
				return
			}
			for _, ev := range q {
				switch {
				case ev.Seq == 0:
					if !lagged && !yield(ev, nil) {
						return
					}
				case ev.Seq <= last:
					// Replayed already.
				case ev.Seq == last+1:
					last = ev.Seq
					if !yield(ev, nil) {
						return
					}
				default:
					// Events between were committed but not seen here: read them.
					if !replay() {
						return
					}
				}
			}
		}
	}
}

// eventOf decodes a recorded event.
func eventOf(rec weft.EventRecord, root string) Event {
	ev := Event{Type: rec.Type, ThreadID: rec.ThreadID, RootID: root, Seq: rec.Seq, Encoded: rec.Data}
	_ = json.Unmarshal(rec.Data, &ev.Data)
	return ev
}

// rootOf returns the root of a thread's tree.
func rootOf(t *weft.Thread) string { return orDefault(t.RootID, t.ID) }
