package httpapi

import (
	"context"
	"errors"
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
	subs map[*hubFeed]struct{}
}

// hubFeed is one subscriber's queue, pulled like an engine.Feed.
type hubFeed struct {
	h       *Hub
	match   func(engine.Event) bool
	mu      sync.Mutex
	queue   []engine.Event
	spare   []engine.Event // the batch Next gave last, emptied: the next queue (only Next uses it)
	dropped bool
	signal  chan struct{} // capacity 1: events were queued (or the feed dropped) since the last Next
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[*hubFeed]struct{}{}} }

// Publish hands an event to every matching subscriber; one that is full is dropped.
func (h *Hub) Publish(ev engine.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for f := range h.subs {
		if !f.match(ev) {
			continue
		}
		f.mu.Lock()
		if len(f.queue) >= hubBuffer {
			f.dropped = true
			delete(h.subs, f)
		} else {
			f.queue = append(f.queue, ev)
		}
		f.mu.Unlock()
		select {
		case f.signal <- struct{}{}:
		default:
		}
	}
}

// Len is the number of live subscriptions.
func (h *Hub) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// follow subscribes to the events match accepts; Close the feed when done.
func (h *Hub) follow(match func(engine.Event) bool) *hubFeed {
	f := &hubFeed{h: h, match: match, signal: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[f] = struct{}{}
	h.mu.Unlock()
	return f
}

func (f *hubFeed) Ready() <-chan struct{} { return f.signal }

// Next appends the queued events to dst; once they are given, a feed that fell behind ends with
// ErrSlowSubscriber.
func (f *hubFeed) Next(_ context.Context, dst []engine.Event) ([]engine.Event, error) {
	f.mu.Lock()
	q, dropped := f.queue, f.dropped
	f.queue = f.spare[:0]
	f.mu.Unlock()
	dst = append(dst, q...)
	clear(q)
	f.spare = q
	if dropped {
		return dst, ErrSlowSubscriber
	}
	return dst, nil
}

func (f *hubFeed) Close() {
	f.h.mu.Lock()
	delete(f.h.subs, f)
	f.h.mu.Unlock()
}
