package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/weft-agents/weft/validate"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/schema"
	"github.com/weft-agents/weft/sqlite"
)

// approvalWorld is an agent whose first reply calls the given tools in order and whose next reply
// reports the results it sees; every tool records its runs.
type approvalWorld struct {
	mu    sync.Mutex
	ran   []string
	calls []weft.ToolCall
}

func (w *approvalWorld) registry(approval map[string]weft.Approval, entryApproval map[string]weft.Approval) *weft.Registry {
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fast", Provider: "test"})
	p := &weft.Prompt{Name: "assistant", ToolDescription: "Helps.", Model: "fast", Prompt: weft.Text("You help.")}
	for _, name := range []string{"lookup", "send_email", "refund"} {
		reg.AddTool(&weft.Tool{Name: name, Description: "Tool " + name + ".", Approval: approval[name],
			Args: schema.Object(schema.Field("to", schema.String())),
			Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
				w.mu.Lock()
				w.ran = append(w.ran, name+" "+string(args))
				w.mu.Unlock()
				return weft.Success(name + " done"), nil
			})})
		p.Tools = append(p.Tools, weft.ToolEntry{Name: name, Approval: entryApproval[name]})
	}
	reg.AddPrompt(p)
	reg.AddAgent(&weft.Agent{Name: "assistant", SideA: weft.AgentSide{Prompt: "assistant"}})
	return reg
}

func (w *approvalWorld) model() weft.Provider {
	return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == weft.RoleUser && (last.Text() == "Do it." || last.Text() == "Go") {
			return &weft.Response{ToolCalls: w.calls}, nil
		}
		var results []string
		for _, m := range req.Messages {
			if m.Role == weft.RoleTool {
				results = append(results, m.Text())
			}
		}
		return &weft.Response{Text: "Results: " + strings.Join(results, " | ")}, nil
	})
}

func (w *approvalWorld) runs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ran)
}

func call(id, name, to string) weft.ToolCall {
	return weft.ToolCall{ID: id, Name: name, Arguments: `{"to":"` + to + `"}`}
}

func lastText(t *testing.T, st weft.Store, threadID string) string {
	t.Helper()
	msgs, err := st.Messages(context.Background(), threadID, weft.MessageQuery{Desc: true, Limit: 1})
	if err != nil || len(msgs) == 0 {
		t.Fatalf("messages: %v", err)
	}
	return msgs[0].Content
}

