package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// Client tools are tools a thread's client runs itself — an AG-UI front end's tools. The thread
// keeps their definitions (SetClientTools), so they outlive a restart and apply to that thread
// only. The model is offered them after the prompt's own tools; a call of one waits as a call
// that needs approval does (the run stops awaiting_approval), until the client's result comes
// (DeliverToolResult): the call is then approved, and the tool, which runs nothing, answers with
// the result kept on the call's record.

// clientToolsProperty is the thread property holding the thread's client tools.
const clientToolsProperty = "weft.client_tools"

// clientResultMeta is the key of a call record's meta holding the result its client delivered.
const clientResultMeta = "client_result"

// ClientTool is a tool the thread's client runs.
type ClientTool struct {
	// Name is the tool's name as the model sees it: letters, digits, '_' and '-', 64 at most.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of its arguments (an object schema; absent = no arguments).
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

var clientToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// args parses and checks the tool's parameter schema (nil = no arguments).
func (t ClientTool) args() (*schema.Schema, error) {
	raw := bytes.TrimSpace(t.Parameters)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	s, err := schema.Parse(raw)
	if err != nil {
		return nil, err
	}
	if ps := schema.Check(s); len(ps) > 0 {
		msgs := make([]string, len(ps))
		for i, p := range ps {
			msgs[i] = p.String()
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	in, err := schema.Inline(s)
	if err != nil {
		return nil, err
	}
	in.Schema = ""
	return in, nil
}

// ClientTools returns the thread's client tools (nil when none).
func ClientTools(t *weft.Thread) []ClientTool {
	v, ok := t.Properties[clientToolsProperty]
	if !ok || v == nil {
		return nil
	}
	raw, _ := json.Marshal(v)
	var tools []ClientTool
	_ = json.Unmarshal(raw, &tools)
	return tools
}

// CheckClientTools checks tools as SetClientTools does: a name used twice or not of the allowed
// form, or parameters outside the schema subset Weft checks, are EInvalid, naming the tool.
func CheckClientTools(tools []ClientTool) error {
	seen := map[string]bool{}
	for i, t := range tools {
		if !clientToolName.MatchString(t.Name) {
			return weft.Errorf(weft.EInvalid, "tools[%d].name: %q must be 1 to 64 letters, digits, '_' or '-'", i, t.Name)
		}
		if seen[t.Name] {
			return weft.Errorf(weft.EInvalid, "tools[%d].name: %q is given twice", i, t.Name)
		}
		seen[t.Name] = true
		if _, err := t.args(); err != nil {
			return weft.Errorf(weft.EInvalid, "tools[%d].parameters (tool %q): %v", i, t.Name, err)
		}
	}
	return nil
}

// SetClientTools replaces the thread's client tools (none clears them); CheckClientTools' errors.
// The run that is going on offers the new set from its next step's scope on.
func (e *Engine) SetClientTools(ctx context.Context, threadID string, tools []ClientTool) error {
	if err := CheckClientTools(tools); err != nil {
		return err
	}
	if len(tools) == 0 {
		tools = nil
	}
	want, _ := json.Marshal(tools)
	return e.tx(ctx, threadID, nil, keep, func(tx weft.Tx) error {
		cur, err := e.store.Thread(ctx, threadID)
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
			delete(props, clientToolsProperty)
		} else {
			var v any
			_ = json.Unmarshal(want, &v) // stored as plain JSON values, as a store gives them back
			props[clientToolsProperty] = v
		}
		return tx.UpdateThread(weft.ThreadPatch{Properties: props})
	})
}

// DeliverToolResult answers a call of one of the thread's client tools that waits for its client:
// the result is kept on the call's record and the call approved, so that the run goes on with it
// as the call's result (nothing runs in the server). Of two results given for one call the first
// stands (a retry after a crash between the two writes completes it). ready is Decide's. A call that does not wait
// is EConflict, an unknown one ENotFound, and a call of a tool that is not a client tool EInvalid
// (a person decides it).
func (e *Engine) DeliverToolResult(ctx context.Context, threadID, callID string, res weft.ToolResult, by string) (ready bool, err error) {
	t, err := e.store.Thread(ctx, threadID)
	if err != nil {
		return false, err
	}
	if res.Status == "" {
		res.Status = weft.ToolSuccess
	}
	// Through the committer: the client's result is redacted like any row (a secret the client
	// echoes back never reaches the store).
	err = e.tx(ctx, threadID, nil, nil, func(tx weft.Tx) error {
		recs, err := e.store.ToolCalls(ctx, threadID)
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
		m := map[string]any{}
		if len(rec.Meta) > 0 {
			_ = json.Unmarshal(rec.Meta, &m)
		}
		if _, kept := m[clientResultMeta]; kept {
			return nil // a result given before (a retry after a crash, or a race): the first stands
		}
		m[clientResultMeta] = res
		rec.Meta, _ = json.Marshal(m)
		return tx.PutToolCall(&rec)
	})
	if err != nil {
		return false, err
	}
	return e.Decide(ctx, threadID, callID, Decision{Approve: true, By: by})
}

// clientResult is what a client tool's call runs once approved: the result its client delivered.
func (e *Engine) clientResult(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
	c := st.Execution().ToolCall()
	recs, err := e.store.ToolCalls(ctx, st.ThreadID())
	if err != nil {
		return weft.ToolResult{}, err
	}
	for _, rec := range recs {
		if rec.CallID != c.ID {
			continue
		}
		var m map[string]json.RawMessage
		_ = json.Unmarshal(rec.Meta, &m)
		var res weft.ToolResult
		if raw, ok := m[clientResultMeta]; ok && json.Unmarshal(raw, &res) == nil {
			return res, nil
		}
	}
	return weft.Failure(fmt.Sprintf("Tool %q runs in the client, which gave no result for this call.", c.Name)), nil
}

// offerClientTools offers a top-level scope the thread's client tools, after the prompt's own: a
// name the prompt already offers keeps the prompt's tool. shared: s.offered is the engine's kept
// tool set, copied before a change.
func (r *run) offerClientTools(s *scope, shared bool) {
	if s.depth != 0 || r.thread == nil {
		return
	}
	tools := ClientTools(r.thread)
	if len(tools) == 0 {
		return
	}
	if shared {
		s.offered, s.specs = maps.Clone(s.offered), slices.Clone(s.specs)
	}
	for _, ct := range tools {
		if _, dup := s.offered[ct.Name]; dup {
			continue
		}
		args, err := ct.args()
		if err != nil {
			continue // checked when set
		}
		desc := ct.Description
		if desc == "" {
			desc = "Tool " + ct.Name + " of the client."
		}
		t := &weft.Tool{Name: ct.Name, Description: desc, Args: args, Approval: weft.ApprovalRequired, Idempotent: true,
			Execute: weft.ToolFunc(r.e.clientResult)}
		o := &offered{entry: weft.ToolEntry{Name: ct.Name, Kind: weft.EntryTool}, target: weft.Target{Kind: weft.EntryTool, Name: ct.Name, Tool: t},
			spec: weft.ToolSpec{Name: ct.Name, Description: desc, Parameters: argsSchema(args)}}
		s.offered[ct.Name] = o
		s.specs = append(s.specs, o.spec)
	}
}
