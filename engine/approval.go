package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weft-agents/weft"
)

// Decision is a person's answer to a tool call that waits for approval.
type Decision struct {
	// Approve runs the call; false denies it.
	Approve bool
	// Arguments, when approving, replace the model's arguments (a JSON object, validated against
	// the tool's schema); nil keeps them.
	Arguments json.RawMessage
	// Reason says why a call is denied; the model reads it in the call's error result.
	Reason string
	// By names who decided (a user id); it is kept on the call record.
	By string
}

// ApprovalState is the approval state of a tool call, kept in its record's meta under "approval".
type ApprovalState struct {
	// Status is awaiting, approved or denied ("" for a call that needs no approval).
	Status string `json:"status"`
	// Arguments are the edited arguments an approval ran the call with (nil = the model's).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Reason is a denial's reason.
	Reason string `json:"reason,omitempty"`
	// By and At say who decided, and when.
	By string     `json:"by,omitempty"`
	At *time.Time `json:"at,omitempty"`
}

// The approval states.
const (
	approvalAwaiting = "awaiting"
	approvalApproved = "approved"
	approvalDenied   = "denied"
)

// errAwaitApproval stops a run before a call that waits for a decision.
var errAwaitApproval = errors.New("tool calls await approval")

// ApprovalOf reads a call record's approval state (zero when none).
func ApprovalOf(rec *weft.ToolCallRecord) ApprovalState {
	var m struct {
		Approval ApprovalState `json:"approval"`
	}
	if rec != nil && len(rec.Meta) > 0 {
		_ = json.Unmarshal(rec.Meta, &m)
	}
	return m.Approval
}

// withApproval returns the record's meta with its approval state set (other keys kept).
func withApproval(meta json.RawMessage, a ApprovalState) json.RawMessage {
	m := map[string]any{}
	if len(meta) > 0 {
		_ = json.Unmarshal(meta, &m)
	}
	m["approval"] = a
	b, _ := json.Marshal(m)
	return b
}

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

// awaitApproval stops before call i of msg's calls: every call from i on that needs approval and
// has no decision is stored awaiting_approval, with an approval_required event each, in one
// transaction. The calls after them keep their order: they run once all are decided. In a
// sub-prompt's nested run, the same transaction marks the sub-prompt calls that run it
// (parkedCallers), so that the resumed run goes on with the nested run.
func (r *run) awaitApproval(s *scope, msg *weft.Message, calls []weft.ToolCall) error {
	var recs []*weft.ToolCallRecord
	for _, c := range calls {
		if !s.needsApproval(c.Name) {
			continue
		}
		rec := r.tools.recordOf(c, msg.ID)
		a := ApprovalOf(rec)
		if a.Status == approvalApproved || a.Status == approvalDenied {
			continue
		}
		rec.Status, rec.StartedAt = weft.CallAwaitingApproval, nil
		rec.Meta = withApproval(rec.Meta, ApprovalState{Status: approvalAwaiting})
		recs = append(recs, rec)
		if r.e.observed() {
			r.emit("approval_required", Fields{"call_id": c.ID, "name": c.Name, "arguments": r.red.String(c.Arguments),
				"message_id": msg.ID, "depth": s.depth})
		}
	}
	recs = append(recs, r.parkedCallers(s)...)
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
		r.tools.noteCall(rec)
	}
	return errAwaitApproval
}

// decided applies a stored decision to a call about to run: approved calls run with the edited
// arguments, if any; a denied call gets its error result instead of running (done = true).
func (r *run) decided(s *scope, msg *weft.Message, c *weft.ToolCall) (res weft.ToolResult, done, waiting bool) {
	if !s.needsApproval(c.Name) {
		return weft.ToolResult{}, false, false
	}
	if r.thread.ParentID != "" && !blockingChild(r.thread) && !backgroundChild(r.thread) {
		// A resumable subagent's thread cannot be parked yet (its caller would not learn when the
		// decision comes): the call is answered, never run unapproved. A blocking child parks with
		// its parent; a background child parks alone; a sub-prompt's nested run parks with its
		// caller's run.
		return weft.Failure(fmt.Sprintf("Tool %q needs a person's approval, which a subagent cannot wait for; "+
			"the calling prompt must call it.", c.Name)), true, false
	}
	a := ApprovalOf(r.tools.recordOf(*c, msg.ID))
	switch a.Status {
	case approvalApproved:
		if len(a.Arguments) > 0 {
			c.Arguments = string(a.Arguments)
		}
		return weft.ToolResult{}, false, false
	case approvalDenied:
		reason := a.Reason
		if reason == "" {
			reason = "the call was not approved"
		}
		return weft.Failure("denied: " + reason), true, false
	}
	return weft.ToolResult{}, false, true
}

// startApproved marks an approved non-idempotent call running before it runs, as the transaction
// before a call does for calls that need no approval: a crash while it runs then answers it as
// interrupted instead of running it again.
func (r *run) startApproved(s *scope, msg *weft.Message, c weft.ToolCall) error {
	if !s.needsApproval(c.Name) {
		return nil
	}
	rec := r.tools.recordOf(c, msg.ID)
	if ApprovalOf(rec).Status != approvalApproved || rec.Status != weft.CallPending || !r.tools.markRunning(s, rec) {
		return nil
	}
	if err := r.tx(func(tx weft.Tx) error { return tx.PutToolCall(rec) }); err != nil {
		return err
	}
	r.tools.noteCall(rec)
	return nil
}

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
	if rec.Status != weft.CallAwaitingApproval {
		if a := ApprovalOf(rec); a.Status == approvalApproved || a.Status == approvalDenied {
			return false, weft.Errorf(weft.EConflict, "tool call %s was already %s", callID, a.Status)
		}
		return false, weft.Errorf(weft.EConflict, "tool call %s is not waiting for approval (status %s)", callID, rec.Status)
	}
	if d.Approve && d.Arguments != nil {
		if err := e.checkEditedArguments(ctx, target, rec, d.Arguments); err != nil {
			return false, err
		}
	}
	now := e.clock.Now().UTC()
	a := ApprovalState{Status: approvalDenied, Reason: d.Reason, By: d.By, At: &now}
	if d.Approve {
		a = ApprovalState{Status: approvalApproved, Arguments: d.Arguments, By: d.By, At: &now}
	}
	waiting := 0
	err = e.tx(ctx, target, nil, nil, func(tx weft.Tx) error {
		// Read again under the thread's writer: two deciders of one call cannot both win.
		cur, err := e.store.ToolCalls(ctx, target, weft.CallAwaitingApproval)
		if err != nil {
			return err
		}
		found := false
		waiting = 0
		for _, c := range cur {
			switch {
			case c.CallID == callID:
				found = true
			case c.MessageID == rec.MessageID:
				waiting++
			}
		}
		if !found {
			return weft.Errorf(weft.EConflict, "tool call %s was decided meanwhile", callID)
		}
		up := *rec
		up.Status = weft.CallPending
		up.Meta = withApproval(rec.Meta, a)
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
