package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"syscall"
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

// smallBufferClient is an HTTP client whose connections have a fixed 16 KiB receive buffer. A
// socket's buffer otherwise grows with the kernel's autotuning (net.ipv4.tcp_rmem allows 32 MiB
// here), and a client that never reads could then take in the whole replay, so that the server
// never had to wait for it: the test would pass or fail with the kernel's mood.
func smallBufferClient() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// smallBufferListener fixes the send buffer of the connections it accepts at 16 KiB, which the
// kernel would otherwise grow up to net.ipv4.tcp_wmem's 4 MiB: a server that waits for a client
// that never reads then has a few kilobytes to write before it waits, not megabytes, which on a
// loaded machine took longer than the test's patience.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		if serr := tc.SetWriteBuffer(16 << 10); serr != nil {
			c.Close()
			return nil, serr
		}
	}
	return c, err
}

// TestClientsThatNeverRead: an SSE client and a WebSocket client that never read while the
// server replays megabytes of events are disconnected by the write timeout; their requests end
// and nothing of theirs stays behind once they are gone.
func TestClientsThatNeverRead(t *testing.T) {
	logs := &requestLog{done: map[string]int{}}
	e := newEnv(t, envOptions{writeTimeout: 300 * time.Millisecond, logger: slog.New(logs), smallBuffers: true})
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
	client := smallBufferClient()
	resp, err := client.Do(sseReq)
	if err != nil {
		t.Fatal(err)
	}
	wsURL := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/api/threads/" + id + "/stream"
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: smallBufferClient(),
		HTTPHeader: http.Header{"Authorization": {"Bearer " + e.alice}}})
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
	client.CloseIdleConnections()
	deadline = time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base+2 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, baseline %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
