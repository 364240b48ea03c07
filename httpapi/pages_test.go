package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// TestThreadLastStop: GET /api/threads/{id} tells why and after how many steps the last run
// stopped, so that a page shows it without replaying the event log.
func TestThreadLastStop(t *testing.T) {
	e := newEnv(t, envOptions{})
	id := e.createThread(e.alice)
	var before map[string]any
	e.json("GET", "/api/threads/"+id, e.alice, nil, 200, &before)
	if v, ok := before["last_stop"]; !ok || v != nil {
		t.Fatalf("a thread that never ran: last_stop %v (present %v)", v, ok)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	evs, _ := e.sse(ctx, "/api/threads/"+id+"/events", e.alice, "")
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "hello"}, 202, nil)
	stopped := until(t, evs, "run_stopped", 10*time.Second)
	last := stopped[len(stopped)-1].data
	var after struct {
		LastStop struct {
			RunID  string `json:"run_id"`
			Reason string
			Side   string
			Steps  int
			At     string
		} `json:"last_stop"`
	}
	e.json("GET", "/api/threads/"+id, e.alice, nil, 200, &after)
	ls := after.LastStop
	if ls.Reason != "stop_on_response" || ls.Steps != 2 || ls.Side != last["side"] || ls.RunID != last["run_id"] || ls.At == "" {
		t.Fatalf("last_stop %+v; the event said %v", ls, last)
	}
}

// TestPagesBesideAPI: Options.Pages serves the paths outside /api, behind the same request log;
// /api paths never reach it.
func TestPagesBesideAPI(t *testing.T) {
	pages := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("page " + r.URL.Path))
	})
	e := newEnv(t, envOptions{pages: pages})
	for path, want := range map[string]string{"/": "page /", "/threads/thr_x": "page /threads/thr_x"} {
		code, body := e.do("GET", path, "", nil)
		if code != 200 || string(body) != want {
			t.Errorf("GET %s: %d %q, want %q", path, code, body, want)
		}
	}
	if code, body := e.do("GET", "/api/nothing", "", nil); code != 404 || string(body) == "page /api/nothing" {
		t.Errorf("GET /api/nothing: %d %s", code, body)
	}
	// Without Pages, a path outside /api is a plain 404.
	bare := newEnv(t, envOptions{})
	if code, _ := bare.do("GET", "/", "", nil); code != 404 {
		t.Errorf("GET / without pages: %d", code)
	}
}

// TestListThreadsByCost: sort=cost orders threads by their spend (descendants' included), highest
// first, and with_cost adds each thread's cost_total to the list.
func TestListThreadsByCost(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	spend := map[string]float64{}
	var ids []string
	for i, c := range []float64{0.02, 0.5, 0.1} {
		id := e.createThread(e.alice)
		ids = append(ids, id)
		spend[id] = c
		cost := c
		if err := e.store.Tx(ctx, id, nil, func(tx weft.Tx) error {
			return tx.PutLog(&weft.LogEntry{ID: weft.NewID("log_"), ThreadID: id, Kind: "llm", Model: "fast", CostTotal: &cost,
				InputTokens: 10 * (i + 1)})
		}); err != nil {
			t.Fatal(err)
		}
	}
	var byCost struct {
		Items []struct {
			ID        string
			CostTotal *float64 `json:"cost_total"`
		}
		Total   int
		HasMore bool `json:"has_more"`
	}
	e.json("GET", "/api/threads?sort=cost&limit=2", e.alice, nil, 200, &byCost)
	if len(byCost.Items) != 2 || byCost.Total != 3 || !byCost.HasMore || byCost.Items[0].ID != ids[1] || byCost.Items[1].ID != ids[2] ||
		byCost.Items[0].CostTotal == nil || *byCost.Items[0].CostTotal != 0.5 {
		t.Fatalf("sort=cost: %+v", byCost)
	}
	e.json("GET", "/api/threads?sort=cost&limit=2&offset=2", e.alice, nil, 200, &byCost)
	if len(byCost.Items) != 1 || byCost.Items[0].ID != ids[0] || byCost.HasMore {
		t.Fatalf("sort=cost, second page: %+v", byCost)
	}
	var plain map[string]any
	e.json("GET", "/api/threads", e.alice, nil, 200, &plain)
	if item := plain["items"].([]any)[0].(map[string]any); item["cost_total"] != nil || item["id"] == nil {
		t.Fatalf("a plain list carries no cost: %v", item)
	}
	e.json("GET", "/api/threads?with_cost=true&sort=oldest", e.alice, nil, 200, &byCost)
	for i, it := range byCost.Items {
		if it.ID != ids[i] || it.CostTotal == nil || *it.CostTotal != spend[it.ID] {
			t.Fatalf("with_cost item %d: %+v", i, it)
		}
	}
	if code, _ := e.do("GET", "/api/threads?sort=price", e.alice, nil); code != 400 {
		t.Fatalf("an unknown sort: %d", code)
	}
}

