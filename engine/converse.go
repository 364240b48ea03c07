package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/weft-agents/weft"
)

// Input is what Converse brings to a thread.
type Input struct {
	// Message is queued and answered; nil continues the thread without a new message.
	Message *weft.NewMessage
	// Side is the side a continue runs ("" = the side due next); ignored with a message.
	Side weft.Side
	// EffectsUntil extends quiescence to effects due before it: Converse waits for them on the
	// engine's clock and runs them with the runs their messages start. Zero = only effects due
	// already. While the engine serves (Serve), its scheduler runs effects instead.
	EffectsUntil time.Time
}

// errConsumerGone cancels a conversation whose consumer stopped reading.
var errConsumerGone = errors.New("the caller stopped reading the conversation")

// Converse delivers the input to a thread and yields the events of its tree (the thread and its
// descendants) until the tree is quiescent: the thread's runs, its subagents' runs and their
// reports, work an earlier process left interrupted in the tree, due effects and the runs their
// messages start. An error (a refused message, a thread running in another process, a failing
// store) is yielded last. Breaking out of the loop stops the thread's run as a cancelled context
// does (the run stops as aborted).
//
// Events are yielded in the order they happened; payloads are redacted. Subscribers of the same
// tree in this process see the same events.
func (e *Engine) Converse(ctx context.Context, threadID string, in Input) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		root, t, err := e.roots.Find(ctx, e.store, threadID, in.Message == nil)
		if err != nil {
			yield(Event{}, err)
			return
		}
		// The two queues the events pass through (the subscription's, and the one this loop reads
		// while the run fills the other) come from a pool: grown anew at every call, they were a
		// tenth of a streamed turn's bytes.
		bufs := eventBufs.Get().(*[2][]Event)
		sub := e.subs.Tree(root, bufs[0])
		q := bufs[1]
		defer func() {
			e.subs.Remove(sub)
			rest, _, _ := sub.Take(nil)
			bufs[0], bufs[1] = clearEvents(rest), clearEvents(q)
			eventBufs.Put(bufs)
		}()
		runCtx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		done := make(chan error, 1)
		e.sched.Spawn(func() { done <- e.converse(runCtx, threadID, root, t, in) })
		for {
			var runErr error
			finished := false
			select {
			case <-sub.Ready():
			case runErr = <-done:
				finished = true
			}
			q, _, _ = sub.Take(q)
			for _, ev := range q {
				if !yield(ev, nil) {
					cancel(errConsumerGone)
					if !finished {
						<-done
					}
					return
				}
			}
			if finished {
				q, _, _ = sub.Take(q)
				for _, ev := range q {
					if !yield(ev, nil) {
						return
					}
				}
				if runErr != nil {
					yield(Event{}, runErr)
				}
				return
			}
		}
	}
}

// eventBufs pools Converse's two event queues.
var eventBufs = sync.Pool{New: func() any { return new([2][]Event) }}

// clearEvents empties q for reuse, dropping its events' payloads; a queue grown past what a
// conversation usually holds is let go rather than kept.
func clearEvents(q []Event) []Event {
	if cap(q) > 256 {
		return nil
	}
	clear(q[:cap(q)])
	return q[:0]
}

// A message needs only the root of its thread's tree (roots.Cache.Find), to follow the tree: the
// run's BeginRun refuses it for a thread that is unknown, terminated or full. A continue needs the
// thread's status.