// TestApproval: calls that need approval park the run (awaiting_approval, one event per call,
// nothing run), calls before them run first and calls after them wait, and the run resumes once
// every waiting call is decided: approved calls run once with the approved arguments, denied ones
// become error results the model reads.
func TestApproval(t *testing.T) {
	required := map[string]weft.Approval{"send_email": weft.ApprovalRequired, "refund": weft.ApprovalRequired}
	cases := []struct {
		name      string
		calls     []weft.ToolCall
		decisions []struct {
			id string
			d  engine.Decision
		}
		wantWaiting []string // call ids awaiting after the first run
		wantRanMid  []string // tools run before the decisions
		wantRan     []string
		wantAnswer  string
	}{
		{name: "approve",
			calls: []weft.ToolCall{call("c1", "send_email", "ann@example.com")},
			decisions: []struct {
				id string
				d  engine.Decision
			}{{"c1", engine.Decision{Approve: true, By: "alice"}}},
			wantWaiting: []string{"c1"},
			wantRan:     []string{`send_email {"to":"ann@example.com"}`},
			wantAnswer:  "Results: send_email done"},
		{name: "approve_with_edited_arguments",
			calls: []weft.ToolCall{call("c1", "send_email", "everyone@example.com")},
			decisions: []struct {
				id string
				d  engine.Decision
			}{{"c1", engine.Decision{Approve: true, Arguments: json.RawMessage(`{"to":"ann@example.com"}`)}}},
			wantWaiting: []string{"c1"},
			wantRan:     []string{`send_email {"to":"ann@example.com"}`},
			wantAnswer:  "Results: send_email done"},
		{name: "deny",
			calls: []weft.ToolCall{call("c1", "refund", "bob")},
			decisions: []struct {
				id string
				d  engine.Decision
			}{{"c1", engine.Decision{Reason: "refunds need a ticket"}}},
			wantWaiting: []string{"c1"},
			wantAnswer:  "Results: Failed to execute tool: denied: refunds need a ticket"},
		{name: "two_waiting_decided_in_reverse_order",
			calls: []weft.ToolCall{call("c1", "send_email", "a"), call("c2", "refund", "b")},
			decisions: []struct {
				id string
				d  engine.Decision
			}{{"c2", engine.Decision{Approve: true}}, {"c1", engine.Decision{Reason: "no"}}},
			wantWaiting: []string{"c1", "c2"},
			wantRan:     []string{`refund {"to":"b"}`},
			wantAnswer:  "Results: Failed to execute tool: denied: no | refund done"},
		{name: "order_kept_around_a_waiting_call",
			calls: []weft.ToolCall{call("c1", "lookup", "x"), call("c2", "send_email", "y"), call("c3", "lookup", "z")},
			decisions: []struct {
				id string
				d  engine.Decision
			}{{"c2", engine.Decision{Approve: true}}},
			wantWaiting: []string{"c2"},
			wantRanMid:  []string{`lookup {"to":"x"}`},
			wantRan:     []string{`lookup {"to":"x"}`, `send_email {"to":"y"}`, `lookup {"to":"z"}`},
			wantAnswer:  "Results: lookup done | send_email done | lookup done"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := &approvalWorld{calls: tc.calls}
			var events []engine.Event
			var evMu sync.Mutex
			eng, st := newEngine(t, w.registry(required, nil), w.model(), func(ev engine.Event) {
				evMu.Lock()
				events = append(events, ev)
				evMu.Unlock()
			})
			ctx := context.Background()
			th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Do it."}})
			if err != nil || res.Last().Reason != weft.StopAwaitingApproval {
				t.Fatalf("first run: %+v %v", res, err)
			}
			got, _ := st.Thread(ctx, th.ID)
			if got.Status != weft.ThreadAwaitingApproval {
				t.Errorf("status %s", got.Status)
			}
			pending, _ := eng.PendingApprovals(ctx, th.ID)
			var ids []string
			for _, p := range pending {
				ids = append(ids, p.CallID)
			}
			if !slices.Equal(ids, tc.wantWaiting) {
				t.Errorf("waiting %v, want %v", ids, tc.wantWaiting)
			}
			var announced []string
			for _, ev := range events {
				if ev.Type == "approval_required" {
					announced = append(announced, ev.Data.(engine.Fields)["call_id"].(string))
				}
			}
			if !slices.Equal(announced, tc.wantWaiting) {
				t.Errorf("approval_required events for %v", announced)
			}
			if got := w.runs(); !slices.Equal(got, tc.wantRanMid) {
				t.Errorf("ran before the decisions: %v, want %v", got, tc.wantRanMid)
			}
			// A message posted meanwhile waits for the decisions.
			if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Any news?"}}); err != nil {
				t.Fatal(err)
			}
			for i, dc := range tc.decisions {
				ready, err := eng.Decide(ctx, th.ID, dc.id, dc.d)
				if err != nil {
					t.Fatalf("Decide %s: %v", dc.id, err)
				}
				if want := i == len(tc.decisions)-1; ready != want {
					t.Errorf("Decide %s: ready %v, want %v", dc.id, ready, want)
				}
			}
			res, err = eng.Ask(ctx, th.ID, engine.Input{})
			if err != nil || len(res.Stops) == 0 || res.Stops[0].Reason != weft.StopOnResponse {
				t.Fatalf("after the decisions: %+v %v", res, err)
			}
			if got := w.runs(); !slices.Equal(got, tc.wantRan) {
				t.Errorf("ran %v, want %v", got, tc.wantRan)
			}
			msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: 100})
			var answers []string
			for _, m := range msgs {
				if m.Role == weft.RoleAssistant && m.Content != "" {
					answers = append(answers, m.Content)
				}
			}
			if len(answers) == 0 || answers[0] != tc.wantAnswer {
				t.Errorf("answers %q, want first %q", answers, tc.wantAnswer)
			}
			// The decisions stay on the call records.
			recs, _ := st.ToolCalls(ctx, th.ID)
			for _, dc := range tc.decisions {
				for _, rec := range recs {
					if rec.CallID == dc.id && (rec.Status != weft.CallDone || !strings.Contains(string(rec.Meta), `"approval"`)) {
						t.Errorf("record %s: %s %s", rec.CallID, rec.Status, rec.Meta)
					}
				}
			}
		})
	}
}

