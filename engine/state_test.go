package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

func TestStateAPI(t *testing.T) {
	var log []string
	audit := &weft.Tool{Name: "audit", Description: "Record an audit line.", Args: schema.Object(schema.Field("line", schema.String())),
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
			log = append(log, "audit "+string(args))
			return weft.Success("audited"), nil
		})}
	search := &weft.Tool{Name: "search", Description: "d",
		Tenvs: schema.Object(schema.Field("STORE", schema.String()), schema.OptionalField("LIMIT", schema.Integer()), schema.OptionalField("DEBUG", schema.Boolean())),
		Uses:  []string{"audit"},
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			x := st.Execution()
			if x == nil || x.ToolCall() == nil || x.PromptName() != "assistant" || x.Side() != weft.SideA || x.StepCount() != 1 || x.Depth() != 0 {
				return weft.Failure("execution info missing"), nil
			}
			tenvs, err := st.Tenvs(ctx)
			if err != nil {
				return weft.ToolResult{}, err
			}
			if err := st.SetValue(ctx, "hits", map[string]int{"n": 3}); err != nil {
				return weft.ToolResult{}, err
			}
			var hits map[string]int
			if ok, err := st.GetValue(ctx, "hits", &hits); !ok || err != nil || hits["n"] != 3 {
				return weft.Failure("kv round trip"), nil
			}
			if err := st.SetValue(ctx, "context_usage", 1); err == nil {
				return weft.Failure("runtime keys are read-only"), nil
			}
			// InvokeTool runs synchronously and stores nothing; QueueTool runs after the current calls.
			res, err := st.InvokeTool(ctx, "audit", map[string]any{"line": "invoked"})
			if err != nil || res.Result != "audited" {
				return weft.Failure("invoke failed"), nil
			}
			if _, err := st.InvokeTool(ctx, "search", nil); !errors.Is(err, weft.ErrUnknownTool) {
				return weft.Failure("uses must restrict InvokeTool"), nil
			}
			if err := st.QueueTool(ctx, "audit", map[string]any{"line": "queued"}); err != nil {
				return weft.ToolResult{}, err
			}
			if _, err := st.InjectMessage(ctx, weft.NewMessage{Role: weft.RoleSystem, Content: "Note: index rebuilt.", Silent: true}); err != nil {
				return weft.ToolResult{}, err
			}
			if _, err := st.Files().WriteFile(ctx, "/notes/a.txt", []byte("alpha\nbeta\n"), weft.WriteOptions{}); err != nil {
				return weft.ToolResult{}, err
			}
			m, err := st.Files().Grep(ctx, "bet", weft.GrepOptions{})
			if err != nil || len(m) != 1 || m[0].Line != 2 {
				return weft.Failure("grep"), nil
			}
			if _, err := st.Files().ReadFile(ctx, "/../etc/passwd"); !errors.Is(err, weft.ErrInvalidPath) {
				return weft.Failure("traversal must be refused"), nil
			}
			b, _ := json.Marshal(tenvs)
			return weft.Success(string(b)), nil
		})}
	reg := registry([]*weft.Tool{search, audit}, nil)
	h := newHarness(t, reg, `
- tool_calls: [{name: search}]
- expect: {last_contains: "Note: index rebuilt.", roles: [user, assistant, tool], tool_result_contains: STORE}
  text: done
`)
	th, res := h.run("assistant", "go", map[string]string{"STORE": "vs1", "LIMIT": "20", "DEBUG": "true"})
	if res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("%+v", res.Last())
	}
	tr := h.transcript(th.ID)
	// The queued tool's message is stored (metadata.queued) but not shown to the model.
	// The note was injected while the tool ran, so it is stored before the result; the model still
	// gets the result right after its call (pairing) and the note after it.
	wantTranscript(t, tr, "user: go", "assistant:  [search {}]", "system: Note: index rebuilt.",
		`tool:search: {"DEBUG":true,"LIMIT":20,"STORE":"vs1"}`, "tool:audit: audited", "assistant: done")
	if strings.Join(log, "; ") != `audit {"line":"invoked"}; audit {"line":"queued"}` {
		t.Errorf("tool runs: %v", log)
	}
	msgs, _ := h.store.Messages(context.Background(), th.ID, weft.MessageQuery{Limit: 100})
	if !msgs[2].Silent || msgs[4].ToolCallID != "queued_1" || msgs[4].Metadata["queued"] != true {
		t.Errorf("inject/queue rows: %+v / %+v", msgs[2], msgs[4])
	}
}
