package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

func TestHandlerSide(t *testing.T) {
	var seen []string
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fast", Provider: "test"})
	reg.AddPrompt(&weft.Prompt{Name: "reviewer", ToolDescription: "d", Model: "fast", IncludeChat: true, Prompt: weft.Text("Review.")})
	// The author side is Go code: it answers each reviewer reply once, then stays idle.
	reg.AddHandler(&weft.Handler{Name: "author", Fn: func(ctx context.Context, st weft.State, m weft.Message) error {
		seen = append(seen, m.Content)
		if strings.Contains(m.Content, "fix") {
			_, err := st.InjectMessage(ctx, weft.NewMessage{Role: weft.RoleUser, Content: "Fixed: " + m.Content})
			return err
		}
		return nil
	}})
	reg.AddAgent(&weft.Agent{Name: "pair", Type: weft.DualAI, MaxSessionTurns: 5,
		SideA: weft.AgentSide{Prompt: "reviewer"}, SideB: &weft.AgentSide{Handler: "author"}})
	h := newHarness(t, reg, `
- {expect: {roles: [user]}, text: please fix the title}
- {expect: {last_contains: "Fixed: please fix the title"}, text: looks good now}
`)
	th, res := h.run("pair", "Draft: 'Helo'", nil)
	if res.Last().Reason != weft.StopHandlerIdle {
		t.Fatalf("%+v", res.Last())
	}
	wantTranscript(t, h.transcript(th.ID), "user: Draft: 'Helo'", "assistant: please fix the title",
		"user: Fixed: please fix the title", "assistant: looks good now")
	// Each reviewer reply was delivered exactly once.
	if strings.Join(seen, "|") != "please fix the title|looks good now" {
		t.Errorf("delivered %v", seen)
	}
}

func TestForceTurnAndTerminate(t *testing.T) {
	force := &weft.Tool{Name: "ask_human", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		st.Execution().ForceTurn(weft.SideB)
		return weft.Success("asking"), nil
	})}
	end := &weft.Tool{Name: "end", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		return weft.Success("ending"), st.Terminate(ctx)
	})}
	h := newHarness(t, registry([]*weft.Tool{force, end}, nil), `
- tool_calls: [{name: ask_human}]
- tool_calls: [{name: end}]
`)
	th, res := h.run("assistant", "hi", nil)
	if res.Last().Reason != weft.StopAwaitingHuman {
		t.Errorf("ForceTurn to the human parks the run: %+v", res.Last())
	}
	res = h.send(th.ID, "ok, end it")
	if res.Last().Reason != weft.StopAborted {
		t.Errorf("terminate: %+v", res.Last())
	}
	ctx := context.Background()
	got, _ := h.store.Thread(ctx, th.ID)
	if got.Status != weft.ThreadTerminated {
		t.Errorf("status %s", got.Status)
	}
	if _, err := h.eng.Send(ctx, th.ID, weft.NewMessage{Content: "hello?"}); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("a terminated thread refuses messages: %v", err)
	}
	if _, err := h.eng.Continue(ctx, th.ID, ""); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("continue on a terminated thread: %v", err)
	}
	// Terminating from outside a run.
	th2, _ := h.eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err := h.eng.Terminate(ctx, th2.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.store.Thread(ctx, th2.ID); got.Status != weft.ThreadTerminated {
		t.Errorf("status %s", got.Status)
	}
}