// TestDecideRefusals: an unknown call, a decided call, a call that needs no approval and edited
// arguments that fail the schema are refused with clear codes; the call keeps waiting.
func TestDecideRefusals(t *testing.T) {
	w := &approvalWorld{calls: []weft.ToolCall{call("c1", "send_email", "a")}}
	eng, _ := newEngine(t, w.registry(map[string]weft.Approval{"send_email": weft.ApprovalRequired}, nil), w.model(), nil)
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Go"}}); err != nil {
		t.Fatal(err)
	}
	_, err := eng.Decide(ctx, th.ID, "c404", engine.Decision{Approve: true})
	if weft.ErrorCode(err) != weft.ENotFound {
		t.Errorf("unknown call: %v", err)
	}
	_, err = eng.Decide(ctx, th.ID, "c1", engine.Decision{Approve: true, Arguments: json.RawMessage(`{"to": 42}`)})
	if weft.ErrorCode(err) != weft.EInvalid || !strings.Contains(err.Error(), "/to") {
		t.Errorf("edited arguments against the schema: %v", err)
	}
	_, err = eng.Decide(ctx, th.ID, "c1", engine.Decision{Approve: true, Arguments: json.RawMessage(`[1]`)})
	if weft.ErrorCode(err) != weft.EInvalid {
		t.Errorf("edited arguments not an object: %v", err)
	}
	if p, _ := eng.PendingApprovals(ctx, th.ID); len(p) != 1 {
		t.Fatalf("the call stopped waiting after refused decisions: %v", p)
	}
	if _, err := eng.Decide(ctx, th.ID, "c1", engine.Decision{Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	_, err = eng.Decide(ctx, th.ID, "c1", engine.Decision{Approve: true})
	if weft.ErrorCode(err) != weft.EConflict || !strings.Contains(err.Error(), "already denied") {
		t.Errorf("second decision: %v", err)
	}
	if len(w.runs()) != 0 {
		t.Errorf("ran: %v", w.runs())
	}
}

// TestApprovalNeverChangesRequests: with every tool set to approval never, or to nothing, the
// model is sent exactly the same requests, and an entry's setting overrides the tool's.
func TestApprovalNeverChangesRequests(t *testing.T) {
	capture := func(tools, entries map[string]weft.Approval) ([]string, weft.StopReason) {
		w := &approvalWorld{calls: []weft.ToolCall{call("c1", "lookup", "x"), call("c2", "send_email", "y")}}
		var reqs []string
		reg := w.registry(tools, entries)
		if d := validate.Registry(reg); d.HasErrors() {
			t.Fatal(d.Err())
		}
		st, err := memstore.New(memstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: w.model(), OnRequest: func(r *weft.Request) {
			b, _ := json.Marshal(r.Messages)
			tb, _ := json.Marshal(r.Tools)
			reqs = append(reqs, string(b)+string(tb))
		}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
		res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Go"}})
		if err != nil {
			t.Fatal(err)
		}
		// Call ids are fixed by the model; message ids differ, so compare the texts sent.
		return reqs, res.Last().Reason
	}
	plain, r1 := capture(nil, nil)
	never, r2 := capture(map[string]weft.Approval{"lookup": weft.ApprovalNever, "send_email": weft.ApprovalNever}, nil)
	if r1 != weft.StopOnResponse || r2 != weft.StopOnResponse || !slices.Equal(plain, never) {
		t.Errorf("approval never changed the run: %s %s\n%v\n%v", r1, r2, plain, never)
	}
	overridden, r3 := capture(map[string]weft.Approval{"send_email": weft.ApprovalRequired}, map[string]weft.Approval{"send_email": weft.ApprovalNever})
	if r3 != weft.StopOnResponse || !slices.Equal(plain, overridden) {
		t.Errorf("entry never over tool required: %s", r3)
	}
	_, r4 := capture(nil, map[string]weft.Approval{"lookup": weft.ApprovalRequired})
	if r4 != weft.StopAwaitingApproval {
		t.Errorf("entry required over no setting: %s", r4)
	}
}

// TestApprovalSurvivesRestart: a decision stored before a restart is carried out by the next
// process exactly once; a denied call never runs; a call that waits keeps waiting across it.
func TestApprovalSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weft.db")
	key := make([]byte, 32)
	open := func() weft.Store {
		st, err := sqlite.Open(context.Background(), path, sqlite.Options{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	w := &approvalWorld{calls: []weft.ToolCall{call("c1", "send_email", "a"), call("c2", "refund", "b")}}
	reg := w.registry(map[string]weft.Approval{"send_email": weft.ApprovalRequired, "refund": weft.ApprovalRequired}, nil)
	ctx := context.Background()

	st := open()
	eng, _ := engine.New(engine.Options{Registry: reg, Store: st, Override: w.model()})
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Go"}}); err != nil || res.Last().Reason != weft.StopAwaitingApproval {
		t.Fatalf("%+v %v", res, err)
	}
	st.Close() // "crash" while waiting

	st = open()
	eng, _ = engine.New(engine.Options{Registry: reg, Store: st, Override: w.model()})
	if p, _ := eng.PendingApprovals(ctx, th.ID); len(p) != 2 {
		t.Fatalf("waiting after a restart: %v", p)
	}
	if _, err := eng.Decide(ctx, th.ID, "c1", engine.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Decide(ctx, th.ID, "c2", engine.Decision{Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	st.Close() // "crash" after the decisions were stored, before anything ran

	st = open()
	defer st.Close()
	eng, _ = engine.New(engine.Options{Registry: reg, Store: st, Override: w.model()})
	// RecoverAll does not continue a parked thread by itself; the decisions' continue does.
	if _, err := eng.Ask(ctx, th.ID, engine.Input{}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Ask(ctx, th.ID, engine.Input{}); err != nil { // a second continue runs nothing twice
		t.Fatal(err)
	}
	if got := w.runs(); !slices.Equal(got, []string{`send_email {"to":"a"}`}) {
		t.Errorf("ran %v", got)
	}
	if got := lastText(t, st, th.ID); got != "Results: send_email done | Failed to execute tool: denied: no" {
		t.Errorf("answer %q", got)
	}
}

// TestApprovedCallRunsOnce: an approved call that needs no idempotence is marked running before
// it runs (a crash then answers it as interrupted instead of running it again), and a second
// continue does not run it again.
func TestApprovedCallRunsOnce(t *testing.T) {
	w := &approvalWorld{calls: []weft.ToolCall{call("c1", "refund", "bob")}}
	reg := w.registry(map[string]weft.Approval{"refund": weft.ApprovalRequired}, nil)
	var statusWhileRunning weft.CallStatus
	var st weft.Store
	tl, _ := reg.Tool("refund")
	inner := tl.Execute
	tl.Execute = weft.ToolFunc(func(ctx context.Context, s weft.State, args json.RawMessage) (weft.ToolResult, error) {
		recs, _ := st.ToolCalls(ctx, s.ThreadID())
		for _, rec := range recs {
			if rec.CallID == "c1" {
				statusWhileRunning = rec.Status
			}
		}
		return inner.Call(ctx, s, args)
	})
	eng, store := newEngine(t, reg, w.model(), nil)
	st = store
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Go"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Decide(ctx, th.ID, "c1", engine.Decision{Approve: true}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := eng.Ask(ctx, th.ID, engine.Input{}); err != nil {
			t.Fatal(err)
		}
	}
	if statusWhileRunning != weft.CallRunning || len(w.runs()) != 1 {
		t.Errorf("status while running %q, runs %v", statusWhileRunning, w.runs())
	}
}

// TestApprovalInBlockingSubagent: a blocking subagent's call that needs approval parks the child
// and its parent (whose call stays running); the call is listed and decided through the parent,
// whose continue runs the child on: the tool runs once and the parent gets the child's result.
// The same holds for an immediate blocking subagent, which parks the child and its parent before
// the parent's first model step, as a call the parent's model made would: its synthetic call stays
// running with the child's reference and the parent's model reads the child's result.
func TestApprovalInBlockingSubagent(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name  string
		entry weft.ToolEntry
		first *weft.Response // the parent's first reply when no tool result is last
	}{
		{"called", weft.ToolEntry{}, &weft.Response{ToolCalls: []weft.ToolCall{{ID: "p1", Name: "review", Arguments: `{"message":"Refund please"}`}}}},
		{"immediate", weft.ToolEntry{Immediate: &yes}, &weft.Response{Text: "No result from the child."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := subagentRegistry(tc.entry, nil)
			ran := 0
			reg.AddTool(&weft.Tool{Name: "refund", Description: "Refund.", Approval: weft.ApprovalRequired,
				Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
					ran++
					return weft.Success("refunded"), nil
				})})
			rp, _ := reg.Prompt("reviewer")
			rp.Tools = append(rp.Tools, weft.ToolEntry{Name: "refund"})
			model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
				last := req.Messages[len(req.Messages)-1]
				switch {
				case req.Prompt == "reviewer" && last.Role == weft.RoleTool:
					return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "s1", Name: "approve", Arguments: `{"summary":` + strconvQuote(last.Text()) + `}`}}}, nil
				case req.Prompt == "reviewer":
					return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "r1", Name: "refund", Arguments: `{}`}}}, nil
				case last.Role == weft.RoleTool:
					return &weft.Response{Text: "Child said: " + last.Text()}, nil
				}
				return tc.first, nil
			})
			eng, st := newEngine(t, reg, model, nil)
			ctx := context.Background()
			th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Go"}})
			if err != nil || res.Last().Reason != weft.StopAwaitingApproval || ran != 0 {
				t.Fatalf("%+v %v, ran %d", res, err, ran)
			}
			parent, _ := st.Thread(ctx, th.ID)
			pending, _ := eng.PendingApprovals(ctx, th.ID)
			if parent.Status != weft.ThreadAwaitingApproval || len(pending) != 1 || pending[0].CallID != "r1" || pending[0].ThreadID == th.ID {
				t.Fatalf("parent %s, pending %+v", parent.Status, pending)
			}
			if ready, err := eng.Decide(ctx, th.ID, "r1", engine.Decision{Approve: true}); err != nil || !ready {
				t.Fatalf("Decide: %v %v", ready, err)
			}
			if _, err := eng.Ask(ctx, th.ID, engine.Input{}); err != nil {
				t.Fatal(err)
			}
			if got := lastText(t, st, th.ID); ran != 1 || got != "Child said: refunded" {
				t.Errorf("ran %d, answer %q", ran, got)
			}
			if kids, n, _ := st.Threads(ctx, weft.ThreadQuery{ParentID: th.ID}); n != 1 {
				t.Errorf("children: %d %v", n, kids)
			}
		})
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// subPromptApproval is an assistant offering the sub-prompt "clerk", whose model calls refund
// (approval required) with args; with twoLevels the clerk reaches refund through the sub-prompt
// "cashier". The clerk answers with the refund's result, the assistant with the clerk's.
type subPromptApproval struct {
	mu  sync.Mutex
	ran []string
}

