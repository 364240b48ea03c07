package window

import (
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/tokens"
)

// TestFitWindow: what a request keeps of its messages under a window, case by case.
func TestFitWindow(t *testing.T) {
	long := strings.Repeat("word ", 300) // ~300 tokens
	sys := weft.LLMMessage{Role: weft.RoleSystem, Content: "You help."}
	user := func(s string) weft.LLMMessage { return weft.LLMMessage{Role: weft.RoleUser, Content: s} }
	asst := func(s string) weft.LLMMessage { return weft.LLMMessage{Role: weft.RoleAssistant, Content: s} }
	call := weft.LLMMessage{Role: weft.RoleAssistant, ToolCalls: []weft.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}}
	result := weft.LLMMessage{Role: weft.RoleTool, ToolCallID: "c1", Content: long}
	model := func(window int) *weft.Model {
		return &weft.Model{Name: "m", Capabilities: weft.Capabilities{MaxContextTokens: window, MaxOutputTokens: 100}}
	}
	texts := func(msgs []weft.LLMMessage) string {
		var out []string
		for _, m := range msgs {
			c := m.Content
			if len(c) > 8 {
				c = c[:8]
			}
			if len(m.ToolCalls) > 0 {
				c = "call"
			}
			out = append(out, string(m.Role)[:1]+":"+c)
		}
		return strings.Join(out, " ")
	}
	cases := []struct {
		name     string
		msgs     []weft.LLMMessage
		window   int
		limit    int
		strategy weft.ContextStrategy
		want     string
		omitted  int
	}{
		{"fits: sent whole", []weft.LLMMessage{sys, user("a"), asst("b"), user("c")}, 1000, 0, "", "s:You help u:a a:b u:c", 0},
		{"no window known: sent whole", []weft.LLMMessage{sys, user(long), asst(long), user("c")}, 0, 0, "", "s:You help u:word wor a:word wor u:c", 0},
		{"oldest left out, newest user kept", []weft.LLMMessage{sys, user(long), asst(long), user(long), asst("ok"), user("now")}, 900, 0, "",
			"s:You help u:word wor a:ok u:now", 2},
		{"a call and its result go together", []weft.LLMMessage{sys, user("q"), call, result, asst(long), user("now")}, 700, 0, "",
			"s:You help u:now", 4},
		{"the newest exchange stays past the budget", []weft.LLMMessage{sys, user("old"), user(long), call, result}, 300, 0, "",
			"s:You help u:word wor a:call t:word wor", 1},
		{"a refusal's limit", []weft.LLMMessage{sys, user(long), asst(long), user("now")}, 0, 100, "", "s:You help u:now", 2},
		{"strategy none", []weft.LLMMessage{sys, user(long), asst(long), user("now")}, 300, 0, weft.ContextNone,
			"s:You help u:word wor a:word wor u:now", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &weft.Prompt{Name: "p"}
			if c.strategy != "" {
				p.Context = &weft.ContextPolicy{Strategy: c.strategy}
			}
			orig := append([]weft.LLMMessage(nil), c.msgs...)
			req := &weft.Request{Messages: c.msgs}
			var tc tokens.Counter
			fit := Fit(&tc, p, req, model(c.window), c.limit)
			if got := texts(req.Messages); got != c.want || fit.Omitted != c.omitted {
				t.Errorf("kept %q (%d left out), want %q (%d)", got, fit.Omitted, c.want, c.omitted)
			}
			if texts(c.msgs) != texts(orig) {
				t.Error("the request's original messages were changed")
			}
		})
	}
}

// TestClassifyContextLength: each provider's words for a request past the window.
func TestClassifyContextLength(t *testing.T) {
	cases := []struct {
		typ  weft.ErrorType
		msg  string
		want weft.ErrorType
	}{
		{weft.ErrInvalidRequest, "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", weft.ErrContextLength},
		{weft.ErrInvalidRequest, "prompt is too long: 210000 tokens > 200000 maximum", weft.ErrContextLength},
		{weft.ErrInvalidRequest, "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", weft.ErrContextLength},
		{weft.ErrInvalidRequest, "Invalid JSON payload received.", weft.ErrInvalidRequest},
		{weft.ErrRateLimit, "Too many tokens per minute", weft.ErrRateLimit},
		{weft.ErrAuth, "maximum context length", weft.ErrAuth},
	}
	for _, c := range cases {
		pe := weft.ClassifyContextLength(&weft.ProviderError{Type: c.typ, Status: 400, Message: c.msg})
		if pe.Type != c.want {
			t.Errorf("%s %q: %s, want %s", c.typ, c.msg, pe.Type, c.want)
		}
	}
}
