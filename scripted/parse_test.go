package scripted

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

func ptr[T any](v T) *T { return &v }

func TestLoadExamples(t *testing.T) {
	hello, err := Load("testdata/hello.script.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Script{Name: "testdata/hello.script.yaml", Responses: []Entry{
		{Index: 1, Line: 1, Text: "Let me count.",
			Expect: &Expect{SystemContains: []string{"concise helper"}, Tools: []string{"word_count", "summarize"},
				LastRole: []weft.Role{weft.RoleUser}},
			ToolCalls: []ToolCallSpec{{Name: "word_count", Arguments: `{"text":"a b c"}`, ID: "call_1"}}},
		{Index: 2, Line: 5, Text: "There are 3 words.",
			Expect: &Expect{LastRole: []weft.Role{weft.RoleTool}, ToolResultContains: []string{"3"}}},
	}}
	if !reflect.DeepEqual(hello, want) {
		t.Errorf("hello script:\n got %#v\nwant %#v", hello, want)
	}

	retry, err := Load("testdata/retry.script.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want = &Script{Name: "testdata/retry.script.yaml", Responses: []Entry{
		{Index: 1, Line: 1, Match: &Match{Model: []string{"fast"}},
			Error: &ErrorSpec{Status: 429, Message: "Too Many Requests", Type: weft.ErrRateLimit, RetryAfter: 2 * time.Second}},
		{Index: 2, Line: 2, Match: &Match{Model: []string{"fast"}},
			Error: &ErrorSpec{Status: 503, Message: "Service Unavailable", Type: weft.ErrServer}},
		{Index: 3, Line: 3, Match: &Match{Model: []string{"backup"}}, Text: "Answer from the fallback."},
	}}
	if !reflect.DeepEqual(retry, want) {
		t.Errorf("retry script:\n got %#v\nwant %#v", retry, want)
	}

	if _, err := Load("testdata/missing.yaml"); err == nil || !strings.HasPrefix(err.Error(), "model script: ") {
		t.Errorf("missing file: %v", err)
	}
}

func TestParseEveryKey(t *testing.T) {
	s, err := Load("testdata/full.script.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Script{Name: "testdata/full.script.yaml",
		Options: Options{Strict: true, OnExhausted: ExhaustRepeatLast, ChunkSize: 3, ChunkDelay: 5 * time.Millisecond},
		Responses: []Entry{
			{Index: 1, Line: 9,
				Match: &Match{Model: []string{"fast", "backup"}, Prompt: []string{"helper"}, Agent: []string{"helper"},
					Side: []weft.Side{weft.SideA}, Depth: []int{0, 1}},
				Expect: &Expect{
					SystemContains: []string{"concise", "helper"}, SystemNotContains: []string{"secret"},
					Contains: []string{"hello"}, NotContains: []string{"sk-123", "<b>"},
					LastRole: []weft.Role{weft.RoleUser}, LastContains: []string{"hello"},
					ToolResultContains: []string{"3"}, MessageCount: ptr(3),
					Roles: []weft.Role{weft.RoleUser, weft.RoleAssistant, weft.RoleTool}, Tools: []string{},
					ToolsInclude: []string{"a"}, ToolsExclude: []string{"b", "c"},
					ToolChoice: []weft.ToolChoice{weft.ToolChoiceRequired}, Model: []string{"fast"},
					Prompt: []string{"helper"}, Images: ptr(1),
				},
				Text: "Hello there", Reasoning: "Think first.\n",
				ToolCalls: []ToolCallSpec{
					{Name: "lookup", Arguments: `{"order_id":42,"tags":["x","y"],"nested":{"b":true,"a":null}}`},
					{Name: "raw", Arguments: `{"broken": `, ID: "my_id"},
				},
				Usage: &UsageSpec{InputTokens: ptr(10), OutputTokens: ptr(5), CachedTokens: ptr(2), ReasoningTokens: ptr(1),
					Cost: ptr(0.25)},
				FinishReason: "length", Delay: 1500 * time.Millisecond, StallAfter: ptr(2)},
			{Index: 2, Line: 40, Error: &ErrorSpec{Status: 500, Message: "boom", Type: weft.ErrRateLimit,
				RetryAfter: 1500 * time.Millisecond}, Delay: 250 * time.Millisecond},
			{Index: 3, Line: 42},
		}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("full script:\n got %#v\nwant %#v", s, want)
		for i := range min(len(s.Responses), len(want.Responses)) {
			if !reflect.DeepEqual(s.Responses[i], want.Responses[i]) {
				t.Errorf("entry %d:\n got %#v\nwant %#v", i+1, s.Responses[i], want.Responses[i])
			}
		}
	}
}

