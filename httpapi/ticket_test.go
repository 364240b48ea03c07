package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/weft-agents/weft"
)

// TestTicketIsNoGeneralCredential: a ticket is for a GET of an event stream only (issue 47,
// row 3: a ticket for /api/keys minted a permanent key, one for a thread deleted it).
func TestTicketIsNoGeneralCredential(t *testing.T) {
	e := newEnv(t, envOptions{})
	id := e.createThread(e.alice)
	for _, path := range []string{"/api/keys", "/api/threads/" + id, "/api/threads/" + id + "/fs/x.html", "/api/users/me/env"} {
		e.json("POST", "/api/auth/ws-ticket", e.alice, map[string]any{"path": path}, 400, nil)
	}
	stream := "/api/threads/" + id + "/events"
	cases := []struct{ method, path string }{
		{"GET", "/api/threads/" + id}, {"DELETE", "/api/threads/" + id}, {"POST", "/api/keys"},
		{"GET", "/api/keys"}, {"GET", "/api/threads/" + id + "/stream"},
	}
	for _, c := range cases {
		var tk struct{ Ticket string }
		e.json("POST", "/api/auth/ws-ticket", e.alice, map[string]any{"path": stream}, 201, &tk)
		if code, body := e.do(c.method, c.path+"?ticket="+tk.Ticket, "", `{}`); code != 401 {
			t.Errorf("%s %s with a stream ticket: %d %s, want 401", c.method, c.path, code, body)
		}
	}
	e.json("GET", "/api/threads/"+id, e.alice, nil, 200, nil) // not deleted
}

// TestTicketsBounded: a user holds at most a few live tickets, each with a short path (issue 47,
// row 5: 600 tickets with a 1 MB path took a gigabyte).
func TestTicketsBounded(t *testing.T) {
	e := newEnv(t, envOptions{})
	long := "/api/threads/" + strings.Repeat("x", 1<<19) + "/events"
	e.json("POST", "/api/auth/ws-ticket", e.alice, map[string]any{"path": long}, 400, nil)
	stream := "/api/threads/" + e.createThread(e.alice) + "/events"
	n := 0
	for ; n < 100; n++ {
		code, _ := e.do("POST", "/api/auth/ws-ticket", e.alice, map[string]any{"path": stream})
		if code == 429 {
			break
		}
		if code != 201 {
			t.Fatalf("ticket %d: %d", n, code)
		}
	}
	if n == 0 || n > 32 {
		t.Fatalf("a user got %d live tickets before a 429", n)
	}
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/auth/ws-ticket", strings.NewReader(`{"path":"`+stream+`"}`))
	req.Header.Set("Authorization", "Bearer "+e.alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("past the cap: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	e.json("POST", "/api/auth/ws-ticket", e.bob, map[string]any{"path": stream}, 201, nil) // bob has his own
}

// TestRevokedKeyEndsTicketsAndStreams: once a key is revoked its tickets open nothing and its
// open SSE and WebSocket streams end within a second (issue 47, row 4: the ticket still opened a
// stream and the open streams kept delivering).
func TestRevokedKeyEndsTicketsAndStreams(t *testing.T) {
	e := newEnv(t, envOptions{ping: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	key, rec := weft.NewAPIKey(e.aliceID)
	if err := e.store.CreateKey(ctx, rec); err != nil {
		t.Fatal(err)
	}
	id := e.createThread(key)
	path := "/api/threads/" + id + "/events"
	var tk struct{ Ticket string }
	e.json("POST", "/api/auth/ws-ticket", key, map[string]any{"path": path}, 201, &tk)
	sse, _ := e.sse(ctx, path, key, "")
	global, _ := e.sse(ctx, "/api/events", key, "")
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/api/threads/"+id+"/stream",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	wsDone := make(chan struct{})
	go func() {
		defer close(wsDone)
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				return
			}
		}
	}()
	until(t, sse, "thread_created", 5*time.Second)
	e.json("DELETE", "/api/keys/"+rec.ID, e.admin, nil, 204, nil)
	revoked := time.Now()
	for name, ch := range map[string]<-chan sseEvent{"thread SSE": sse, "global SSE": global} {
		for open := true; open; {
			select {
			case _, open = <-ch:
			case <-time.After(time.Second - time.Since(revoked)):
				t.Fatalf("%s still open a second after the revoke", name)
			}
		}
	}
	select {
	case <-wsDone:
	case <-time.After(time.Second - time.Since(revoked)):
		t.Fatal("WebSocket still open a second after the revoke")
	}
	e.json("GET", path+"?ticket="+tk.Ticket, "", nil, 401, nil)
	// Streams of other keys go on.
	other, _ := e.sse(ctx, path, e.alice, "")
	until(t, other, "thread_created", 5*time.Second)
}

// TestStreamEndsWhenKeyRevokedElsewhere: a key revoked in the store by another node or the CLI
// (not through this server) ends this server's streams of it within a second.
func TestStreamEndsWhenKeyRevokedElsewhere(t *testing.T) {
	e := newEnv(t, envOptions{ping: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	key, rec := weft.NewAPIKey(e.aliceID)
	if err := e.store.CreateKey(ctx, rec); err != nil {
		t.Fatal(err)
	}
	sse, _ := e.sse(ctx, "/api/events", key, "")
	if err := e.store.RevokeKey(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	for open := true; open; {
		select {
		case _, open = <-sse:
		case <-time.After(time.Second - time.Since(revoked)):
			t.Fatal("stream still open a second after the revoke")
		}
	}
}
