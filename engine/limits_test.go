package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/schema"
)

// TestToolLimits: arguments over their size or depth limit, and a result over its size limit,
// become error results the model reads, naming the limit; nothing is cut and the tool does not run
// on refused arguments.
func TestToolLimits(t *testing.T) {
	big := `{"text":"` + strings.Repeat("x", weft.MaxToolArgumentsBytes) + `"}`
	deep := `{"text":"x","n":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`
	ran := 0
	echo := &weft.Tool{Name: "echo", Description: "Echo.", Args: schema.Object(schema.Field("text", schema.String())),
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
			ran++
			return weft.Success(strings.Repeat("y", weft.MaxToolResultBytes+1)), nil
		})}
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == weft.RoleUser {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "echo", Arguments: big}, {ID: "c2", Name: "echo", Arguments: deep},
				{ID: "c3", Name: "echo", Arguments: `{"text":"ok"}`}}}, nil
		}
		return &weft.Response{Text: "done"}, nil
	})
	eng, st := newEngine(t, registry([]*weft.Tool{echo}, nil), model, nil)
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "go"}}); err != nil {
		t.Fatal(err)
	}
	msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleTool}})
	if len(msgs) != 3 || ran != 1 {
		t.Fatalf("%d tool messages, tool ran %d times", len(msgs), ran)
	}
	for i, want := range []string{"Tool arguments are 1,048,587 bytes; the limit is 1 MiB", "Tool arguments nest 71 levels deep; the limit is 64",
		"The tool's result is 4,194,305 bytes; the limit is 4 MiB"} {
		if !strings.Contains(msgs[i].Content, want) || msgs[i].ToolStatus != weft.ToolError {
			t.Errorf("result %d: %.200q, want %q", i, msgs[i].Content, want)
		}
	}
}
