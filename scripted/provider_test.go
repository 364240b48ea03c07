package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

func provider(t testing.TB, src string) *Provider {
	t.Helper()
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return New(s)
}

func msg(role weft.Role, text string) weft.LLMMessage {
	return weft.LLMMessage{Role: role, Content: text}
}

// req is a request from the model fast of the prompt helper, agent helper, side a, depth 0.
func req(msgs ...weft.LLMMessage) *weft.Request {
	return &weft.Request{Model: &weft.Model{Name: "fast", Model: "gpt-fast"}, Prompt: "helper", Agent: "helper",
		Side: weft.SideA, Messages: msgs}
}

func call(t testing.TB, p *Provider, r *weft.Request) (*weft.Response, *weft.ProviderError) {
	t.Helper()
	resp, err := p.Call(context.Background(), r, nil)
	if err == nil {
		return resp, nil
	}
	var pe *weft.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a *weft.ProviderError", err)
	}
	return nil, pe
}

func text(t testing.TB, p *Provider, r *weft.Request) string {
	t.Helper()
	resp, pe := call(t, p, r)
	if pe != nil {
		t.Fatalf("call failed: %v", pe)
	}
	return resp.Text
}

// bare is a response without its log bodies, for comparing the rest.
func bare(r *weft.Response) *weft.Response {
	c := *r
	c.RequestBody, c.ResponseBody = nil, nil
	return &c
}

