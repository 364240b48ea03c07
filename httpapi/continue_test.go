package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestContinue: continue while a run is under way is thread_running; once idle it starts a run
// whose trigger is continue.
func TestContinue(t *testing.T) {
	e := newEnv(t, envOptions{gate: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := e.createThread(e.alice)
	events, _ := e.sse(ctx, "/api/threads/"+id+"/events", e.alice, "")
	var posted struct{ Status string }
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "hello"}, 202, &posted)
	until(t, events, "llm_request", 10*time.Second) // the run waits at the model's gate
	var refused struct{ Error struct{ Code string } }
	e.json("POST", "/api/threads/"+id+"/continue", e.alice, nil, 409, &refused)
	if refused.Error.Code != "thread_running" {
		t.Fatalf("code %q", refused.Error.Code)
	}
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "more"}, 202, &posted)
	if posted.Status != "queued" {
		t.Fatalf("a message during a run is %q, want queued", posted.Status)
	}
	close(e.model.gate)
	until(t, events, "run_stopped", 10*time.Second)
	var started struct{ Status string }
	e.json("POST", "/api/threads/"+id+"/continue", e.alice, `{"side":"a"}`, 202, &started)
	got := until(t, events, "run_stopped", 10*time.Second)
	trigger := ""
	for _, ev := range got {
		if ev.typ == "run_started" {
			trigger, _ = ev.data["trigger"].(string)
		}
	}
	if started.Status != "started" || trigger != "continue" {
		t.Fatalf("continue: %q, trigger %q (%s)", started.Status, trigger, strings.Join(types(got), " "))
	}
	// Instance and user env: one variable at a time, a secret's value never shown.
	e.json("PUT", "/api/users/me/env/API_TOKEN", e.alice, `{"value":"tok-123456","type":"secret"}`, 200, nil)
	var row map[string]any
	e.json("GET", "/api/users/me/env/API_TOKEN", e.alice, nil, 200, &row)
	if row["set"] != true || row["value"] != nil {
		t.Fatalf("user env row %v", row)
	}
	e.json("GET", "/api/users/me/env/API_TOKEN", e.bob, nil, 404, nil)
	e.json("PUT", "/api/env/instance/REGION", e.admin, `{"value":"eu","type":"text"}`, 200, nil)
	e.json("GET", "/api/env/instance/REGION", e.admin, nil, 200, &row)
	if row["value"] != "eu" {
		t.Fatalf("instance env row %v", row)
	}
	e.json("PUT", "/api/env/instance/REGION", e.alice, `{"value":"us"}`, 403, nil)
	e.json("DELETE", "/api/env/instance/REGION", e.admin, nil, 204, nil)
	e.json("GET", "/api/env/instance/REGION", e.admin, nil, 404, nil)
}