func (w *subPromptApproval) registry(twoLevels bool) *weft.Registry {
	refund := &weft.Tool{Name: "refund", Description: "Refund.", Approval: weft.ApprovalRequired,
		Args: schema.Object(schema.Field("to", schema.String())),
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
			w.mu.Lock()
			w.ran = append(w.ran, string(args))
			w.mu.Unlock()
			return weft.Success("refunded"), nil
		})}
	reg := registry([]*weft.Tool{refund}, func(p *weft.Prompt) { p.Tools = []weft.ToolEntry{{Name: "clerk"}} })
	task := schema.Object(schema.Field("task", schema.String()))
	clerk := &weft.Prompt{Name: "clerk", ToolDescription: "A clerk.", Model: "fast", Prompt: weft.Text("You refund."),
		Tools: []weft.ToolEntry{{Name: "refund"}}, RequiredSchema: task}
	if twoLevels {
		clerk.Tools = []weft.ToolEntry{{Name: "cashier"}}
		reg.AddPrompt(&weft.Prompt{Name: "cashier", ToolDescription: "A cashier.", Model: "fast", Prompt: weft.Text("You pay."),
			Tools: []weft.ToolEntry{{Name: "refund"}}, RequiredSchema: task})
	}
	reg.AddPrompt(clerk)
	return reg
}

func (w *subPromptApproval) model(args string) weft.Provider {
	return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		inner := "refund"
		if slices.ContainsFunc(req.Tools, func(sp weft.ToolSpec) bool { return sp.Name == "cashier" }) {
			inner = "cashier"
		}
		switch {
		case req.Prompt != "assistant" && last.Role == weft.RoleTool:
			return &weft.Response{Text: req.Prompt + ": " + last.Text()}, nil
		case req.Prompt != "assistant" && inner == "cashier":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "k1", Name: "cashier", Arguments: `{"task":"pay"}`}}}, nil
		case req.Prompt != "assistant":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "r1", Name: "refund", Arguments: args}}}, nil
		case last.Role == weft.RoleTool:
			return &weft.Response{Text: "done: " + last.Text()}, nil
		}
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "clerk", Arguments: `{"task":"refund"}`}}}, nil
	})
}

