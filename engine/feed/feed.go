package feed

import (
	"context"
	"iter"

	"github.com/weft-agents/weft"
)

// A Feed is a subscription to a thread's events that its consumer pulls: Ready is signalled when
// events may be waiting and Next takes them without blocking, so that a consumer selects on its
// feed beside its own channels with no goroutine in between, and takes what a transaction
// published in one batch. It gives what engine.Engine.Subscribe yields, in the same order,
// exactly once.
type Feed struct {
	subs     *Subscribers
	log      EventLog
	sub      *Subscription
	threadID string
	root     string
	last     int64 // the Seq of the last recorded event given
	// behind: recorded events may be in the store and not given (the start, a lag, a gap, another
	// process's commit); Next reads a page of them before anything live.
	behind bool
	q      []Event // the batch of the previous take, reused
}

// replayPage bounds the recorded events one Next reads from the store.
const replayPage = 500

// EventLog reads a thread's recorded events (weft.Store's Events).
type EventLog interface {
	// Events returns up to limit events of the thread after the cursor after, oldest first.
	Events(ctx context.Context, threadID string, after int64, limit int) ([]weft.EventRecord, error)
}

// Follow starts a Feed of the events of threadID, whose tree's root is root, after the cursor
// after, reading the recorded ones from log (engine.Engine.Subscribe tells the order). Its Ready
// channel is signalled at once: the first Next gives the recorded events after the cursor. Close
// it when done.
func Follow(subs *Subscribers, log EventLog, threadID, root string, after int64) *Feed {
	f := &Feed{subs: subs, log: log, sub: subs.add(&Subscription{key: subKey{id: threadID}, limit: maxQueued}), threadID: threadID, root: root, last: after, behind: true}
	f.wake()
	return f
}

// Ready is signalled when Next may have events to give.
func (f *Feed) Ready() <-chan struct{} { return f.sub.signal }

// Close ends the subscription.
func (f *Feed) Close() { f.subs.Remove(f.sub) }

// wake signals Ready (a page of the store remains to be read).
func (f *Feed) wake() { f.sub.wake() }

// Next appends to dst the events waiting, without blocking: the recorded ones after the cursor
// first (a page at a time; Ready stays signalled while more remain), then the live ones. An error
// is the store's, and dst then holds the events given before it; the feed may be asked again.
func (f *Feed) Next(ctx context.Context, dst []Event) ([]Event, error) {
	var lagged, poked bool
	f.q, lagged, poked = f.sub.Take(f.q)
	if lagged || poked {
		f.behind = true
	}
	if f.behind {
		// The queue just taken was published after its events were committed, so the page read
		// now holds every recorded event in it.
		var more bool
		var err error
		if dst, more, err = f.page(ctx, dst); err != nil || more {
			return dst, err
		}
	}
	for _, ev := range f.q {
		switch {
		case ev.Seq == 0:
			if !lagged {
				dst = append(dst, ev)
			}
		case ev.Seq <= f.last:
			// Given already.
		case ev.Seq == f.last+1:
			f.last = ev.Seq
			dst = append(dst, ev)
		default:
			// Events between were committed and not seen here: read them from the store.
			f.behind = true
			var more bool
			var err error
			if dst, more, err = f.page(ctx, dst); err != nil || more {
				return dst, err
			}
		}
	}
	return dst, nil
}

// page appends the next page of recorded events after the cursor; more reports a full page (the
// rest of the queue taken is then stale: its recorded events come with the next pages, its
// deltas are behind the stream).
func (f *Feed) page(ctx context.Context, dst []Event) (_ []Event, more bool, _ error) {
	recs, err := f.log.Events(ctx, f.threadID, f.last, replayPage)
	if err != nil {
		f.wake() // still behind: ask again
		return dst, false, err
	}
	for _, rec := range recs {
		f.last = rec.Seq
		dst = append(dst, eventOf(rec, f.root))
	}
	if len(recs) == replayPage {
		f.wake()
		return dst, true, nil
	}
	f.behind = false
	return dst, false, nil
}

// All yields f's events as Next gives them, waiting on Ready, until ctx ends or the consumer
// stops; an error of Next ends it (unless ctx ended). f is closed when All returns: a Feed read
// by an iterator (engine.Engine.Subscribe).
func (f *Feed) All(ctx context.Context) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		defer f.Close()
		var batch []Event
		var err error
		for {
			select {
			case <-f.Ready():
			case <-ctx.Done():
				return
			}
			batch, err = f.Next(ctx, batch[:0])
			for _, ev := range batch {
				if !yield(ev, nil) {
					return
				}
			}
			if err != nil {
				if ctx.Err() == nil {
					yield(Event{}, err)
				}
				return
			}
		}
	}
}
