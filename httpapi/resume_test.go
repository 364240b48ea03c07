package httpapi_test

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// recorded keeps the events with a cursor (streamed deltas have none) and checks that cursors
// rise by one.
func recorded(t *testing.T, evs []sseEvent) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, ev := range evs {
		if ev.id == "" {
			continue
		}
		if len(out) > 0 {
			prev, _ := strconv.Atoi(out[len(out)-1].id)
			if cur, _ := strconv.Atoi(ev.id); cur != prev+1 {
				t.Fatalf("cursor %d after %d: a gap or a repeat", cur, prev)
			}
		}
		out = append(out, ev)
	}
	return out
}

// TestResumeStream: a subscriber that drops mid-run and reconnects with Last-Event-ID receives
// exactly the recorded events it missed, in order, then the live ones.
func TestResumeStream(t *testing.T) {
	e := newEnv(t, envOptions{gate: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := e.createThread(e.alice)
	path := "/api/threads/" + id + "/events"
	firstCtx, drop := context.WithCancel(ctx)
	first, _ := e.sse(firstCtx, path, e.alice, "")
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "hello"}, 202, nil)
	seen := recorded(t, until(t, first, "llm_request", 10*time.Second))
	last := seen[len(seen)-1].id
	drop() // the connection goes while the model call is held
	for range first {
	}
	close(e.model.gate)

	again, _ := e.sse(ctx, path, e.alice, last)
	missed := recorded(t, until(t, again, "run_stopped", 10*time.Second))
	full, _ := e.sse(ctx, path, e.alice, "")
	all := recorded(t, until(t, full, "run_stopped", 10*time.Second))
	if all[0].id != "1" || all[0].typ != "thread_created" {
		t.Fatalf("a stream from the start begins with %s %s", all[0].id, all[0].typ)
	}
	// What the first connection saw plus what the second got is every recorded event, once each.
	joined := append(append([]sseEvent{}, seen...), missed...)
	if len(joined) != len(all) {
		t.Fatalf("saw %d + missed %d events, the thread has %d", len(seen), len(missed), len(all))
	}
	for i := range all {
		if joined[i].id != all[i].id || joined[i].typ != all[i].typ {
			t.Fatalf("event %d: got %s %s, want %s %s", i, joined[i].id, joined[i].typ, all[i].id, all[i].typ)
		}
	}
	// The WebSocket takes the same cursor as ?after=.
	code, _ := e.do("GET", path+"?after=-1", e.alice, nil)
	if code != 400 {
		t.Fatalf("a negative cursor: %d", code)
	}
}