func (w *subPromptApproval) runs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ran)
}

// TestApprovalInSubPrompt: a sub-prompt's call that needs approval parks the whole thread (the
// caller's call stays running) with an approval_required event carrying the redacted arguments;
// the decision — in the same process, or in a new one after a restart while waiting or after the
// decision — resumes the nested run from the stored rows: an approved call runs exactly once (with
// edited arguments, if any), a denied one becomes the error result the nested model reads, and the
// sub-prompt's answer becomes the caller's tool result.
func TestApprovalInSubPrompt(t *testing.T) {
	cases := []struct {
		name      string
		twoLevels bool
		args      string
		decision  engine.Decision
		wantRan   []string
		wantEvent string // the approval_required event's arguments
		wantTool  string // the caller's tool result
	}{
		{name: "approve", args: `{"to":"bob"}`, decision: engine.Decision{Approve: true},
			wantRan: []string{`{"to":"bob"}`}, wantEvent: `{"to":"bob"}`,
			wantTool: "clerk: refunded\n\nTool Executions:\nTool Call: refund({\"to\":\"bob\"})\nTool Response: refunded"},
		{name: "approve_with_edited_arguments", args: `{"to":"everyone"}`,
			decision: engine.Decision{Approve: true, Arguments: json.RawMessage(`{"to":"ann"}`)},
			wantRan:  []string{`{"to":"ann"}`}, wantEvent: `{"to":"everyone"}`,
			wantTool: "clerk: refunded\n\nTool Executions:\nTool Call: refund({\"to\":\"ann\"})\nTool Response: refunded"},
		{name: "deny", args: `{"to":"sk-hidden-42"}`, decision: engine.Decision{Reason: "needs a ticket"},
			wantEvent: `{"to":"[redacted]"}`,
			wantTool: "clerk: Failed to execute tool: denied: needs a ticket\n\nTool Executions:\nTool Call: refund({\"to\":\"[redacted]\"})\n" +
				"Tool Response: Failed to execute tool: denied: needs a ticket\n\nErrors:\nrefund: denied: needs a ticket"},
		{name: "two_levels", twoLevels: true, args: `{"to":"bob"}`, decision: engine.Decision{Approve: true},
			wantRan: []string{`{"to":"bob"}`}, wantEvent: `{"to":"bob"}`,
			wantTool: "clerk: cashier: refunded\n\nTool Executions:\nTool Call: refund({\"to\":\"bob\"})\nTool Response: refunded\n\n" +
				"Tool Executions:\nTool Call: cashier({\"task\":\"pay\"})\nTool Response: cashier: refunded\n\nTool Executions:\n" +
				"Tool Call: refund({\"to\":\"bob\"})\nTool Response: refunded"},
	}
	for _, tc := range cases {
		for _, restart := range []string{"same_process", "restart_while_waiting", "restart_after_decision"} {
			t.Run(tc.name+"/"+restart, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "weft.db")
				var events []engine.Event
				var evMu sync.Mutex
				w := &subPromptApproval{}
				reg := w.registry(tc.twoLevels)
				if d := validate.Registry(reg); d.HasErrors() {
					t.Fatal(d.Err())
				}
				ctx := context.Background()
				var st weft.Store
				var eng *engine.Engine
				start := func() {
					var err error
					if st, err = sqlite.Open(ctx, path, sqlite.Options{Key: make([]byte, 32)}); err != nil {
						t.Fatal(err)
					}
					eng, _ = engine.New(engine.Options{Registry: reg, Store: st, Override: w.model(tc.args), OnEvent: func(ev engine.Event) {
						evMu.Lock()
						events = append(events, ev)
						evMu.Unlock()
					}})
				}
				start()
				defer func() { st.Close() }()
				th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant", Env: map[string]string{"TOKEN": "sk-hidden-42"}})
				res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Refund bob"}})
				if err != nil || res.Last().Reason != weft.StopAwaitingApproval || len(w.runs()) != 0 {
					t.Fatalf("first run: %+v %v, ran %v", res, err, w.runs())
				}
				if got, _ := st.Thread(ctx, th.ID); got.Status != weft.ThreadAwaitingApproval {
					t.Errorf("thread status %s", got.Status)
				}
				var announced []map[string]any
				for _, ev := range events {
					if ev.Type == "approval_required" {
						announced = append(announced, ev.Data.(engine.Fields))
					}
				}
				if len(announced) != 1 || announced[0]["call_id"] != "r1" || announced[0]["name"] != "refund" || announced[0]["arguments"] != tc.wantEvent {
					t.Errorf("approval_required events %v", announced)
				}
				recs, _ := st.ToolCalls(ctx, th.ID)
				for _, rec := range recs {
					if (rec.CallID == "c1" || rec.CallID == "k1") && rec.Status != weft.CallRunning {
						t.Errorf("the calling sub-prompt call %s is %s, want running", rec.CallID, rec.Status)
					}
				}
				if restart == "restart_while_waiting" {
					st.Close()
					start()
				}
				pending, _ := eng.PendingApprovals(ctx, th.ID)
				if len(pending) != 1 || pending[0].CallID != "r1" || pending[0].ThreadID != th.ID {
					t.Fatalf("pending %+v", pending)
				}
				if ready, err := eng.Decide(ctx, th.ID, "r1", tc.decision); err != nil || !ready {
					t.Fatalf("Decide: %v %v", ready, err)
				}
				if restart == "restart_after_decision" {
					st.Close()
					start()
				}
				for i := range 2 { // a second continue runs nothing twice
					if res, err = eng.Ask(ctx, th.ID, engine.Input{}); err != nil {
						t.Fatal(err)
					}
					if i == 0 && (len(res.Stops) == 0 || res.Stops[0].Reason != weft.StopOnResponse) {
						t.Errorf("after the decision: %+v", res)
					}
				}
				if got := w.runs(); !slices.Equal(got, tc.wantRan) {
					t.Errorf("ran %v, want %v", got, tc.wantRan)
				}
				tools, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleTool}})
				if len(tools) != 1 || tools[0].ToolCallID != "c1" || tools[0].Content != tc.wantTool {
					t.Fatalf("the caller's tool results %+v, want one for c1:\n%s", tools, tc.wantTool)
				}
				if got := lastText(t, st, th.ID); got != "done: "+tc.wantTool {
					t.Errorf("answer %q", got)
				}
				if p, _ := eng.PendingApprovals(ctx, th.ID); len(p) != 0 {
					t.Errorf("still pending: %+v", p)
				}
				recs, _ = st.ToolCalls(ctx, th.ID)
				for _, rec := range recs {
					if rec.Status != weft.CallDone || rec.ResultMessageID == "" {
						t.Errorf("call record after the run: %+v", rec)
					}
				}
				// The nested rows hang under the caller's tool message.
				all, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1, MaxDepth: 2})
				for _, m := range all {
					if m.Depth == 1 && m.ParentID != tools[0].ID {
						t.Errorf("nested row %s (%s) hangs under %s, not the caller's result %s", m.ID, m.Role, m.ParentID, tools[0].ID)
					}
				}
			})
		}
	}
}

