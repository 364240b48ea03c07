package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

func TestInert(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "hello, wörld 日本", "hello, wörld 日本"},
		{"newlines and tabs stay", "a\n\tb", "a\n\tb"},
		{"crlf becomes lf", "a\r\nb", "a\nb"},
		{"title change", "\x1b]0;pwned\x07", "␛]0;pwned␇"},
		{"clear screen and home", "x\x1b[2J\x1b[Hy", "x␛[2J␛[Hy"},
		{"lone carriage return", "safe\rEVIL", "safe␍EVIL"},
		{"backspace and delete", "ab\x08\x7f", "ab␈␡"},
		{"C1 CSI", "a\u009b31mb", "a\uFFFD31mb"},
		{"bidi override", "abc\u202Edef", "abc\uFFFDdef"},
		{"invalid utf-8", "a\xffb", "a\uFFFDb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := inert(tc.in)
			if got != tc.want {
				t.Errorf("inert(%q) = %q, want %q", tc.in, got, tc.want)
			}
			for _, r := range got {
				if r != '\n' && r != '\t' && (r < 0x20 || (r >= 0x7f && r <= 0x9f)) {
					t.Errorf("inert(%q) keeps control %U", tc.in, r)
				}
			}
		})
	}
}

// ev is a plain event of thread thr_1 (the shape a server's stream has).
func ev(typ string, data map[string]any) engine.Event {
	return engine.Event{Type: typ, ThreadID: "thr_1", Data: engine.Fields(data)}
}

func msgEv(m map[string]any) engine.Event { return ev("message", map[string]any{"message": m}) }

