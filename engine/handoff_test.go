package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

func TestHandoff(t *testing.T) {
	reg := registry(nil, func(p *weft.Prompt) { p.Tools = []weft.ToolEntry{{Name: "billing", Kind: weft.EntryAgent}} })
	reg.AddPrompt(&weft.Prompt{Name: "billing", ToolDescription: "Billing.", Model: "fast", Prompt: weft.Text("You handle billing."),
		Variables: []weft.VariableDefinition{{Name: "BILLING_REGION", Type: weft.VarText, Required: true, Description: "r"}}})
	reg.AddAgent(&weft.Agent{Name: "billing", ExposeAsTool: true, ToolDescription: "Hand the customer to billing.",
		SideA: weft.AgentSide{Prompt: "billing"}, Env: map[string]string{"BILLING_REGION": "eu"}})
	h := newHarness(t, reg, `
- match: {agent: assistant}
  expect: {tools: [billing]}
  tool_calls: [{name: billing, arguments: {message: "Customer says they were charged twice."}}]
- match: {agent: billing, prompt: billing}
  expect: {system_contains: You handle billing., roles: [user], last_contains: charged twice}
  text: I have refunded the duplicate charge.
`)
	th, res := h.run("assistant", "I was charged twice!", nil)
	if res.Last().Reason != weft.StopOnResponse || len(res.Stops) != 1 {
		t.Fatalf("%+v", res.Stops)
	}
	wantTranscript(t, h.transcript(th.ID),
		"user: I was charged twice!",
		`assistant:  [billing {"message":"Customer says they were charged twice."}]`,
		"tool:billing: Handoff complete",
		"user: Customer says they were charged twice.",
		"assistant: I have refunded the duplicate charge.")
	got, _ := h.store.Thread(context.Background(), th.ID)
	if got.Agent != "billing" || got.OriginAgent != "assistant" || got.Arguments["message"] != "Customer says they were charged twice." {
		t.Errorf("thread after handoff: %+v", got)
	}
	// The next message goes to the new agent.
	h2 := newHarness(t, reg, "- {match: {agent: billing}, text: \"Anything else\"}\n")
	h2.store = h.store
	eng, _ := engine.New(engine.Options{Registry: reg, Store: h.store, Override: h2.script, Clock: h2.script.Clock()})
	eng.Send(context.Background(), th.ID, weft.NewMessage{Content: "thanks"})
	if r2, err := eng.Run(context.Background(), th.ID); err != nil || r2.Last().Reason != weft.StopOnResponse || len(h2.script.Failures()) > 0 {
		t.Errorf("%v %+v %v", err, r2, h2.script.Failures())
	}

	t.Run("missing_variables_refuse", func(t *testing.T) {
		reg := registry(nil, func(p *weft.Prompt) { p.Tools = []weft.ToolEntry{{Name: "billing", Kind: weft.EntryAgent}} })
		reg.AddPrompt(&weft.Prompt{Name: "billing", ToolDescription: "Billing.", Model: "fast", Prompt: weft.Text("x"),
			Variables: []weft.VariableDefinition{{Name: "BILLING_REGION", Type: weft.VarText, Required: true, Description: "r"}}})
		reg.AddAgent(&weft.Agent{Name: "billing", ExposeAsTool: true, ToolDescription: "d", SideA: weft.AgentSide{Prompt: "billing"}})
		h := newHarness(t, reg, "- tool_calls: [{name: billing, arguments: {message: hi}}]\n- text: sorry\n")
		th, _ := h.run("assistant", "go", nil)
		if got := h.transcript(th.ID)[2]; got != `tool:billing: Failed to execute tool: Cannot hand off to "billing": missing required variables: BILLING_REGION` {
			t.Errorf("got %s", got)
		}
		if th2, _ := h.store.Thread(context.Background(), th.ID); th2.Agent != "assistant" {
			t.Errorf("no handoff happened: %s", th2.Agent)
		}
	})
}

