package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/memstore"
)

// TestAskBuildsNoEvents: with no subscriber, no OnEvent and no event log, Ask returns the run's
// stop and its reply without the engine building a single event (it is not observed while the run
// works).
func TestAskBuildsNoEvents(t *testing.T) {
	ctx := context.Background()
	const secret = "tok-5e1f0a9b77"
	var eng *Engine
	var observedInTool []bool
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fake", Provider: "fake", Model: "fake"})
	reg.AddTool(weft.NewTool("probe", "Reports whether the engine is observed.", func(ctx context.Context, _ weft.State, _ struct{}) (weft.ToolResult, error) {
		observedInTool = append(observedInTool, eng.commit.Observed())
		return weft.Success("ok"), nil
	}))
	reg.AddPrompt(&weft.Prompt{Name: "p", Model: "fake", Prompt: weft.Text("Probe."), Tools: []weft.ToolEntry{{Name: "probe"}}})
	reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == weft.RoleTool {
			return &weft.Response{Text: "done with " + secret, FinishReason: "stop"}, nil
		}
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "probe", Arguments: "{}"}}, FinishReason: "tool_calls"}, nil
	})
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if eng, err = New(Options{Registry: reg, Store: st, Override: model}); err != nil {
		t.Fatal(err)
	}
	th, err := eng.CreateThread(ctx, NewThread{Agent: "a", Env: map[string]string{"API_TOKEN": secret}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Ask(ctx, th.ID, Input{Message: &weft.NewMessage{Content: "go"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stops) != 1 || !res.Last().Reason.OK() || res.Steps != 2 {
		t.Errorf("Ask returned %+v, want one completed stop of two steps", res)
	}
	// The reply is the stored answer, its secret redacted as in a message event.
	if res.Reply == nil || res.Reply.Content != "done with [redacted]" || res.Reply.Role != weft.RoleAssistant || res.Reply.Seq == 0 {
		t.Errorf("Ask's reply: %+v, want the stored answer with its secret redacted", res.Reply)
	}
	if !slices.Equal(observedInTool, []bool{false}) {
		t.Errorf("observed while the tool ran: %v, want [false]", observedInTool)
	}
	// Run returns the reply too.
	if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "again"}); err != nil {
		t.Fatal(err)
	}
	res, err = eng.Run(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply == nil || res.Reply.Content != "done with [redacted]" || res.Reply.Seq <= 4 {
		t.Errorf("Run's reply: %+v, want the second answer with its secret redacted", res.Reply)
	}
}