// parkCrash is a crashStore that dies right after the transaction parking a call for approval
// commits: the run never records that it stopped, and its lease is not released.
type parkCrash struct{ crashStore }

type parkSpy struct {
	weft.Tx
	parked *bool
}

func (tx parkSpy) PutToolCall(rec *weft.ToolCallRecord) error {
	if rec.Status == weft.CallAwaitingApproval {
		*tx.parked = true
	}
	return tx.Tx.PutToolCall(rec)
}

func (s *parkCrash) Tx(ctx context.Context, id string, f *weft.Fence, fn func(weft.Tx) error) error {
	parked := false
	err := s.crashStore.Tx(ctx, id, f, func(tx weft.Tx) error { return fn(parkSpy{tx, &parked}) })
	if err == nil && parked && f != nil {
		s.mu.Lock()
		s.after = s.n
		s.mu.Unlock()
	}
	return err
}

// TestApprovalInSubPromptSurvivesCrash: the process dies right after a sub-prompt's call was
// parked; a new process takes the thread over, parks it again from the stored rows, and the
// decision runs the call once and finishes the nested run and the caller's.
func TestApprovalInSubPromptSurvivesCrash(t *testing.T) {
	w := &subPromptApproval{}
	reg := w.registry(false)
	mem, clock := newDeathStore()
	defer mem.Close()
	cs := &parkCrash{crashStore{Store: mem, after: 1 << 30}}
	ctx := context.Background()
	first, _ := engine.New(engine.Options{Registry: reg, Store: cs, Override: w.model(`{"to":"bob"}`), LeaseTTL: deadTTL})
	th, _ := first.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := first.Send(ctx, th.ID, weft.NewMessage{Content: "Refund bob"}); err != nil {
		t.Fatal(err)
	}
	first.Run(ctx, th.ID) // dies right after the park
	if !cs.dead() {
		t.Fatal("the first process never parked")
	}
	if got, _ := mem.Thread(ctx, th.ID); got.Status == weft.ThreadAwaitingApproval {
		t.Fatalf("the dead process recorded its stop: %s", got.Status)
	}

	clock.expire() // the dead process's lease expires
	second, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: w.model(`{"to":"bob"}`)})
	res, err := second.Continue(ctx, th.ID, "")
	if err != nil || res.Last().Reason != weft.StopAwaitingApproval {
		t.Fatalf("takeover: %+v %v", res, err)
	}
	if got, _ := mem.Thread(ctx, th.ID); got.Status != weft.ThreadAwaitingApproval || len(w.runs()) != 0 {
		t.Fatalf("after the takeover: %s, ran %v", got.Status, w.runs())
	}
	if ready, err := second.Decide(ctx, th.ID, "r1", engine.Decision{Approve: true}); err != nil || !ready {
		t.Fatalf("Decide: %v %v", ready, err)
	}
	if _, err := second.Ask(ctx, th.ID, engine.Input{}); err != nil {
		t.Fatal(err)
	}
	if got := w.runs(); !slices.Equal(got, []string{`{"to":"bob"}`}) {
		t.Errorf("ran %v", got)
	}
	if got := lastText(t, mem, th.ID); !strings.HasPrefix(got, "done: clerk: refunded") {
		t.Errorf("answer %q", got)
	}
	// No message was lost or doubled: every call has exactly one result.
	all, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1, MaxDepth: 1})
	results := map[string]int{}
	for _, m := range all {
		if m.Role == weft.RoleTool {
			results[m.ToolCallID]++
		}
	}
	if results["c1"] != 1 || results["r1"] != 1 || len(results) != 2 {
		t.Errorf("results per call: %v", results)
	}
}

