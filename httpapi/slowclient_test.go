package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/weft-agents/weft"
)

// requestLog counts the request log lines of finished requests by path.
type requestLog struct {
	mu   sync.Mutex
	done map[string]int
}

func (l *requestLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *requestLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *requestLog) WithGroup(string) slog.Handler            { return l }
func (l *requestLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "request" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "path" {
			l.mu.Lock()
			l.done[a.Value.String()]++
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

func (l *requestLog) count(path string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done[path]
}

// TestClientsThatNeverRead: an SSE client and a WebSocket client that never read while the
// server replays megabytes of events are disconnected by the write timeout; their requests end
// and nothing of theirs stays behind once they are gone.
func TestClientsThatNeverRead(t *testing.T) {
	logs := &requestLog{done: map[string]int{}}
	e := newEnv(t, envOptions{writeTimeout: 300 * time.Millisecond, logger: slog.New(logs)})
	id := e.createThread(e.alice)
	// 4,000 recorded events of 2 KiB: far more than the sockets' buffers hold.
	pad, _ := json.Marshal(map[string]any{"name": "pad", "data": strings.Repeat("x", 2048)})
	for range 8 {
		evs := make([]weft.EventRecord, 500)
		for i := range evs {
			evs[i] = weft.EventRecord{ThreadID: id, Type: "event", Data: pad}
		}
		if err := e.store.Tx(context.Background(), id, nil, func(tx weft.Tx) error { return tx.AppendEvents(evs) }); err != nil {
			t.Fatal(err)
		}
	}
	base := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sseReq, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/api/threads/"+id+"/events", nil)
	sseReq.Header.Set("Authorization", "Bearer "+e.alice)
	resp, err := http.DefaultClient.Do(sseReq)
	if err != nil {
		t.Fatal(err)
	}
	wsURL := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/api/threads/" + id + "/stream"
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + e.alice}}})
	if err != nil {
		t.Fatal(err)
	}
	// Neither reads. Both requests must end on the server's side.
	path := "/api/threads/" + id
	deadline := time.Now().Add(10 * time.Second)
	for logs.count(path+"/events") == 0 || logs.count(path+"/stream") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the server still writes to clients that never read (sse done %d, ws done %d)",
				logs.count(path+"/events"), logs.count(path+"/stream"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp.Body.Close()
	c.CloseNow()
	http.DefaultClient.CloseIdleConnections()
	deadline = time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base+2 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, baseline %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
