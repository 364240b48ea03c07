package engine_test

import (
	"context"
	"encoding/json"
	"github.com/weft-agents/weft/validate"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/schema"
)

// budgetWorld: every model call uses 30 input and 30 output tokens; a new question calls lookup
// once, a tool result is answered.
func budgetWorld(budget *weft.Budget, price *float64) (*weft.Registry, weft.Provider, *atomic.Int32) {
	var calls atomic.Int32
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fast", Provider: "test", InputPrice: price, OutputPrice: price})
	reg.AddTool(&weft.Tool{Name: "lookup", Description: "Look up.", Args: schema.Object(),
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			return weft.Success("found"), nil
		})})
	reg.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "p", Model: "fast", Prompt: weft.Text("p"), Tools: []weft.ToolEntry{{Name: "lookup"}}})
	reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}, Budget: budget})
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		calls.Add(1)
		usage := weft.Usage{InputTokens: 30, OutputTokens: 30}
		if req.Messages[len(req.Messages)-1].Role == weft.RoleUser {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "lookup", Arguments: "{}"}}, Usage: usage}, nil
		}
		return &weft.Response{Text: "Answer.", Usage: usage}, nil
	})
	return reg, model, &calls
}

// TestBudget: a run stops before the model call once the spend (from the log rows) reached the
// budget — tokens, cost, or unknown prices when the budget blocks them — the thread is paused,
// and raising the budget lets the same thread continue.
func TestBudget(t *testing.T) {
	price := 1000.0 // USD per million tokens: $0.06 per call
	cases := []struct {
		name       string
		agent      *weft.Budget
		own        *weft.Budget
		price      *float64
		raise      weft.Budget
		wantCalls  int // calls made before the stop (the first turn takes 2)
		wantReason string
	}{
		{"tokens", &weft.Budget{MaxTokens: 100}, nil, nil, weft.Budget{MaxTokens: 1000}, 2, "used 120 of its 100 tokens"},
		{"cost", &weft.Budget{MaxCostUSD: 0.1}, nil, &price, weft.Budget{MaxCostUSD: 1}, 2, "spent $0.1200 of its $0.1000 budget"},
		{"thread_budget_replaces_agents", &weft.Budget{MaxTokens: 1_000_000}, &weft.Budget{MaxTokens: 50}, nil, weft.Budget{MaxTokens: 1000}, 1, "used 60 of its 50 tokens"},
		{"unknown_cost_blocked", &weft.Budget{MaxCostUSD: 5, UnknownCost: "block"}, nil, nil, weft.Budget{MaxCostUSD: 5}, 1, "no known price"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg, model, calls := budgetWorld(tc.agent, tc.price)
			eng, st := newEngine(t, reg, model, nil)
			ctx := context.Background()
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "a", Budget: tc.own})
			if err != nil {
				t.Fatal(err)
			}
			var last weft.StopInfo
			for i := 0; i < 3 && last.Reason != weft.StopBudgetExceeded; i++ {
				res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Question?"}})
				if err != nil {
					t.Fatal(err)
				}
				last = res.Last()
			}
			if last.Reason != weft.StopBudgetExceeded || !strings.Contains(last.Error, tc.wantReason) || int(calls.Load()) != tc.wantCalls {
				t.Fatalf("stop %+v after %d calls", last, calls.Load())
			}
			got, _ := st.Thread(ctx, th.ID)
			if got.Status != weft.ThreadPaused {
				t.Errorf("status %s", got.Status)
			}
			// The spend is the log rows'.
			sp, err := eng.Spend(ctx, th.ID)
			logs, _ := st.Logs(ctx, th.ID, weft.LogQuery{})
			var tokens int64
			for _, l := range logs {
				tokens += int64(l.InputTokens + l.OutputTokens)
			}
			if err != nil || sp.Calls != len(logs) || sp.Tokens != tokens {
				t.Errorf("spend %+v, logs %d with %d tokens", sp, len(logs), tokens)
			}
			// Paused means paused: another message stops at once, without a model call.
			n := calls.Load()
			if res, _ := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Still there?"}}); res.Last().Reason != weft.StopBudgetExceeded || calls.Load() != n {
				t.Errorf("a paused thread ran: %+v", res.Last())
			}
			if err := eng.SetBudget(ctx, th.ID, tc.raise); err != nil {
				t.Fatal(err)
			}
			res, err := eng.Ask(ctx, th.ID, engine.Input{})
			if err != nil || !res.Last().Reason.OK() || calls.Load() == n {
				t.Fatalf("after raising: %+v %v", res, err)
			}
		})
	}
}

