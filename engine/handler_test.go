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

// stopToolRegistry is registry's assistant whose side A stops on the tool finish, its answer
// argument becoming the reply's text.
func stopToolRegistry() *weft.Registry {
	var calls []string
	reg := registry([]*weft.Tool{recorder("finish", &calls, "ok")}, nil)
	finish, _ := reg.Tool("finish")
	finish.Args = schema.Object(schema.Field("answer", schema.String()))
	a, _ := reg.Agent("assistant")
	a.SideA.StopTool, a.SideA.StopToolResponseProperty = "finish", "answer"
	return reg
}

func TestStopReasons(t *testing.T) {
	t.Run("stop_tool", func(t *testing.T) {
		h := newHarness(t, stopToolRegistry(), "- {text: thinking, tool_calls: [{name: finish, arguments: {answer: The answer is 42.}}]}\n")
		th, res := h.run("assistant", "question", nil)
		if res.Last().Reason != weft.StopTool || h.transcript(th.ID)[1] != `assistant: The answer is 42. [finish {"answer":"The answer is 42."}]` {
			t.Errorf("%+v %v", res.Last(), h.transcript(th.ID))
		}
	})
	t.Run("max_total_steps", func(t *testing.T) {
		var calls []string
		reg := registry([]*weft.Tool{recorder("again", &calls, "more")}, nil)
		h := newHarness(t, reg, "options: {on_exhausted: repeat_last}\nresponses:\n- tool_calls: [{name: again}]\n")
		_, res := h.run("assistant", "loop", nil)
		if res.Last().Reason != weft.StopMaxTotalSteps || len(calls) != 250 {
			t.Errorf("%+v calls=%d", res.Last(), len(calls))
		}
	})
	t.Run("stop_on_idle_thread_is_an_error", func(t *testing.T) {
		h := newHarness(t, registry(nil, nil), "- text: hi\n")
		th, _ := h.run("assistant", "hello", nil)
		if err := h.eng.Stop(context.Background(), th.ID); weft.ErrorCode(err) != weft.EConflict || !strings.Contains(err.Error(), "not running") {
			t.Errorf("got %v", err)
		}
	})
}