func TestTestProvider(t *testing.T) {
	for _, p := range []*Provider{New(nil), {}} {
		r := req(msg(weft.RoleSystem, "sys"), msg(weft.RoleUser, "hi there"))
		var chunks []weft.Chunk
		resp, err := p.Call(context.Background(), r, func(c weft.Chunk) { chunks = append(chunks, c) })
		if err != nil {
			t.Fatal(err)
		}
		want := &weft.Response{Text: TestResponse, FinishReason: "stop", ModelID: "gpt-fast",
			Usage: weft.Usage{InputTokens: 3, OutputTokens: 6}}
		if !reflect.DeepEqual(bare(resp), want) {
			t.Errorf("got %#v, want %#v", resp, want)
		}
		if len(chunks) != 1 || chunks[0].Text != TestResponse {
			t.Errorf("chunks %#v", chunks)
		}
		if p.Consumed() != 0 || p.Remaining() != 0 || p.Strict() || len(p.Failures()) != 0 {
			t.Error("test provider has stats")
		}
		if p.Clock() == nil {
			t.Error("nil clock")
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		match string
		r     func(*weft.Request)
		fits  bool
	}{
		{"{}", func(*weft.Request) {}, true},
		{"{model: fast}", func(*weft.Request) {}, true},
		{"{model: backup}", func(*weft.Request) {}, false},
		{"{model: [backup, fast]}", func(*weft.Request) {}, true},
		{"{model: fast}", func(r *weft.Request) { r.Model = nil }, false},
		{"{prompt: helper}", func(*weft.Request) {}, true},
		{"{prompt: summarize}", func(*weft.Request) {}, false},
		{"{prompt: [summarize, helper]}", func(*weft.Request) {}, true},
		{"{agent: helper}", func(*weft.Request) {}, true},
		{"{agent: other}", func(*weft.Request) {}, false},
		{"{agent: [other, second]}", func(r *weft.Request) { r.Agent = "second" }, true},
		{"{side: a}", func(*weft.Request) {}, true},
		{"{side: b}", func(*weft.Request) {}, false},
		{"{side: [b, a]}", func(*weft.Request) {}, true},
		{"{depth: 0}", func(*weft.Request) {}, true},
		{"{depth: 1}", func(*weft.Request) {}, false},
		{"{depth: [1, 2]}", func(r *weft.Request) { r.Depth = 2 }, true},
		{"{model: fast, prompt: helper, agent: helper, side: a, depth: 0}", func(*weft.Request) {}, true},
		{"{model: fast, prompt: helper, agent: helper, side: b, depth: 0}", func(*weft.Request) {}, false},
		{"{model: fast, depth: 1}", func(*weft.Request) {}, false},
	}
	for _, tt := range tests {
		t.Run(tt.match, func(t *testing.T) {
			p := provider(t, "- {match: "+tt.match+", text: matched}\n- {text: other}")
			r := req(msg(weft.RoleUser, "hi"))
			tt.r(r)
			got := text(t, p, r) == "matched"
			if got != tt.fits {
				t.Errorf("fits = %v, want %v", got, tt.fits)
			}
		})
	}
}

func TestConsumptionOrder(t *testing.T) {
	p := provider(t, `
- {match: {model: backup}, text: b1}
- {text: any1}
- {match: {model: fast}, text: f1}
- {expect: {last_role: tool}, text: never}
- {match: {model: backup}, text: b2}
- {error: {status: 500}}
- {text: any2}
`)
	fast, backup := req(msg(weft.RoleUser, "q")), req(msg(weft.RoleUser, "q"))
	backup.Model = &weft.Model{Name: "backup"}
	steps := []struct {
		r    *weft.Request
		want string
	}{
		{fast, "any1"},   // b1 does not fit; any1 is the first that does
		{fast, "f1"},     // any1 consumed
		{fast, "expect"}, // the entry is consumed although its expectation fails
		{backup, "b1"},   // the skipped entry is still there
		{backup, "b2"},
		{fast, "error"}, // an error entry is consumed too
		{fast, "any2"},
		{fast, "exhausted"},
	}
	for i, s := range steps {
		resp, pe := call(t, p, s.r)
		var got string
		switch {
		case pe == nil:
			got = resp.Text
		case pe.Type == weft.ErrExpectationFailed:
			got = "expect"
		case pe.Type == weft.ErrScriptExhausted:
			got = "exhausted"
		default:
			got = "error"
		}
		if got != s.want {
			t.Fatalf("call %d: got %s, want %s", i+1, got, s.want)
		}
	}
	if p.Consumed() != 7 || p.Remaining() != 0 {
		t.Errorf("consumed %d remaining %d", p.Consumed(), p.Remaining())
	}
}

func TestExpect(t *testing.T) {
	img := weft.LLMMessage{Role: weft.RoleUser, Parts: []weft.ContentPart{
		{Type: weft.PartText, Text: "look at "}, {Type: weft.PartImage, URL: "data:image/png;base64,AAAA"},
		{Type: weft.PartText, Text: "this"}, {Type: weft.PartImage, URL: "/attachments/b.png"}}}
	base := func() *weft.Request {
		r := req(
			msg(weft.RoleSystem, "You are a concise helper."),
			msg(weft.RoleUser, "How many words in 'a b c'?"),
			weft.LLMMessage{Role: weft.RoleAssistant, Content: "Let me count.",
				ToolCalls: []weft.ToolCall{{ID: "call_1", Name: "word_count", Arguments: `{"text":"a b c"}`}}},
			weft.LLMMessage{Role: weft.RoleTool, Content: "3", ToolCallID: "call_1", Name: "word_count"},
		)
		r.Tools = []weft.ToolSpec{{Name: "word_count"}, {Name: "summarize"}}
		r.ToolChoice = weft.ToolChoiceAuto
		return r
	}
	tests := []struct {
		name, expect string
		r            func(*weft.Request)
		want         string // "" = passes
	}{
		{"system_contains", "{system_contains: concise}", nil, ""},
		{"system_contains all", "{system_contains: [concise, helper]}", nil, ""},
		{"system_contains fails", "{system_contains: [concise, verbose]}", nil,
			`expected system prompt to contain "verbose" (got "You are a concise helper.")`},
		{"system_contains no system", "{system_contains: concise}", func(r *weft.Request) { r.Messages = r.Messages[1:] },
			`expected system prompt to contain "concise" (got no system prompt)`},
		{"system_contains spans system messages", "{system_contains: [helper., extra]}",
			func(r *weft.Request) {
				r.Messages = append(r.Messages, msg(weft.RoleSystem, "extra"))
			}, ""},
		{"system_contains long actual clipped", "{system_contains: x}", func(r *weft.Request) {
			r.Messages[0].Content = strings.Repeat("é", 100)
		}, `expected system prompt to contain "x" (got "` + strings.Repeat("é", 60) + `…")`},
		{"system_not_contains", "{system_not_contains: verbose}", nil, ""},
		{"system_not_contains fails", "{system_not_contains: concise}", nil,
			`expected system prompt not to contain "concise" (found in "You are a concise helper.")`},
		{"contains", "{contains: [words, count]}", nil, ""},
		{"contains ignores system", "{contains: concise}", nil,
			`expected a non-system message to contain "concise" (got 3 non-system messages, last "3")`},
		{"contains no messages", "{contains: x}", func(r *weft.Request) { r.Messages = r.Messages[:1] },
			`expected a non-system message to contain "x" (got no non-system messages)`},
		{"not_contains", "{not_contains: [sk-secret, \"<b>\"]}", nil, ""},
		{"not_contains fails on a message", "{not_contains: a b c}", nil,
			`expected request not to contain "a b c" (found in "…\"content\":\"How many words in 'a b c'?\"},{\"role\":\"assistant\",\"cont…")`},
		{"not_contains fails on a tool", "{not_contains: summarize}", nil, `expected request not to contain "summarize"`},
		{"not_contains fails on the system prompt", "{not_contains: concise}", nil, `expected request not to contain "concise"`},
		{"not_contains escaped", "{not_contains: \"<secret>\"}", func(r *weft.Request) {
			r.Messages[3].Content = `"<secret>"`
		}, `expected request not to contain "<secret>"`},
		{"not_contains quote", "{not_contains: 'say \"hi\"'}", func(r *weft.Request) {
			r.Messages[3].Content = `say "hi"`
		}, `expected request not to contain "say \"hi\""`},
		{"last_role", "{last_role: tool}", nil, ""},
		{"last_role fails", "{last_role: user}", nil, `expected last message role "user" (got "tool")`},
		{"last_role no messages", "{last_role: user}", func(r *weft.Request) { r.Messages = nil },
			`expected last message role "user" (got no messages)`},
		{"last_contains", "{last_contains: \"3\"}", nil, ""},
		{"last_contains fails", "{last_contains: [\"3\", \"4\"]}", nil, `expected last message to contain "4" (got "3")`},
		{"last_contains no messages", "{last_contains: x}", func(r *weft.Request) { r.Messages = nil },
			`expected last message to contain "x" (got no messages)`},
		{"tool_result_contains", "{tool_result_contains: \"3\"}", nil, ""},
		{"tool_result_contains fails", "{tool_result_contains: \"4\"}", nil,
			`expected a tool result to contain "4" (got 1 tool result, last "3")`},
		{"tool_result_contains none", "{tool_result_contains: \"4\"}", func(r *weft.Request) { r.Messages = r.Messages[:2] },
			`expected a tool result to contain "4" (got no tool results)`},
		{"message_count", "{message_count: 3}", nil, ""},
		{"message_count fails", "{message_count: 1}", nil, `expected 1 non-system message (got 3)`},
		{"message_count fails plural", "{message_count: 4}", nil, `expected 4 non-system messages (got 3)`},
		{"roles", "{roles: [user, assistant, tool]}", nil, ""},
		{"roles fails", "{roles: [user, tool]}", nil, `expected roles [user, tool] (got [user, assistant, tool])`},
		{"roles empty", "{roles: []}", func(r *weft.Request) { r.Messages = r.Messages[:1] }, ""},
		{"roles empty fails", "{roles: []}", nil, `expected roles [] (got [user, assistant, tool])`},
		{"tools", "{tools: [summarize, word_count]}", nil, ""},
		{"tools fails", "{tools: [word_count]}", nil, `expected tools [word_count] (got [word_count, summarize])`},
		{"tools none", "{tools: []}", func(r *weft.Request) { r.Tools = nil }, ""},
		{"tools none under tool_choice none", "{tools: []}", func(r *weft.Request) { r.ToolChoice = weft.ToolChoiceNone }, ""},
		{"tools none fails", "{tools: []}", nil, `expected tools [] (got [word_count, summarize])`},
		{"tools_include", "{tools_include: [summarize]}", nil, ""},
		{"tools_include fails", "{tools_include: [summarize, search]}", nil,
			`expected tools to include "search" (got [word_count, summarize])`},
		{"tools_exclude", "{tools_exclude: search}", nil, ""},
		{"tools_exclude fails", "{tools_exclude: [search, summarize]}", nil,
			`expected tools to exclude "summarize" (got [word_count, summarize])`},
		{"tool_choice", "{tool_choice: auto}", nil, ""},
		{"tool_choice unset is auto", "{tool_choice: auto}", func(r *weft.Request) { r.ToolChoice = "" }, ""},
		{"tool_choice fails", "{tool_choice: required}", nil, `expected tool_choice "required" (got "auto")`},
		{"model", "{model: fast}", nil, ""},
		{"model fails", "{model: backup}", nil, `expected model "backup" (got "fast")`},
		{"prompt", "{prompt: helper}", nil, ""},
		{"prompt fails", "{prompt: summarize}", nil, `expected prompt "summarize" (got "helper")`},
		{"images", "{images: 0}", nil, ""},
		{"images counted", "{images: 2, contains: look at this}", func(r *weft.Request) { r.Messages = append(r.Messages, img) }, ""},
		{"images fails", "{images: 1}", nil, `expected 1 image part (got 0)`},
		{"images fails plural", "{images: 3}", func(r *weft.Request) { r.Messages = append(r.Messages, img) },
			`expected 3 image parts (got 2)`},
		{"keys are ANDed", "{system_contains: concise, last_role: user}", nil, `expected last message role "user" (got "tool")`},
		{"cli example step 2", "{last_role: tool, tool_result_contains: \"3\"}", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := provider(t, "- text: a\n- {expect: "+tt.expect+", text: ok}")
			text(t, p, req()) // entry 1
			r := base()
			if tt.r != nil {
				tt.r(r)
			}
			resp, pe := call(t, p, r)
			if tt.want == "" {
				if pe != nil {
					t.Fatalf("unexpected failure: %v", pe)
				}
				if resp.Text != "ok" {
					t.Errorf("text %q", resp.Text)
				}
				return
			}
			if pe == nil {
				t.Fatalf("passed, want %q", tt.want)
			}
			want := "model script entry 2 (line 2): " + tt.want
			if pe.Type != weft.ErrExpectationFailed || !strings.HasPrefix(pe.Message, want) {
				t.Errorf("got %s %q\nwant %q", pe.Type, pe.Message, want)
			}
			if pe.Retryable() || pe.Fallible() {
				t.Error("expectation failures must not retry or fall back")
			}
			if f := p.Failures(); len(f) != 1 || f[0] != pe.Message {
				t.Errorf("failures %q", f)
			}
			if p.Remaining() != 0 {
				t.Error("a failed entry must count as consumed")
			}
		})
	}
}

