package httpapi_test

import (
	"context"
	"net/http"
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
