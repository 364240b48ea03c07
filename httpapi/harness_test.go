package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/a2a"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/mcp"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/project"
)

// secretValue is a thread secret the fake model repeats; the API must never show it.
const secretValue = "s3cr3t-value-123"

// fakeModel answers a user message with one echo call and a tool result with a text quoting the
// thread's secret, streamed in two chunks. gate, when set, holds every call until it is closed.
type fakeModel struct {
	gate chan struct{}
}

func (f *fakeModel) Call(ctx context.Context, req *weft.Request, onChunk func(weft.Chunk)) (*weft.Response, error) {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	last := req.Messages[len(req.Messages)-1]
	switch req.Prompt {
	case "boss":
		if last.Role == weft.RoleUser && last.Content == "please review" {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "review", Arguments: `{"message":"Draft: x"}`}},
				FinishReason: "tool_calls"}, nil
		}
		return &weft.Response{Text: "Noted.", FinishReason: "stop"}, nil
	case "careful":
		if last.Role == weft.RoleUser {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "refund", Arguments: `{"order_id":42}`}},
				FinishReason: "tool_calls"}, nil
		}
		return &weft.Response{Text: "Refund result: " + last.Content, FinishReason: "stop"}, nil
	case "reviewer":
		return &weft.Response{Text: "Looks fine.", FinishReason: "stop"}, nil
	}
	if last.Role == weft.RoleUser {
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "echo", Arguments: `{"text":"ping"}`}},
			FinishReason: "tool_calls"}, nil
	}
	text := "Done. The token was " + secretValue + ", all good."
	if onChunk != nil {
		onChunk(weft.Chunk{Text: text[:10]})
		onChunk(weft.Chunk{Text: text[10:]})
	}
	return &weft.Response{Text: text, FinishReason: "stop"}, nil
}

// env is an API server over a memstore with three users: an admin, alice and bob.
type env struct {
	t                 *testing.T
	srv               *httptest.Server
	api               *httpapi.Server
	eng               *engine.Engine
	store             *memstore.Store
	admin, alice, bob string // API keys
	aliceID, bobID    string
	model             *fakeModel
	adminKey          string
	// cur is the engine the server asks for (envOptions.reloadable): reload swaps it.
	cur atomic.Pointer[engine.Engine]
}

type envOptions struct {
	gate         bool
	noAuth       bool
	ping         time.Duration
	writeTimeout time.Duration
	logger       *slog.Logger
	pages        http.Handler
	maxInFlight  int64
	// mcp serves the engine's MCP server at /mcp.
	mcp bool
	// smallBuffers fixes the send buffer of the server's connections at 16 KiB (slowclient_test.go).
	smallBuffers bool
	// a2aTasks lists threads' A2A tasks (a2a.ThreadTasks) at /api/threads/{id}/a2a/tasks.
	a2aTasks bool
	// reloadable serves through EngineFunc, whose engine reload replaces as a definitions reload
	// does.
	reloadable bool
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	reg, diags := project.Open("testdata/agents", project.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	model := &fakeModel{}
	if o.gate {
		model.gate = make(chan struct{})
	}
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: model, RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = eng.Serve(ctx, engine.ServeOptions{Workers: 4, DrainTimeout: time.Second})
	}()
	e := &env{t: t, eng: eng, store: st, model: model, adminKey: "wft_admin_for_tests"}
	opts := httpapi.Options{Engine: eng, Auth: st, NoAuth: o.noAuth, AdminKey: e.adminKey,
		Version: "test", PingInterval: o.ping, WriteTimeout: o.writeTimeout, Logger: o.logger, Pages: o.pages,
		MaxBodyBytesInFlight: o.maxInFlight}
	if o.a2aTasks {
		opts.A2ATasks = func(ctx context.Context, t *weft.Thread, fileURL func(thread, path string) string) (any, bool, error) {
			return a2a.ThreadTasks(ctx, st, t, fileURL)
		}
	}
	if o.reloadable {
		e.cur.Store(eng)
		opts.Engine, opts.EngineFunc = nil, e.cur.Load
	}
	if o.mcp {
		opts.MCP = mcp.NewHTTPHandler(func() *engine.Engine { return eng }, mcp.ServerOptions{Version: "test"})
	}
	e.api = httpapi.New(opts)
	e.api.SetReady(true)
	e.srv = httptest.NewUnstartedServer(e.api.Handler())
	if o.smallBuffers {
		e.srv.Listener = smallBufferListener{e.srv.Listener}
	}
	e.srv.Start()
	t.Cleanup(func() {
		if model.gate != nil {
			select {
			case <-model.gate:
			default:
				close(model.gate)
			}
		}
		e.srv.CloseClientConnections()
		e.srv.Close()
		cancel()
		<-served
		st.Close()
	})
	e.admin, _ = e.newUser("root", true)
	e.alice, e.aliceID = e.newUser("alice", false)
	e.bob, e.bobID = e.newUser("bob", false)
	return e
}