func TestSpecExpectationMessage(t *testing.T) {
	// Put entry 3 on line 14 exactly, as in the example message the CLI documentation shows.
	p := provider(t, "- text: a\n- text: b\n"+strings.Repeat("# pad\n", 11)+"- expect: {system_contains: concise}\n  text: c\n")
	text(t, p, req())
	text(t, p, req())
	_, pe := call(t, p, req(msg(weft.RoleSystem, "You are chatty.")))
	want := `model script entry 3 (line 14): expected system prompt to contain "concise"`
	if pe == nil || !strings.HasPrefix(pe.Message, want) {
		t.Fatalf("got %v, want prefix %q", pe, want)
	}
	if pe.Error() != "expectation_failed: "+pe.Message {
		t.Errorf("Error() = %q", pe.Error())
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		entry      string
		typ        weft.ErrorType
		status     int
		message    string
		retryAfter time.Duration
	}{
		{"{status: 401, message: bad key}", weft.ErrAuth, 401, "bad key", 0},
		{"{status: 403}", weft.ErrAuth, 403, "Forbidden", 0},
		{"{status: 400}", weft.ErrInvalidRequest, 400, "Bad Request", 0},
		{"{status: 404}", weft.ErrInvalidRequest, 404, "Not Found", 0},
		{"{status: 422}", weft.ErrInvalidRequest, 422, "Unprocessable Entity", 0},
		{"{status: 408}", weft.ErrTimeout, 408, "Request Timeout", 0},
		{"{status: 429, retry_after: 2}", weft.ErrRateLimit, 429, "Too Many Requests", 2 * time.Second},
		{"{status: 429, retry_after: 1500ms}", weft.ErrRateLimit, 429, "Too Many Requests", 1500 * time.Millisecond},
		{"{status: 429, retry_after: '30'}", weft.ErrRateLimit, 429, "Too Many Requests", 30 * time.Second},
		{"{status: 500, message: boom}", weft.ErrServer, 500, "boom", 0},
		{"{status: 503}", weft.ErrServer, 503, "Service Unavailable", 0},
		{"{status: 529}", weft.ErrServer, 529, "scripted server_error error", 0},
		{"{status: 418}", weft.ErrUnknown, 418, "I'm a teapot", 0},
		{"{status: 500, type: rate_limit, retry_after: 0}", weft.ErrRateLimit, 500, "Internal Server Error", 0},
		{"{type: timeout, message: read timed out}", weft.ErrTimeout, 0, "read timed out", 0},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			p := provider(t, "- error: "+tt.entry)
			_, pe := call(t, p, req())
			want := &weft.ProviderError{Type: tt.typ, Status: tt.status, Message: tt.message, RetryAfter: tt.retryAfter}
			if !reflect.DeepEqual(pe, want) {
				t.Errorf("got %#v, want %#v", pe, want)
			}
			if len(p.Failures()) != 0 {
				t.Error("a scripted error is not a script failure")
			}
		})
	}
}

