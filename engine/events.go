package engine

import (
	"context"
	"iter"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/weft-agents/weft"
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

// subscribers fans events out to this process's subscribers of a tree of threads (Converse).
// Publishing never blocks: each subscription queues what it has not taken yet. by holds the
// subscriptions of a tree or of one thread.
type subscribers struct {
	listeners[subKey, subscription]
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

// add adds a subscription whose queue starts as queue (empty; nil, or with room to reuse).
func (s *subscribers) add(key subKey, bounded bool, queue []Event) *subscription {
	s.kind(key).Add(1)
	return s.listeners.add(key, &subscription{key: key, bounded: bounded, queue: queue, signal: make(chan struct{}, 1)})
}

func (s *subscribers) remove(sub *subscription) {
	s.listeners.remove(sub.key, sub)
	s.kind(sub.key).Add(-1)
}

func (s *subscribers) kind(key subKey) *atomic.Int32 {
	if key.tree {
		return &s.trees
	}
	return &s.threads
}

// publishAll queues events to their thread's and tree's subscribers and then signals each
// subscriber once, so that it takes them in one batch.
func (s *subscribers) publishAll(evs []Event) {
	var buf [4]*subscription
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

func appendNew(list []*subscription, sub *subscription) []*subscription {
	if slices.Contains(list, sub) {
		return list
	}
	return append(list, sub)
}

// enqueue queues an event without signalling.
func (sub *subscription) enqueue(ev Event) {
	sub.mu.Lock()
	if sub.bounded && len(sub.queue) >= maxQueued {
		sub.lagged = true
	} else {
		sub.queue = append(sub.queue, ev)
	}
	sub.mu.Unlock()
}

// wake signals the subscriber that events were queued.
func (sub *subscription) wake() {
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
			sub.wake()
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
//
// Subscribe is Follow read by an iterator; a consumer that waits on other things as well (a
// stream's keep-alive timer) uses Follow.
func (e *Engine) Subscribe(ctx context.Context, threadID string, after int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		f, err := e.Follow(ctx, threadID, after)
		if err != nil {
			yield(Event{}, err)
			return
		}
		defer f.Close()
		var batch []Event
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

// A Feed is a subscription to a thread's events that its consumer pulls: Ready is signalled when
// events may be waiting and Next takes them without blocking, so that a consumer selects on its
// feed beside its own channels with no goroutine in between, and takes what a transaction
// published in one batch. It gives what Subscribe yields, in the same order, exactly once.
type Feed struct {
	e        *Engine
	sub      *subscription
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

// Follow starts a Feed of a thread's events after the cursor after (see Subscribe). Its Ready
// channel is signalled at once: the first Next gives the recorded events after the cursor. Close
// it when done.
func (e *Engine) Follow(ctx context.Context, threadID string, after int64) (*Feed, error) {
	t, err := e.store.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	f := &Feed{e: e, sub: e.subs.add(subKey{id: threadID}, true, nil), threadID: threadID, root: rootOf(t), last: after, behind: true}
	f.wake()
	return f, nil
}

// Ready is signalled when Next may have events to give.
func (f *Feed) Ready() <-chan struct{} { return f.sub.signal }

// Close ends the subscription.
func (f *Feed) Close() { f.e.subs.remove(f.sub) }

// wake signals Ready (a page of the store remains to be read).
func (f *Feed) wake() { f.sub.wake() }

// Next appends to dst the events waiting, without blocking: the recorded ones after the cursor
// first (a page at a time; Ready stays signalled while more remain), then the live ones. An error
// is the store's, and dst then holds the events given before it; the feed may be asked again.
func (f *Feed) Next(ctx context.Context, dst []Event) ([]Event, error) {
	var lagged, poked bool
	f.q, lagged, poked = f.sub.take(f.q)
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
	recs, err := f.e.store.Events(ctx, f.threadID, f.last, replayPage)
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

// eventOf decodes a recorded event.
func eventOf(rec weft.EventRecord, root string) Event {
	ev := Event{Type: rec.Type, ThreadID: rec.ThreadID, RootID: root, Seq: rec.Seq, Encoded: rec.Data}
	ev.Data, _ = DecodePayload(rec.Type, rec.Data)
	return ev
}

// rootOf returns the root of a thread's tree.
func rootOf(t *weft.Thread) string { return orDefault(t.RootID, t.ID) }

// stopWatches are Ask's: they are told the stops of a thread's runs, whichever goroutine runs them,
// without making the engine observed: with nobody else listening, no event is built.
type stopWatches struct {
	listeners[string, stopWatch]
}

// stopWatch gathers one thread's stops, under the watches' lock.
type stopWatch struct {
	thread string
	stops  []weft.StopInfo
	// redactions counts the final lines the runs held back for redaction (RunResult).
	redactions int
	reply      *weft.Message // the last reply a run stored (RunResult.Reply)
}

func (w *stopWatches) add(thread string) *stopWatch {
	return w.listeners.add(thread, &stopWatch{thread: thread})
}

func (w *stopWatches) remove(sw *stopWatch) { w.listeners.remove(sw.thread, sw) }

// note tells the thread's watches of a run's stop and the last reply it stored (nil: none).
func (w *stopWatches) note(thread string, info weft.StopInfo, redactions int, reply *weft.Message) {
	if w.n.Load() == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, sw := range w.by[thread] {
		sw.stops = append(sw.stops, info)
		sw.redactions += redactions
		if reply != nil {
			sw.reply = reply
		}
	}
}

// taken returns the stops noted so far on sw, the redactions and the last reply.
func (w *stopWatches) taken(sw *stopWatch) ([]weft.StopInfo, int, *weft.Message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return sw.stops, sw.redactions, sw.reply
}