func TestTranscript(t *testing.T) {
	tests := []struct {
		name   string
		sent   []string
		events []engine.Event
		lines  []string // every line the events complete, in order
		live   string   // the reply streaming at the end
		status string
	}{
		{
			name: "streamed reply then its stored copy",
			events: []engine.Event{
				ev("step_started", map[string]any{"depth": 0.0, "step": 1.0}),
				ev("message_chunk", map[string]any{"depth": 0.0, "delta": "Hel"}),
				ev("message_chunk", map[string]any{"depth": 0.0, "delta": "lo"}),
			},
			live:   "Hello",
			status: "step 1 · 0 tool calls · 0 tokens · writing",
		},
		{
			name: "reply replaces its live text",
			events: []engine.Event{
				ev("message_chunk", map[string]any{"depth": 0.0, "delta": "Hel"}),
				msgEv(map[string]any{"id": "m1", "role": "assistant", "content": "Hello", "depth": 0.0}),
				msgEv(map[string]any{"id": "m1", "role": "assistant", "content": "Hello", "depth": 0.0}), // an update: shown once
			},
			lines: []string{"helper> Hello"},
		},
		{
			name: "tool call and result, compactly",
			sent: []string{"count a b c"},
			events: []engine.Event{
				msgEv(map[string]any{"id": "u1", "role": "user", "side": "b", "content": "count a b c", "depth": 0.0}),
				ev("step_started", map[string]any{"depth": 0.0, "step": 1.0}),
				ev("llm_response", map[string]any{"status": "ok", "input_tokens": 10.0, "output_tokens": 5.0}),
				msgEv(map[string]any{"id": "m1", "role": "assistant", "content": "Let me count.", "depth": 0.0,
					"tool_calls": []any{map[string]any{"id": "c1", "name": "word_count", "arguments": "{\n  \"text\": \"a b c\"\n}"}}}),
				ev("tool_started", map[string]any{"depth": 0.0, "name": "word_count"}),
				msgEv(map[string]any{"id": "m2", "role": "tool", "name": "word_count", "content": "3\nwords", "tool_status": "success", "depth": 0.0}),
				msgEv(map[string]any{"id": "m3", "role": "tool", "name": "lookup", "content": "no such order", "tool_status": "error", "depth": 0.0}),
			},
			lines:  []string{"helper> Let me count.", `  -> word_count { "text": "a b c" }`, "  <- word_count: 3 words", "  <- lookup error: no such order"},
			status: "step 1 · 1 tool call · 15 tokens · running word_count",
		},
		{
			name: "long tool results are cut to one line",
			events: []engine.Event{
				msgEv(map[string]any{"id": "m2", "role": "tool", "name": "dump", "content": strings.Repeat("x", 500), "depth": 0.0}),
			},
			lines: []string{"  <- dump: " + strings.Repeat("x", toolLineRunes-len("dump: ")-1) + "…"},
		},
		{
			name: "sub-prompts, silent rows and other threads are not shown",
			events: []engine.Event{
				msgEv(map[string]any{"id": "m1", "role": "assistant", "content": "inner", "depth": 1.0}),
				msgEv(map[string]any{"id": "m2", "role": "assistant", "content": "quiet", "depth": 0.0, "silent": true}),
				ev("message_chunk", map[string]any{"depth": 1.0, "delta": "inner"}),
				{Type: "message", ThreadID: "thr_child", Data: engine.Fields{"message": map[string]any{"role": "assistant", "content": "child"}}},
			},
		},
		{
			name: "a stop cuts the live reply off",
			events: []engine.Event{
				ev("message_chunk", map[string]any{"depth": 0.0, "delta": "Stre"}),
				ev("run_stopped", map[string]any{"reason": "aborted_by_user"}),
			},
			lines: []string{"helper> Stre [cut off]", "-- run stopped: aborted_by_user"},
		},
		{
			name:   "an ok stop says nothing",
			events: []engine.Event{ev("run_stopped", map[string]any{"reason": "stop_on_response"})},
		},
		{
			name:   "a failed stop shows its error",
			events: []engine.Event{ev("run_stopped", map[string]any{"reason": "step_error", "error": "model \x1b[31mdown"})},
			lines:  []string{"-- run stopped: step_error: model ␛[31mdown"},
		},
		{
			name: "escape sequences in replies, deltas and tool names are inert",
			events: []engine.Event{
				ev("message_chunk", map[string]any{"depth": 0.0, "delta": "a\x1b]0;x\x07"}),
				msgEv(map[string]any{"id": "m1", "role": "assistant", "content": "a\x1b]0;x\x07b", "depth": 0.0,
					"tool_calls": []any{map[string]any{"name": "t\x1b[2J", "arguments": "{}"}}}),
				ev("message_chunk", map[string]any{"depth": 0.0, "delta": "\x1b[H"}),
			},
			lines: []string{"helper> a␛]0;x␇b", "  -> t␛[2J {}"},
			live:  "␛[H",
		},
		{
			name: "subagents, handoffs and approvals are notices",
			events: []engine.Event{
				ev("subagent", map[string]any{"agent": "review", "reference": "thr_2", "status": "running"}),
				ev("handoff", map[string]any{"from_agent": "helper", "to_agent": "billing"}),
				ev("approval_required", map[string]any{"name": "refund", "call_id": "c9"}),
				msgEv(map[string]any{"id": "m1", "role": "assistant", "content": "Hi", "depth": 0.0}),
			},
			lines: []string{"-- subagent review (thr_2): running", "-- handed over from helper to billing",
				"-- refund waits for approval: weft threads approve thr_1 c9 (or deny)", "billing> Hi"},
		},
		{
			name: "a fold of the history is a notice; the silent summary row is not shown",
			events: []engine.Event{
				ev("context_summarized", map[string]any{"folded_messages": 4.0, "summary_messages": 12.0}),
				msgEv(map[string]any{"id": "s1", "role": "system", "silent": true, "content": "- the code is 4711", "depth": 0.0}),
				ev("context_summary_failed", map[string]any{"error": "invalid_request (400)"}),
			},
			lines: []string{"-- 4 older messages folded into the summary (12 in all)",
				"-- the summarizer failed; older messages were left out instead: invalid_request (400)"},
		},
		{
			name:   "the other side's messages (dual_ai) are shown; our own are not repeated",
			sent:   []string{"mine"},
			events: []engine.Event{msgEv(map[string]any{"id": "u1", "role": "user", "content": "mine"}), msgEv(map[string]any{"id": "u2", "role": "user", "content": "theirs"})},
			lines:  []string{"user> theirs"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTranscript("helper", "thr_1")
			tr.sent = tc.sent
			var got []string
			for _, e := range tc.events {
				lines, _ := tr.add(e)
				for _, l := range lines {
					got = append(got, l.text)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.lines, "\n") {
				t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.lines, "\n"))
			}
			if tr.live.String() != tc.live {
				t.Errorf("live %q, want %q", tr.live.String(), tc.live)
			}
			if tc.status != "" && tr.status() != tc.status {
				t.Errorf("status %q, want %q", tr.status(), tc.status)
			}
		})
	}
}