func TestDelay(t *testing.T) {
	timeouts := weft.Timeouts{FirstChunk: weft.Duration(10 * time.Second), Stall: weft.Duration(5 * time.Second)}
	tests := []struct {
		name     string
		entry    string
		timeouts weft.Timeouts
		want     string // "" = success
		advanced time.Duration
	}{
		{"below first chunk", "{delay: 9s, text: hi}", timeouts, "", 9 * time.Second},
		{"at first chunk", "{delay: 10s, text: hi}", timeouts, "timeout: no output within 10s", 10 * time.Second},
		{"beyond first chunk", "{delay: 1h, text: hi}", timeouts, "timeout: no output within 10s", 10 * time.Second},
		{"no first-chunk timeout", "{delay: 1h, text: hi}", weft.Timeouts{}, "", time.Hour},
		{"integer milliseconds", "{delay: 1500, text: hi}", timeouts, "", 1500 * time.Millisecond},
		{"delay before an error", "{delay: 2s, error: {status: 500}}", timeouts, "server_error (500): Internal Server Error", 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := provider(t, "- "+tt.entry)
			clock := p.Clock()
			before := clock.Now()
			r := req()
			r.Timeouts = tt.timeouts
			start := time.Now()
			resp, err := p.Call(context.Background(), r, nil)
			if real := time.Since(start); real > time.Second {
				t.Errorf("virtual delay took %v of real time", real)
			}
			if tt.want == "" {
				if err != nil || resp.Text != "hi" {
					t.Fatalf("got %v, %v", resp, err)
				}
			} else if err == nil || err.Error() != tt.want {
				t.Fatalf("got error %v, want %q", err, tt.want)
			}
			if adv := clock.Now().Sub(before); adv < tt.advanced || adv > tt.advanced+time.Second {
				t.Errorf("clock advanced %v, want %v", adv, tt.advanced)
			}
		})
	}
}

func TestRealTime(t *testing.T) {
	p := provider(t, "options: {real_time: true}\nresponses:\n- {delay: 30ms, text: hi}\n- {delay: 40ms, text: late}\n- {stall_after: 0}")
	if _, ok := p.Clock().(weft.SystemClock); !ok {
		t.Fatalf("clock %T, want weft.SystemClock", p.Clock())
	}
	start := time.Now()
	if got := text(t, p, req()); got != "hi" {
		t.Fatal(got)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("real delay took only %v", d)
	}
	r := req()
	r.Timeouts.FirstChunk = weft.Duration(20 * time.Millisecond)
	start = time.Now()
	if _, pe := call(t, p, r); pe == nil || pe.Message != "no output within 20ms" {
		t.Fatalf("got %v", pe)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("first-chunk timeout after %v", d)
	}
	r.Timeouts.Stall = weft.Duration(25 * time.Millisecond)
	start = time.Now()
	if _, pe := call(t, p, r); pe == nil || pe.Message != "stalled after 0 chunks" {
		t.Fatalf("got %v", pe)
	}
	if d := time.Since(start); d < 25*time.Millisecond {
		t.Errorf("stall after %v", d)
	}
}

func TestStall(t *testing.T) {
	tests := []struct {
		name, src string
		stall     time.Duration
		chunks    []weft.Chunk
		want      string
		advanced  time.Duration
	}{
		{"after two chunks", "options: {chunk_size: 2}\nresponses: [{text: abcdef, stall_after: 2}]", 5 * time.Second,
			[]weft.Chunk{{Text: "ab"}, {Text: "cd"}}, "stalled after 2 chunks", 5 * time.Second},
		{"reasoning counts", "options: {chunk_size: 3}\nresponses: [{reasoning: abcd, text: xyz, stall_after: 3}]", time.Second,
			[]weft.Chunk{{Reasoning: "abc"}, {Reasoning: "d"}, {Text: "xyz"}}, "stalled after 3 chunks", time.Second},
		{"immediately", "- {text: abc, stall_after: 0}", time.Second, nil, "stalled after 0 chunks", time.Second},
		{"unchunked", "- {text: abc, stall_after: 1}", 0,
			[]weft.Chunk{{Text: "abc"}}, "stalled after 1 chunks", 45 * time.Second},
		{"more than sent", "- {text: abc, stall_after: 4}", time.Second,
			[]weft.Chunk{{Text: "abc"}}, "stalled after 1 chunks", time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := provider(t, tt.src)
			before := p.Clock().Now()
			r := req()
			r.Timeouts.Stall = weft.Duration(tt.stall)
			var chunks []weft.Chunk
			_, err := p.Call(context.Background(), r, func(c weft.Chunk) { chunks = append(chunks, c) })
			var pe *weft.ProviderError
			if !errors.As(err, &pe) || pe.Type != weft.ErrTimeout || pe.Message != tt.want {
				t.Fatalf("got %v, want timeout %q", err, tt.want)
			}
			if !reflect.DeepEqual(chunks, tt.chunks) {
				t.Errorf("chunks %#v, want %#v", chunks, tt.chunks)
			}
			if adv := p.Clock().Now().Sub(before); adv < tt.advanced || adv > tt.advanced+time.Second {
				t.Errorf("clock advanced %v, want %v", adv, tt.advanced)
			}
		})
	}
}

