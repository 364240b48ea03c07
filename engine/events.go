package engine

import (
	"sync"
	"sync/atomic"

	"github.com/weft-agents/weft"
)

// subscribers fans events out to this process's subscribers of a tree of threads (Converse).
// Publishing never blocks: each subscription queues what it has not taken yet.
type subscribers struct {
	n      atomic.Int32 // live subscriptions (emit skips the lock when there are none)
	mu     sync.Mutex
	byRoot map[string][]*subscription
}

// subscription is one subscriber's queue of a tree's events.
type subscription struct {
	root   string
	mu     sync.Mutex
	queue  []Event
	signal chan struct{} // capacity 1: events were queued since the last take
}

func (s *subscribers) add(root string) *subscription {
	sub := &subscription{root: root, signal: make(chan struct{}, 1)}
	s.mu.Lock()
	if s.byRoot == nil {
		s.byRoot = map[string][]*subscription{}
	}
	s.byRoot[root] = append(s.byRoot[root], sub)
	s.mu.Unlock()
	s.n.Add(1)
	return sub
}

func (s *subscribers) remove(sub *subscription) {
	s.mu.Lock()
	list := s.byRoot[sub.root]
	for i, x := range list {
		if x == sub {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.byRoot, sub.root)
	} else {
		s.byRoot[sub.root] = list
	}
	s.mu.Unlock()
	s.n.Add(-1)
}

func (s *subscribers) publish(ev Event) {
	s.mu.Lock()
	list := s.byRoot[ev.RootID]
	for _, sub := range list {
		sub.push(ev)
	}
	s.mu.Unlock()
}

func (sub *subscription) push(ev Event) {
	sub.mu.Lock()
	sub.queue = append(sub.queue, ev)
	sub.mu.Unlock()
	select {
	case sub.signal <- struct{}{}:
	default:
	}
}

// take returns the queued events and empties the queue.
func (sub *subscription) take() []Event {
	sub.mu.Lock()
	q := sub.queue
	sub.queue = nil
	sub.mu.Unlock()
	return q
}

// rootOf returns the root of a thread's tree.
func rootOf(t *weft.Thread) string { return orDefault(t.RootID, t.ID) }
