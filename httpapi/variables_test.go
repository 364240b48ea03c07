package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// TestVariablesFlow: a subagent missing a scoped variable is not created; the parent's stream
// shows env_required with the request's endpoint, GET describes the request, POST stores the
// values and starts the child at once.
func TestVariablesFlow(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var created struct {
		Thread weft.Thread `json:"thread"`
	}
	e.json("POST", "/api/threads", e.alice, map[string]any{"agent": "boss"}, 201, &created)
	id := created.Thread.ID
	events, _ := e.sse(ctx, "/api/threads/"+id+"/events", e.alice, "")
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "please review"}, 202, nil)
	got := until(t, events, "env_required", 10*time.Second)
	ev := got[len(got)-1].data
	reqID, _ := ev["request_id"].(string)
	if reqID == "" || ev["endpoint"] != "/api/threads/"+id+"/variables/"+reqID || ev["agent"] != "review" {
		t.Fatalf("env_required %v", ev)
	}
	until(t, events, "run_stopped", 10*time.Second)

	path := "/api/threads/" + id + "/variables/" + reqID
	var req struct {
		RequestID string `json:"request_id"`
		Status    string `json:"status"`
		Missing   []string
		Required  []struct {
			Name   string
			Scoped bool
		}
	}
	e.json("GET", path, e.alice, nil, 200, &req)
	if req.Status != "pending" || len(req.Missing) != 1 || req.Missing[0] != "STYLE_GUIDE" || !req.Required[0].Scoped {
		t.Fatalf("request %+v", req)
	}
	e.json("GET", path, e.bob, nil, 404, nil)
	e.json("POST", path, e.alice, `{"env":{"OTHER":"x"}}`, 422, nil)
	e.json("POST", path, e.alice, `{"env":{"STYLE_GUIDE":5}}`, 400, nil)
	var done struct {
		ChildThreadID string `json:"child_thread_id"`
		Status        string `json:"status"`
	}
	e.json("POST", path, e.alice, `{"env":{"STYLE_GUIDE":"AP style"}}`, 201, &done)
	if done.Status != "success" || done.ChildThreadID == "" {
		t.Fatalf("fulfilled %+v", done)
	}
	e.json("POST", path, e.alice, `{"env":{"STYLE_GUIDE":"AP style"}}`, 409, nil)
	// The child is alice's (a descendant of her thread) and its secret is not shown.
	e.json("GET", "/api/threads/"+done.ChildThreadID, e.alice, nil, 200, nil)
	code, body := e.do("GET", "/api/threads/"+done.ChildThreadID+"/env", e.alice, nil)
	if code != 200 || !strings.Contains(string(body), "STYLE_GUIDE") || strings.Contains(string(body), "AP style") {
		t.Fatalf("child env: %d %s", code, body)
	}
	var subs []map[string]any
	e.json("GET", "/api/threads/"+id+"/subagents", e.alice, nil, 200, &subs)
	if len(subs) != 1 || subs[0]["reference"] != done.ChildThreadID {
		t.Fatalf("subagents %v", subs)
	}
}
