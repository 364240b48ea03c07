package aguiapi_test

import (
	"strings"
	"testing"

	"github.com/weft-agents/weft/aguiapi"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/turn/turntest"
	"github.com/weft-agents/weft/memstore"
)

// TestRun: requests and refusals; a threadId names one thread per user; a client that lacks the
// thread's earlier messages gets a MESSAGES_SNAPSHOT ending with its new one.
func TestRun(t *testing.T) {
	st, _ := memstore.New(memstore.Options{})
	keys := turntest.Users(t, st, "alice", "bob")
	s := turntest.Start(t, st, turntest.Hello, keys, func(api *httpapi.Server) { aguiapi.Register(api) })
	msg := `{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"hi"}]}`
	cases := []struct {
		name, method, path, user, body string
		status                         int
		contains                       string
	}{
		{"no key", "POST", "/api/agents/helper/ag-ui", "", msg, 401, "unauthorized"},
		{"unknown agent", "POST", "/api/agents/nope/ag-ui", "alice", msg, 404, "not_found"},
		{"no run id", "POST", "/api/agents/helper/ag-ui", "alice", `{"threadId":"t1","messages":[{"role":"user","content":"x"}]}`, 400, "runId"},
		{"bad tool name", "POST", "/api/agents/helper/ag-ui", "alice", strings.Replace(msg, `"messages"`, `"tools":[{"name":"a b"}],"messages"`, 1), 400, "tools[0].name"},
		{"bad tool schema", "POST", "/api/agents/helper/ag-ui", "alice", strings.Replace(msg, `"messages"`, `"tools":[{"name":"ab","parameters":{"type":"string"}}],"messages"`, 1), 400, "tools[0].parameters"},
		{"result, no thread", "POST", "/api/agents/helper/ag-ui", "alice", `{"threadId":"t9","runId":"r","messages":[{"id":"x","role":"tool","toolCallId":"c1","content":"x"}]}`, 404, "not_found"},
		{"result, no call id", "POST", "/api/agents/helper/ag-ui", "alice", `{"threadId":"t9","runId":"r","messages":[{"id":"x","role":"tool","content":"x"}]}`, 400, "toolCallId"},
		{"last not user", "POST", "/api/agents/helper/ag-ui", "alice", `{"threadId":"t1","runId":"r","messages":[{"role":"assistant","content":"x"}]}`, 400, "the last message"},
		{"bad json", "POST", "/api/agents/helper/ag-ui", "alice", `{`, 400, "bad_request"},
		{"unknown thread", "GET", "/api/agents/helper/ag-ui/nope/stream", "alice", "", 404, "not_found"},
		{"alice", "POST", "/api/agents/helper/ag-ui", "alice", msg, 200, `"type":"RUN_FINISHED"`},
		{"nothing to resume", "GET", "/api/agents/helper/ag-ui/t1/stream", "alice", "", 204, ""},
		{"bob's own t1", "POST", "/api/agents/helper/ag-ui", "bob", msg, 200, `"delta":"Hello"`},
		{"alice again", "POST", "/api/agents/helper/ag-ui", "alice", strings.Replace(msg, `"u1"`, `"u2"`, 1), 200, `{"content":"hi","id":"u2","role":"user"}],"type":"MESSAGES_SNAPSHOT"`},
	}
	for _, c := range cases {
		resp, body := s.Do(c.method, c.path, c.user, c.body)
		if resp.StatusCode != c.status || !strings.Contains(body, c.contains) {
			t.Errorf("%s: %d %s", c.name, resp.StatusCode, body)
		}
		if c.status == 200 && resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Errorf("%s: header %v", c.name, resp.Header)
		}
	}
	// One thread per user for t1: alice's holds her two turns, bob's his one.
	for user, want := range map[string]int{"alice": 4, "bob": 2} {
		if msgs := s.Messages(user); strings.Count(msgs, `"role":`) != want {
			t.Errorf("%s: want %d messages: %s", user, want, msgs)
		}
	}
}