func TestChunking(t *testing.T) {
	const txt = "Héllo, 世界! 🎉 done"
	for _, size := range []int{0, 1, 2, 3, 7, 100} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			p := provider(t, fmt.Sprintf("options: {chunk_size: %d}\nresponses: [{reasoning: 'ré🎉son', text: %q}, {tool_calls: [{name: f}]}]", size, txt))
			var texts, reasons []string
			onChunk := func(c weft.Chunk) {
				if (c.Text == "") == (c.Reasoning == "") {
					t.Errorf("chunk %#v must carry exactly one of text and reasoning", c)
				}
				if c.Text != "" {
					texts = append(texts, c.Text)
					if len(reasons) == 0 {
						t.Error("reasoning must come before text")
					}
				} else {
					reasons = append(reasons, c.Reasoning)
				}
			}
			resp, err := p.Call(context.Background(), req(), onChunk)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(texts, "") != txt || strings.Join(reasons, "") != "ré🎉son" || resp.Text != txt || resp.Reasoning != "ré🎉son" {
				t.Fatalf("texts %q reasons %q", texts, reasons)
			}
			for _, c := range append(texts, reasons...) {
				n := len([]rune(c))
				if size > 0 && n > size || size == 0 && c != txt && c != "ré🎉son" {
					t.Errorf("chunk %q has %d runes with chunk_size %d", c, n, size)
				}
			}
			if size > 0 && len(texts) != (len([]rune(txt))+size-1)/size {
				t.Errorf("%d text chunks", len(texts))
			}
			texts, reasons = nil, nil
			if _, err := p.Call(context.Background(), req(), onChunk); err != nil || len(texts)+len(reasons) != 0 {
				t.Errorf("a reply without text streamed %q %q (%v)", texts, reasons, err)
			}
		})
	}
}

func TestReply(t *testing.T) {
	p := provider(t, `
- text: Let me count.
  tool_calls:
    - {name: word_count, arguments: {text: "a b c"}}
    - {name: search, arguments: '{"q": "x"}', id: own}
- tool_calls: [{name: f}]
  finish_reason: length
- {text: done, usage: {input_tokens: 100, cached_tokens: 40, cost: 0.5}}
- {}
- reasoning: hmm
  usage: {output_tokens: 7, reasoning_tokens: 3}
`)
	r := req(msg(weft.RoleSystem, "12345678"), msg(weft.RoleUser, "日本語"))
	resp, _ := call(t, p, r)
	want := &weft.Response{Text: "Let me count.", ModelID: "gpt-fast", FinishReason: "tool_calls",
		ToolCalls: []weft.ToolCall{{ID: "call_1", Name: "word_count", Arguments: `{"text":"a b c"}`},
			{ID: "own", Name: "search", Arguments: `{"q": "x"}`}},
		Usage: Usage(r, "Let me count.", []weft.ToolCall{{Name: "word_count", Arguments: `{"text":"a b c"}`},
			{Name: "search", Arguments: `{"q": "x"}`}})}
	if !reflect.DeepEqual(bare(resp), want) {
		t.Errorf("reply 1:\n got %#v\nwant %#v", resp, want)
	}
	// The log's bodies: the provider-neutral request received, and the reply.
	if string(resp.RequestBody) != string(r.TraceJSON()) {
		t.Errorf("request body %s, want %s", resp.RequestBody, r.TraceJSON())
	}
	var body struct {
		Text      string
		ToolCalls []weft.ToolCall `json:"tool_calls"`
	}
	if err := json.Unmarshal(resp.ResponseBody, &body); err != nil || body.Text != "Let me count." || len(body.ToolCalls) != 2 {
		t.Errorf("response body %s: %v", resp.ResponseBody, err)
	}
	if resp.Usage.InputTokens != 3 || resp.Usage.OutputTokens != (13+10+17+6+10+3)/4 {
		t.Errorf("usage %+v", resp.Usage)
	}
	resp, _ = call(t, p, r)
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0] != (weft.ToolCall{ID: "call_3", Name: "f", Arguments: "{}"}) ||
		resp.FinishReason != "length" {
		t.Errorf("reply 2: %#v", resp)
	}
	resp, _ = call(t, p, r)
	if resp.Usage.InputTokens != 100 || resp.Usage.CachedTokens != 40 || resp.Usage.OutputTokens != 1 ||
		resp.Usage.Cost == nil || *resp.Usage.Cost != 0.5 || resp.FinishReason != "stop" {
		t.Errorf("reply 3: %#v", resp)
	}
	resp, _ = call(t, p, r)
	if !reflect.DeepEqual(bare(resp), &weft.Response{ModelID: "gpt-fast", FinishReason: "stop", Usage: weft.Usage{InputTokens: 3}}) {
		t.Errorf("empty reply: %#v", resp)
	}
	resp, _ = call(t, p, r)
	if resp.Reasoning != "hmm" || resp.Usage != (weft.Usage{InputTokens: 3, OutputTokens: 7, ReasoningTokens: 3}) {
		t.Errorf("reply 5: %#v", resp)
	}
}

func TestUsage(t *testing.T) {
	r := &weft.Request{Messages: []weft.LLMMessage{msg(weft.RoleSystem, "abcde"),
		{Role: weft.RoleUser, Parts: []weft.ContentPart{{Type: weft.PartText, Text: "ééé"}, {Type: weft.PartImage, URL: "https://x/y.png"}}}}}
	tests := []struct {
		text    string
		calls   []weft.ToolCall
		in, out int
	}{
		{"", nil, 2, 0},
		{"a", nil, 2, 1},
		{"abcd", nil, 2, 1},
		{"abcde", nil, 2, 2},
		{"ab", []weft.ToolCall{{Name: "fn", Arguments: "{}"}}, 2, 2},
	}
	for _, tt := range tests {
		if got := Usage(r, tt.text, tt.calls); got != (weft.Usage{InputTokens: tt.in, OutputTokens: tt.out}) {
			t.Errorf("Usage(%q, %v) = %+v, want in %d out %d", tt.text, tt.calls, got, tt.in, tt.out)
		}
	}
	if got := Usage(nil, "abc", nil); got.InputTokens != 0 || got.OutputTokens != 1 {
		t.Errorf("nil request: %+v", got)
	}
}

