package dispatch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/vars"
)

// A call of a subagent whose required variables have no value does not create it: the parent
// thread keeps a request for the values (StoredEnvRequest, in its run-state documents under
// EnvRequestKey) and the call's error result names it; once a person provides the values the
// child is created and started.

// EnvRequestTTL is how long a pending subagent variables request stays answerable.
const EnvRequestTTL = 24 * time.Hour

// EnvRequestPrefix starts the run-state keys of variables requests.
const EnvRequestPrefix = "env_request/"

// EnvRequest is a pending request for the variables a subagent needs before it can be created:
// what GET /api/threads/{parent}/variables/{request_id} shows.
type EnvRequest struct {
	// RequestID names the request.
	RequestID string `json:"request_id"`
	// ParentThreadID is the thread whose call asked for the subagent.
	ParentThreadID string `json:"parent_thread_id"`
	// Agent is the subagent's.
	Agent string `json:"agent"`
	// Required are the variables the subagent requires.
	Required []RequiredVar `json:"required"`
	// Missing name those of them that have no value.
	Missing []string `json:"missing"`
	// Status is pending, fulfilled or expired.
	Status string `json:"status"`
	// ExpiresAt is when a pending request expires.
	ExpiresAt time.Time `json:"expires_at"`
}

// RequiredVar is a variable the requested subagent requires.
type RequiredVar struct {
	// Name is the variable's.
	Name string `json:"name"`
	// Type is its declared type.
	Type weft.VarType `json:"type"`
	// Description tells a person what value to give.
	Description string `json:"description"`
	// Scoped: the value belongs to the child's own thread layer.
	Scoped bool `json:"scoped"`
}

// EnvFulfilled is the outcome of providing a request's values: the child created and started.
type EnvFulfilled struct {
	// RequestID is the request's.
	RequestID string `json:"request_id"`
	// ChildThreadID is the child's thread, and Reference the reference its parent calls it by.
	ChildThreadID string `json:"child_thread_id"`
	Reference     string `json:"reference"`
	// Status is success.
	Status string `json:"status"`
}

// StoredEnvRequest is a request as kept in the parent's run-state documents, with what creating
// the child later needs.
type StoredEnvRequest struct {
	EnvRequest
	// Entry is the tool entry the subagent was called through.
	Entry weft.ToolEntry `json:"entry"`
	// Args are the call's validated arguments.
	Args map[string]any `json:"args"`
	// OwnerSide is the side whose call it was.
	OwnerSide weft.Side `json:"owner_side"`
	// ChildID is the child created once the request was fulfilled.
	ChildID string `json:"child_thread_id,omitempty"`
}

// EnvRequestKey is the run-state key of request id.
func EnvRequestKey(id string) string { return EnvRequestPrefix + id }

// NewEnvRequest returns a pending request, made at now, for the missing variables of agent,
// called through entry with args by side of thread parentID; decls are the agent's declared
// variables.
func NewEnvRequest(parentID, agent string, now time.Time, entry weft.ToolEntry, args map[string]any, side weft.Side,
	decls map[string]*vars.Declaration, missing []vars.MissingVar) StoredEnvRequest {
	req := StoredEnvRequest{EnvRequest: EnvRequest{RequestID: weft.NewID("envreq_"), ParentThreadID: parentID, Agent: agent,
		Status: "pending", ExpiresAt: now.Add(EnvRequestTTL)}, Entry: entry, Args: args, OwnerSide: side}
	for _, m := range missing {
		req.Missing = append(req.Missing, m.Name)
	}
	for _, n := range req.required(decls) {
		d := decls[n]
		req.Required = append(req.Required, RequiredVar{Name: n, Type: d.Type, Description: d.Description, Scoped: d.Scoped})
	}
	return req
}

// required returns the names of the required declarations, sorted.
func (req *StoredEnvRequest) required(decls map[string]*vars.Declaration) []string {
	names := make([]string, 0, len(decls))
	for n, d := range decls {
		if d.Required {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// Endpoint is the API path that answers the request.
func (req *StoredEnvRequest) Endpoint() string {
	return fmt.Sprintf("/api/threads/%s/variables/%s", req.ParentThreadID, req.RequestID)
}

// Result is the error result of the call that made the request: it names the request (error_code
// subagent_env_required).
func (req *StoredEnvRequest) Result() weft.ToolResult {
	endpoint := req.Endpoint()
	res := weft.Failure(fmt.Sprintf("Subagent %q needs values for: %s. Provide them via POST %s (or weft threads provide-env %s %s NAME=VALUE).",
		req.Agent, strings.Join(req.Missing, ", "), endpoint, req.ParentThreadID, req.RequestID))
	names := make([]string, len(req.Required))
	for i, rv := range req.Required {
		names[i] = rv.Name
	}
	res.ErrorCode = "subagent_env_required"
	res.ErrorData = map[string]any{"request_id": req.RequestID, "endpoint": endpoint, "required": names, "missing": req.Missing, "agent": req.Agent}
	return res
}

// LoadEnvRequest reads request requestID of thread parentID from the thread's run-state documents
// docs; an unknown one is ENotFound, and a pending one expired at now says so.
func LoadEnvRequest(docs map[string]json.RawMessage, parentID, requestID string, now time.Time) (*StoredEnvRequest, error) {
	raw, ok := docs[EnvRequestKey(requestID)]
	if !ok {
		return nil, weft.Errorf(weft.ENotFound, "no variables request %s on thread %s", requestID, parentID)
	}
	var req StoredEnvRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("variables request %s: %w", requestID, err)
	}
	if req.Status == "pending" && !now.Before(req.ExpiresAt) {
		req.Status = "expired"
	}
	return &req, nil
}

// RequestEnv stores a pending request for the missing variables of the subagent that entry, called
// with args on side, would create, and returns the error result that names it (error_code
// subagent_env_required).
func (d *Dispatcher) RequestEnv(agent string, entry weft.ToolEntry, side weft.Side, args map[string]any,
	decls map[string]*vars.Declaration, missing []vars.MissingVar) *weft.ToolResult {
	r := d.run
	req := NewEnvRequest(r.ThreadID(), agent, r.Now(), entry, args, side, decls, missing)
	doc, _ := json.Marshal(req)
	if err := r.Tx(func(tx weft.Tx) error { return tx.SetExecState(EnvRequestKey(req.RequestID), doc) }); err != nil {
		res := weft.Failure("Subagent could not be created: " + r.Redactor().Error(err))
		return &res
	}
	r.Emit("env_required", payload.Fields{"request_id": req.RequestID, "agent": req.Agent, "missing": req.Missing, "endpoint": req.Endpoint()})
	res := req.Result()
	return &res
}