// TestApprovalInBackgroundSubagent: a non-blocking subagent's call that needs approval parks the
// child alone — its parent went on — and is listed and decided through the parent; the decided
// child runs the tool once, stops, and reports to the parent, which answers with the report.
func TestApprovalInBackgroundSubagent(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "same_process", true: "after_restart"}[restart], func(t *testing.T) {
			testApprovalInBackgroundSubagent(t, restart)
		})
	}
}

// testApprovalInBackgroundSubagent: with restart, the decision is made by a new engine on the same
// store (a restarted process): Recover leaves the waiting child alone, and Decide drives it on.
func testApprovalInBackgroundSubagent(t *testing.T, restart bool) {
	no := false
	reg := subagentRegistry(weft.ToolEntry{Blocking: &no}, nil)
	var ran atomic.Int32
	reg.AddTool(&weft.Tool{Name: "refund", Description: "Refund.", Approval: weft.ApprovalRequired,
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			ran.Add(1)
			return weft.Success("refunded"), nil
		})})
	rp, _ := reg.Prompt("reviewer")
	rp.Tools = append(rp.Tools, weft.ToolEntry{Name: "refund"})
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case req.Prompt == "reviewer" && last.Role == weft.RoleTool:
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "s1", Name: "approve", Arguments: `{"summary":` + strconvQuote(last.Text()) + `}`}}}, nil
		case req.Prompt == "reviewer":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "r1", Name: "refund", Arguments: `{}`}}}, nil
		case last.Role == weft.RoleTool:
			return &weft.Response{Text: "Started the review."}, nil
		case strings.Contains(last.Text(), "refunded"):
			return &weft.Response{Text: "The child reported: refunded"}, nil
		}
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "p1", Name: "review", Arguments: `{"message":"Refund please"}`}}}, nil
	})
	eng, st := newEngine(t, reg, model, nil)
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Go"}})
	if err != nil || res.Last().Reason != weft.StopOnResponse || ran.Load() != 0 {
		t.Fatalf("%+v %v, ran %d", res, err, ran.Load())
	}
	pending, _ := eng.PendingApprovals(ctx, th.ID)
	if len(pending) != 1 || pending[0].CallID != "r1" || pending[0].ThreadID == th.ID {
		t.Fatalf("pending %+v", pending)
	}
	child, _ := st.Thread(ctx, pending[0].ThreadID)
	if child.Status != weft.ThreadAwaitingApproval {
		t.Fatalf("child status %s", child.Status)
	}
	if restart {
		eng.Wait()
		var err error
		if eng, err = engine.New(engine.Options{Registry: reg, Store: st, Override: model}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.RecoverAll(ctx); err != nil {
			t.Fatal(err)
		}
		eng.Wait()
		if c, _ := st.Thread(ctx, child.ID); c.Status != weft.ThreadAwaitingApproval || ran.Load() != 0 {
			t.Fatalf("after recovery: child %s, ran %d", c.Status, ran.Load())
		}
	}
	if ready, err := eng.Decide(ctx, th.ID, "r1", engine.Decision{Approve: true}); err != nil || !ready {
		t.Fatalf("Decide: %v %v", ready, err)
	}
	eng.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for lastText(t, st, th.ID) != "The child reported: refunded" {
		if time.Now().After(deadline) {
			t.Fatalf("ran %d; parent's last answer %q", ran.Load(), lastText(t, st, th.ID))
		}
		time.Sleep(10 * time.Millisecond)
		eng.Wait()
	}
	if ran.Load() != 1 {
		t.Errorf("the tool ran %d times", ran.Load())
	}
}