func TestParseJSON(t *testing.T) {
	s, err := Load("testdata/full.script.json")
	if err != nil {
		t.Fatal(err)
	}
	want := &Script{Name: "testdata/full.script.json", Options: Options{ChunkSize: 2}, Responses: []Entry{
		{Index: 1, Line: 5, Text: "hi\tthere", ToolCalls: []ToolCallSpec{{Name: "f", Arguments: `{"z":1,"a":[1.50,"<&>"]}`}}},
		{Index: 2, Line: 6, Error: &ErrorSpec{Status: 401, Message: "Unauthorized", Type: weft.ErrAuth, RetryAfter: 3 * time.Second}},
	}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("json script:\n got %#v\nwant %#v", s, want)
	}
	// Escaped surrogate pairs (as Python's json.dumps writes them) and other JSON escapes.
	s, err = Parse("u.json", []byte(`[{"text": "a\ud83d\ude00b \u00e9 \/ \udc00 \"q\" \\ud83d"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Responses[0].Text; got != "a😀b é / \ufffd \"q\" \\ud83d" {
		t.Errorf("escapes: %q", got)
	}
	// A JSON list works too.
	s, err = Parse("l.json", []byte(`[{"text": "a"}, {"text": "b", "match": {"depth": 1}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Responses) != 2 || s.Responses[1].Text != "b" || s.Responses[1].Match.Depth[0] != 1 {
		t.Errorf("json list: %#v", s)
	}
}

func TestParseValues(t *testing.T) {
	tests := []struct {
		name, src string
		check     func(e Entry) bool
	}{
		{"arguments keep file order", "- tool_calls: [{name: f, arguments: {z: 1, a: 2, m: {y: x, b: [1, 2]}}}]",
			func(e Entry) bool { return e.ToolCalls[0].Arguments == `{"z":1,"a":2,"m":{"y":"x","b":[1,2]}}` }},
		{"arguments as JSON string verbatim", `- tool_calls: [{name: f, arguments: '{ "a" : 1 }'}]`,
			func(e Entry) bool { return e.ToolCalls[0].Arguments == `{ "a" : 1 }` }},
		{"arguments default", "- tool_calls: [{name: f}]",
			func(e Entry) bool { return e.ToolCalls[0].Arguments == "" }},
		{"arguments null", "- tool_calls: [{name: f, arguments: ~}]",
			func(e Entry) bool { return e.ToolCalls[0].Arguments == "" }},
		{"arguments empty map", "- tool_calls: [{name: f, arguments: {}}]",
			func(e Entry) bool { return e.ToolCalls[0].Arguments == "{}" }},
		{"arguments scalars", "- tool_calls: [{name: f, arguments: {a: 0x10, b: 1e3, c: -2.5, d: yes, e: True, f: '7', g: \"x\\\"\\n<\", h: 2001-12-14}}]",
			func(e Entry) bool {
				return e.ToolCalls[0].Arguments == `{"a":16,"b":1e3,"c":-2.5,"d":"yes","e":true,"f":"7","g":"x\"\n<","h":"2001-12-14"}`
			}},
		{"arguments alias", "- tool_calls: [{name: f, arguments: {a: &x [1, 2], b: *x}}]",
			func(e Entry) bool { return e.ToolCalls[0].Arguments == `{"a":[1,2],"b":[1,2]}` }},
		{"arguments unicode", "- tool_calls: [{name: f, arguments: {é: \"日本\\u0001\"}}]",
			func(e Entry) bool { return e.ToolCalls[0].Arguments == `{"é":"日本\u0001"}` }},
		{"delay string", "- delay: 2s", func(e Entry) bool { return e.Delay == 2*time.Second }},
		{"delay integer ms", "- delay: 250", func(e Entry) bool { return e.Delay == 250*time.Millisecond }},
		{"delay quoted ms", "- delay: '40'", func(e Entry) bool { return e.Delay == 40*time.Millisecond }},
		{"retry_after seconds", "- error: {status: 429, retry_after: 2}",
			func(e Entry) bool { return e.Error.RetryAfter == 2*time.Second }},
		{"retry_after quoted seconds", "- error: {status: 429, retry_after: '5'}",
			func(e Entry) bool { return e.Error.RetryAfter == 5*time.Second }},
		{"retry_after duration", "- error: {status: 429, retry_after: 1500ms}",
			func(e Entry) bool { return e.Error.RetryAfter == 1500*time.Millisecond }},
		{"error type only", "- error: {type: timeout, message: slow}",
			func(e Entry) bool { return *e.Error == ErrorSpec{Type: weft.ErrTimeout, Message: "slow"} }},
		{"error type from status", "- error: {status: 418}",
			func(e Entry) bool { return e.Error.Type == weft.ErrUnknown && e.Error.Message == "I'm a teapot" }},
		{"empty entry", "- {}", func(e Entry) bool { return reflect.DeepEqual(e, Entry{Index: 1, Line: 1}) }},
		{"null text", "- text:", func(e Entry) bool { return e.Text == "" }},
		{"numeric text", "- text: 1.50", func(e Entry) bool { return e.Text == "1.50" }},
		{"stall_after zero", "- stall_after: 0", func(e Entry) bool { return e.StallAfter != nil && *e.StallAfter == 0 }},
		{"list values", "- match: {side: [a, b], agent: [x, y]}\n  expect: {tools_include: t, last_role: [tool]}",
			func(e Entry) bool {
				return len(e.Match.Side) == 2 && len(e.Match.Agent) == 2 && e.Expect.ToolsInclude[0] == "t" &&
					e.Expect.LastRole[0] == weft.RoleTool
			}},
		{"empty roles", "- expect: {roles: []}", func(e Entry) bool { return e.Expect.Roles != nil && len(e.Expect.Roles) == 0 }},
		{"entry alias", "- &e {text: hi}\n- *e", func(e Entry) bool { return e.Text == "hi" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("v.yaml", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(s.Responses[0]) {
				t.Errorf("unexpected entry %#v", s.Responses[0])
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"empty file", "", "e.yaml: file is empty"},
		{"null document", "~", "e.yaml:1: file is empty"},
		{"syntax", "- text: [", "e.yaml:1: syntax error: did not find expected node content"},
		{"scalar document", "hello", "e.yaml:1: want a list of responses or a map {version, options, responses}"},
		{"unknown top key", "version: 1\nresponses: []\ntext: hi",
			`e.yaml:3: unknown key "text" (want version, options or responses; a single response still goes in a list)`},
		{"missing responses", "version: 1", "e.yaml:1: responses: missing (want a list of responses)"},
		{"responses not a list", "responses: {text: a}", "e.yaml:1: responses: want a list of responses"},
		{"bad version", "version: 2\nresponses: []", "e.yaml:1: version: unsupported version 2 (want 1)"},
		{"unknown option", "options: {fast: true}\nresponses: []",
			`e.yaml:1: options: unknown key "fast" (want strict, on_exhausted, real_time, chunk_size or chunk_delay)`},
		{"bad on_exhausted", "options: {on_exhausted: loop}\nresponses: []",
			`e.yaml:1: options.on_exhausted: invalid value "loop" (want error or repeat_last)`},
		{"bad strict", "options: {strict: maybe}\nresponses: []", `e.yaml:1: options.strict: want true or false (got "maybe")`},
		{"negative chunk_size", "options: {chunk_size: -1}\nresponses: []",
			"e.yaml:1: options.chunk_size: invalid value -1 (want 0 or a positive number of runes)"},
		{"entry not a map", "- text: a\n- hello", `e.yaml:2: model script entry 2 (line 2): want a map with text, tool_calls, error, … (got "hello")`},
		{"unknown entry key", "- text: a\n-\n  txt: b",
			`e.yaml:3: model script entry 2 (line 3): unknown key "txt" (want text, tool_calls, reasoning, error, usage, delay, stall_after, finish_reason, match or expect)`},
		{"repeated key", "- text: a\n  text: b", `e.yaml:2: model script entry 1 (line 1): key "text" is repeated`},
		{"unknown match key", "- match: {modle: fast}",
			`e.yaml:1: model script entry 1 (line 1): match: unknown key "modle" (want model, prompt, agent, side or depth)`},
		{"bad side", "- match: {side: c}", `e.yaml:1: model script entry 1 (line 1): match.side: invalid side "c" (want a or b)`},
		{"bad depth", "- match: {depth: -1}", `e.yaml:1: model script entry 1 (line 1): match.depth: invalid depth -1 (want a whole number ≥ 0)`},
		{"empty match list", "- match: {model: []}", `e.yaml:1: model script entry 1 (line 1): match.model: empty list (it would fit no call)`},
		{"unknown expect key", "- expect:\n    system: x",
			`e.yaml:2: model script entry 1 (line 1): expect: unknown key "system" (want system_contains,`},
		{"bad last_role", "- expect: {last_role: bot}",
			`e.yaml:1: model script entry 1 (line 1): expect.last_role: invalid role "bot" (want system, user, assistant, tool or developer)`},
		{"bad roles", "- expect: {roles: user}", `e.yaml:1: model script entry 1 (line 1): expect.roles: want a list of roles (got "user")`},
		{"bad tools", "- expect: {tools: a}", `e.yaml:1: model script entry 1 (line 1): expect.tools: want a list of tool names (got "a")`},
		{"bad tool_choice", "- expect: {tool_choice: any}",
			`e.yaml:1: model script entry 1 (line 1): expect.tool_choice: invalid tool choice "any" (want auto, none or required)`},
		{"bad message_count", "- expect: {message_count: two}",
			`e.yaml:1: model script entry 1 (line 1): expect.message_count: want a whole number (got "two")`},
		{"negative images", "- expect: {images: -1}", `e.yaml:1: model script entry 1 (line 1): expect.images: invalid count -1 (want a whole number ≥ 0)`},
		{"empty not_contains", "- expect: {not_contains: ''}",
			`e.yaml:1: model script entry 1 (line 1): expect.not_contains: empty string (every request contains it)`},
		{"contains not a string", "- expect: {contains: {a: b}}", `e.yaml:1: model script entry 1 (line 1): expect.contains: want a string (got a map)`},
		{"bad status", "- text: a\n- error: {status: 99}",
			`e.yaml:2: model script entry 2 (line 2): error.status: invalid HTTP status 99 (want 100–599)`},
		{"status not a number", "- error: {status: high}",
			`e.yaml:1: model script entry 1 (line 1): error.status: want a whole number (got "high")`},
		{"missing status", "- error: {message: x}", `e.yaml:1: model script entry 1 (line 1): error: status: missing (or give a type)`},
		{"bad error type", "- error: {status: 500, type: oops}",
			`e.yaml:1: model script entry 1 (line 1): error.type: invalid type "oops" (want auth_error,`},
		{"unknown error key", "- error: {status: 500, code: 3}",
			`e.yaml:1: model script entry 1 (line 1): error: unknown key "code" (want status, message, type or retry_after)`},
		{"error not a map", "- error: boom", `e.yaml:1: model script entry 1 (line 1): error: want a map {status, message, type, retry_after} (got "boom")`},
		{"negative retry_after", "- error: {status: 429, retry_after: -2}",
			`e.yaml:1: model script entry 1 (line 1): error.retry_after: invalid value "-2" (want whole seconds, e.g. 2, or a duration string, e.g. "1500ms")`},
		{"bad retry_after", "- error: {status: 429, retry_after: soon}",
			`e.yaml:1: model script entry 1 (line 1): error.retry_after: invalid value "soon"`},
		{"fractional retry_after", "- error: {status: 429, retry_after: 1.5}",
			`e.yaml:1: model script entry 1 (line 1): error.retry_after: invalid value "1.5"`},
		{"error with text", "- error: {status: 500}\n  text: hi",
			`e.yaml:2: model script entry 1 (line 1): error cannot be combined with text, reasoning or tool_calls`},
		{"error with stall", "- error: {status: 500}\n  stall_after: 1", `e.yaml:2: model script entry 1 (line 1): error cannot be combined with stall_after`},
		{"negative delay", "- delay: -5", `e.yaml:1: model script entry 1 (line 1): delay: duration -5 is negative`},
		{"negative delay string", "- delay: -1s", `e.yaml:1: model script entry 1 (line 1): delay: duration "-1s" is negative`},
		{"bad delay", "- delay: soon", `e.yaml:1: model script entry 1 (line 1): delay: invalid duration "soon"`},
		{"delay map", "- delay: {s: 1}", `e.yaml:1: model script entry 1 (line 1): delay: want a duration such as "1.5s" or milliseconds (got a map)`},
		{"negative stall_after", "- stall_after: -1", `e.yaml:1: model script entry 1 (line 1): stall_after: invalid value -1 (want a number of chunks ≥ 0)`},
		{"empty finish_reason", "- finish_reason: ''", `e.yaml:1: model script entry 1 (line 1): finish_reason: must not be empty`},
		{"tool call without name", "- text: a\n  tool_calls:\n    - {arguments: {}}",
			`e.yaml:3: model script entry 1 (line 1): tool_calls[0]: tool call without name`},
		{"tool call empty name", "- tool_calls: [{name: ''}]", `e.yaml:1: model script entry 1 (line 1): tool_calls[0].name: must not be empty`},
		{"tool call bad arguments", "- tool_calls:\n    - name: f\n      arguments: [1, 2]",
			`e.yaml:3: model script entry 1 (line 1): tool_calls[0].arguments: want a map or a JSON string (got a list)`},
		{"tool call numeric arguments", "- tool_calls: [{name: f, arguments: 5}]",
			`e.yaml:1: model script entry 1 (line 1): tool_calls[0].arguments: want a map or a JSON string (got 5)`},
		{"tool call infinite argument", "- tool_calls: [{name: f, arguments: {x: .inf}}]",
			`e.yaml:1: model script entry 1 (line 1): tool_calls[0].arguments: ".inf" is not a JSON number`},
		{"tool call repeated argument", "- tool_calls: [{name: f, arguments: {x: 1, x: 2}}]",
			`e.yaml:1: model script entry 1 (line 1): tool_calls[0].arguments: key "x" is repeated`},
		{"unknown tool call key", "- tool_calls: [{name: f, args: {}}]",
			`e.yaml:1: model script entry 1 (line 1): tool_calls[0]: unknown key "args" (want name, arguments or id)`},
		{"tool_calls not a list", "- tool_calls: {name: f}", `e.yaml:1: model script entry 1 (line 1): tool_calls: want a list of {name, arguments, id} (got a map)`},
		{"unknown usage key", "- usage: {tokens: 3}",
			`e.yaml:1: model script entry 1 (line 1): usage: unknown key "tokens" (want input_tokens, output_tokens, cached_tokens, reasoning_tokens or cost)`},
		{"negative usage", "- usage: {input_tokens: -3}", `e.yaml:1: model script entry 1 (line 1): usage.input_tokens: invalid count -3 (want a whole number ≥ 0)`},
		{"negative cost", "- usage: {cost: -0.5}", `e.yaml:1: model script entry 1 (line 1): usage.cost: invalid cost -0.5 (want a number ≥ 0)`},
		{"text map", "- text: {a: b}", `e.yaml:1: model script entry 1 (line 1): text: want a string (got a map)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("e.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error\n got %q\nwant %q", err.Error(), tt.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "e.yaml" {
				t.Errorf("error %v is not a *ParseError of e.yaml", err)
			}
		})
	}
}

func TestParseReportsEveryError(t *testing.T) {
	_, err := Parse("m.yaml", []byte("- txt: a\n- error: {status: 1}\n- match: {side: z}\n"))
	var l ParseErrors
	if !errors.As(err, &l) || len(l) != 3 {
		t.Fatalf("want 3 errors, got %v", err)
	}
	for i, pe := range l {
		if pe.Entry != i+1 || pe.EntryLine != i+1 || pe.Line != i+1 {
			t.Errorf("error %d: entry %d line %d entry line %d", i, pe.Entry, pe.Line, pe.EntryLine)
		}
	}
}

func TestParseAliasBomb(t *testing.T) {
	src := `- tool_calls:
  - name: f
    arguments:
      a: &a [x, x, x, x, x, x, x, x, x, x]
      b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
      c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
      d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
      e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
      f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
      g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
`
	_, err := Parse("bomb.yaml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "arguments are too large") {
		t.Fatalf("want a size error, got %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"- text: hi",
		"version: 1\noptions: {strict: true, chunk_size: 2}\nresponses: [{text: a, tool_calls: [{name: f, arguments: {a: [1, {b: c}]}}]}]",
		"- {match: {model: fast}, error: {status: 429, retry_after: 2}}",
		"- expect: {system_contains: [a, b], roles: [user], tools: [], images: 1}\n  delay: 1s\n  stall_after: 2",
		`[{"text": "a", "usage": {"cost": 1.5}}]`,
		"- &a {text: x}\n- *a\n- tool_calls: [{name: f, arguments: &b {x: *b}}]",
		"- tool_calls: [{name: f, arguments: '{\"x\": 1}', id: call_9}]",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		slow := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("Parse is too slow on %q", data)) })
		defer slow.Stop()
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			if s != nil {
				t.Fatal("script returned with an error")
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		for i, e := range s.Responses {
			if e.Index != i+1 {
				t.Fatalf("entry %d has index %d", i+1, e.Index)
			}
		}
	})
}
