package engine

import (
	"context"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/runstate"
)

// EnvRequest is a pending request for the variables a subagent needs before it can be created:
// what GET /api/threads/{parent}/variables/{request_id} shows.
type EnvRequest = dispatch.EnvRequest

// RequiredVar is a variable the requested subagent requires.
type RequiredVar = dispatch.RequiredVar

// EnvFulfilled is the outcome of providing a request's values: the child created and started.
type EnvFulfilled = dispatch.EnvFulfilled

// EnvRequest returns a pending (or fulfilled) variables request of a parent thread.
func (e *Engine) EnvRequest(ctx context.Context, parentID, requestID string) (*EnvRequest, error) {
	return dispatch.PendingEnvRequest(ctx, (*threadsHost)(e), parentID, requestID)
}

// ProvideEnv answers a variables request: the values go into the child's own
// thread layer, typed per declaration; with every required variable set the child is created and
// started non-blocking at once, its outcome reported to the parent. Still missing values are
// missing_required_variables; an unknown or expired request is not found; a fulfilled one is a
// conflict.
func (e *Engine) ProvideEnv(ctx context.Context, parentID, requestID string, env map[string]string) (*EnvFulfilled, error) {
	return dispatch.ProvideEnv(ctx, (*threadsHost)(e), parentID, requestID, env, func(req *dispatch.StoredEnvRequest, entry weft.ToolEntry, env map[string]string) (*weft.Thread, func(), *weft.ToolResult, error) {
		a, ok := e.reg.Agent(req.Agent)
		if !ok {
			return nil, nil, nil, weft.Errorf(weft.ENotFound, "agent %q is no longer defined", req.Agent)
		}
		start, err := runstate.Read(ctx, e.store, parentID, true)
		if err != nil {
			return nil, nil, nil, err
		}
		r, err := e.newRun(ctx, nil, weft.Fence{}, start)
		if err != nil {
			return nil, nil, nil, err
		}
		o := &offered{entry: entry, target: weft.Target{Kind: weft.EntryAgent, Name: a.Name, Agent: a}}
		s := &scope{side: req.OwnerSide, offered: map[string]*offered{}}
		child, fail := parentRun{r, s}.createChild(o, req.Args, weft.NewID("thr_"), env)
		resumable := entry.Resumable != nil && entry.Resumable.Enabled
		mode := children.Mode{Continuable: resumable, Explicit: resumable && entry.Resumable.ParentCommunication == "explicit"}
		return child, func() { e.subagents.Start(child, a, req.OwnerSide, mode) }, fail, nil
	})
}
