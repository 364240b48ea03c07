package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// TestGetThreadReadsNoLargePayload: GET /api/threads/{id} finds the thread's last stop among its
// newest events without reading their payloads, so a message of weft.MaxMessageBytes among them
// costs it nothing: it read the newest events whole, ~60 MiB allocated per GET.
func TestGetThreadReadsNoLargePayload(t *testing.T) {
	s := newBenchServer(t)
	id := s.threads(t, 1)[0]
	content := strings.Repeat("lorem ipsum ", (weft.MaxMessageBytes-64)/12)
	if _, err := s.eng.Ask(context.Background(), id, engine.Input{Message: &weft.NewMessage{Content: content}}); err != nil {
		t.Fatal(err)
	}
	get := func() map[string]any {
		req, _ := http.NewRequest("GET", s.srv.URL+"/api/threads/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+s.key)
		resp, err := s.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET the thread: %d %v", resp.StatusCode, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return out
	}
	th := get() // (and the connection is open)
	if stop, _ := th["last_stop"].(map[string]any); stop == nil || stop["reason"] != string(weft.StopOnResponse) || th["event_seq"].(float64) < 5 {
		t.Fatalf("the thread's last stop: %v, event_seq %v", th["last_stop"], th["event_seq"])
	}
	const gets = 5
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range gets {
		get()
	}
	runtime.ReadMemStats(&after)
	perGet := float64(after.TotalAlloc-before.TotalAlloc) / gets
	t.Logf("GET /api/threads/{id} with a %d-byte message among its events: %.0f KiB allocated per GET", len(content), perGet/1024)
	// Whatever else the process does meanwhile (the server's run has ended), well below the message.
	if perGet > 2<<20 {
		t.Errorf("GET /api/threads/{id} allocated %.1f MiB per request; want under 2 MiB beside a %d MiB message", perGet/(1<<20), len(content)>>20)
	}
}
