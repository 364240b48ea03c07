package engine

import (
	"context"
	"errors"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/journal"
)

// childHost is the engine as engine/children's Host: it runs the room's child threads, commits
// their transactions and keeps each child's report coordination (children.Watch) with the
// child's owner, under the scheduler's lock (engine/sched).
type childHost struct{ e *Engine }

// Acquire waits for the thread's turn in this process (owner.go).
func (h childHost) Acquire(ctx context.Context, threadID string) (context.Context, func(), error) {
	return h.e.sched.Acquire(ctx, threadID)
}

// RunHeld runs the thread while it has work, holding its turn.
func (h childHost) RunHeld(ctx context.Context, threadID, trigger string) (weft.StopInfo, bool, error) {
	res, err := h.e.runHeld(ctx, threadID, trigger, "", nil)
	if err != nil || res == nil || len(res.Stops) == 0 {
		return weft.StopInfo{}, false, err
	}
	return res.Last(), true, nil
}

// RunOnce performs one run of the thread, holding its turn.
func (h childHost) RunOnce(ctx context.Context, threadID, trigger string) (weft.StopInfo, error) {
	info, _, _, err := h.e.runOnce(ctx, threadID, trigger, "", nil, nil)
	if errors.Is(err, errNothingQueued) || errors.Is(err, weft.ErrLeaseHeld) {
		return weft.StopInfo{}, children.ErrNotRun
	}
	return info, err
}

// Drive runs fn in the background registered as the child's driver until it returns: Recover
// leaves a child that this process drives to its driver, which reports what it runs.
func (h childHost) Drive(child *weft.Thread, fn func()) {
	h.e.sched.Drive(child.ID, orDefault(child.RootID, child.ID), fn)
}

// Driven tells whether a driver of this process runs the child now.
func (h childHost) Driven(childID string) bool { return h.e.sched.Driven(childID) }

// Watch calls fn with the child's report coordination, kept with its owner while it is not idle,
// under the scheduler's lock (sched.Scheduler.Watch).
func (h childHost) Watch(childID string, fn func(*children.Watch)) {
	h.e.sched.Watch(childID, fn)
}

// Tx commits fn in a transaction of the thread, unfenced and unredacted.
func (h childHost) Tx(ctx context.Context, threadID string, fn func(weft.Tx) error) error {
	return h.e.commit.Tx(ctx, threadID, nil, journal.NoText, fn)
}

// Redactor returns the function redacting the thread's secrets.
func (h childHost) Redactor(ctx context.Context, threadID string) (func(string) string, error) {
	return h.e.Redactor(ctx, threadID)
}

// StoreAttachments writes attachments into the thread's /attachments/.
func (h childHost) StoreAttachments(ctx context.Context, thread *weft.Thread, atts []weft.ToolAttachment) ([]weft.Attachment, error) {
	return outsideState(h.e, thread).StoreAttachments(ctx, atts)
}

// Notify queues m on the thread and wakes its worker.
func (h childHost) Notify(ctx context.Context, threadID, root string, m weft.NewMessage) error {
	if _, err := h.e.Send(ctx, threadID, m); err != nil {
		return err
	}
	h.e.sched.Wake(ctx, threadID, root)
	return nil
}

// Enqueue queues m on the thread without waking anyone.
func (h childHost) Enqueue(ctx context.Context, threadID string, m weft.NewMessage) error {
	_, err := h.e.intake.Enqueue(ctx, threadID, m)
	return err
}

// Terminate terminates the thread and its descendants.
func (h childHost) Terminate(ctx context.Context, threadID string) error {
	return h.e.Terminate(ctx, threadID)
}

// Created remembers the child's root and tells the streams of its creation.
func (h childHost) Created(ctx context.Context, child *weft.Thread) {
	h.e.roots.Put(child)
	h.e.commit.Outside(ctx, Event{Type: "thread_created", ThreadID: child.ID, RootID: child.RootID, Data: Fields{"parent_id": child.ParentID}})
	h.EmitSubagent(ctx, child, child.Agent, "running", "created")
}

// Observed tells whether events are wanted.
func (h childHost) Observed() bool { return h.e.commit.Observed() }

// EmitSubagent sends child's parent a subagent event: the child's status and status text.
func (h childHost) EmitSubagent(ctx context.Context, child *weft.Thread, agent, status, text string) {
	h.e.commit.Outside(ctx, Event{Type: "subagent", ThreadID: child.ParentID, RootID: rootOf(child),
		Data: Fields{"reference": child.ID, "agent": agent, "status": status, "status_text": text}})
}

// Wait blocks until background work is done: non-blocking subagents, their reports and the parent
// runs those start (`weft run` waits for all descendants).
func (e *Engine) Wait() { e.sched.Wait() }
