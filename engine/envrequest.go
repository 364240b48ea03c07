package engine

import (
	"context"
	"encoding/json"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/journal"
	"github.com/weft-agents/weft/engine/runstate"
	"github.com/weft-agents/weft/engine/vars"
)

// EnvRequest is a pending request for the variables a subagent needs before it can be created:
// what GET /api/threads/{parent}/variables/{request_id} shows.
type EnvRequest = dispatch.EnvRequest

// RequiredVar is a variable the requested subagent requires.
type RequiredVar = dispatch.RequiredVar

// EnvFulfilled is the outcome of providing a request's values: the child created and started.
type EnvFulfilled = dispatch.EnvFulfilled

// requestEnv stores a pending request for a subagent's missing variables and returns the error
// result that names it (error_code subagent_env_required).
func (d *dispatcher) requestEnv(s *scope, o *offered, args map[string]any, decls map[string]*vars.Declaration, missing []vars.MissingVar) *weft.ToolResult {
	r := d.r
	req := dispatch.NewEnvRequest(r.thread.ID, o.target.Agent.Name, r.now(), o.entry, args, s.side, decls, missing)
	doc, _ := json.Marshal(req)
	if err := r.tx(func(tx weft.Tx) error { return tx.SetExecState(dispatch.EnvRequestKey(req.RequestID), doc) }); err != nil {
		return failure("Subagent could not be created: " + r.red.Error(err))
	}
	r.journal.Emit("env_required", Fields{"request_id": req.RequestID, "agent": req.Agent, "missing": req.Missing, "endpoint": req.Endpoint()})
	res := req.Result()
	return &res
}

// loadEnvRequest reads a request of a parent thread; an unknown one is not found.
func loadEnvRequest(ctx context.Context, e *Engine, parentID, requestID string) (*dispatch.StoredEnvRequest, error) {
	docs, err := e.store.ExecState(ctx, parentID)
	if err != nil {
		return nil, err
	}
	return dispatch.LoadEnvRequest(docs, parentID, requestID, e.clock.Now())
}

// EnvRequest returns a pending (or fulfilled) variables request of a parent thread.
func (e *Engine) EnvRequest(ctx context.Context, parentID, requestID string) (*EnvRequest, error) {
	req, err := loadEnvRequest(ctx, e, parentID, requestID)
	if err != nil {
		return nil, err
	}
	if req.Status == "expired" {
		return nil, weft.Errorf(weft.ENotFound, "variables request %s has expired", requestID)
	}
	return &req.EnvRequest, nil
}

// ProvideEnv answers a variables request: the values go into the child's own
// thread layer, typed per declaration; with every required variable set the child is created and
// started non-blocking at once, its outcome reported to the parent. Still missing values are
// missing_required_variables; an unknown or expired request is not found; a fulfilled one is a
// conflict.
func (e *Engine) ProvideEnv(ctx context.Context, parentID, requestID string, env map[string]string) (*EnvFulfilled, error) {
	req, err := loadEnvRequest(ctx, e, parentID, requestID)
	if err != nil {
		return nil, err
	}
	switch req.Status {
	case "expired":
		return nil, weft.Errorf(weft.ENotFound, "variables request %s has expired", requestID)
	case "fulfilled":
		return nil, weft.Errorf(weft.EConflict, "variables request %s was already fulfilled", requestID)
	}
	a, ok := e.reg.Agent(req.Agent)
	if !ok {
		return nil, weft.Errorf(weft.ENotFound, "agent %q is no longer defined", req.Agent)
	}
	start, err := runstate.Read(ctx, e.store, parentID, true)
	if err != nil {
		return nil, err
	}
	r, err := e.newRun(ctx, nil, weft.Fence{}, start)
	if err != nil {
		return nil, err
	}
	if env == nil {
		env = map[string]string{}
	}
	// The child starts non-blocking (no call awaits it any more), and its registry row says so: a
	// restart recovers it like any non-blocking child (Recover), and later messages do not block.
	entry := req.Entry
	entry.Blocking = ptr(false)
	o := &offered{entry: entry, target: weft.Target{Kind: weft.EntryAgent, Name: a.Name, Agent: a}}
	s := &scope{side: req.OwnerSide, offered: map[string]*offered{}}
	child, fail := parentRun{r, s}.createChild(o, req.Args, weft.NewID("thr_"), env)
	if fail != nil {
		if fail.ErrorCode == "missing_required_variables" {
			return nil, &weft.Error{Code: weft.EMissingVariables, Message: fail.Error}
		}
		return nil, weft.Errorf(weft.EInternal, "%s", fail.Error)
	}
	req.Status, req.ChildID = "fulfilled", child.ID
	doc, _ := json.Marshal(req)
	if err := e.commit.Tx(ctx, parentID, nil, journal.NoText, func(tx weft.Tx) error { return tx.SetExecState(dispatch.EnvRequestKey(requestID), doc) }); err != nil {
		return nil, err
	}
	resumable := req.Entry.Resumable != nil && req.Entry.Resumable.Enabled
	explicit := resumable && req.Entry.Resumable.ParentCommunication == "explicit"
	e.subagents.Start(child, a, req.OwnerSide, children.Mode{Continuable: resumable, Explicit: explicit})
	return &EnvFulfilled{RequestID: requestID, ChildThreadID: child.ID, Reference: child.ID, Status: "success"}, nil
}
