package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/journal"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/runstate"
)

// Decision is a person's answer to a tool call that waits for approval.
type Decision = dispatch.Decision

// ApprovalState is the approval state of a tool call, kept in its record's meta under "approval".
type ApprovalState = dispatch.ApprovalState

// errAwaitApproval stops a run before a call that waits for a decision.
var errAwaitApproval = dispatch.ErrAwaitApproval

// ApprovalOf reads a call record's approval state (zero when none).
func ApprovalOf(rec *weft.ToolCallRecord) ApprovalState { return dispatch.ApprovalOf(rec) }

// Decide records a person's decision on a tool call waiting for approval. ready reports that no
// call of the reply waits any more: the run can go on — while the engine serves (Serve) it
// resumes at once; otherwise the caller continues it (Converse or Ask with no message). Edited
// arguments that fail the tool's schema are refused (EInvalid, with the schema errors) and the
// call keeps waiting. An unknown call is ENotFound; a call already decided, or not waiting, is
// EConflict.
func (e *Engine) Decide(ctx context.Context, threadID, callID string, d Decision) (ready bool, err error) {
	return dispatch.Decide(ctx, (*threadsHost)(e), threadID, callID, d)
}

// PendingApprovals lists the tool calls that wait for a decision in a thread and in the blocking
// subagents it waits for (ThreadID tells whose), in call order per thread; Decide takes them
// through the thread.
func (e *Engine) PendingApprovals(ctx context.Context, threadID string) ([]weft.ToolCallRecord, error) {
	return dispatch.PendingApprovals(ctx, e.store, threadID)
}

// threadsHost is the engine as engine/dispatch's work on a thread's calls outside its run sees it
// (dispatch.Threads): a conversion of *Engine.
type threadsHost Engine

func (h *threadsHost) Store() weft.Store { return h.store }
func (h *threadsHost) Now() time.Time    { return h.clock.Now() }

func (h *threadsHost) Tx(ctx context.Context, threadID string, redact bool, fn func(weft.Tx) error) error {
	if redact {
		return h.commit.Tx(ctx, threadID, nil, nil, fn)
	}
	return h.commit.Tx(ctx, threadID, nil, journal.NoText, fn)
}

func (h *threadsHost) Emit(ctx context.Context, t *weft.Thread, kind string, data payload.Payload) {
	h.commit.Outside(ctx, Event{Type: kind, ThreadID: t.ID, RootID: rootOf(t), Data: data})
}

func (h *threadsHost) DriveChild(ctx context.Context, child *weft.Thread) bool {
	a, owner, mode, ok := h.subagents.DriveArgs(child)
	if ok {
		h.subagents.Drive(context.WithoutCancel(ctx), child, a, owner, mode, true)
	}
	return ok
}

func (h *threadsHost) Continue(ctx context.Context, t *weft.Thread) {
	if h.sched.Serving() {
		h.sched.Continue(ctx, t.ID, rootOf(t), "")
	}
}

// CheckArguments validates edited arguments as the run will: against the schema of the tool as
// the call's prompt offers it (prepareCall, in a scope of that prompt).
func (h *threadsHost) CheckArguments(ctx context.Context, threadID string, rec *weft.ToolCallRecord, args json.RawMessage) error {
	e := (*Engine)(h)
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
	if _, errText := (*toolRun)(r).prepareCall(s, weft.ToolCall{ID: rec.CallID, Name: rec.Name, Arguments: string(args)}, false); errText != "" {
		return weft.Errorf(weft.EInvalid, "%s", errText)
	}
	return nil
}