// TestDecideRefusalsInSubPrompt: a sub-prompt's waiting call is decided through its thread with
// the same refusals: an unknown call is ENotFound, edited arguments that fail the schema of the
// tool as the sub-prompt offers it are EInvalid (the call keeps waiting), a second decision is
// EConflict.
func TestDecideRefusalsInSubPrompt(t *testing.T) {
	w := &subPromptApproval{}
	eng, _ := newEngine(t, w.registry(false), w.model(`{"to":"bob"}`), nil)
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Go"}}); err != nil || res.Last().Reason != weft.StopAwaitingApproval {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := eng.Decide(ctx, th.ID, "r404", engine.Decision{Approve: true}); weft.ErrorCode(err) != weft.ENotFound {
		t.Errorf("unknown call: %v", err)
	}
	_, err := eng.Decide(ctx, th.ID, "r1", engine.Decision{Approve: true, Arguments: json.RawMessage(`{"to": 42}`)})
	if weft.ErrorCode(err) != weft.EInvalid || !strings.Contains(err.Error(), "/to") {
		t.Errorf("edited arguments against the schema: %v", err)
	}
	if p, _ := eng.PendingApprovals(ctx, th.ID); len(p) != 1 || p[0].CallID != "r1" {
		t.Fatalf("the call stopped waiting after a refused decision: %v", p)
	}
	if _, err := eng.Decide(ctx, th.ID, "r1", engine.Decision{Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Decide(ctx, th.ID, "r1", engine.Decision{Approve: true}); weft.ErrorCode(err) != weft.EConflict {
		t.Errorf("second decision: %v", err)
	}
	if len(w.runs()) != 0 {
		t.Errorf("ran %v", w.runs())
	}
}

// TestApprovalInSubPromptCrashAfterDecision kills the process after every possible commit of the
// run that carries out an approved call inside a sub-prompt; a new process finishes the thread:
// the call ran at most once, every call has exactly one result, and the caller's answer came.
func TestApprovalInSubPromptCrashAfterDecision(t *testing.T) {
	for after := 0; after <= 8; after++ {
		t.Run(fmt.Sprint("crash_after_commit_", after), func(t *testing.T) {
			w := &subPromptApproval{}
			reg := w.registry(false)
			model := w.model(`{"to":"bob"}`)
			mem, clock := newDeathStore()
			defer mem.Close()
			ctx := context.Background()
			eng, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: model})
			th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			if res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Go"}}); err != nil || res.Last().Reason != weft.StopAwaitingApproval {
				t.Fatalf("%+v %v", res, err)
			}
			if _, err := eng.Decide(ctx, th.ID, "r1", engine.Decision{Approve: true}); err != nil {
				t.Fatal(err)
			}
			cs := &crashStore{Store: mem, after: after}
			dying, _ := engine.New(engine.Options{Registry: reg, Store: cs, Override: model, LeaseTTL: deadTTL})
			dying.Continue(ctx, th.ID, "") // dies after `after` commits
			if after == 8 && cs.dead() {
				t.Fatal("the sweep must reach a run that completes without a crash")
			}
			clock.expire() // the dead process's lease expires
			next, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: model})
			if _, err := next.Continue(ctx, th.ID, ""); err != nil {
				t.Fatal(err)
			}
			if n := len(w.runs()); n > 1 {
				t.Errorf("the approved call ran %d times", n)
			}
			all, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1, MaxDepth: 1})
			results := map[string]int{}
			for _, m := range all {
				if m.Role == weft.RoleTool {
					results[m.ToolCallID]++
				}
			}
			if results["c1"] != 1 || results["r1"] != 1 || len(results) != 2 {
				t.Errorf("results per call: %v", results)
			}
			if got := lastText(t, mem, th.ID); !strings.HasPrefix(got, "done: clerk: ") {
				t.Errorf("answer %q", got)
			}
			if len(w.runs()) == 0 && !strings.Contains(lastText(t, mem, th.ID), "interrupted by a restart") {
				t.Errorf("the call never ran, and its result does not say it was interrupted: %q", lastText(t, mem, th.ID))
			}
		})
	}
}

// TestImmediateStartsAfterAParkedOne: when an immediate blocking subagent parks its parent, the
// blocking immediate entries after it are stored as calls of their own that the parent's resumed
// run makes once the decision is taken: every entry starts exactly once, and the parent's model
// reads every child's result.
func TestImmediateStartsAfterAParkedOne(t *testing.T) {
	yes := true
	reg := subagentRegistry(weft.ToolEntry{Immediate: &yes}, nil)
	review, _ := reg.Agent("review")
	proof := *review
	proof.Name = "proof"
	reg.AddAgent(&proof)
	ap, _ := reg.Prompt("assistant")
	ap.Tools = append(ap.Tools, weft.ToolEntry{Name: "proof", Kind: weft.EntryAgent, Immediate: &yes})
	ran := 0
	reg.AddTool(&weft.Tool{Name: "refund", Description: "Refund.", Approval: weft.ApprovalRequired,
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			ran++
			return weft.Success("refunded"), nil
		})})
	rp, _ := reg.Prompt("reviewer")
	rp.Tools = append(rp.Tools, weft.ToolEntry{Name: "refund"})
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case req.Agent == "proof":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "p1", Name: "approve", Arguments: `{"summary":"proofread"}`}}}, nil
		case req.Prompt == "reviewer" && last.Role == weft.RoleTool:
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "s1", Name: "approve", Arguments: `{"summary":` + strconvQuote(last.Text()) + `}`}}}, nil
		case req.Prompt == "reviewer":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "r1", Name: "refund", Arguments: `{}`}}}, nil
		}
		var results []string
		for _, m := range req.Messages {
			if m.Role == weft.RoleTool {
				results = append(results, m.Name+": "+m.Text())
			}
		}
		return &weft.Response{Text: "Children said: " + strings.Join(results, ", ")}, nil
	})
	eng, st := newEngine(t, reg, model, nil)
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Go"}})
	if err != nil || res.Last().Reason != weft.StopAwaitingApproval || ran != 0 {
		t.Fatalf("%+v %v, ran %d", res, err, ran)
	}
	if kids, n, _ := st.Threads(ctx, weft.ThreadQuery{ParentID: th.ID}); n != 1 || kids[0].Agent != "review" {
		t.Fatalf("children while parked: %d %v", n, kids)
	}
	if ready, err := eng.Decide(ctx, th.ID, "r1", engine.Decision{Approve: true}); err != nil || !ready {
		t.Fatalf("Decide: %v %v", ready, err)
	}
	if _, err := eng.Ask(ctx, th.ID, engine.Input{}); err != nil {
		t.Fatal(err)
	}
	if got := lastText(t, st, th.ID); ran != 1 || got != "Children said: review: refunded, proof: proofread" {
		t.Errorf("ran %d, answer %q", ran, got)
	}
	if kids, n, _ := st.Threads(ctx, weft.ThreadQuery{ParentID: th.ID}); n != 2 {
		t.Errorf("children: %d %v", n, kids)
	}
}
