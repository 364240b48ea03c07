package feed

import (
	"context"
	"errors"
	"slices"
)

// ErrSlowSubscriber ends a Watch that fell more than maxWatched events behind.
var ErrSlowSubscriber = errors.New("the subscriber fell too far behind")

// maxWatched bounds a Watch's queue: a watcher that falls this far behind is dropped (its stream
// ends and its client reconnects), so that a slow client never holds more.
const maxWatched = 1024

// A Watch is a subscription to some event types in every thread of the process (a server's global
// stream), pulled like a Feed: Ready is signalled when events were queued, Next takes them. Its
// events are live only: none is read from the store.
type Watch struct {
	sub *Subscription
	q   []Event // the batch of the previous take, reused
}

// Watch subscribes to the events of every thread whose type is one of types, both those engines
// publish and those Announce gives. Close it when done.
func (s *Subscribers) Watch(types ...string) *Watch {
	return &Watch{sub: s.add(&Subscription{key: subKey{all: true}, types: types, limit: maxWatched})}
}

// Announce gives an event that belongs to no run (a thread renamed or deleted through an API) to
// the watches of its type; thread subscriptions do not see it.
func (s *Subscribers) Announce(ev Event) {
	if s.watches.Load() == 0 {
		return
	}
	s.mu.Lock()
	s.enqueueWatches(ev)
	s.mu.Unlock()
}

// enqueueWatches queues ev to the watches of its type and signals them, under the lock: a watcher
// takes its queue under the same lock, so it cannot take half of a batch being published.
func (s *Subscribers) enqueueWatches(ev Event) {
	for _, sub := range s.by[subKey{all: true}] {
		if slices.Contains(sub.types, ev.Type) {
			sub.enqueue(ev)
			sub.wake()
		}
	}
}

// Ready is signalled when Next may have events to give.
func (w *Watch) Ready() <-chan struct{} { return w.sub.signal }

// Next appends the events queued to dst, without blocking; once they are given, a watch that fell
// more than its bound behind ends with ErrSlowSubscriber.
func (w *Watch) Next(_ context.Context, dst []Event) ([]Event, error) {
	var lagged bool
	w.q, lagged, _ = w.sub.Take(w.q)
	dst = append(dst, w.q...)
	if lagged {
		return dst, ErrSlowSubscriber
	}
	return dst, nil
}

// Close ends the watch.
func (w *Watch) Close() { w.sub.subs.Remove(w.sub) }