// converse runs a conversation's work: the input's run here, then the tree until quiescent. t is
// the thread as read (nil when the input is a message and the root was known).
func (e *Engine) converse(ctx context.Context, threadID, root string, t *weft.Thread, in Input) error {
	trigger := "continue"
	var push *startPush // queued by the run's first transaction
	if in.Message != nil {
		q, err := e.intake.Check(ctx, threadID, *in.Message)
		if err != nil {
			return err
		}
		if len(in.Message.Attachments) > 0 || q.IfBusy == weft.IfBusyReject {
			// Queued with its files, in a transaction of their own; a message that a run in
			// progress refuses by its own push, which decides it (BeginRun's does not).
			if err := e.intake.Push(ctx, q, in.Message.Attachments); err != nil {
				return e.intake.Busy(threadID, err)
			}
		} else {
			push = &startPush{q: q}
		}
		trigger = "message"
	} else if t.Status == weft.ThreadTerminated {
		return fmt.Errorf("thread %s: %w", t.ID, weft.ErrTerminated)
	}
	scheduled := e.sched.EffectsScheduled()
	res, err := e.runPush(ctx, threadID, trigger, in.Side, push)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil // the run stopped as aborted
	}
	// Subagents that report on their own, including those an earlier process left behind: none
	// when the thread had no children when its runs started and they created none.
	if !res.tree.started || res.tree.children {
		if err := e.Recover(ctx, threadID); err != nil {
			return err
		}
	}
	// No effect to claim: the store had none pending or claimed when the last run started, and
	// none was scheduled here since (one scheduled by another process meanwhile is that
	// process's to run, or the next conversation's).
	noEffects := res.tree.started && res.tree.effectsDue.IsZero() && in.EffectsUntil.IsZero()
	for first := true; ; first = false {
		select {
		case <-e.sched.Quiet(root):
		case <-ctx.Done():
			return nil
		}
		if e.sched.Serving() {
			return nil
		}
		if first && noEffects && e.sched.EffectsScheduled() == scheduled {
			return nil
		}
		rep, err := e.RunDueEffects(ctx)
		if err != nil {
			return ignoreDone(ctx, err)
		}
		for _, id := range rep.Threads {
			th, err := e.store.Thread(ctx, id)
			if err != nil {
				return ignoreDone(ctx, err)
			}
			e.sched.Wake(ctx, id, rootOf(th))
		}
		if len(rep.Threads) > 0 {
			continue
		}
		if in.EffectsUntil.IsZero() {
			return nil // no later effect is waited for
		}
		next, err := e.store.NextEffectAt(ctx)
		if err != nil || next.IsZero() || next.After(in.EffectsUntil) {
			return ignoreDone(ctx, err)
		}
		if wait := next.Sub(e.clock.Now()); wait > 0 {
			if err := e.clock.Sleep(ctx, wait); err != nil {
				return nil
			}
		}
	}
}

// ignoreDone drops an error caused by the context's end: the conversation simply ends there.
func ignoreDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Ask is Converse for callers that want the outcome only: it runs the conversation to
// quiescence and returns the stops of the thread's runs in it (subagents' runs are not listed)
// and the last reply they stored. With no events to hand over while it runs, the conversation
// runs on the caller's goroutine (with Converse, every hand-over between the run's goroutine and
// the caller's may go through the operating system, about a third of an in-memory turn's time:
// bench/README.md), and when nothing else listens (no OnEvent, no event log, no subscriber) its
// runs build no event at all.
func (e *Engine) Ask(ctx context.Context, threadID string, in Input) (*RunResult, error) {
	res := &RunResult{}
	root, t, err := e.roots.Find(ctx, e.store, threadID, in.Message == nil)
	if err != nil {
		return res, err
	}
	// The thread's runs may stop on other goroutines (a parent woken by its subagent's report):
	// their stops are noted to a watch, which builds no event.
	watch := e.watches.Add(threadID)
	defer e.watches.Remove(watch)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	err = e.converse(runCtx, threadID, root, t, in)
	stops, redactions, reply := e.watches.Taken(watch)
	res.Reply = reply
	for _, info := range stops {
		res.Stops = append(res.Stops, info)
		res.Steps += info.Steps
	}
	res.LastLineRedactions += redactions
	if err != nil {
		return res, err
	}
	// Runs of one thread are serialized; sorting by stop number only guards the order.
	slices.SortStableFunc(res.Stops, func(a, b weft.StopInfo) int { return a.Seq - b.Seq })
	return e.finish(ctx, threadID, res), nil
}
