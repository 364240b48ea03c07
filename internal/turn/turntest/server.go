package turntest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/project"
	"github.com/weft-agents/weft/scripted"
)

// Store is what a test server keeps its threads, users and keys in.
type Store interface {
	weft.Store
	weft.AuthStore
}

// Hello is a model script whose helper prompt answers every call "Hello there, friend.", in
// deltas of 5 bytes.
const Hello = `version: 1
options: {chunk_size: 5, on_exhausted: repeat_last}
responses:
  - match: {prompt: helper}
    text: "Hello there, friend."
`

// Server is an API server with one protocol adapter, serving the agents of
// openaiapi/testdata/agents over a scripted model.
type Server struct {
	// URL is the server's base URL.
	URL string
	// Engine serves the threads.
	Engine *engine.Engine

	t    testing.TB
	keys map[string]string
	stop func()
}

// Start serves the agents with the adapter register mounts, over the model script and the store,
// until the test ends or Close. keys are the API keys of the users by name (Users).
func Start(t testing.TB, st Store, script string, keys map[string]string, register func(*httpapi.Server)) *Server {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	reg, diags := project.Open(filepath.Join(filepath.Dir(here), "../../../openaiapi/testdata/agents"), project.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	sc, err := scripted.Parse("s.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: scripted.New(sc), RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = eng.Serve(ctx, engine.ServeOptions{Workers: 4, DrainTimeout: time.Second})
	}()
	api := httpapi.New(httpapi.Options{Engine: eng, Auth: st})
	api.SetReady(true)
	register(api)
	srv := httptest.NewServer(api.Handler())
	s := &Server{URL: srv.URL, Engine: eng, t: t, keys: keys}
	s.stop = func() { srv.CloseClientConnections(); srv.Close(); cancel(); <-served }
	t.Cleanup(s.Close)
	return s
}

// Close stops the server and its engine (the store stays open: a restart is Start again).
func (s *Server) Close() {
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
}

// Users creates the users and returns their API keys by name.
func Users(t testing.TB, st Store, names ...string) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys := map[string]string{}
	for _, name := range names {
		u := &weft.User{Name: name}
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		k, rec := weft.NewAPIKey(u.ID)
		if err := st.CreateKey(ctx, rec); err != nil {
			t.Fatal(err)
		}
		keys[name] = k
	}
	return keys
}

// Do sends a request as the user ("" = without a key) and returns the response with its body.
func (s *Server) Do(method, path, user, body string) (*http.Response, string) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+s.keys[user])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// Messages returns the user's only thread's messages as /api lists them (the test fails when the
// user has not exactly one thread).
func (s *Server) Messages(user string) string {
	s.t.Helper()
	_, body := s.Do("GET", "/api/threads", user, "")
	if !strings.Contains(body, `"total":1`) {
		s.t.Fatalf("%s threads: %s", user, body)
	}
	id := body[strings.Index(body, `"id":"`)+6:]
	id = id[:strings.Index(id, `"`)]
	_, msgs := s.Do("GET", "/api/threads/"+id+"/messages", user, "")
	return msgs
}