// TestMessageAfterStop: a user message to a stopped thread clears the stop flag and is answered
// (execution.md §1.3), instead of being failed by the flag it clears.
func TestMessageAfterStop(t *testing.T) {
	started := make(chan struct{}, 1)
	block := &weft.Tool{Name: "slow", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return weft.Failure("cancelled"), nil
	})}
	h := newHarness(t, registry([]*weft.Tool{block}, nil), `
- tool_calls: [{name: slow}]
- expect: {last_role: user, last_contains: again}
  text: Here again.
`)
	ctx := context.Background()
	th, _ := h.eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	h.eng.Send(ctx, th.ID, weft.NewMessage{Content: "go"})
	done := make(chan struct{})
	go func() { h.eng.Run(ctx, th.ID); close(done) }()
	<-started
	h.eng.Stop(ctx, th.ID)
	<-done
	res, err := h.eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "again"}})
	if err != nil || res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("%v %+v", err, res)
	}
	tr := h.transcript(th.ID)
	if tr[len(tr)-2] != "user: again" || tr[len(tr)-1] != "assistant: Here again." {
		t.Errorf("transcript %v", tr)
	}
}

func TestStopThenContinue(t *testing.T) {
	started := make(chan struct{}, 1)
	block := &weft.Tool{Name: "slow", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return weft.Failure("cancelled"), nil
	})}
	h := newHarness(t, registry([]*weft.Tool{block}, nil), `
- tool_calls: [{name: slow}]
- expect: {last_contains: Execution stopped by user.}
  text: Resuming where we were.
`)
	ctx := context.Background()
	th, _ := h.eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	h.eng.Send(ctx, th.ID, weft.NewMessage{Content: "go"})
	done := make(chan struct{})
	go func() { h.eng.Run(ctx, th.ID); close(done) }()
	<-started
	h.eng.Stop(ctx, th.ID)
	<-done
	// Stopped: a plain Run with nothing queued does nothing.
	if res, _ := h.eng.Run(ctx, th.ID); len(res.Stops) != 0 {
		t.Errorf("a stopped thread must not run: %+v", res.Stops)
	}
	res, err := h.eng.Continue(ctx, th.ID, weft.SideA)
	if err != nil || res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("%v %+v", err, res)
	}
	tr := h.transcript(th.ID)
	if tr[len(tr)-1] != "assistant: Resuming where we were." {
		t.Errorf("transcript %v", tr)
	}
	if got, _ := h.store.Thread(ctx, th.ID); got.Status != weft.ThreadAwaitingHuman {
		t.Errorf("status %s", got.Status)
	}
}

// TestHandoffRecordsEachRowOnce: with RecordEvents, every row a handoff run stores (the reply
// with the call, the handoff's result, the message the new agent starts from, its answer) has
// exactly one message event in the thread's log, recorded with the row.
func TestHandoffRecordsEachRowOnce(t *testing.T) {
	reg := registry(nil, func(p *weft.Prompt) { p.Tools = []weft.ToolEntry{{Name: "billing", Kind: weft.EntryAgent}} })
	reg.AddPrompt(&weft.Prompt{Name: "billing", ToolDescription: "Billing.", Model: "fast", Prompt: weft.Text("You handle billing.")})
	reg.AddAgent(&weft.Agent{Name: "billing", ExposeAsTool: true, ToolDescription: "Hand the customer to billing.",
		SideA: weft.AgentSide{Prompt: "billing"}})
	h := newRecordingHarness(t, reg, `
- match: {agent: assistant}
  tool_calls: [{name: billing, arguments: {message: "Customer says they were charged twice."}}]
- match: {agent: billing, prompt: billing}
  text: I have refunded the duplicate charge.
`)
	th, res := h.run("assistant", "I was charged twice!", nil)
	if res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("%+v", res.Stops)
	}
	ctx := context.Background()
	recs, err := h.store.Events(ctx, th.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	count := messageEvents(t, recs)
	msgs, _ := h.store.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	if len(msgs) != 5 {
		t.Fatalf("%d messages: %+v", len(msgs), msgs)
	}
	for _, m := range msgs {
		if count[m.ID] != 1 {
			t.Errorf("message %d (%s %q) has %d message events", m.Seq, m.Role, m.Content, count[m.ID])
		}
	}
}
