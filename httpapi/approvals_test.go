package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// TestApprovals: a call that needs approval stops the run; the API lists it, refuses bad
// decisions, and an approval with edited arguments resumes the run at once.
func TestApprovals(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var created struct {
		Thread weft.Thread `json:"thread"`
	}
	e.json("POST", "/api/threads", e.alice, map[string]any{"agent": "careful"}, 201, &created)
	id := created.Thread.ID
	events, _ := e.sse(ctx, "/api/threads/"+id+"/events", e.alice, "")
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "refund 42"}, 202, nil)
	got := until(t, events, "run_stopped", 10*time.Second)
	if r := got[len(got)-1].data["reason"]; r != "awaiting_approval" {
		t.Fatalf("stopped %v", r)
	}
	var pending []map[string]any
	e.json("GET", "/api/threads/"+id+"/approvals", e.alice, nil, 200, &pending)
	if len(pending) != 1 || pending[0]["name"] != "refund" || pending[0]["arguments"] != `{"order_id":42}` {
		t.Fatalf("pending %v", pending)
	}
	call := pending[0]["call_id"].(string)
	path := "/api/threads/" + id + "/approvals/" + call
	e.json("GET", "/api/threads/"+id+"/approvals", e.bob, nil, 404, nil)
	e.json("POST", path, e.alice, `{}`, 400, nil)
	e.json("POST", path, e.alice, `{"approve":false,"arguments":{"order_id":1}}`, 400, nil)
	e.json("POST", path, e.alice, `{"approve":true,"arguments":{"order_id":"x"}}`, 400, nil)
	e.json("POST", "/api/threads/"+id+"/approvals/call_missing", e.alice, `{"approve":true}`, 404, nil)
	var res struct{ Ready bool }
	e.json("POST", path, e.alice, `{"approve":true,"arguments":{"order_id":7}}`, 200, &res)
	if !res.Ready {
		t.Fatal("not ready after the only waiting call was approved")
	}
	e.json("POST", path, e.alice, `{"approve":true}`, 409, nil)
	var recs []weft.ToolCallRecord
	e.json("GET", "/api/threads/"+id+"/tool-calls", e.alice, nil, 200, &recs)
	if len(recs) != 1 || recs[0].CallID != call || !strings.Contains(string(recs[0].Meta), "approved") {
		t.Fatalf("tool calls %+v", recs)
	}
	until(t, events, "run_stopped", 10*time.Second)
	var msgs struct {
		Items []weft.Message `json:"items"`
	}
	e.json("GET", "/api/threads/"+id+"/messages", e.alice, nil, 200, &msgs)
	last := msgs.Items[len(msgs.Items)-1]
	if !strings.Contains(last.Content, `"order_id":7`) {
		t.Fatalf("the approved call ran with %q", last.Content)
	}
}

// TestBudgetAndDecisionRoute: a thread's budget is set at creation and raised with PATCH (both
// validated), and a decision can also be posted to /tool-calls/{call}/decision.
func TestBudgetAndDecisionRoute(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e.json("POST", "/api/threads", e.alice, map[string]any{"agent": "careful", "budget": map[string]any{"maxCostUsd": -1}}, 400, nil)
	var created struct {
		Thread weft.Thread `json:"thread"`
	}
	e.json("POST", "/api/threads", e.alice, map[string]any{"agent": "careful", "budget": map[string]any{"maxTokens": 100000}}, 201, &created)
	id := created.Thread.ID
	if b, _ := created.Thread.Properties["weft.budget"].(map[string]any); b == nil || b["maxTokens"] != float64(100000) {
		t.Fatalf("budget property %v", created.Thread.Properties)
	}
	e.json("PATCH", "/api/threads/"+id, e.alice, map[string]any{"budget": map[string]any{"maxTokens": 0}}, 400, nil)
	var patched weft.Thread
	e.json("PATCH", "/api/threads/"+id, e.alice, map[string]any{"budget": map[string]any{"maxCostUsd": 2.5}}, 200, &patched)
	if b, _ := patched.Properties["weft.budget"].(map[string]any); b == nil || b["maxCostUsd"] != 2.5 {
		t.Fatalf("patched budget %v", patched.Properties)
	}
	events, _ := e.sse(ctx, "/api/threads/"+id+"/events", e.alice, "")
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "refund 42"}, 202, nil)
	until(t, events, "run_stopped", 10*time.Second)
	var pending []map[string]any
	e.json("GET", "/api/threads/"+id+"/approvals", e.alice, nil, 200, &pending)
	if len(pending) != 1 {
		t.Fatalf("pending %v", pending)
	}
	var res struct{ Ready bool }
	e.json("POST", "/api/threads/"+id+"/tool-calls/"+pending[0]["call_id"].(string)+"/decision", e.alice, `{"approve":false,"reason":"no"}`, 200, &res)
	if !res.Ready {
		t.Fatal("not ready")
	}
	if got := until(t, events, "run_stopped", 10*time.Second); got[len(got)-1].data["reason"] == "awaiting_approval" {
		t.Fatalf("still waiting: %v", got[len(got)-1].data)
	}
}
