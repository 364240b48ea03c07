package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// Client tools are tools a thread's client runs itself — an AG-UI front end's tools. The thread
// keeps their definitions (its ClientToolsProperty), so they outlive a restart and apply to that
// thread only. The model is offered them after the prompt's own tools; a call of one waits as a
// call that needs approval does (the run stops awaiting_approval), until the client's result
// comes: the call is then approved, and the tool, which runs nothing, answers with the result kept
// on the call's record (KeepClientResult, ClientResult).

// ClientToolsProperty is the thread property holding the thread's client tools.
const ClientToolsProperty = "weft.client_tools"

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

// Args parses and checks the tool's parameter schema (nil = no arguments).
func (t ClientTool) Args() (*schema.Schema, error) {
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

// Tool returns the tool a call of t runs, with its checked arguments: it needs approval (the
// client's result approves it), may run again after a crash, and answers with result (the
// client's, ClientResult). ok is false when t's parameters do not check (they were checked when
// set).
func (t ClientTool) Tool(result weft.ToolHandler) (tool *weft.Tool, args *schema.Schema, ok bool) {
	args, err := t.Args()
	if err != nil {
		return nil, nil, false
	}
	desc := t.Description
	if desc == "" {
		desc = "Tool " + t.Name + " of the client."
	}
	return &weft.Tool{Name: t.Name, Description: desc, Args: args, Approval: weft.ApprovalRequired, Idempotent: true,
		Execute: result}, args, true
}

// ClientTools returns the thread's client tools (nil when none).
func ClientTools(t *weft.Thread) []ClientTool {
	v, ok := t.Properties[ClientToolsProperty]
	if !ok || v == nil {
		return nil
	}
	raw, _ := json.Marshal(v)
	var tools []ClientTool
	_ = json.Unmarshal(raw, &tools)
	return tools
}

// CheckClientTools checks a thread's new client tools: a name used twice or not of the allowed
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
		if _, err := t.Args(); err != nil {
			return weft.Errorf(weft.EInvalid, "tools[%d].parameters (tool %q): %v", i, t.Name, err)
		}
	}
	return nil
}

// KeepClientResult keeps res on the record of a call waiting for its client's result; of two
// results given for one call the first stands (kept false: the record is unchanged).
func KeepClientResult(rec *weft.ToolCallRecord, res weft.ToolResult) (kept bool) {
	m := map[string]any{}
	if len(rec.Meta) > 0 {
		_ = json.Unmarshal(rec.Meta, &m)
	}
	if _, given := m[clientResultMeta]; given {
		return false
	}
	m[clientResultMeta] = res
	rec.Meta, _ = json.Marshal(m)
	return true
}

// CallRecords lists a thread's tool-call records (weft.Store's ToolCalls).
type CallRecords interface {
	ToolCalls(ctx context.Context, threadID string, status ...weft.CallStatus) ([]weft.ToolCallRecord, error)
}

// ClientResult is what a client tool's call runs once approved: it answers with the result its
// client delivered, kept on the call's record in store.
func ClientResult(store CallRecords) weft.ToolHandler {
	return weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		c := st.Execution().ToolCall()
		recs, err := store.ToolCalls(ctx, st.ThreadID())
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
	})
}
