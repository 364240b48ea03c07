package aisdkapi_test

import (
	"strings"
	"testing"

	"github.com/weft-agents/weft/aisdkapi"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/turn/turntest"
	"github.com/weft-agents/weft/memstore"
)

// TestChat: requests and refusals; a chat id names one thread per user.
func TestChat(t *testing.T) {
	st, _ := memstore.New(memstore.Options{})
	keys := turntest.Users(t, st, "alice", "bob")
	s := turntest.Start(t, st, turntest.Hello, keys, func(api *httpapi.Server) { aisdkapi.Register(api) })
	msg := `{"id":"c1","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`
	cases := []struct {
		name, method, path, user, body string
		status                         int
		contains                       string
	}{
		{"no key", "POST", "/api/agents/helper/chat", "", msg, 401, "unauthorized"},
		{"unknown agent", "POST", "/api/agents/nope/chat", "alice", msg, 404, "not_found"},
		{"no id", "POST", "/api/agents/helper/chat", "alice", `{"messages":[{"role":"user","parts":[{"type":"text","text":"x"}]}]}`, 400, "id"},
		{"regenerate, no answer named", "POST", "/api/agents/helper/chat", "alice", strings.Replace(msg, "submit-message", "regenerate-message", 1), 400, "messageId"},
		{"regenerate, no chat", "POST", "/api/agents/helper/chat", "alice", strings.Replace(msg, `"submit-message"`, `"regenerate-message","messageId":"answer-msg_x"`, 1), 404, "no chat"},
		{"unknown trigger", "POST", "/api/agents/helper/chat", "alice", strings.Replace(msg, "submit-message", "resume-stream", 1), 400, "trigger"},
		{"last not user", "POST", "/api/agents/helper/chat", "alice", `{"id":"c1","messages":[{"role":"assistant","parts":[{"type":"text","text":"x"}]}]}`, 400, "the last message"},
		{"bad json", "POST", "/api/agents/helper/chat", "alice", `{`, 400, "bad_request"},
		{"unknown chat", "GET", "/api/agents/helper/chat/nope/stream", "alice", "", 404, "not_found"},
		{"alice", "POST", "/api/agents/helper/chat", "alice", msg, 200, `"delta":"Hello"`},
		{"nothing to resume", "GET", "/api/agents/helper/chat/c1/stream", "alice", "", 204, ""},
		{"bob's own c1", "POST", "/api/agents/helper/chat", "bob", msg, 200, `"type":"finish"`},
		{"alice again", "POST", "/api/agents/helper/chat", "alice", strings.Replace(msg, `"u1"`, `"u2"`, 1), 200, "data: [DONE]"},
	}
	for _, c := range cases {
		resp, body := s.Do(c.method, c.path, c.user, c.body)
		if resp.StatusCode != c.status || !strings.Contains(body, c.contains) {
			t.Errorf("%s: %d %s", c.name, resp.StatusCode, body)
		}
		if c.status == 200 && resp.Header.Get("X-Vercel-Ai-Ui-Message-Stream") != "v1" {
			t.Errorf("%s: header %v", c.name, resp.Header)
		}
	}
	// One thread per user for c1: alice's holds her two turns, bob's his one.
	for user, want := range map[string]int{"alice": 4, "bob": 2} {
		if msgs := s.Messages(user); strings.Count(msgs, `"role":`) != want {
			t.Errorf("%s: want %d messages: %s", user, want, msgs)
		}
	}
}