// stubBackend is a chat backend that records what it is asked.
type stubBackend struct {
	mu       sync.Mutex
	thread   string
	sent     []string
	stops    int
	env      map[string]string
	converse func(emit func(engine.Event)) error
}

func (f *stubBackend) Converse(ctx context.Context, text string, side weft.Side, emit func(engine.Event)) error {
	f.mu.Lock()
	f.sent = append(f.sent, text+"|"+string(side))
	if f.thread == "" {
		f.thread = "thr_1"
	}
	f.mu.Unlock()
	if f.converse != nil {
		return f.converse(emit)
	}
	return nil
}

func (f *stubBackend) Stop(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops++
	return nil
}

func (f *stubBackend) SetEnv(_ context.Context, name, value string) (weft.VarType, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.env == nil {
		f.env = map[string]string{}
	}
	f.env[name] = value
	return weft.VarSecret, nil
}

func (f *stubBackend) Thread() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.thread
}

func (f *stubBackend) Document(context.Context) (string, error) {
	return "{\"thread\": {\"id\": \"" + f.Thread() + "\"}}", nil
}

func (f *stubBackend) Info(context.Context) (chatThreadInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return chatThreadInfo{Agent: "helper", Status: weft.ThreadIdle, StopReason: weft.StopOnResponse, Messages: 2 * len(f.sent)}, nil
}

func TestChatAnswer(t *testing.T) {
	tests := []struct {
		name, line, thread string
		want               string
		env                map[string]string
	}{
		{"env before the thread", "/env TOKEN=sk-1=2", "", "-- TOKEN (secret) will be set when the thread is created", map[string]string{"TOKEN": "sk-1=2"}},
		{"env on the thread", "/env MODE=fast", "thr_1", "-- MODE (secret) set for thread thr_1", map[string]string{"MODE": "fast"}},
		{"env without a value", "/env TOKEN", "thr_1", "!! /env: want NAME=VALUE", nil},
		{"thread", "/thread", "thr_1", "-- thread thr_1 · agent helper · 0 messages · idle (stop_on_response)\n" +
			"-- resume it with: weft chat helper --thread thr_1 --db 'my chats/a.db'", nil},
		{"no thread yet", "/thread", "", "-- no thread yet: it is created with your first message", nil},
		{"json", "/json", "thr_1", `{"thread": {"id": "thr_1"}}`, nil},
		{"help", "/help", "", chatHelp[0].text, nil},
		{"unknown", "/frob", "", "!! unknown command /frob (try /help)", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &stubBackend{thread: tc.thread}
			s := &chatSession{b: b, resume: func(id string) string {
				return shellWord("weft") + " chat helper --thread " + shellWord(id) + " --db " + shellWord("my chats/a.db")
			}}
			lines := s.answer(context.Background(), parseChatLine(tc.line))
			var texts []string
			for _, l := range lines {
				texts = append(texts, l.text)
			}
			if got := strings.Join(texts, "\n"); got != tc.want {
				t.Fatalf("%q answered %q, want %q", tc.line, got, tc.want)
			}
			if len(b.env) != len(tc.env) {
				t.Errorf("env %v, want %v", b.env, tc.env)
			}
			for k, v := range tc.env {
				if b.env[k] != v {
					t.Errorf("env %v, want %v", b.env, tc.env)
				}
			}
			// A secret typed with /env is never echoed.
			for _, v := range tc.env {
				if strings.Contains(lines[0].text, v) {
					t.Errorf("/env echoes the value: %q", lines[0].text)
				}
			}
		})
	}
}
