package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/payload"
)

// Threads is the engine as the work on a thread's calls outside its run sees it — a person's
// decision, a client's result, a thread's client tools, a variables request: the store, the
// committer of the thread's transactions, and what goes on once a call is decided.
type Threads interface {
	// Store is the engine's store; Now its clock.
	Store() weft.Store
	Now() time.Time
	// Tx commits fn in a transaction of the thread through the committer: with redact, the rows
	// it writes are redacted of the thread's secrets.
	Tx(ctx context.Context, threadID string, redact bool, fn func(weft.Tx) error) error
	// CheckArguments validates a call's edited arguments as its run will: against the schema of
	// the tool as the call's prompt offers it (EInvalid, with the schema errors).
	CheckArguments(ctx context.Context, threadID string, rec *weft.ToolCallRecord, args json.RawMessage) error
	// Emit sends an event of thread t outside any run.
	Emit(ctx context.Context, t *weft.Thread, kind string, data payload.Payload)
	// DriveChild lets a background subagent go on in a driver of its own, which reports its
	// outcome to the parent when it stops; false: the child cannot be driven.
	DriveChild(ctx context.Context, child *weft.Thread) bool
	// Continue lets thread t's run go on now, while the engine serves.
	Continue(ctx context.Context, t *weft.Thread)
}

// CanAwait tells whether a run of thread t can wait for a person's decision: a root can; a
// blocking child parks with its parent, a background child parks alone; a resumable subagent's
// thread cannot yet (its caller would not learn when the decision comes).
func CanAwait(t *weft.Thread) bool {
	return t.ParentID == "" || blockingChild(t) || backgroundChild(t)
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

// Decide records a person's decision on a tool call waiting for approval (Engine.Decide). ready
// reports that no call of the reply waits any more: the run can go on — while the engine serves it
// goes on at once (Threads.Continue); a background subagent goes on in a driver of its own.
func Decide(ctx context.Context, h Threads, threadID, callID string, d Decision) (ready bool, err error) {
	store := h.Store()
	recs, err := store.ToolCalls(ctx, threadID)
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
		waiting, err := PendingApprovals(ctx, store, threadID)
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
	if err := Decidable(rec); err != nil {
		return false, err
	}
	if d.Approve && d.Arguments != nil {
		if err := h.CheckArguments(ctx, target, rec, d.Arguments); err != nil {
			return false, err
		}
	}
	a := d.State(h.Now().UTC())
	waiting := 0
	err = h.Tx(ctx, target, true, func(tx weft.Tx) error {
		// Read again under the thread's writer: two deciders of one call cannot both win.
		cur, err := store.ToolCalls(ctx, target, weft.CallAwaitingApproval)
		if err != nil {
			return err
		}
		up, others, err := DecideCall(rec, a, cur)
		waiting = others
		if err != nil {
			return err
		}
		return tx.PutToolCall(&up)
	})
	if err != nil {
		return false, err
	}
	t, err := store.Thread(ctx, threadID)
	if err != nil {
		return false, err
	}
	h.Emit(ctx, t, "approval_decided", payload.Fields{"call_id": callID, "name": rec.Name, "approved": d.Approve, "by": d.By})
	if waiting > 0 {
		return false, nil
	}
	// A background subagent goes on in a driver of its own, which reports its outcome to the
	// parent when it stops, as the driver that started it would have.
	if child, err := store.Thread(ctx, target); err == nil && backgroundChild(child) && h.DriveChild(ctx, child) {
		return true, nil
	}
	h.Continue(ctx, t)
	return true, nil
}

// PendingApprovals lists the tool calls that wait for a decision in a thread and in the blocking
// subagents it waits for (ThreadID tells whose), in call order per thread (Engine.PendingApprovals).
func PendingApprovals(ctx context.Context, store weft.Store, threadID string) ([]weft.ToolCallRecord, error) {
	recs, err := store.ToolCalls(ctx, threadID, weft.CallAwaitingApproval)
	if err != nil {
		return nil, fmt.Errorf("thread %s: %w", threadID, err)
	}
	for i := range recs {
		recs[i].ThreadID = threadID
	}
	kids, _, err := store.Threads(ctx, weft.ThreadQuery{ParentID: threadID, Status: weft.ThreadAwaitingApproval, Limit: -1})
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		if !blockingChild(k) && !backgroundChild(k) {
			continue
		}
		more, err := PendingApprovals(ctx, store, k.ID)
		if err != nil {
			return nil, err
		}
		recs = append(recs, more...)
	}
	return recs, nil
}

// SetClientTools replaces the thread's client tools (none clears them); CheckClientTools' errors
// (Engine.SetClientTools).
func SetClientTools(ctx context.Context, h Threads, threadID string, tools []ClientTool) error {
	if err := CheckClientTools(tools); err != nil {
		return err
	}
	if len(tools) == 0 {
		tools = nil
	}
	want, _ := json.Marshal(tools)
	return h.Tx(ctx, threadID, false, func(tx weft.Tx) error {
		cur, err := h.Store().Thread(ctx, threadID)
		if err != nil {
			return err
		}
		if have, _ := json.Marshal(ClientTools(cur)); bytes.Equal(have, want) {
			return nil
		}
		props := maps.Clone(cur.Properties)
		if props == nil {
			props = map[string]any{}
		}
		if tools == nil {
			delete(props, ClientToolsProperty)
		} else {
			var v any
			_ = json.Unmarshal(want, &v) // stored as plain JSON values, as a store gives them back
			props[ClientToolsProperty] = v
		}
		return tx.UpdateThread(weft.ThreadPatch{Properties: props})
	})
}

