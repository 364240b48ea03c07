package aguiapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/aguiapi"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/project"
	"github.com/weft-agents/weft/scripted"
)

const script = `version: 1
options: {chunk_size: 5}
responses:
  - match: {prompt: helper}
    text: "Hello there, friend."
`

// TestRun: requests and refusals; a threadId names one thread per user.
func TestRun(t *testing.T) {
	reg, diags := project.Open("../openaiapi/testdata/agents", project.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	sc, err := scripted.Parse("s.yaml", []byte(strings.Replace(script, "{chunk_size: 5}", "{chunk_size: 5, on_exhausted: repeat_last}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := memstore.New(memstore.Options{})
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: scripted.New(sc), RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = eng.Serve(ctx, engine.ServeOptions{Workers: 2, DrainTimeout: time.Second})
	}()
	api := httpapi.New(httpapi.Options{Engine: eng, Auth: st})
	aguiapi.Register(api)
	srv := httptest.NewServer(api.Handler())
	defer func() { srv.Close(); cancel(); <-served }()
	keys := map[string]string{}
	for _, name := range []string{"alice", "bob"} {
		u := &weft.User{Name: name}
		st.CreateUser(ctx, u)
		k, rec := weft.NewAPIKey(u.ID)
		st.CreateKey(ctx, rec)
		keys[name] = k
	}
	do := func(method, path, user, body string) (*http.Response, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if user != "" {
			req.Header.Set("Authorization", "Bearer "+keys[user])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	msg := `{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"hi"}]}`
	cases := []struct {
		name, method, path, user, body string
		status                         int
		contains                       string
	}{
		{"no key", "POST", "/api/agents/helper/ag-ui", "", msg, 401, "unauthorized"},
		{"unknown agent", "POST", "/api/agents/nope/ag-ui", "alice", msg, 404, "not_found"},
		{"no run id", "POST", "/api/agents/helper/ag-ui", "alice", `{"threadId":"t1","messages":[{"role":"user","content":"x"}]}`, 400, "runId"},
		{"frontend tools", "POST", "/api/agents/helper/ag-ui", "alice", strings.Replace(msg, `"messages"`, `"tools":[{"name":"confirm"}],"messages"`, 1), 400, "frontend tools"},
		{"last not user", "POST", "/api/agents/helper/ag-ui", "alice", `{"threadId":"t1","runId":"r","messages":[{"role":"assistant","content":"x"}]}`, 400, "the last message"},
		{"bad json", "POST", "/api/agents/helper/ag-ui", "alice", `{`, 400, "bad_request"},
		{"unknown thread", "GET", "/api/agents/helper/ag-ui/nope/stream", "alice", "", 404, "not_found"},
		{"alice", "POST", "/api/agents/helper/ag-ui", "alice", msg, 200, `"type":"RUN_FINISHED"`},
		{"nothing to resume", "GET", "/api/agents/helper/ag-ui/t1/stream", "alice", "", 204, ""},
		{"bob's own t1", "POST", "/api/agents/helper/ag-ui", "bob", msg, 200, `"delta":"Hello"`},
		{"alice again", "POST", "/api/agents/helper/ag-ui", "alice", strings.Replace(msg, `"u1"`, `"u2"`, 1), 200, `"runId":"r1"`},
	}
	for _, c := range cases {
		resp, body := do(c.method, c.path, c.user, c.body)
		if resp.StatusCode != c.status || !strings.Contains(body, c.contains) {
			t.Errorf("%s: %d %s", c.name, resp.StatusCode, body)
		}
		if c.status == 200 && resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Errorf("%s: header %v", c.name, resp.Header)
		}
	}
	// One thread per user for t1: alice's holds her two turns, bob's his one.
	for user, want := range map[string]int{"alice": 4, "bob": 2} {
		_, body := do("GET", "/api/threads", user, "")
		if !strings.Contains(body, `"total":1`) {
			t.Errorf("%s threads: %s", user, body)
		}
		id := body[strings.Index(body, `"id":"`)+6:]
		id = id[:strings.Index(id, `"`)]
		_, msgs := do("GET", "/api/threads/"+id+"/messages", user, "")
		if n := strings.Count(msgs, `"role":`); n != want {
			t.Errorf("%s: %d messages, want %d: %s", user, n, want, msgs)
		}
	}
}
