package engine

import (
	"context"
	"slices"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/intake"
	"github.com/weft-agents/weft/engine/modelcall"
)

// Double-texting: what a message sent while a run of its thread is in progress does
// (weft.NewMessage.IfBusy; engine/intake). Queue is the default. Reject is decided by the store,
// in the write that would queue the message (weft.QueuedMessage.IfBusy). Interrupt queues the
// message, then tells the run: in this process through its activeRun (intake.Intake.Push), in
// another through the store's notice of the push (sched's watch → schedHost.InterruptFromStore);
// a run registered after either reads its queue (sched.Scheduler.Register); and a run that
// nothing told finds the message at its next step boundary (run.interruptedBy). The run stops at once
// with weft.StopInterrupted: its model call is cancelled and its output discarded; a tool call
// that started completes and its result is stored, the reply's calls not started yet are
// answered without running; and the next run takes the message.

// errInterrupted is the cancellation cause of a model call that a message with
// weft.IfBusyInterrupt cut short.
var errInterrupted = modelcall.ErrInterrupted

// Interrupt asks the run to stop for the queued message id (weft.IfBusyInterrupt, or
// weft.IfBusyRollback when rollback is set): its model call,
// if one is in flight, is cancelled now, and the run stops at its next check. A message the run
// has already taken into its context (take) interrupts nothing: the run answers it. It reports
// whether the run was asked.
func (ar *activeRun) Interrupt(id string, rollback bool) bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.interruptBy != "" || slices.Contains(ar.taken, id) {
		return false
	}
	ar.interruptBy, ar.rollback = id, rollback
	ar.interrupted.Store(true)
	ar.mail.add(notePushed) // the next run is due even if the run saw nothing queued
	if ar.modelCancel != nil {
		ar.modelCancel(errInterrupted)
	}
	return true
}

// take notes that the run took the queued message q into its context (at its start or a step
// boundary): an interrupt for it that has not stopped anything yet is withdrawn.
func (ar *activeRun) take(q *weft.QueuedMessage) {
	if !q.IfBusy.Interrupts() {
		return
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.taken = append(ar.taken, q.ID)
	if ar.interruptBy == q.ID {
		ar.interruptBy, ar.rollback = "", false
		ar.interrupted.Store(false)
	}
}

// interrupter returns the id of the message that interrupts the run ("" when none), and whether
// it rolls the run back (weft.IfBusyRollback).
func (ar *activeRun) interrupter() (string, bool) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.interruptBy, ar.rollback
}

// modelCall registers the cancel of a top-level model call in flight (nil once it returned). It
// reports false, and registers nothing, when the run is interrupted already: the call is not made.
func (ar *activeRun) modelCall(cancel context.CancelCauseFunc) bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if cancel != nil && ar.interruptBy != "" {
		return false
	}
	ar.modelCancel = cancel
	return true
}

// ID is the id of the run ("" before it started).
func (ar *activeRun) ID() string {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.id
}

// interruptedBy reports, at a step boundary, that the run stops instead of taking the queued
// messages qs: one of them has weft.IfBusyInterrupt and was queued while the run was in progress
// (any not taken at its start), or another message interrupted it meanwhile. This is how an
// interrupt reaches the run when nothing told it: a process without the store's notices (SQLite
// has none) queued the message, or the notice was lost; the run sees the message at its first
// boundary after it was queued and a transaction of the run saw the queue grow.
func (r *run) interruptedBy(qs []weft.QueuedMessage) bool {
	for i := range qs {
		if q := &qs[i]; q.IfBusy.Interrupts() && !r.journal.Taken(q.Seq) {
			r.ar.Interrupt(q.ID, q.IfBusy == weft.IfBusyRollback)
		}
	}
	return r.interrupting()
}

// interrupting reports that a message with weft.IfBusyInterrupt stops the run.
func (r *run) interrupting() bool { return r.ar.interrupted.Load() }

// rollbackRows deletes, in the interrupted run's stop transaction, the rows the run stored at
// every depth (weft.IfBusyRollback; intake.Rollback), and returns their ids.
func (r *run) rollbackRows(tx weft.Tx) ([]string, error) {
	r.sync()
	return intake.Rollback(context.WithoutCancel(r.ctx), r.e.store, tx, r.thread.ID, r.id, r.cache.Rows)
}

// intakeHost is the engine as engine/intake's Host.
type intakeHost struct{ e *Engine }

// QueueWithFiles stores the attachments and queues q in one transaction of its thread.
func (h intakeHost) QueueWithFiles(ctx context.Context, q *weft.QueuedMessage, attachments []weft.ToolAttachment) error {
	t, err := h.e.store.Thread(ctx, q.ThreadID)
	if err != nil {
		return err
	}
	_, err = outsideState(h.e, t).StoreAttachmentsThen(ctx, attachments, func(tx weft.Tx, atts []weft.Attachment) error {
		q.Attachments = atts
		return tx.PushQueue(q)
	})
	return err
}

// Queued tells the thread's run registered here that a message was queued (sched.Scheduler.Queued).
func (h intakeHost) Queued(threadID string, interrupts bool) intake.Run {
	if ar, _ := h.e.sched.Queued(threadID, interrupts); ar != nil {
		return ar.(*activeRun)
	}
	return nil
}

// Running returns the thread's run in progress here.
func (h intakeHost) Running(threadID string) intake.Run {
	if ar, _ := h.e.sched.Running(threadID).(*activeRun); ar != nil {
		return ar
	}
	return nil
}