// TestThreadLastStopFromLog: a failed thread whose run recorded no events (as weft run's engine
// records none) still tells why: last_stop carries its stop reason and the newest error its newest
// run logged, redacted; a thread whose run went well gets none.
func TestThreadLastStopFromLog(t *testing.T) {
	e := newEnv(t, envOptions{})
	id := e.createThread(e.alice)
	ctx := context.Background()
	reason, failed := weft.StopStepError, weft.ThreadFailed
	if err := e.store.Tx(ctx, id, nil, func(tx weft.Tx) error {
		for _, l := range []*weft.LogEntry{
			{ID: "log_01old", RunID: "run_1", Kind: "llm", Error: "an older run's error", CreatedAt: time.Now().Add(-time.Minute)},
			{ID: "log_02fail", RunID: "run_2", Kind: "llm", Error: "the provider said no to " + secretValue, CreatedAt: time.Now().Add(-time.Second)},
			{ID: "log_03retry", RunID: "run_2", Kind: "llm", CreatedAt: time.Now()},
		} {
			l.ThreadID = id
			if err := tx.PutLog(l); err != nil {
				return err
			}
		}
		return tx.UpdateThread(weft.ThreadPatch{Status: &failed, StopReason: &reason})
	}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		LastStop map[string]any `json:"last_stop"`
	}
	e.json("GET", "/api/threads/"+id, e.alice, nil, 200, &got)
	ls := got.LastStop
	if ls["reason"] != "step_error" || ls["from"] != "log" || ls["log_id"] != "log_02fail" || ls["run_id"] != "run_2" ||
		ls["error"] != "the provider said no to [redacted]" {
		t.Fatalf("last_stop %v", ls)
	}
	ok := e.createThread(e.alice)
	var fine map[string]any
	e.json("GET", "/api/threads/"+ok, e.alice, nil, 200, &fine)
	if fine["last_stop"] != nil {
		t.Fatalf("a thread that never ran: last_stop %v", fine["last_stop"])
	}
}

// TestThreadA2ATasks: GET /api/threads/{id}/a2a/tasks lists the thread's tasks as A2A folds them
// from its events, and whether A2A clients talk to it (here: the a2a tag; the inspector's browser
// test has a real A2A client); only to those who may see the thread; without the option, 404.
func TestThreadA2ATasks(t *testing.T) {
	e := newEnv(t, envOptions{a2aTasks: true})
	var created struct {
		Thread weft.Thread `json:"thread"`
	}
	e.json("POST", "/api/threads", e.alice, map[string]any{"agent": "chat", "tags": []string{"a2a"}}, 201, &created)
	id := created.Thread.ID
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	evs, _ := e.sse(ctx, "/api/threads/"+id+"/events", e.alice, "")
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "hello"}, 202, nil)
	until(t, evs, "run_stopped", 10*time.Second)
	var got struct {
		Items []struct {
			ID, ContextID string
			Status        struct{ State string }
		}
		A2A bool
	}
	e.json("GET", "/api/threads/"+id+"/a2a/tasks", e.alice, nil, 200, &got)
	if len(got.Items) != 1 || got.Items[0].ContextID != id || !strings.HasPrefix(got.Items[0].ID, id+":msg_") ||
		got.Items[0].Status.State != "TASK_STATE_COMPLETED" || !got.A2A {
		t.Fatalf("tasks %+v", got)
	}
	if code, _ := e.do("GET", "/api/threads/"+id+"/a2a/tasks", e.bob, nil); code != 404 {
		t.Fatalf("bob: %d, want 404", code)
	}
	plain := e.createThread(e.alice)
	e.json("GET", "/api/threads/"+plain+"/a2a/tasks", e.alice, nil, 200, &got)
	if len(got.Items) != 0 || got.A2A {
		t.Fatalf("a thread no A2A client used: %+v", got)
	}
	bare := newEnv(t, envOptions{})
	other := bare.createThread(bare.alice)
	if code, _ := bare.do("GET", "/api/threads/"+other+"/a2a/tasks", bare.alice, nil); code != 404 {
		t.Fatalf("without A2ATasks: %d, want 404", code)
	}
}

// TestThreadLastContext: GET /api/threads/{id} carries the last run's newest report of how it kept
// its requests inside the model's window, and none when only an earlier run made one.
func TestThreadLastContext(t *testing.T) {
	e := newEnv(t, envOptions{})
	trimmed := `{"model":"small","strategy":"window","omitted_messages":12,"tokens_before":5200,"tokens_after":1380,"budget":1593}`
	summarized := `{"prompt":"p","summarizer":"context_summarizer","summary_id":"msg_1","folded_messages":2,"through_seq":4,"summary_messages":6}`
	tests := []struct {
		name   string
		events [][2]string // type, data
		want   string      // the type of last_context, "" for null
	}{
		{"none", [][2]string{{"run_started", `{}`}, {"run_stopped", `{}`}}, ""},
		{"the last run's newest", [][2]string{{"run_started", `{}`}, {"context_trimmed", trimmed}, {"context_summarized", summarized}, {"run_stopped", `{}`}}, "context_summarized"},
		{"not an earlier run's", [][2]string{{"run_started", `{}`}, {"context_trimmed", trimmed}, {"run_stopped", `{}`}, {"run_started", `{}`}, {"run_stopped", `{}`}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := e.createThread(e.alice)
			var recs []weft.EventRecord
			for _, ev := range tc.events {
				recs = append(recs, weft.EventRecord{ThreadID: id, Type: ev[0], Data: []byte(ev[1]), CreatedAt: time.Now()})
			}
			if err := e.store.Tx(context.Background(), id, nil, func(tx weft.Tx) error { return tx.AppendEvents(recs) }); err != nil {
				t.Fatal(err)
			}
			var got struct {
				LastContext map[string]any `json:"last_context"`
			}
			e.json("GET", "/api/threads/"+id, e.alice, nil, 200, &got)
			switch {
			case tc.want == "" && got.LastContext != nil:
				t.Errorf("last_context %v, want null", got.LastContext)
			case tc.want != "" && (got.LastContext["type"] != tc.want || got.LastContext["at"] == nil):
				t.Errorf("last_context %v, want the %s event with its time", got.LastContext, tc.want)
			case tc.want == "context_summarized" && got.LastContext["folded_messages"] != 2.0:
				t.Errorf("last_context %v lost the event's data", got.LastContext)
			}
		})
	}
}