func TestCallIDsAcrossCalls(t *testing.T) {
	p := provider(t, `
- tool_calls: [{name: a}]
- {error: {status: 500}}
- {expect: {last_role: tool}, tool_calls: [{name: never}]}
- tool_calls: [{name: b}, {name: c, id: x}, {name: d}]
- tool_calls: [{name: e}]
`)
	var ids []string
	for range 5 {
		resp, _ := call(t, p, req(msg(weft.RoleUser, "q")))
		if resp != nil {
			for _, c := range resp.ToolCalls {
				ids = append(ids, c.ID)
			}
		}
	}
	if want := []string{"call_1", "call_2", "x", "call_4", "call_5"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ids %q, want %q", ids, want)
	}
}

func TestRepeatLast(t *testing.T) {
	p := provider(t, "options: {on_exhausted: repeat_last}\nresponses:\n- text: one\n- {expect: {last_contains: again}, text: two, tool_calls: [{name: f}]}")
	if _, pe := call(t, p, req()); pe != nil {
		t.Fatal(pe)
	}
	for i := range 3 {
		resp, pe := call(t, p, req(msg(weft.RoleUser, "again")))
		if pe != nil || resp.Text != "two" || resp.ToolCalls[0].ID != fmt.Sprintf("call_%d", i+1) {
			t.Fatalf("repeat %d: %v %v", i, resp, pe)
		}
	}
	// The repeated entry's expectation is evaluated again.
	_, pe := call(t, p, req(msg(weft.RoleUser, "other")))
	if pe == nil || pe.Type != weft.ErrExpectationFailed ||
		pe.Message != `model script entry 2 (line 4): expected last message to contain "again" (got "other")` {
		t.Fatalf("got %v", pe)
	}
	if p.Consumed() != 5 || p.Remaining() != 0 {
		t.Errorf("consumed %d remaining %d", p.Consumed(), p.Remaining())
	}

	// Nothing consumed yet: repeat_last has nothing to repeat.
	p = provider(t, "options: {on_exhausted: repeat_last}\nresponses: [{match: {model: other}, text: x}]")
	if _, pe := call(t, p, req()); pe == nil || pe.Type != weft.ErrScriptExhausted {
		t.Fatalf("got %v", pe)
	}
}

func TestExhausted(t *testing.T) {
	p := provider(t, "- text: one\n- text: two\n- {match: {model: backup}, text: three}")
	text(t, p, req())
	text(t, p, req())
	_, pe := call(t, p, req())
	want := `model script exhausted after 2 responses (1 left, none fits model "fast", prompt "helper", agent "helper", side "a", depth 0)`
	if pe == nil || pe.Type != weft.ErrScriptExhausted || pe.Message != want {
		t.Fatalf("got %v, want %q", pe, want)
	}
	if pe.Retryable() || pe.Fallible() {
		t.Error("exhaustion must not retry or fall back")
	}
	r := req()
	r.Model = &weft.Model{Name: "backup"}
	text(t, p, r)
	_, pe = call(t, p, r)
	if pe == nil || pe.Message != "model script exhausted after 3 responses" {
		t.Fatalf("got %v", pe)
	}
	if f := p.Failures(); len(f) != 2 || f[0] != want || f[1] != pe.Message {
		t.Errorf("failures %q", f)
	}
	if p.Consumed() != 3 || p.Remaining() != 0 {
		t.Errorf("consumed %d remaining %d", p.Consumed(), p.Remaining())
	}

	empty := New(&Script{})
	if _, pe := call(t, empty, req()); pe == nil || pe.Message != "model script exhausted after 0 responses" {
		t.Fatalf("empty script: %v", pe)
	}
}

func TestStatsAndGoScripts(t *testing.T) {
	s := &Script{Options: Options{Strict: true}, Responses: []Entry{{Text: "a"}, {Text: "b", Expect: &Expect{Roles: []weft.Role{}}}}}
	p := New(s)
	if !p.Strict() || p.Remaining() != 2 || p.Consumed() != 0 {
		t.Fatal("stats of a fresh provider")
	}
	text(t, p, req())
	_, pe := call(t, p, req(msg(weft.RoleUser, "x")))
	if pe == nil || pe.Message != "model script entry 2: expected roles [] (got [user])" {
		t.Fatalf("got %v", pe)
	}
	if s.Responses[1].Index != 0 {
		t.Error("New modified the script")
	}
	if p.Remaining() != 0 || p.Consumed() != 2 {
		t.Error("stats after two calls")
	}
}

