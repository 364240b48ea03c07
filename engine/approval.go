package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/dispatch"
)

// Decision is a person's answer to a tool call that waits for approval.
type Decision = dispatch.Decision

// ApprovalState is the approval state of a tool call, kept in its record's meta under "approval".
type ApprovalState = dispatch.ApprovalState

// errAwaitApproval stops a run before a call that waits for a decision.
var errAwaitApproval = dispatch.ErrAwaitApproval

// ApprovalOf reads a call record's approval state (zero when none).
func ApprovalOf(rec *weft.ToolCallRecord) ApprovalState { return dispatch.ApprovalOf(rec) }

// backgroundChild tells whether a thread is a non-blocking subagent: it runs in a driver of its own
// and reports to its parent when it stops, so it can wait for a person on its own (its parent
// goes on) and report once the decided calls have run.
func backgroundChild(t *weft.Thread) bool {
	row, ok := registryRow(t)
	return ok && row["blocking"] == false
}

// blockingChild tells whether a thread is a blocking, non-resumable subagent: its parent's call
// waits for it, so it can wait for a person too (the parent parks with it).
func blockingChild(t *weft.Thread) bool {
	row, ok := registryRow(t)
	return ok && row["blocking"] != false && row["resumable"] != true
}

// Decide records a person's decision on a tool call waiting for approval. ready reports that no
// call of the reply waits any more: the run can go on — while the engine serves (Serve) it
// resumes at once; otherwise the caller continues it (Converse or Ask with no message). Edited
// arguments that fail the tool's schema are refused (EInvalid, with the schema errors) and the
// call keeps waiting. An unknown call is ENotFound; a call already decided, or not waiting, is
// EConflict.
func (e *Engine) Decide(ctx context.Context, threadID, callID string, d Decision) (ready bool, err error) {
	recs, err := e.store.ToolCalls(ctx, threadID)
	if err != nil {
		return false, err
	}
	var rec *weft.ToolCallRecord
	for i := range recs {
		if recs[i].CallID == callID {
			rec = &recs[i]
		}
	}
	target := threadID
	if rec == nil {
		// A call of a blocking subagent the thread waits for is decided through the thread.
		waiting, err := e.PendingApprovals(ctx, threadID)
		if err != nil {
			return false, err
		}
		for i := range waiting {
			if waiting[i].CallID == callID {
				rec, target = &waiting[i], waiting[i].ThreadID
			}
		}
	}
	if rec == nil {
		return false, weft.Errorf(weft.ENotFound, "thread %s has no tool call %s", threadID, callID)
	}
	if err := dispatch.Decidable(rec); err != nil {
		return false, err
	}
	if d.Approve && d.Arguments != nil {
		if err := e.checkEditedArguments(ctx, target, rec, d.Arguments); err != nil {
			return false, err
		}
	}
	a := d.State(e.clock.Now().UTC())
	waiting := 0
	err = e.tx(ctx, target, nil, nil, func(tx weft.Tx) error {
		// Read again under the thread's writer: two deciders of one call cannot both win.
		cur, err := e.store.ToolCalls(ctx, target, weft.CallAwaitingApproval)
		if err != nil {
			return err
		}
		up, others, err := dispatch.DecideCall(rec, a, cur)
		waiting = others
		if err != nil {
			return err
		}
		return tx.PutToolCall(&up)
	})
	if err != nil {
		return false, err
	}
	t, err := e.store.Thread(ctx, threadID)
	if err != nil {
		return false, err
	}
	e.emitOutside(ctx, Event{Type: "approval_decided", ThreadID: threadID, RootID: rootOf(t),
		Data: Fields{"call_id": callID, "name": rec.Name, "approved": d.Approve, "by": d.By}})
	if waiting > 0 {
		return false, nil
	}
	// A background subagent goes on in a driver of its own, which reports its outcome to the
	// parent when it stops, as the driver that started it would have.
	if child, err := e.store.Thread(ctx, target); err == nil && backgroundChild(child) {
		if a, owner, mode, ok := e.children.driveArgs(child); ok {
			e.children.goDrive(context.WithoutCancel(ctx), child, a, owner, mode, true)
			return true, nil
		}
	}
	if e.sched.Serving() {
		e.sched.Continue(ctx, threadID, rootOf(t), "")
	}
	return true, nil
}

// checkEditedArguments validates edited arguments as the run will: against the schema of the tool
// as the call's prompt offers it.
func (e *Engine) checkEditedArguments(ctx context.Context, threadID string, rec *weft.ToolCallRecord, args json.RawMessage) error {
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return weft.Errorf(weft.EInvalid, "edited arguments must be a JSON object")
	}
	msg, err := e.store.Message(ctx, threadID, rec.MessageID)
	if err != nil {
		return err
	}
	p, ok := e.reg.Prompt(msg.Prompt)
	if !ok {
		return weft.Errorf(weft.EInvalid, "the call's prompt %q is no longer defined", msg.Prompt)
	}
	r, err := e.loadRunRows(ctx, threadID, false)
	if err != nil {
		return err
	}
	r.ctx = ctx
	s, err := r.newScope(p, msg.Depth, msg.WrittenBy(), r.thread.Arguments)
	if err != nil {
		return err
	}
	if _, errText := (*toolRun)(r).prepareCall(s, weft.ToolCall{ID: rec.CallID, Name: rec.Name, Arguments: string(args)}, false); errText != "" {
		return weft.Errorf(weft.EInvalid, "%s", errText)
	}
	return nil
}

// PendingApprovals lists the tool calls that wait for a decision in a thread and in the blocking
// subagents it waits for (ThreadID tells whose), in call order per thread; Decide takes them
// through the thread.
func (e *Engine) PendingApprovals(ctx context.Context, threadID string) ([]weft.ToolCallRecord, error) {
	recs, err := e.store.ToolCalls(ctx, threadID, weft.CallAwaitingApproval)
	if err != nil {
		return nil, fmt.Errorf("thread %s: %w", threadID, err)
	}
	for i := range recs {
		recs[i].ThreadID = threadID
	}
	kids, _, err := e.store.Threads(ctx, weft.ThreadQuery{ParentID: threadID, Status: weft.ThreadAwaitingApproval, Limit: -1})
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		if !blockingChild(k) && !backgroundChild(k) {
			continue
		}
		more, err := e.PendingApprovals(ctx, k.ID)
		if err != nil {
			return nil, err
		}
		recs = append(recs, more...)
	}
	return recs, nil
}
