package children

import (
	"errors"
	"testing"

	"github.com/weft-agents/weft"
)

// TestReadNested: a parked nested run's rows are those at its depth under its tool message, in
// order; its last reply's calls without a result are pending, and the calls it ran come back with
// the arguments a person approved and their results, shaped into the sub-prompt's result.
func TestReadNested(t *testing.T) {
	call := func(id, name string) weft.ToolCall { return weft.ToolCall{ID: id, Name: name, Arguments: `{}`} }
	rows := []weft.Message{
		{Role: weft.RoleUser, Depth: 1, ParentID: "m_res", Content: "task"},
		{Role: weft.RoleAssistant, Depth: 1, ParentID: "m_res", Prompt: "clerk", ToolCalls: []weft.ToolCall{call("c1", "lookup")}},
		{Role: weft.RoleTool, Depth: 1, ParentID: "m_res", ToolCallID: "c1", ToolStatus: weft.ToolSuccess, Content: "found"},
		{Role: weft.RoleAssistant, Depth: 0, Prompt: "assistant", Content: "another scope"},
		{Role: weft.RoleAssistant, Depth: 1, ParentID: "m_other", Prompt: "clerk", Content: "another call's run"},
		{Role: weft.RoleAssistant, Depth: 1, ParentID: "m_res", Prompt: "clerk", ToolCalls: []weft.ToolCall{call("c2", "refund"), call("c3", "notify")}},
		{Role: weft.RoleTool, Depth: 1, ParentID: "m_res", ToolCallID: "c2", ToolStatus: weft.ToolError, Content: "Failed to execute tool: no funds"},
	}
	n := ReadNested(rows, 1, "m_res")
	if len(n.Rows) != 5 || n.Replies != 2 || n.Last == nil || n.Last.ToolCalls[0].ID != "c2" {
		t.Fatalf("nested %+v", n)
	}
	if len(n.Pending) != 1 || n.Pending[0].ID != "c3" {
		t.Errorf("pending %+v", n.Pending)
	}
	calls := SubCalls(n.Rows, map[string]string{"c2": `{"to":"me"}`})
	if len(calls) != 2 || calls[0].Response != "found" || calls[1].Call.Arguments != `{"to":"me"}` || calls[1].Result.Error != "no funds" {
		t.Fatalf("calls %+v", calls)
	}
	got := SubPromptResult("clerk", weft.ToolEntry{}, "done", calls, nil, nil)
	want := "done\n\nTool Executions:\nTool Call: lookup({})\nTool Response: found\nTool Call: refund({\"to\":\"me\"})\nTool Response: Failed to execute tool: no funds\n\nErrors:\nrefund: no funds"
	if got.Status != weft.ToolSuccess || got.Result != want {
		t.Errorf("result %+v", got)
	}
	failed := SubPromptResult("clerk", weft.ToolEntry{}, "", nil, errors.New("secret boom"), func(error) string { return "[redacted]" })
	if failed.Status != weft.ToolError || failed.Error != `Sub-prompt "clerk" failed: [redacted]` {
		t.Errorf("failure %+v", failed)
	}
}

// TestCallRef: a blocking call's record names its child in its metadata; other metadata names
// none.
func TestCallRef(t *testing.T) {
	for meta, want := range map[string]string{`{"subagent_ref":"thr_1","approval":{}}`: "thr_1", `{"approval":{}}`: "", ``: "", `not json`: ""} {
		if got := CallRef([]byte(meta)); got != want {
			t.Errorf("CallRef(%q) = %q, want %q", meta, got, want)
		}
	}
}