func TestCLIExamples(t *testing.T) {
	t.Run("word_count", func(t *testing.T) {
		s, err := Load("testdata/hello.script.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p := New(s)
		r := req(msg(weft.RoleSystem, "You are a concise helper. Reply in English."), msg(weft.RoleUser, "How many words in 'a b c'?"))
		r.Tools = []weft.ToolSpec{{Name: "summarize"}, {Name: "word_count"}}
		resp, pe := call(t, p, r)
		if pe != nil {
			t.Fatal(pe)
		}
		if resp.Text != "Let me count." || len(resp.ToolCalls) != 1 ||
			resp.ToolCalls[0] != (weft.ToolCall{ID: "call_1", Name: "word_count", Arguments: `{"text":"a b c"}`}) ||
			resp.FinishReason != "tool_calls" {
			t.Fatalf("step 1: %#v", resp)
		}
		r.Messages = append(r.Messages, weft.LLMMessage{Role: weft.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls},
			weft.LLMMessage{Role: weft.RoleTool, Content: "3", ToolCallID: "call_1", Name: "word_count", ToolStatus: weft.ToolSuccess})
		if got := text(t, p, r); got != "There are 3 words." {
			t.Fatalf("step 2: %q", got)
		}
		if p.Remaining() != 0 || p.Consumed() != 2 || len(p.Failures()) != 0 {
			t.Error("stats")
		}
		// The same script against a prompt that is not concise fails at entry 1, line 1.
		p = New(s)
		r.Messages[0].Content = "You are a chatty helper."
		if _, pe := call(t, p, r); pe == nil ||
			!strings.HasPrefix(pe.Message, `model script entry 1 (line 1): expected system prompt to contain "concise helper"`) {
			t.Fatalf("got %v", pe)
		}
	})
	t.Run("retry and fallback", func(t *testing.T) {
		s, err := Load("testdata/retry.script.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p := New(s)
		fast, backup := req(), req()
		backup.Model = &weft.Model{Name: "backup"}
		_, pe := call(t, p, fast)
		if pe == nil || pe.Type != weft.ErrRateLimit || pe.Status != 429 || pe.RetryAfter != 2*time.Second || !pe.Retryable() {
			t.Fatalf("attempt 1: %#v", pe)
		}
		_, pe = call(t, p, fast)
		if pe == nil || pe.Type != weft.ErrServer || pe.Status != 503 || !pe.Retryable() || !pe.Fallible() {
			t.Fatalf("attempt 2: %#v", pe)
		}
		// A third attempt of fast has no entry left: the script is exhausted for it.
		if _, pe = call(t, p, fast); pe == nil || pe.Type != weft.ErrScriptExhausted {
			t.Fatalf("attempt 3 of fast: %#v", pe)
		}
		if got := text(t, p, backup); got != "Answer from the fallback." {
			t.Fatalf("fallback: %q", got)
		}
		// The backup entry fits only backup, whatever the order of the calls.
		p = New(s)
		if got := text(t, p, backup); got != "Answer from the fallback." {
			t.Fatalf("fallback first: %q", got)
		}
	})
}

func TestConcurrency(t *testing.T) {
	const n = 100
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "- {text: r%d, tool_calls: [{name: f}]}\n", i)
	}
	p := provider(t, b.String())
	var wg sync.WaitGroup
	texts, ids := make([]string, n), make([]string, n)
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			resp, err := p.Call(context.Background(), req(msg(weft.RoleUser, "q")), func(weft.Chunk) {})
			if err != nil {
				errs <- err
				return
			}
			texts[i], ids[i] = resp.Text, resp.ToolCalls[0].ID
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seenText, seenID := map[string]bool{}, map[string]bool{}
	for i := range n {
		if seenText[texts[i]] || seenID[ids[i]] {
			t.Fatalf("duplicate %s / %s", texts[i], ids[i])
		}
		seenText[texts[i]], seenID[ids[i]] = true, true
	}
	for i := range n {
		if !seenText[fmt.Sprintf("r%d", i)] || !seenID[fmt.Sprintf("call_%d", i+1)] {
			t.Fatalf("entry %d or id call_%d never served", i, i+1)
		}
	}
	if p.Consumed() != n || p.Remaining() != 0 {
		t.Errorf("consumed %d remaining %d", p.Consumed(), p.Remaining())
	}
	if _, pe := call(t, p, req()); pe == nil || pe.Type != weft.ErrScriptExhausted {
		t.Errorf("after all entries: %v", pe)
	}
}

