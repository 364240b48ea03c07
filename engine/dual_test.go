package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// reviewRegistry: a dual_ai agent; the reviewer (side A) approves (sessionStop) or rejects
// (sessionFail), the author (side B) revises.
func reviewRegistry(mod func(a *weft.Agent)) *weft.Registry {
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fast", Provider: "test"})
	ok := weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		return weft.Success("recorded"), nil
	})
	reg.AddTool(&weft.Tool{Name: "approve", Description: "Approve the draft.", Args: schema.Object(schema.Field("summary", schema.String())), Execute: ok})
	reg.AddTool(&weft.Tool{Name: "reject", Description: "Reject the draft.", Args: schema.Object(schema.Field("reason", schema.String())), Execute: ok})
	reg.AddTool(&weft.Tool{Name: "give_up", Description: "End the review from code.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		return weft.Success("ending"), st.StopSession(ctx, weft.StopSessionOptions{Result: "stopped by the tool"})
	})})
	reg.AddPrompt(&weft.Prompt{Name: "reviewer", ToolDescription: "Reviews.", Model: "fast", IncludeChat: true,
		Prompt: weft.Text("You review drafts."), Tools: []weft.ToolEntry{{Name: "approve"}, {Name: "reject"}, {Name: "give_up"}}})
	reg.AddPrompt(&weft.Prompt{Name: "author", ToolDescription: "Writes.", Model: "fast", IncludeChat: true, Prompt: weft.Text("You revise drafts.")})
	a := &weft.Agent{Name: "review", Type: weft.DualAI, MaxSessionTurns: 5,
		SideA: weft.AgentSide{Prompt: "reviewer", SessionStop: &weft.SessionTool{Name: "approve", MessageProperty: "summary"},
			SessionFail: &weft.SessionTool{Name: "reject", MessageProperty: "reason"}},
		SideB: &weft.AgentSide{Prompt: "author"}}
	if mod != nil {
		mod(a)
	}
	reg.AddAgent(a)
	return reg
}

func TestDualAISessions(t *testing.T) {
	t.Run("review_loop_session_stop", func(t *testing.T) {
		h := newHarness(t, reviewRegistry(nil), `
- match: {prompt: reviewer}
  expect: {system_contains: You review drafts., roles: [user]}
  text: Please fix the typo in line 2.
- match: {prompt: author, side: b}
  expect: {system_contains: You revise drafts., roles: [assistant, user], last_contains: fix the typo}
  text: Fixed the typo.
- match: {prompt: reviewer}
  expect: {roles: [user, assistant, user], last_contains: Fixed the typo.}
  tool_calls: [{name: approve, arguments: {summary: Approved after one fix.}}]
- match: {prompt: reviewer}
  expect: {last_contains: "One more: 'A dog.'"}
  tool_calls: [{name: approve, arguments: {summary: Second draft fine.}}]
`)
		th, res := h.run("review", "Review this draft: 'Teh cat sat.'", nil)
		if res.Last().Reason != weft.StopSession || res.Last().Error != "Approved after one fix." {
			t.Fatalf("%+v", res.Last())
		}
		wantTranscript(t, h.transcript(th.ID),
			"user: Review this draft: 'Teh cat sat.'",
			"assistant: Please fix the typo in line 2.",
			"user: Fixed the typo.",
			`assistant:  [approve {"summary":"Approved after one fix."}]`,
			"tool:approve: Approved after one fix.")
		got, _ := h.store.Thread(context.Background(), th.ID)
		if got.Status != weft.ThreadIdle || got.StopReason != weft.StopSession {
			t.Errorf("thread %s %s", got.Status, got.StopReason)
		}
		// The session ended: a new inbound message starts a new one with fresh turn counters.
		if r2 := h.send(th.ID, "One more: 'A dog.'"); r2.Last().Reason != weft.StopSession || r2.Last().Error != "Second draft fine." {
			t.Errorf("second session: %+v", r2.Last())
		}
	})
	t.Run("session_fail", func(t *testing.T) {
		h := newHarness(t, reviewRegistry(nil), `
- match: {prompt: reviewer}
  tool_calls: [{name: reject, arguments: {reason: Not salvageable.}}]
`)
		_, res := h.run("review", "Review: ???", nil)
		if res.Last().Reason != weft.StopSessionFail || res.Last().Error != "Not salvageable." {
			t.Errorf("%+v", res.Last())
		}
	})
	t.Run("failed_session_tool_ends_nothing", func(t *testing.T) {
		h := newHarness(t, reviewRegistry(nil), `
- match: {prompt: reviewer}
  tool_calls: [{name: approve, arguments: {}}]
- match: {prompt: reviewer}
  expect: {last_contains: missing required property}
  tool_calls: [{name: approve, arguments: {summary: ok now}}]
`)
		_, res := h.run("review", "Review: fine", nil)
		if res.Last().Reason != weft.StopSession {
			t.Errorf("%+v", res.Last())
		}
	})
	t.Run("max_session_turns", func(t *testing.T) {
		reg := reviewRegistry(func(a *weft.Agent) { a.MaxSessionTurns = 2 })
		h := newHarness(t, reg, `
- {match: {prompt: reviewer}, text: round one}
- {match: {prompt: author}, text: revision one}
- {match: {prompt: reviewer}, text: round two}
- {match: {prompt: author}, text: revision two}
`)
		th, res := h.run("review", "Review: text", nil)
		if res.Last().Reason != weft.StopMaxSessionTurn || len(h.transcript(th.ID)) != 5 || h.script.Remaining() != 0 {
			t.Errorf("%+v %v", res.Last(), h.transcript(th.ID))
		}
	})
	t.Run("state_stop_session", func(t *testing.T) {
		h := newHarness(t, reviewRegistry(nil), `
- {match: {prompt: reviewer}, tool_calls: [{name: give_up}]}
`)
		_, res := h.run("review", "Review: x", nil)
		if res.Last().Reason != weft.StopStateSession || res.Last().Error != "stopped by the tool" {
			t.Errorf("%+v", res.Last())
		}
	})
}
