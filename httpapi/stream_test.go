package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// runEvents are the event types of one turn of the test agent, in order (chunks aside).
var runEvents = []string{"run_started", "step_started", "llm_request", "message", "llm_response", "message",
	"tool_started", "message", "tool_completed", "step_completed", "step_started", "llm_request",
	"llm_response", "message", "run_stopped"}

// withoutChunks drops streamed chunks and pings.
func withoutChunks(evs []string) []string {
	var out []string
	for _, t := range evs {
		if t != "message_chunk" && t != ":" {
			out = append(out, t)
		}
	}
	return out
}

func TestSSEEventByEvent(t *testing.T) {
	e := newEnv(t, envOptions{ping: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := e.createThread(e.alice)
	events, resp := e.sse(ctx, "/api/threads/"+id+"/events", e.alice, "")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	// A ping comment arrives while nothing happens.
	until(t, events, ":", 5*time.Second)
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "hello"}, 202, nil)
	got := until(t, events, "run_stopped", 10*time.Second)
	if g := strings.Join(withoutChunks(types(got)), " "); g != strings.Join(runEvents, " ") {
		t.Fatalf("events\n got %s\nwant %s", g, strings.Join(runEvents, " "))
	}
	chunks := ""
	for _, ev := range got {
		if ev.typ == ":" {
			continue // a ping
		}
		if ev.data["thread_id"] != id || ev.data["type"] != ev.typ {
			t.Fatalf("frame %s lacks its type or thread: %v", ev.typ, ev.data)
		}
		if ev.typ == "message_chunk" {
			chunks += ev.data["delta"].(string)
		}
		if b, _ := json.Marshal(ev.data); strings.Contains(string(b), secretValue) {
			t.Fatalf("%s shows the secret: %s", ev.typ, b)
		}
	}
	if chunks == "" || strings.Contains(chunks, secretValue) {
		t.Fatalf("chunks %q: want streamed text, redacted", chunks)
	}
}

// TestSSEFilters: silent messages and deeper rows only when asked.
func TestSSEFilters(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := e.createThread(e.alice)
	plain, _ := e.sse(ctx, "/api/threads/"+id+"/events", e.alice, "")
	silent, _ := e.sse(ctx, "/api/threads/"+id+"/events?include_silent=true", e.alice, "")
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "hush", "silent": true}, 202, nil)
	count := func(evs []sseEvent) int {
		n := 0
		for _, ev := range evs {
			if m, ok := ev.data["message"].(map[string]any); ok && m["silent"] == true {
				n++
			}
		}
		return n
	}
	if n := count(until(t, plain, "run_stopped", 10*time.Second)); n != 0 {
		t.Fatalf("%d silent messages without include_silent", n)
	}
	if n := count(until(t, silent, "run_stopped", 10*time.Second)); n != 1 {
		t.Fatalf("%d silent messages with include_silent, want 1", n)
	}
}

