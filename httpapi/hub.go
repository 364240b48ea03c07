package httpapi

import (
	"context"
	"errors"
	"iter"
	"sync"

	"github.com/weft-agents/weft/engine"
)

// hubBuffer is how many events a subscriber may fall behind before it is dropped (its stream ends
// and the client reconnects with its cursor), so that a slow client never blocks the engine.
const hubBuffer = 1024

// ErrSlowSubscriber ends a subscription that fell more than its buffer behind.
var ErrSlowSubscriber = errors.New("the subscriber fell too far behind")

// Hub fans the engine's events out to subscribers in this process (the global event stream).
// Publish never blocks.
type Hub struct {
	mu   sync.Mutex
	subs map[*hubSub]struct{}
}

type hubSub struct {
	match   func(engine.Event) bool
	ch      chan engine.Event
	dropped chan struct{}
	once    sync.Once
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[*hubSub]struct{}{}} }

// Publish hands an event to every matching subscriber; one that is full is dropped.
func (h *Hub) Publish(ev engine.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if !s.match(ev) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			s.once.Do(func() { close(s.dropped) })
			delete(h.subs, s)
		}
	}
}

// Len is the number of live subscriptions.
func (h *Hub) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Watch yields the events match accepts until ctx ends (no error) or the subscriber falls behind
// (ErrSlowSubscriber).
func (h *Hub) Watch(ctx context.Context, match func(engine.Event) bool) iter.Seq2[engine.Event, error] {
	return func(yield func(engine.Event, error) bool) {
		s := &hubSub{match: match, ch: make(chan engine.Event, hubBuffer), dropped: make(chan struct{})}
		h.mu.Lock()
		h.subs[s] = struct{}{}
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			delete(h.subs, s)
			h.mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-s.ch:
				if !yield(ev, nil) {
					return
				}
			case <-s.dropped:
				// Deliver what was buffered before the drop, then end.
				for {
					select {
					case ev := <-s.ch:
						if !yield(ev, nil) {
							return
						}
					default:
						yield(engine.Event{}, ErrSlowSubscriber)
						return
					}
				}
			}
		}
	}
}