func TestConcurrentMatch(t *testing.T) {
	// Two "threads" interleave: each only ever sees its own entries, in order.
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, "- {match: {agent: x}, text: x%d}\n- {match: {agent: y}, text: y%d}\n", i, i)
	}
	p := provider(t, b.String())
	var wg sync.WaitGroup
	for _, agent := range []string{"x", "y"} {
		wg.Go(func() {
			for i := range 50 {
				r := req()
				r.Agent = agent
				resp, err := p.Call(context.Background(), r, nil)
				if err != nil || resp.Text != fmt.Sprintf("%s%d", agent, i) {
					t.Errorf("agent %s call %d: %v %v", agent, i, resp, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := provider(t, "- text: a")
	if _, err := p.Call(ctx, req(), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if p.Remaining() != 1 {
		t.Error("a call cancelled before it starts must not consume an entry")
	}

	// Cancelled during a real delay.
	p = provider(t, "options: {real_time: true}\nresponses: [{delay: 10s, text: late}]")
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := p.Call(ctx, req(), nil)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("got %v after %v", err, time.Since(start))
	}
	var pe *weft.ProviderError
	if errors.As(err, &pe) {
		t.Error("cancellation must not look like a provider failure")
	}

	// Cancelled during a real stall.
	p = provider(t, "options: {real_time: true}\nresponses: [{text: abc, stall_after: 1}]")
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Call(ctx, req(), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stall: got %v", err)
	}

	// Cancelled between chunks: onChunk cancels after the first piece.
	p = provider(t, "options: {chunk_size: 1}\nresponses: [{text: abc}]")
	ctx, cancel = context.WithCancel(context.Background())
	var got []string
	_, err = p.Call(ctx, req(), func(c weft.Chunk) { got = append(got, c.Text); cancel() })
	if !errors.Is(err, context.Canceled) || len(got) != 1 {
		t.Fatalf("got %v after chunks %q", err, got)
	}
}

func TestVirtualClock(t *testing.T) {
	p := New(&Script{})
	c := p.Clock()
	t0 := c.Now()
	if err := c.Sleep(context.Background(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if d := c.Now().Sub(t0); d < time.Hour || d > time.Hour+time.Second {
		t.Errorf("advanced %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled sleep: %v", err)
	}
}

// BenchmarkCall measures one text reply with a two-key expectation on a 22-message request.
func BenchmarkCall(b *testing.B) {
	p := provider(b, `
options: {on_exhausted: repeat_last}
responses:
  - expect: {system_contains: concise helper, last_role: user}
    text: The order 42 shipped yesterday and should arrive tomorrow.
`)
	r := req(msg(weft.RoleSystem, "You are a concise helper for an online shop. Answer briefly."))
	for i := range 10 {
		r.Messages = append(r.Messages,
			msg(weft.RoleUser, fmt.Sprintf("Question %d about an order, with some more words to make it realistic.", i)),
			msg(weft.RoleAssistant, fmt.Sprintf("Answer %d: the order is on its way and will arrive soon.", i)))
	}
	r.Messages = append(r.Messages, msg(weft.RoleUser, "Where is order 42?"))
	if len(r.Messages) != 22 {
		b.Fatal(len(r.Messages))
	}
	ctx := context.Background()
	onChunk := func(weft.Chunk) {}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Call(ctx, r, onChunk); err != nil {
			b.Fatal(err)
		}
	}
}

// TestResume: a provider told which entries an earlier process used answers with the next ones,
// numbers its tool calls after theirs, and logs each answer's entry number.
func TestResume(t *testing.T) {
	src := "- tool_calls: [{name: a, arguments: {}}, {name: b, arguments: {}}]\n- match: {prompt: other}\n  text: other\n- text: third\n- text: fourth\n"
	tests := []struct {
		name     string
		answered []int
		prompt   string
		text     string
		entry    int
	}{
		{"nothing_used", nil, "p", "", 1},
		{"first_used", []int{1}, "p", "third", 3},
		{"first_used_twice_named", []int{1, 1}, "p", "third", 3},
		{"out_of_order", []int{3, 1}, "p", "fourth", 4},
		{"matched_entry_left", []int{1, 3}, "other", "other", 2},
		{"unknown_numbers_ignored", []int{0, 9}, "p", "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("resume.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			p := New(s)
			p.Resume(tc.answered)
			resp, err := p.Call(context.Background(), &weft.Request{Prompt: tc.prompt}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tc.text {
				t.Errorf("text %q, want %q", resp.Text, tc.text)
			}
			if d, n, ok := ScriptEntry(resp.ResponseBody); !ok || n != tc.entry || d != p.Digest() || d == "" {
				t.Errorf("ScriptEntry(%s) = %s, %d, %v; want %s, %d", resp.ResponseBody, d, n, ok, p.Digest(), tc.entry)
			}
		})
	}
	// Tool call ids go on after the used entries' calls.
	s, _ := Parse("ids.yaml", []byte("- tool_calls: [{name: a, arguments: {}}]\n- tool_calls: [{name: b, arguments: {}}]\n"))
	p := New(s)
	p.Resume([]int{1})
	resp, err := p.Call(context.Background(), &weft.Request{}, nil)
	if err != nil || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "call_2" {
		t.Fatalf("after resume: %+v, %v", resp, err)
	}
	other, _ := Parse("other.yaml", []byte("- text: x\n"))
	same, _ := Parse("ids.yaml", []byte("- tool_calls: [{name: a, arguments: {}}]\n- tool_calls: [{name: b, arguments: {}}]\n"))
	if New(other).Digest() == p.Digest() || New(same).Digest() != p.Digest() {
		t.Error("digests do not tell scripts apart")
	}
	if _, _, ok := ScriptEntry([]byte(`{"text":"x"}`)); ok {
		t.Error("ScriptEntry found an entry in another provider's body")
	}
}

// TestChunkDelay: chunk_delay spaces the chunks on the script's clock: virtual time passes
// between them (no real wait) without real_time, and real time with it, so that a reply streams in
// as a model's would.
func TestChunkDelay(t *testing.T) {
	t.Run("virtual", func(t *testing.T) {
		p := provider(t, "options: {chunk_size: 2, chunk_delay: 1m}\nresponses: [{text: abcdef}]")
		var at []time.Time
		start := time.Now()
		before := p.Clock().Now()
		if _, err := p.Call(context.Background(), req(), func(weft.Chunk) { at = append(at, p.Clock().Now()) }); err != nil {
			t.Fatal(err)
		}
		// The virtual clock runs on from the real one: a gap is the delay plus a moment.
		gap := func(a, b time.Time, d time.Duration) bool { return b.Sub(a) >= d && b.Sub(a) < d+20*time.Second }
		if len(at) != 3 || !gap(before, at[0], 0) || !gap(at[0], at[1], time.Minute) || !gap(at[1], at[2], time.Minute) {
			t.Fatalf("chunks at %v (from %v)", at, before)
		}
		if time.Since(start) > 30*time.Second {
			t.Errorf("a virtual delay waited for real: %v", time.Since(start))
		}
	})
	t.Run("real time", func(t *testing.T) {
		p := provider(t, "options: {real_time: true, chunk_size: 2, chunk_delay: 30ms}\nresponses: [{text: abcdef}]")
		var at []time.Time
		if _, err := p.Call(context.Background(), req(), func(weft.Chunk) { at = append(at, time.Now()) }); err != nil {
			t.Fatal(err)
		}
		if len(at) != 3 || at[1].Sub(at[0]) < 30*time.Millisecond || at[2].Sub(at[1]) < 30*time.Millisecond {
			t.Fatalf("chunks at %v", at)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		p := provider(t, "options: {real_time: true, chunk_size: 1, chunk_delay: 1h}\nresponses: [{text: abc}]")
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		_, err := p.Call(ctx, req(), func(weft.Chunk) { n++; cancel() })
		if err == nil || n != 1 {
			t.Fatalf("%d chunks, err %v", n, err)
		}
	})
	if _, err := Parse("t.yaml", []byte("options: {chunk_delay: -1s}\nresponses: []")); err == nil || !strings.Contains(err.Error(), "options.chunk_delay") {
		t.Errorf("a negative chunk_delay: %v", err)
	}
}
