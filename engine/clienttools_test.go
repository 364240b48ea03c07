package engine_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/scripted"
)

// TestClientTools: a thread's client tool is offered to the model in that thread only; its call
// parks the run without running anything; DeliverToolResult answers it, once, with the client's
// result, which the model then reads; a call of an agent's own tool cannot be answered so, and a
// client call approved without a result gets an error result.
func TestClientTools(t *testing.T) {
	ctx := context.Background()
	w := &approvalWorld{}
	reg := w.registry(map[string]weft.Approval{"refund": weft.ApprovalRequired}, nil)
	var mu sync.Mutex
	offered := map[string][]string{} // thread → tools offered on its first call
	current := ""                    // the thread asked
	model := w.model()
	st, _ := memstore.New(memstore.Options{})
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: weft.ProviderFunc(
		func(ctx context.Context, req *weft.Request, f func(weft.Chunk)) (*weft.Response, error) {
			mu.Lock()
			if _, ok := offered[current]; !ok {
				for _, s := range req.Tools {
					offered[current] = append(offered[current], s.Name)
				}
			}
			mu.Unlock()
			return model.Call(ctx, req, f)
		})})
	if err != nil {
		t.Fatal(err)
	}
	confirm := engine.ClientTool{Name: "confirm", Description: "Ask the user.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`)}
	if err := engine.CheckClientTools([]engine.ClientTool{{Name: "a b"}}); weft.ErrorCode(err) != weft.EInvalid {
		t.Errorf("a bad name: %v", err)
	}
	if err := engine.CheckClientTools([]engine.ClientTool{confirm, confirm}); weft.ErrorCode(err) != weft.EInvalid {
		t.Errorf("a name twice: %v", err)
	}
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	other, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err := eng.SetClientTools(ctx, th.ID, []engine.ClientTool{confirm}); err != nil {
		t.Fatal(err)
	}

	w.calls = []weft.ToolCall{call("c1", "confirm", "ok?")}
	mu.Lock()
	current = th.ID
	mu.Unlock()
	if res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Go"}}); err != nil || res.Last().Reason != weft.StopAwaitingApproval {
		t.Fatalf("%+v %v", res, err)
	}
	if !slices.Contains(offered[th.ID], "confirm") {
		t.Errorf("offered %v", offered[th.ID])
	}
	if _, err := eng.DeliverToolResult(ctx, th.ID, "nope", weft.Success("x"), "u"); weft.ErrorCode(err) != weft.ENotFound {
		t.Errorf("an unknown call: %v", err)
	}
	if ready, err := eng.DeliverToolResult(ctx, th.ID, "c1", weft.Success("yes, go"), "u"); err != nil || !ready {
		t.Fatalf("deliver: %v %v", ready, err)
	}
	if _, err := eng.DeliverToolResult(ctx, th.ID, "c1", weft.Success("again"), "u"); weft.ErrorCode(err) != weft.EConflict {
		t.Errorf("a second result: %v", err)
	}
	if res, err := eng.Ask(ctx, th.ID, engine.Input{}); err != nil || res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("%+v %v", res, err)
	}
	if got := lastText(t, st, th.ID); got != "Results: yes, go" {
		t.Errorf("the model read %q", got)
	}
	if ran := w.runs(); len(ran) != 0 {
		t.Errorf("tools ran in the server: %v", ran)
	}

	// Another thread: not offered confirm; its refund waits for a person, not a client.
	w.calls = []weft.ToolCall{call("c2", "refund", "x")}
	mu.Lock()
	current = other.ID
	mu.Unlock()
	if res, err := eng.Ask(ctx, other.ID, engine.Input{Message: &weft.NewMessage{Content: "Go"}}); err != nil || res.Last().Reason != weft.StopAwaitingApproval {
		t.Fatalf("%+v %v", res, err)
	}
	if slices.Contains(offered[other.ID], "confirm") || len(offered[other.ID]) == 0 {
		t.Errorf("the other thread was offered %v", offered[other.ID])
	}
	if _, err := eng.DeliverToolResult(ctx, other.ID, "c2", weft.Success("x"), "u"); weft.ErrorCode(err) != weft.EInvalid {
		t.Errorf("a result for an agent tool's call: %v", err)
	}

	// Approved in /api's way, without a result: an error result, nothing run.
	w.calls = []weft.ToolCall{call("c3", "confirm", "again?")}
	if res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Go"}}); err != nil || res.Last().Reason != weft.StopAwaitingApproval {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := eng.Decide(ctx, th.ID, "c3", engine.Decision{Approve: true, By: "u"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Ask(ctx, th.ID, engine.Input{}); err != nil {
		t.Fatal(err)
	}
	if got := lastText(t, st, th.ID); !strings.Contains(got, "gave no result") {
		t.Errorf("approved without a result: %q", got)
	}
}

// TestClientToolResultRedacted: a client's result that echoes a secret of the thread is redacted
// before it is stored — on the call's record and in the result the model reads — as every row
// the committer writes.
func TestClientToolResultRedacted(t *testing.T) {
	const secret = `q"uote-5150`
	reg := registry(nil, nil)
	sc, err := scripted.Parse("script.yaml", []byte("- tool_calls: [{name: confirm, id: call_1, arguments: '{}'}]\n- text: Done.\n"))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := memstore.New(memstore.Options{})
	defer st.Close()
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: scripted.New(sc)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant", Env: map[string]string{"SECRET_TOKEN": secret}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.SetClientTools(ctx, th.ID, []engine.ClientTool{{Name: "confirm", Description: "Ask the user."}}); err != nil {
		t.Fatal(err)
	}
	if res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Go"}}); err != nil || res.Last().Reason != weft.StopAwaitingApproval {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := eng.DeliverToolResult(ctx, th.ID, "call_1", weft.Success("the token is "+secret), "u"); err != nil {
		t.Fatal(err)
	}
	recs, err := st.ToolCalls(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if b, _ := json.Marshal(r); holdsSecret(string(b), secret) {
			t.Errorf("the call's record holds the secret: %s", b)
		}
	}
	if _, err := eng.Ask(ctx, th.ID, engine.Input{}); err != nil {
		t.Fatal(err)
	}
	msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	for _, m := range msgs {
		if holdsSecret(m.Content, secret) {
			t.Errorf("a %s message holds the secret: %q", m.Role, m.Content)
		}
		if m.Role == weft.RoleTool && !strings.Contains(m.Content, "the token is") {
			t.Errorf("the result the model reads: %q", m.Content)
		}
	}
}