// reload replaces the server's engine (envOptions.reloadable) by a new one over the same store and
// definitions, sharing the old one's feed, and ends the thread streams, as weft serve does when
// its definitions change.
func (e *env) reload() {
	e.t.Helper()
	old := e.cur.Load()
	eng, err := engine.New(engine.Options{Registry: old.Registry(), Store: e.store, Override: e.model, RecordEvents: true,
		Subscribers: old.Subscribers()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.cur.Store(eng)
	e.api.EndStreams()
}

func (e *env) newUser(name string, admin bool) (key, id string) {
	u := &weft.User{Name: name, IsAdmin: admin}
	if err := e.store.CreateUser(context.Background(), u); err != nil {
		e.t.Fatal(err)
	}
	key, rec := weft.NewAPIKey(u.ID)
	if err := e.store.CreateKey(context.Background(), rec); err != nil {
		e.t.Fatal(err)
	}
	return key, u.ID
}

// do sends a request with the key (none when "") and returns status and body.
func (e *env) do(method, path, key string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// json sends a request expecting status want and decodes the answer into dst (when non-nil).
func (e *env) json(method, path, key string, body any, want int, dst any) {
	e.t.Helper()
	code, out := e.do(method, path, key, body)
	if code != want {
		e.t.Fatalf("%s %s: %d, want %d: %s", method, path, code, want, out)
	}
	if dst != nil {
		if err := json.Unmarshal(out, dst); err != nil {
			e.t.Fatalf("%s %s: %v: %s", method, path, err, out)
		}
	}
}

// createThread creates a chat thread as key with a thread secret, returning its id.
func (e *env) createThread(key string) string {
	e.t.Helper()
	var out struct {
		Thread weft.Thread `json:"thread"`
	}
	e.json("POST", "/api/threads", key, map[string]any{"agent": "chat", "env": map[string]string{"TOKEN": secretValue}}, 201, &out)
	return out.Thread.ID
}

// sseEvent is one parsed SSE frame.
type sseEvent struct {
	id, typ string
	data    map[string]any
}

// sse opens an SSE stream and returns a channel of its events, closed when the stream ends.
func (e *env) sse(ctx context.Context, path, key, lastID string) (<-chan sseEvent, *http.Response) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	ch := make(chan sseEvent, 1024)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		readSSE(resp.Body, ch)
	}()
	return ch, resp
}

// readSSE parses SSE frames (comments become events of type ":").
func readSSE(r io.Reader, ch chan<- sseEvent) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.typ != "" {
				ch <- cur
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
			ch <- sseEvent{typ: ":"}
		case strings.HasPrefix(line, "event: "):
			cur.typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data)
		}
	}
}

// until collects events from ch until one of type typ (included) or the timeout.
func until(t *testing.T, ch <-chan sseEvent, typ string, timeout time.Duration) []sseEvent {
	t.Helper()
	var got []sseEvent
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended before %s; got %v", typ, types(got))
			}
			got = append(got, ev)
			if ev.typ == typ {
				return got
			}
		case <-deadline:
			t.Fatalf("no %s within %v; got %v", typ, timeout, types(got))
		}
	}
}

func types(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.typ
	}
	return out
}

var _ sync.Mutex

func newRequest(method, url string) (*http.Request, error) { return http.NewRequest(method, url, nil) }

func send(t *testing.T, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
