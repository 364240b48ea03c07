package engine

import (
	"context"
	"iter"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/feed"
)

// Event is something that happened in a thread, for streams (feed.Event).
type Event = feed.Event

// Subscribers is a process's feed of events (feed.Subscribers): engines publish to it, and
// Subscribe, Converse and Watch subscribe to it (Options.Subscribers).
type Subscribers = feed.Subscribers

// A Watch is a subscription to some event types in every thread (feed.Watch): a server's global
// stream.
type Watch = feed.Watch

// ErrSlowSubscriber ends a Watch that fell too far behind.
var ErrSlowSubscriber = feed.ErrSlowSubscriber

// Subscribers returns the feed the engine publishes to (Options.Subscribers): its Watch follows
// event types in every thread, and its Announce gives watchers an event that belongs to no run.
func (e *Engine) Subscribers() *Subscribers { return e.subs }

// A Feed is a subscription to a thread's events that its consumer pulls (feed.Feed): Ready is
// signalled when events may be waiting and Next takes them without blocking.
type Feed = feed.Feed

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
//
// Subscribe is Follow read by an iterator (feed.Feed.All); a consumer that waits on other things
// as well (a stream's keep-alive timer) uses Follow.
func (e *Engine) Subscribe(ctx context.Context, threadID string, after int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		f, err := e.Follow(ctx, threadID, after)
		if err != nil {
			yield(Event{}, err)
			return
		}
		f.All(ctx)(yield)
	}
}

// Follow starts a Feed of a thread's events after the cursor after (see Subscribe). Its Ready
// channel is signalled at once: the first Next gives the recorded events after the cursor. Close
// it when done.
func (e *Engine) Follow(ctx context.Context, threadID string, after int64) (*Feed, error) {
	t, err := e.store.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	return feed.Follow(e.subs, e.store, threadID, rootOf(t), after), nil
}

// rootOf returns the root of a thread's tree.
func rootOf(t *weft.Thread) string { return orDefault(t.RootID, t.ID) }