func TestBudgetRefused(t *testing.T) {
	reg, model, _ := budgetWorld(nil, nil)
	eng, _ := newEngine(t, reg, model, nil)
	ctx := context.Background()
	for _, b := range []weft.Budget{{}, {MaxCostUSD: -1}, {MaxTokens: -5}, {MaxTokens: 5, UnknownCost: "maybe"}} {
		if _, err := eng.CreateThread(ctx, engine.NewThread{Agent: "a", Budget: &b}); weft.ErrorCode(err) != weft.EInvalid || !strings.Contains(err.Error(), "budget.") {
			t.Errorf("budget %+v: %v", b, err)
		}
	}
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "a"})
	if err := eng.SetBudget(ctx, th.ID, weft.Budget{MaxCostUSD: 0}); weft.ErrorCode(err) != weft.EInvalid {
		t.Errorf("SetBudget 0: %v", err)
	}
	bad := weft.NewRegistry()
	bad.AddModel(&weft.Model{Name: "fast", Provider: "test"})
	bad.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "p", Model: "fast", Prompt: weft.Text("p")})
	bad.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}, Budget: &weft.Budget{MaxCostUSD: -2}})
	if d := validate.Registry(bad); !d.HasErrors() || !strings.Contains(d.Err().Error(), "budget.maxCostUsd") {
		t.Errorf("validation: %v", d.Err())
	}
}

// TestSpendFollowsLogs: a thread's spend, which the engine adds up incrementally, is always that
// of its log rows: rows written by anyone since the last reading count once, and a thread deleted
// and made again under its id starts from nothing.
func TestSpendFollowsLogs(t *testing.T) {
	reg, model, _ := budgetWorld(nil, nil)
	eng, st := newEngine(t, reg, model, nil)
	ctx := context.Background()
	th := &weft.Thread{ID: "thr_spend", Agent: "a", Status: weft.ThreadIdle}
	if err := st.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	put := func(tokens ...int) {
		t.Helper()
		if err := st.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
			for _, n := range tokens {
				if err := tx.PutLog(&weft.LogEntry{Kind: "llm", InputTokens: n}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(calls int, tokens int64) {
		t.Helper()
		sp, err := eng.Spend(ctx, th.ID)
		if err != nil || sp.Calls != calls || sp.Tokens != tokens {
			t.Fatalf("spend %+v (%v), want %d calls and %d tokens", sp, err, calls, tokens)
		}
	}
	want(0, 0)
	put(10, 20)
	want(2, 30)
	want(2, 30)
	put(5)
	if err := st.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		return tx.PutLog(&weft.LogEntry{Kind: "tool_error", Error: "no"}) // not a model call
	}); err != nil {
		t.Fatal(err)
	}
	put(1)
	want(4, 36)
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Question?"}}); err != nil {
		t.Fatal(err)
	}
	want(6, 156) // a turn: two calls of 60 tokens
	if err := st.DeleteThread(ctx, th.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateThread(ctx, &weft.Thread{ID: th.ID, Agent: "a", Status: weft.ThreadIdle}, nil); err != nil {
		t.Fatal(err)
	}
	want(0, 0)
	put(7)
	want(1, 7)
}
