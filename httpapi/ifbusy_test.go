package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/project"
)

// TestIfBusy: if_busy on POST …/messages and as the thread's default (creation, PATCH). While a
// run waits for the model: reject is 409 thread_busy naming the run, queue is 202 queued, an
// unknown policy 400; interrupt is 202, cancels the model call (nothing of it stored), records
// run_interrupted with the run and the message, and a new run answers every queued message.
func TestIfBusy(t *testing.T) {
	e := newEnv(t, envOptions{gate: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.json("POST", "/api/threads", e.alice, map[string]any{"agent": "chat", "if_busy": "later"}, 400, nil)
	var created struct{ Thread weft.Thread }
	e.json("POST", "/api/threads", e.alice, map[string]any{"agent": "chat", "if_busy": "reject", "properties": map[string]any{"team": "x"}}, 201, &created)
	id := created.Thread.ID
	if created.Thread.Properties[weft.PropertyIfBusy] != "reject" || created.Thread.Properties["team"] != "x" {
		t.Fatalf("the thread's properties %v, want its if_busy and the given ones", created.Thread.Properties)
	}
	events, _ := e.sse(ctx, "/api/threads/"+id+"/events", e.alice, "")
	var posted struct {
		Status    string
		MessageID string `json:"message_id"`
	}
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "hello"}, 202, &posted)
	got := until(t, events, "llm_request", 10*time.Second) // the run waits at the model's gate
	runID := ""
	for _, ev := range got {
		if ev.typ == "run_started" {
			runID, _ = ev.data["run_id"].(string)
		}
	}
	var refused struct {
		Error struct {
			Code  string
			RunID string `json:"run_id"`
		}
	}
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "refused"}, 409, &refused)
	if refused.Error.Code != "thread_busy" || refused.Error.RunID == "" || refused.Error.RunID != runID {
		t.Fatalf("the thread's default reject: %+v, want thread_busy naming run %q", refused.Error, runID)
	}
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "x", "if_busy": "later"}, 400, nil)
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "queued", "if_busy": "queue"}, 202, &posted)
	if posted.Status != "queued" {
		t.Fatalf("a message queued during a run is %q", posted.Status)
	}

	var patched weft.Thread
	e.json("PATCH", "/api/threads/"+id, e.alice, map[string]any{"if_busy": "interrupt"}, 200, &patched)
	if patched.Properties[weft.PropertyIfBusy] != "interrupt" || patched.Properties["team"] != "x" {
		t.Fatalf("patched properties %v", patched.Properties)
	}
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "instead"}, 202, &posted)
	got = until(t, events, "run_interrupted", 10*time.Second)
	ev := got[len(got)-1]
	if ev.data["run_id"] != runID || ev.data["message_id"] != posted.MessageID {
		t.Fatalf("run_interrupted %v, want run %s and message %s", ev.data, runID, posted.MessageID)
	}
	got = until(t, events, "run_stopped", 10*time.Second)
	if reason := got[len(got)-1].data["reason"]; reason != string(weft.StopInterrupted) {
		t.Fatalf("the interrupted run stopped %v", reason)
	}
	close(e.model.gate)
	got = until(t, events, "run_stopped", 10*time.Second)
	if reason := got[len(got)-1].data["reason"]; reason != string(weft.StopOnResponse) {
		t.Fatalf("the next run stopped %v (%v)", reason, types(got))
	}
	var msgs struct{ Items []weft.Message }
	e.json("GET", "/api/threads/"+id+"/messages", e.alice, nil, 200, &msgs)
	var lines []string
	for _, m := range msgs.Items {
		lines = append(lines, string(m.Role)+": "+m.Content)
	}
	// (Nothing of the cancelled model call: the first reply is the new run's.)
	want := []string{"user: hello", "user: queued", "user: instead", "assistant: ", `tool: {"text":"ping"}`,
		"assistant: Done. The token was " + secretValue + ", all good."}
	if !slices.Equal(lines, want) {
		t.Fatalf("messages %q, want %q", lines, want)
	}
}

// TestIfBusyRejectNamesRunElsewhere: a node whose API refuses a message with if_busy reject for a
// thread another node runs names that node's run, read from the thread's recorded events.
func TestIfBusyRejectNamesRunElsewhere(t *testing.T) {
	reg, diags := project.Open("testdata/agents", project.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	model := &fakeModel{gate: make(chan struct{})}
	runs := make(chan string, 4)
	running, err := engine.New(engine.Options{Registry: reg, Store: st, Override: model, RecordEvents: true, NodeID: "node-a",
		OnEvent: func(ev engine.Event) {
			if d, ok := ev.Data.(engine.ModelRequest); ok && d.Attempt == 1 {
				runs <- ev.ThreadID
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := engine.New(engine.Options{Registry: reg, Store: st, Override: model, RecordEvents: true, NodeID: "node-b"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Engine: other, NoAuth: true, Version: "test"}).Handler())
	defer srv.Close()
	ctx := t.Context()
	th, err := running.CreateThread(ctx, engine.NewThread{Agent: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := running.Send(ctx, th.ID, weft.NewMessage{Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = running.Run(ctx, th.ID)
	}()
	defer func() { close(model.gate); <-done }()
	<-runs // node-a's run waits at the model's gate
	evs, err := st.Events(ctx, th.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	for _, ev := range evs {
		if ev.Type == "run_started" {
			_ = json.Unmarshal(ev.Data, &started)
		}
	}
	resp, err := http.Post(srv.URL+"/api/threads/"+th.ID+"/messages", "application/json", strings.NewReader(`{"content":"no","if_busy":"reject"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var refused struct {
		Error struct {
			Code  string
			RunID string `json:"run_id"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&refused); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusConflict || refused.Error.Code != "thread_busy" || started.RunID == "" || refused.Error.RunID != started.RunID {
		t.Fatalf("%d %+v, want 409 thread_busy naming node-a's run %q", resp.StatusCode, refused.Error, started.RunID)
	}
}
