package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/vars"
)

// envRequestTTL is how long a pending subagent variables request stays answerable.
const envRequestTTL = 24 * time.Hour

// EnvRequest is a pending request for the variables a subagent needs before it can be created
// what GET /api/threads/{parent}/variables/{request_id} shows.
type EnvRequest struct {
	RequestID      string        `json:"request_id"`
	ParentThreadID string        `json:"parent_thread_id"`
	Agent          string        `json:"agent"`
	Required       []RequiredVar `json:"required"`
	Missing        []string      `json:"missing"`
	// Status is pending, fulfilled or expired.
	Status    string    `json:"status"`
	ExpiresAt time.Time `json:"expires_at"`
}

// RequiredVar is a variable the requested subagent requires.
type RequiredVar struct {
	Name        string       `json:"name"`
	Type        weft.VarType `json:"type"`
	Description string       `json:"description"`
	Scoped      bool         `json:"scoped"`
}

// EnvFulfilled is the outcome of providing a request's values: the child created and started.
type EnvFulfilled struct {
	RequestID     string `json:"request_id"`
	ChildThreadID string `json:"child_thread_id"`
	Reference     string `json:"reference"`
	Status        string `json:"status"`
}

// storedEnvRequest is a request as kept in the parent's run-state documents, with what creating
// the child later needs.
type storedEnvRequest struct {
	EnvRequest
	Entry     weft.ToolEntry `json:"entry"`
	Args      map[string]any `json:"args"`
	OwnerSide weft.Side      `json:"owner_side"`
	ChildID   string         `json:"child_thread_id,omitempty"`
}

func envRequestKey(id string) string { return "env_request/" + id }

// requestEnv stores a pending request for a subagent's missing variables and returns the error
// result that names it (error_code subagent_env_required).
func (r *run) requestEnv(s *scope, o *offered, args map[string]any, decls map[string]*vars.Declaration, missing []vars.MissingVar) *weft.ToolResult {
	req := storedEnvRequest{EnvRequest: EnvRequest{RequestID: weft.NewID("envreq_"), ParentThreadID: r.thread.ID, Agent: o.target.Agent.Name,
		Status: "pending", ExpiresAt: r.now().Add(envRequestTTL)}, Entry: o.entry, Args: args, OwnerSide: s.side}
	for _, m := range missing {
		req.Missing = append(req.Missing, m.Name)
	}
	names := make([]string, 0, len(decls))
	for n, d := range decls {
		if d.Required {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		d := decls[n]
		req.Required = append(req.Required, RequiredVar{Name: n, Type: d.Type, Description: d.Description, Scoped: d.Scoped})
	}
	doc, _ := json.Marshal(req)
	if err := r.tx(func(tx weft.Tx) error { return tx.SetExecState(envRequestKey(req.RequestID), doc) }); err != nil {
		return failure("Subagent could not be created: " + r.red.Error(err))
	}
	endpoint := fmt.Sprintf("/api/threads/%s/variables/%s", r.thread.ID, req.RequestID)
	r.emit("env_required", Fields{"request_id": req.RequestID, "agent": req.Agent, "missing": req.Missing, "endpoint": endpoint})
	res := weft.Failure(fmt.Sprintf("Subagent %q needs values for: %s. Provide them via POST %s (or weft threads provide-env %s %s NAME=VALUE).",
		req.Agent, strings.Join(req.Missing, ", "), endpoint, r.thread.ID, req.RequestID))
	res.ErrorCode = "subagent_env_required"
	res.ErrorData = map[string]any{"request_id": req.RequestID, "endpoint": endpoint, "required": names, "missing": req.Missing, "agent": req.Agent}
	return &res
}

// loadEnvRequest reads a request of a parent thread; an unknown one is not found.
func (e *Engine) loadEnvRequest(ctx context.Context, parentID, requestID string) (*storedEnvRequest, error) {
	docs, err := e.store.ExecState(ctx, parentID)
	if err != nil {
		return nil, err
	}
	raw, ok := docs[envRequestKey(requestID)]
	if !ok {
		return nil, weft.Errorf(weft.ENotFound, "no variables request %s on thread %s", requestID, parentID)
	}
	var req storedEnvRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("variables request %s: %w", requestID, err)
	}
	if req.Status == "pending" && !e.clock.Now().Before(req.ExpiresAt) {
		req.Status = "expired"
	}
	return &req, nil
}

// EnvRequest returns a pending (or fulfilled) variables request of a parent thread.
func (e *Engine) EnvRequest(ctx context.Context, parentID, requestID string) (*EnvRequest, error) {
	req, err := e.loadEnvRequest(ctx, parentID, requestID)
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
	req, err := e.loadEnvRequest(ctx, parentID, requestID)
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
	r, err := e.loadRun(ctx, parentID)
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
	child, fail := r.createChild(s, o, req.Args, weft.NewID("thr_"), env)
	if fail != nil {
		if fail.ErrorCode == "missing_required_variables" {
			return nil, &weft.Error{Code: weft.EMissingVariables, Message: fail.Error}
		}
		return nil, weft.Errorf(weft.EInternal, "%s", fail.Error)
	}
	req.Status, req.ChildID = "fulfilled", child.ID
	doc, _ := json.Marshal(req)
	if err := e.tx(ctx, parentID, nil, keep, func(tx weft.Tx) error { return tx.SetExecState(envRequestKey(requestID), doc) }); err != nil {
		return nil, err
	}
	resumable := req.Entry.Resumable != nil && req.Entry.Resumable.Enabled
	explicit := resumable && req.Entry.Resumable.ParentCommunication == "explicit"
	e.subagents.Start(child, a, req.OwnerSide, children.Mode{Continuable: resumable, Explicit: explicit})
	return &EnvFulfilled{RequestID: requestID, ChildThreadID: child.ID, Reference: child.ID, Status: "success"}, nil
}
