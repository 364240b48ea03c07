package dispatch

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/payload"
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
	// Awaiting: the call waits for a decision.
	Awaiting = "awaiting"
	// Approved: the call runs, with the edited arguments if any.
	Approved = "approved"
	// Denied: the call is answered with the denial's reason and never runs.
	Denied = "denied"
)

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

// WithApproval returns the record's meta with its approval state set (other keys kept).
func WithApproval(meta json.RawMessage, a ApprovalState) json.RawMessage {
	m := map[string]any{}
	if len(meta) > 0 {
		_ = json.Unmarshal(meta, &m)
	}
	m["approval"] = a
	b, _ := json.Marshal(m)
	return b
}

// Decided returns what a stored decision makes of a call about to run: approved, c's arguments
// become the edited ones, if any; denied, res is its error result and the call does not run
// (done); with no decision yet the call waits (waiting).
func Decided(rec *weft.ToolCallRecord, c *weft.ToolCall) (res weft.ToolResult, done, waiting bool) {
	a := ApprovalOf(rec)
	switch a.Status {
	case Approved:
		if len(a.Arguments) > 0 {
			c.Arguments = string(a.Arguments)
		}
		return weft.ToolResult{}, false, false
	case Denied:
		reason := a.Reason
		if reason == "" {
			reason = "the call was not approved"
		}
		return weft.Failure("denied: " + reason), true, false
	}
	return weft.ToolResult{}, false, true
}

// Decidable reports why a person cannot decide call rec now (EConflict: it was decided already,
// or does not wait for approval), or nil.
func Decidable(rec *weft.ToolCallRecord) error {
	if rec.Status == weft.CallAwaitingApproval {
		return nil
	}
	if a := ApprovalOf(rec); a.Status == Approved || a.Status == Denied {
		return weft.Errorf(weft.EConflict, "tool call %s was already %s", rec.CallID, a.Status)
	}
	return weft.Errorf(weft.EConflict, "tool call %s is not waiting for approval (status %s)", rec.CallID, rec.Status)
}

// State is the approval state d gives a call, decided at at.
func (d Decision) State(at time.Time) ApprovalState {
	if d.Approve {
		return ApprovalState{Status: Approved, Arguments: d.Arguments, By: d.By, At: &at}
	}
	return ApprovalState{Status: Denied, Reason: d.Reason, By: d.By, At: &at}
}

// DecideCall returns rec once a decides it: pending again, to run (or be answered, when denied) when
// its run goes on. waiting are the thread's calls that wait for approval, read under the thread's
// writer: rec must be among them (else EConflict: it was decided meanwhile), and others counts
// those of rec's reply still waiting besides it.
func DecideCall(rec *weft.ToolCallRecord, a ApprovalState, waiting []weft.ToolCallRecord) (up weft.ToolCallRecord, others int, err error) {
	found := false
	for _, c := range waiting {
		switch {
		case c.CallID == rec.CallID:
			found = true
		case c.MessageID == rec.MessageID:
			others++
		}
	}
	if !found {
		return weft.ToolCallRecord{}, others, weft.Errorf(weft.EConflict, "tool call %s was decided meanwhile", rec.CallID)
	}
	up = *rec
	up.Status = weft.CallPending
	up.Meta = WithApproval(rec.Meta, a)
	return up, others, nil
}

// awaitApproval stops before call i of msg's calls: every call from i on that needs approval and
// has no decision is stored awaiting_approval, with an approval_required event each, in one
// transaction. The calls after them keep their order: they run once all are decided. In a
// sub-prompt's nested run, the same transaction marks the sub-prompt calls that run it
// (Run.ParkedCallers), so that the resumed run goes on with the nested run.
func (d *Dispatcher) awaitApproval(s Scope, msg *weft.Message, calls []weft.ToolCall) error {
	r := d.run
	var recs []*weft.ToolCallRecord
	for _, c := range calls {
		if !s.NeedsApproval(c.Name) {
			continue
		}
		rec := d.Calls.Of(c, msg.ID)
		a := ApprovalOf(rec)
		if a.Status == Approved || a.Status == Denied {
			continue
		}
		rec.Status, rec.StartedAt = weft.CallAwaitingApproval, nil
		rec.Meta = WithApproval(rec.Meta, ApprovalState{Status: Awaiting})
		recs = append(recs, rec)
		if r.Observed() {
			r.Emit("approval_required", payload.Fields{"call_id": c.ID, "name": c.Name, "arguments": r.Redactor().String(c.Arguments),
				"message_id": msg.ID, "depth": s.Depth()})
		}
	}
	recs = append(recs, r.ParkedCallers(s)...)
	err := r.Tx(func(tx weft.Tx) error {
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
		d.Calls.Note(rec)
	}
	return ErrAwaitApproval
}

// ApplyDecision applies a stored decision to a call of s about to run: approved calls run with the edited
// arguments, if any; a denied call gets its error result instead of running (done = true).
// waiting: the call waits for a decision.
func (d *Dispatcher) ApplyDecision(s Scope, msg *weft.Message, c *weft.ToolCall) (res weft.ToolResult, done, waiting bool) {
	if !s.NeedsApproval(c.Name) {
		return weft.ToolResult{}, false, false
	}
	return d.applyDecision(msg, c)
}

// waits tells whether c, a call that needs approval, waits for a decision (ApplyDecision's waiting).
func (d *Dispatcher) waits(msg *weft.Message, c *weft.ToolCall) bool {
	_, _, waiting := d.applyDecision(msg, c)
	return waiting
}

// applyDecision is ApplyDecision for a call that needs approval.
func (d *Dispatcher) applyDecision(msg *weft.Message, c *weft.ToolCall) (res weft.ToolResult, done, waiting bool) {
	if !d.run.CanAwait() {
		// A resumable subagent's thread cannot be parked yet (its caller would not learn when the
		// decision comes): the call is answered, never run unapproved. A blocking child parks with
		// its parent; a background child parks alone; a sub-prompt's nested run parks with its
		// caller's run.
		return weft.Failure(fmt.Sprintf("Tool %q needs a person's approval, which a subagent cannot wait for; "+
			"the calling prompt must call it.", c.Name)), true, false
	}
	return Decided(d.Calls.Of(*c, msg.ID), c)
}

// startApproved marks an approved non-idempotent call running before it runs, as the transaction
// before a call does for calls that need no approval: a crash while it runs then answers it as
// interrupted instead of running it again. c's tool needs approval.
func (d *Dispatcher) startApproved(s Scope, msg *weft.Message, c weft.ToolCall) error {
	rec := d.Calls.Of(c, msg.ID)
	if ApprovalOf(rec).Status != Approved || rec.Status != weft.CallPending || !MarksRunning(rec, true) {
		return nil
	}
	now := d.run.Now()
	rec.Status, rec.StartedAt = weft.CallRunning, &now
	if err := d.run.Tx(func(tx weft.Tx) error { return tx.PutToolCall(rec) }); err != nil {
		return err
	}
	d.Calls.Note(rec)
	return nil
}
