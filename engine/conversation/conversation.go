// Package conversation delivers an input to a thread — a message, or a continue — and follows
// the thread's tree (the thread and its descendants) until it is quiescent: the thread's runs, its
// subagents' runs and their reports, work an earlier process left interrupted in the tree, due
// effects and the runs their messages start. Converse yields the tree's events as they happen; Run
// does the same work for a caller that wants the outcome only.
//
// The package does not import engine: a Host runs threads, resumes interrupted work and runs due
// effects; the scheduler (engine/sched) tells when the tree is quiet.
package conversation

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/feed"
	"github.com/weft-agents/weft/engine/intake"
	"github.com/weft-agents/weft/engine/roots"
	"github.com/weft-agents/weft/engine/sched"
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

// Tree is what the runs of a conversation learnt of the work around them: whether the thread has
// children (at a run's start, or created by a run), and when an effect of the store is next
// claimable as of the last run's start (weft.RunStart).
type Tree struct {
	// Started: a run started, and the fields below are known.
	Started bool
	// Children: the thread has children.
	Children bool
	// EffectsDue is when the store's next effect is claimable (zero: none pending or claimed).
	EffectsDue time.Time
}

// Host is what a conversation needs of the engine that runs threads.
type Host interface {
	// Run runs the thread until it is quiescent (trigger "message" or "continue"; side "" = the
	// side due next), first queueing push when not nil: in the transaction that starts the run
	// when the thread's turn is free, else at once.
	Run(ctx context.Context, threadID, trigger string, side weft.Side, push *weft.QueuedMessage) (Tree, error)
	// Recover resumes what an earlier process left interrupted in the thread's tree, and the
	// subagents that report on their own.
	Recover(ctx context.Context, threadID string) error
	// RunDueEffects claims the store's due effects and runs them; it returns the threads on which
	// they queued messages.
	RunDueEffects(ctx context.Context) ([]string, error)
}

// Conversations holds what conversations work with.
type Conversations struct {
	// Store holds the threads and their effects; Clock waits for effects (Input.EffectsUntil).
	Store weft.Store
	Clock weft.Clock
	// Intake checks and queues the input's message.
	Intake *intake.Intake
	// Sched owns the threads this process works on: it tells when a tree is quiet.
	Sched *sched.Scheduler
	// Subs is the feed Converse subscribes to; Roots finds a thread's root.
	Subs  *feed.Subscribers
	Roots *roots.Cache
	// Host runs threads.
	Host Host
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
func (c *Conversations) Converse(ctx context.Context, threadID string, in Input) iter.Seq2[feed.Event, error] {
	return func(yield func(feed.Event, error) bool) {
		root, t, err := c.Roots.Find(ctx, c.Store, threadID, in.Message == nil)
		if err != nil {
			yield(feed.Event{}, err)
			return
		}
		// The two queues the events pass through (the subscription's, and the one this loop reads
		// while the run fills the other) come from a pool: grown anew at every call, they were a
		// tenth of a streamed turn's bytes.
		bufs := eventBufs.Get().(*[2][]feed.Event)
		sub := c.Subs.Tree(root, bufs[0])
		q := bufs[1]
		defer func() {
			c.Subs.Remove(sub)
			rest, _, _ := sub.Take(nil)
			bufs[0], bufs[1] = clearEvents(rest), clearEvents(q)
			eventBufs.Put(bufs)
		}()
		runCtx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		done := make(chan error, 1)
		c.Sched.Spawn(func() { done <- c.Run(runCtx, threadID, root, t, in) })
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
					yield(feed.Event{}, runErr)
				}
				return
			}
		}
	}
}

// eventBufs pools Converse's two event queues.
var eventBufs = sync.Pool{New: func() any { return new([2][]feed.Event) }}

// clearEvents empties q for reuse, dropping its events' payloads; a queue grown past what a
// conversation usually holds is let go rather than kept.
func clearEvents(q []feed.Event) []feed.Event {
	if cap(q) > 256 {
		return nil
	}
	clear(q[:cap(q)])
	return q[:0]
}

// A message needs only the root of its thread's tree (roots.Cache.Find), to follow the tree: the
// run's BeginRun refuses it for a thread that is unknown, terminated or full. A continue needs the
// thread's status.

// Run does a conversation's work on the caller's goroutine: the input's run here, then the tree
// until quiescent. root and t are the thread's as Roots.Find returned them (t is nil when the input
// is a message and the root was known).
func (c *Conversations) Run(ctx context.Context, threadID, root string, t *weft.Thread, in Input) error {
	trigger := "continue"
	var push *weft.QueuedMessage // queued by the run's first transaction
	if in.Message != nil {
		q, err := c.Intake.Check(ctx, threadID, *in.Message)
		if err != nil {
			return err
		}
		if len(in.Message.Attachments) > 0 || q.IfBusy == weft.IfBusyReject {
			// Queued with its files, in a transaction of their own; a message that a run in
			// progress refuses by its own push, which decides it (BeginRun's does not).
			if err := c.Intake.Push(ctx, q, in.Message.Attachments); err != nil {
				return c.Intake.Busy(threadID, err)
			}
		} else {
			push = q
		}
		trigger = "message"
	} else if t.Status == weft.ThreadTerminated {
		return fmt.Errorf("thread %s: %w", t.ID, weft.ErrTerminated)
	}
	scheduled := c.Sched.EffectsScheduled()
	tree, err := c.Host.Run(ctx, threadID, trigger, in.Side, push)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil // the run stopped as aborted
	}
	// Subagents that report on their own, including those an earlier process left behind: none
	// when the thread had no children when its runs started and they created none.
	if !tree.Started || tree.Children {
		if err := c.Host.Recover(ctx, threadID); err != nil {
			return err
		}
	}
	// No effect to claim: the store had none pending or claimed when the last run started, and
	// none was scheduled here since (one scheduled by another process meanwhile is that
	// process's to run, or the next conversation's).
	noEffects := tree.Started && tree.EffectsDue.IsZero() && in.EffectsUntil.IsZero()
	for first := true; ; first = false {
		select {
		case <-c.Sched.Quiet(root):
		case <-ctx.Done():
			return nil
		}
		if c.Sched.Serving() {
			return nil
		}
		if first && noEffects && c.Sched.EffectsScheduled() == scheduled {
			return nil
		}
		threads, err := c.Host.RunDueEffects(ctx)
		if err != nil {
			return ignoreDone(ctx, err)
		}
		for _, id := range threads {
			th, err := c.Store.Thread(ctx, id)
			if err != nil {
				return ignoreDone(ctx, err)
			}
			c.Sched.Wake(ctx, id, roots.Of(th))
		}
		if len(threads) > 0 {
			continue
		}
		if in.EffectsUntil.IsZero() {
			return nil // no later effect is waited for
		}
		next, err := c.Store.NextEffectAt(ctx)
		if err != nil || next.IsZero() || next.After(in.EffectsUntil) {
			return ignoreDone(ctx, err)
		}
		if wait := next.Sub(c.Clock.Now()); wait > 0 {
			if err := c.Clock.Sleep(ctx, wait); err != nil {
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
