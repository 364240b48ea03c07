package engine

import (
	"context"
	"fmt"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/sched"
)

// ServeOptions configure Serve.
type ServeOptions = sched.ServeOptions

// errShutdown interrupts the runs still going when a shutdown's drain deadline passes.
var errShutdown = sched.ErrShutdown

// Serve runs the engine's scheduler (engine/sched) until ctx ends. It first resumes the work a
// stopped process left (RecoverAll); from then on a message queued with Send runs at once on its
// thread's worker, effects run when due (the engine wakes when one is scheduled here), and a
// child's report or a continue (ContinueAsync) runs its thread. When ctx ends Serve stops taking
// work, lets running steps reach a boundary within DrainTimeout, interrupts the rest, and
// returns once every lease of this process is released. An idle serving engine holds no
// goroutine per thread and does nothing until woken.
func (e *Engine) Serve(ctx context.Context, o ServeOptions) error { return e.sched.Serve(ctx, o) }

// ContinueAsync asks the thread's worker to continue the thread (side "" = the side due next)
// and returns at once; the run's events reach subscribers. A terminated thread is
// weft.ErrTerminated, and a thread running now is EConflict.
func (e *Engine) ContinueAsync(ctx context.Context, threadID string, side weft.Side) error {
	t, err := e.store.Thread(ctx, threadID)
	if err != nil {
		return err
	}
	switch t.Status {
	case weft.ThreadTerminated:
		return fmt.Errorf("thread %s: %w", threadID, weft.ErrTerminated)
	case weft.ThreadRunning:
		return weft.Errorf(weft.EConflict, "thread %s is running", threadID)
	}
	e.sched.Continue(ctx, threadID, rootOf(t), side)
	return nil
}

// schedHost is the engine as its scheduler sees it (sched.Host).
type schedHost struct{ e *Engine }

// RunThread runs the thread whose turn ctx holds (runHeld); push is queued by the first run's
// BeginRun, the Serve way: a stopped thread is left alone.
func (h schedHost) RunThread(ctx context.Context, threadID, trigger string, side weft.Side, push *weft.QueuedMessage, queued func(error)) error {
	var sp *startPush
	if push != nil {
		sp = &startPush{q: push, queued: queued, serve: true}
	}
	_, err := h.e.runHeld(ctx, threadID, trigger, side, sp)
	return err
}

// RunDueEffects runs the due effects (Engine.RunDueEffects).
func (h schedHost) RunDueEffects(ctx context.Context) ([]string, error) {
	rep, err := h.e.RunDueEffects(ctx)
	return rep.Threads, err
}

// RecoverAll resumes what a stopped process left (Engine.RecoverAll).
func (h schedHost) RecoverAll(ctx context.Context) error {
	_, err := h.e.RecoverAll(ctx)
	return err
}

// InterruptFromStore looks for a message with weft.IfBusyInterrupt in the queue of a thread that
// this process works on, after another process queued a message on it (weft.NoticeQueued), and
// interrupts the run for the first it has not taken (ifbusy.go). With no run registered (one may
// have started and not be registered yet), the next run to register checks the queue.
func (h schedHost) InterruptFromStore(ctx context.Context, threadID string) {
	// (The run, told of the message, reads the queue at its next boundary.)
	if ar, _ := h.e.sched.Queued(threadID, true); ar != nil {
		h.e.intake.Interrupt(ctx, threadID, ar.(*activeRun))
	}
}

// Poke wakes the thread's event subscribers ("" = all).
func (h schedHost) Poke(threadID string) { h.e.subs.Poke(threadID) }