func TestWebSocketStream(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := e.createThread(e.alice)
	url := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/api/threads/" + id + "/stream"
	// Without a key or a ticket the upgrade is refused.
	if _, resp, err := websocket.Dial(ctx, url, nil); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("dial without credentials: %v %v", err, resp)
	}
	// A ticket works once, for its own path only.
	var tk struct {
		Ticket    string    `json:"ticket"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	e.json("POST", "/api/auth/ws-ticket", e.alice, map[string]any{"path": "/api/threads/" + id + "/stream"}, 201, &tk)
	if time.Until(tk.ExpiresAt) > 61*time.Second || time.Until(tk.ExpiresAt) < 50*time.Second {
		t.Fatalf("ticket expires at %v", tk.ExpiresAt)
	}
	c, _, err := websocket.Dial(ctx, url+"?ticket="+tk.Ticket, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if _, resp, err := websocket.Dial(ctx, url+"?ticket="+tk.Ticket, nil); err == nil || resp.StatusCode != 401 {
		t.Fatalf("a ticket used twice: %v", err)
	}
	var other struct{ Ticket string }
	e.json("POST", "/api/auth/ws-ticket", e.alice, map[string]any{"path": "/api/events"}, 201, &other)
	if _, resp, err := websocket.Dial(ctx, url+"?ticket="+other.Ticket, nil); err == nil || resp.StatusCode != 401 {
		t.Fatalf("a ticket for another path: %v", err)
	}

	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	read := func() map[string]any {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "hello"}, 202, nil)
	var got []string
	pong := false
	for {
		m := read()
		if m["type"] == "pong" {
			pong = true
			continue
		}
		got = append(got, m["type"].(string))
		if m["type"] == "run_stopped" {
			break
		}
	}
	if !pong {
		t.Fatal("no pong")
	}
	// Connected without a cursor, the stream starts with the thread's recorded events.
	want := "thread_created " + strings.Join(runEvents, " ")
	if g := strings.Join(withoutChunks(got), " "); g != want {
		t.Fatalf("events\n got %s\nwant %s", g, want)
	}
}

// TestGlobalEvents: the global stream shows thread events of visible threads only.
func TestGlobalEvents(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events, _ := e.sse(ctx, "/api/events", e.alice, "")
	time.Sleep(50 * time.Millisecond)
	e.createThread(e.bob)
	mine := e.createThread(e.alice)
	got := until(t, events, "thread_created", 5*time.Second)
	if len(got) != 1 || got[0].data["thread_id"] != mine {
		t.Fatalf("alice's global stream: %v", got)
	}
	e.json("POST", "/api/threads/"+mine+"/messages", e.alice, map[string]any{"content": "hello"}, 202, nil)
	got = until(t, events, "thread_updated", 5*time.Second)
	if got[len(got)-1].data["thread_id"] != mine {
		t.Fatalf("thread_updated of %v", got[len(got)-1].data)
	}
	until(t, events, "thread_updated", 5*time.Second) // the run's stop
	e.json("DELETE", "/api/threads/"+mine, e.alice, nil, 204, nil)
	got = until(t, events, "thread_deleted", 5*time.Second)
	if got[len(got)-1].data["thread_id"] != mine {
		t.Fatalf("thread_deleted of %v", got[len(got)-1].data)
	}
}

// TestGlobalEventsAcrossReload: the global stream is a subscriber of the engines' shared feed, so
// that a client keeps receiving across a definitions reload, which swaps the server's engine.
func TestGlobalEventsAcrossReload(t *testing.T) {
	e := newEnv(t, envOptions{reloadable: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events, _ := e.sse(ctx, "/api/events", e.alice, "")
	time.Sleep(50 * time.Millisecond)
	before := e.createThread(e.alice)
	if got := until(t, events, "thread_created", 5*time.Second); got[len(got)-1].data["thread_id"] != before {
		t.Fatalf("before the reload: %v", got)
	}
	e.reload()
	after := e.createThread(e.alice)
	if got := until(t, events, "thread_created", 5*time.Second); got[len(got)-1].data["thread_id"] != after {
		t.Fatalf("after the reload: %v", got)
	}
	e.json("DELETE", "/api/threads/"+after, e.alice, nil, 204, nil)
	if got := until(t, events, "thread_deleted", 5*time.Second); got[len(got)-1].data["thread_id"] != after {
		t.Fatalf("thread_deleted of %v", got[len(got)-1].data)
	}
}

// TestAbandonedStreams opens 1,000 streams (SSE and WebSocket) and abandons them — closed
// mid-stream, or WebSockets that never read while events flow — and checks that no goroutine and
// no subscription is left behind.
func TestAbandonedStreams(t *testing.T) {
	e := newEnv(t, envOptions{})
	id := e.createThread(e.alice)
	base := runtime.NumGoroutine()
	wsURL := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/api/threads/" + id + "/stream"
	const n = 1000
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50)
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if i%2 == 0 {
				req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/api/threads/"+id+"/events", nil)
				req.Header.Set("Authorization", "Bearer "+e.alice)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close() // gone mid-stream
				return
			}
			h := http.Header{"Authorization": {"Bearer " + e.alice}}
			c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: h})
			if err != nil {
				errs <- err
				return
			}
			c.CloseNow() // never read, then drop the connection
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Events flow while the abandoned streams wind down.
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "hello"}, 202, nil)
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(15 * time.Second)
	for {
		g := runtime.NumGoroutine()
		if !e.eng.Subscribers().Active() && g <= base+5 {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("after %d abandoned streams: %d goroutines (baseline %d), subscriptions left: %v\n%s", n, g, base, e.eng.Subscribers().Active(), buf)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTicketForEventSource: a browser's EventSource, which cannot send headers, opens a stream
// with a ticket.
func TestTicketForEventSource(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := e.createThread(e.alice)
	path := "/api/threads/" + id + "/events"
	var tk struct{ Ticket string }
	e.json("POST", "/api/auth/ws-ticket", e.alice, map[string]any{"path": path}, 201, &tk)
	events, _ := e.sse(ctx, path+"?ticket="+tk.Ticket, "", "")
	if got := until(t, events, "thread_created", 5*time.Second); got[len(got)-1].data["thread_id"] != id {
		t.Fatalf("stream %v", got)
	}
	// Another user's ticket does not open alice's thread.
	e.json("POST", "/api/auth/ws-ticket", e.bob, map[string]any{"path": path}, 201, &tk)
	e.json("GET", path+"?ticket="+tk.Ticket, "", nil, 404, nil)
}