// DeliverToolResult answers a call of one of the thread's client tools that waits for its client
// (Engine.DeliverToolResult): the result is kept on the call's record and the call approved
// (Decide), so that the run goes on with it as the call's result.
func DeliverToolResult(ctx context.Context, h Threads, threadID, callID string, res weft.ToolResult, by string) (ready bool, err error) {
	store := h.Store()
	t, err := store.Thread(ctx, threadID)
	if err != nil {
		return false, err
	}
	if res.Status == "" {
		res.Status = weft.ToolSuccess
	}
	// Through the committer: the client's result is redacted like any row (a secret the client
	// echoes back never reaches the store).
	err = h.Tx(ctx, threadID, true, func(tx weft.Tx) error {
		recs, err := store.ToolCalls(ctx, threadID)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(recs, func(r weft.ToolCallRecord) bool { return r.CallID == callID })
		if i < 0 {
			return weft.Errorf(weft.ENotFound, "thread %s has no tool call %s", threadID, callID)
		}
		rec := recs[i]
		if !slices.ContainsFunc(ClientTools(t), func(c ClientTool) bool { return c.Name == rec.Name }) {
			return weft.Errorf(weft.EInvalid, "tool call %s is of %q, which is not a client tool of thread %s", callID, rec.Name, threadID)
		}
		if rec.Status != weft.CallAwaitingApproval {
			return weft.Errorf(weft.EConflict, "tool call %s is not waiting for its client's result (status %s)", callID, rec.Status)
		}
		if !KeepClientResult(&rec, res) {
			return nil // a result given before (a retry after a crash, or a race): the first stands
		}
		return tx.PutToolCall(&rec)
	})
	if err != nil {
		return false, err
	}
	return Decide(ctx, h, threadID, callID, Decision{Approve: true, By: by})
}

// FindEnvRequest reads a variables request of a parent thread; an unknown one is ENotFound.
func FindEnvRequest(ctx context.Context, h Threads, parentID, requestID string) (*StoredEnvRequest, error) {
	docs, err := h.Store().ExecState(ctx, parentID)
	if err != nil {
		return nil, err
	}
	return LoadEnvRequest(docs, parentID, requestID, h.Now())
}

// PendingEnvRequest returns a pending (or fulfilled) variables request of a parent thread; an
// expired one is ENotFound (Engine.EnvRequest).
func PendingEnvRequest(ctx context.Context, h Threads, parentID, requestID string) (*EnvRequest, error) {
	req, err := FindEnvRequest(ctx, h, parentID, requestID)
	if err != nil {
		return nil, err
	}
	if req.Status == "expired" {
		return nil, weft.Errorf(weft.ENotFound, "variables request %s has expired", requestID)
	}
	return &req.EnvRequest, nil
}

// ProvideEnv answers a variables request with env (Engine.ProvideEnv): create makes the child the
// request waits for, non-blocking (its entry says so), with env in its own thread layer, and
// returns it with the function that starts it; the request, stored fulfilled, names the child
// before it starts. Values still missing are EMissingVariables; an unknown or expired request is
// ENotFound; a fulfilled one is EConflict.
func ProvideEnv(ctx context.Context, h Threads, parentID, requestID string, env map[string]string,
	create func(req *StoredEnvRequest, entry weft.ToolEntry, env map[string]string) (child *weft.Thread, start func(), fail *weft.ToolResult, err error)) (*EnvFulfilled, error) {
	req, err := FindEnvRequest(ctx, h, parentID, requestID)
	if err != nil {
		return nil, err
	}
	switch req.Status {
	case "expired":
		return nil, weft.Errorf(weft.ENotFound, "variables request %s has expired", requestID)
	case "fulfilled":
		return nil, weft.Errorf(weft.EConflict, "variables request %s was already fulfilled", requestID)
	}
	if env == nil {
		env = map[string]string{}
	}
	// The child starts non-blocking (no call awaits it any more), and its registry row says so: a
	// restart recovers it like any non-blocking child, and later messages do not block.
	entry := req.Entry
	blocking := false
	entry.Blocking = &blocking
	child, start, fail, err := create(req, entry, env)
	if err != nil {
		return nil, err
	}
	if fail != nil {
		if fail.ErrorCode == "missing_required_variables" {
			return nil, &weft.Error{Code: weft.EMissingVariables, Message: fail.Error}
		}
		return nil, weft.Errorf(weft.EInternal, "%s", fail.Error)
	}
	req.Status, req.ChildID = "fulfilled", child.ID
	doc, _ := json.Marshal(req)
	if err := h.Tx(ctx, parentID, false, func(tx weft.Tx) error { return tx.SetExecState(EnvRequestKey(requestID), doc) }); err != nil {
		return nil, err
	}
	start()
	return &EnvFulfilled{RequestID: requestID, ChildThreadID: child.ID, Reference: child.ID, Status: "success"}, nil
}
