package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/runstate"
)

// Decision is a person's answer to a tool call that waits for approval.
type Decision = dispatch.Decision

// ApprovalState is the approval state of a tool call, kept in its record's meta under "approval".
type ApprovalState = dispatch.ApprovalState

// errAwaitApproval stops a run before a call that waits for a decision.
var errAwaitApproval = errors.New("tool calls await approval")

// ApprovalOf reads a call record's approval state (zero when none).
func ApprovalOf(rec *weft.ToolCallRecord) ApprovalState { return dispatch.ApprovalOf(rec) }

// needsApproval tells whether calls of the named offered tool wait for a decision: the prompt's
// entry decides, else the tool's own setting.
func (s *scope) needsApproval(name string) bool {
	o, ok := s.offered[name]
	if !ok {
		return false
	}
	if o.entry.Approval != "" {
		return o.entry.Approval == weft.ApprovalRequired
	}
	return o.target.Tool != nil && o.target.Tool.Approval == weft.ApprovalRequired
}

// idempotent tells whether calls of the named offered tool may run again after a crash: the tool's
// or the MCP server's declaration says so.
func (s *scope) idempotent(name string) bool {
	if o, ok := s.offered[name]; ok && o.target.Tool != nil {
		return o.target.Tool.Idempotent
	} else if ok && o.target.MCP != nil {
		return o.target.MCP.Idempotent
	}
	return false
}

// awaitApproval stops before call i of msg's calls: every call from i on that needs approval and
// has no decision is stored awaiting_approval, with an approval_required event each, in one
// transaction. The calls after them keep their order: they run once all are decided. In a
// sub-prompt's nested run, the same transaction marks the sub-prompt calls that run it
// (parkedCallers), so that the resumed run goes on with the nested run.
func (d *dispatcher) awaitApproval(s *scope, msg *weft.Message, calls []weft.ToolCall) error {
	r := d.r
	var recs []*weft.ToolCallRecord
	for _, c := range calls {
		if !s.needsApproval(c.Name) {
			continue
		}
		rec := d.calls.Of(c, msg.ID)
		a := dispatch.ApprovalOf(rec)
		if a.Status == dispatch.Approved || a.Status == dispatch.Denied {
			continue
		}
		rec.Status, rec.StartedAt = weft.CallAwaitingApproval, nil
		rec.Meta = dispatch.WithApproval(rec.Meta, ApprovalState{Status: dispatch.Awaiting})
		recs = append(recs, rec)
		if r.e.commit.Observed() {
			r.journal.Emit("approval_required", Fields{"call_id": c.ID, "name": c.Name, "arguments": r.red.String(c.Arguments),
				"message_id": msg.ID, "depth": s.depth})
		}
	}
	recs = append(recs, s.via.parkedRecords()...)
	err := r.tx(func(tx weft.Tx) error {
		for _, rec := range recs {
			if err := tx.PutToolCall(rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, rec := range recs {
		d.calls.Note(rec)
	}
	return errAwaitApproval
}

// decided applies a stored decision to a call about to run: approved calls run with the edited
// arguments, if any; a denied call gets its error result instead of running (done = true).
func (d *dispatcher) decided(s *scope, msg *weft.Message, c *weft.ToolCall) (res weft.ToolResult, done, waiting bool) {
	if !s.needsApproval(c.Name) {
		return weft.ToolResult{}, false, false
	}
	if t := d.r.thread; t.ParentID != "" && !blockingChild(t) && !backgroundChild(t) {
		// A resumable subagent's thread cannot be parked yet (its caller would not learn when the
		// decision comes): the call is answered, never run unapproved. A blocking child parks with
		// its parent; a background child parks alone; a sub-prompt's nested run parks with its
		// caller's run.
		return weft.Failure(fmt.Sprintf("Tool %q needs a person's approval, which a subagent cannot wait for; "+
			"the calling prompt must call it.", c.Name)), true, false
	}
	return dispatch.Decided(d.calls.Of(*c, msg.ID), c)
}

// startApproved marks an approved non-idempotent call running before it runs, as the transaction
// before a call does for calls that need no approval: a crash while it runs then answers it as
// interrupted instead of running it again.
func (d *dispatcher) startApproved(s *scope, msg *weft.Message, c weft.ToolCall) error {
	if !s.needsApproval(c.Name) {
		return nil
	}
	rec := d.calls.Of(c, msg.ID)
	if dispatch.ApprovalOf(rec).Status != dispatch.Approved || rec.Status != weft.CallPending || !d.markRunning(s, rec) {
		return nil
	}
	if err := d.r.tx(func(tx weft.Tx) error { return tx.PutToolCall(rec) }); err != nil {
		return err
	}
	d.calls.Note(rec)
	return nil
}

// backgroundChild tells whether a thread is a non-blocking subagent: it runs in a driver of its own
// and reports to its parent when it stops, so it can wait for a person on its own (its parent
// goes on) and report once the decided calls have run.
func backgroundChild(t *weft.Thread) bool {
	row, ok := children.Row(t)
	return ok && row["blocking"] == false
}

// blockingChild tells whether a thread is a blocking, non-resumable subagent: its parent's call
// waits for it, so it can wait for a person too (the parent parks with it).
func blockingChild(t *weft.Thread) bool {
	row, ok := children.Row(t)
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
	err = e.commit.Tx(ctx, target, nil, nil, func(tx weft.Tx) error {
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
	e.commit.Outside(ctx, Event{Type: "approval_decided", ThreadID: threadID, RootID: rootOf(t),
		Data: Fields{"call_id": callID, "name": rec.Name, "approved": d.Approve, "by": d.By}})
	if waiting > 0 {
		return false, nil
	}
	// A background subagent goes on in a driver of its own, which reports its outcome to the
	// parent when it stops, as the driver that started it would have.
	if child, err := e.store.Thread(ctx, target); err == nil && backgroundChild(child) {
		if a, owner, mode, ok := e.subagents.DriveArgs(child); ok {
			e.subagents.Drive(context.WithoutCancel(ctx), child, a, owner, mode, true)
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
	start, err := runstate.Read(ctx, e.store, threadID, false)
	if err != nil {
		return err
	}
	r, err := e.newRun(ctx, nil, weft.Fence{}, start)
	if err != nil {
		return err
	}
	r.ctx = ctx
	s, err := r.newScope(p, msg.Depth, msg.WrittenBy(), r.thread.Arguments)
	if err != nil {
		return err
	}
	if _, _, _, errText := r.tools.prepareCall(s, weft.ToolCall{ID: rec.CallID, Name: rec.Name, Arguments: string(args)}, false); errText != "" {
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
