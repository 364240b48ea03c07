package eval

import (
	"strings"
	"testing"
)

// expectation parses one expectation as it would be written in a file.
func expectation(t *testing.T, src string) Expectation {
	t.Helper()
	f, err := Parse("e.yaml", []byte("agent: a\ncases: [{name: c, input: i, expect: ["+src+"]}]\n"))
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return f.Cases[0].Turns[0].Expect[0]
}

func TestCheckEveryKind(t *testing.T) {
	out := &Outcome{
		Text:      `The answer is 42.`,
		ToolCalls: []Call{{Name: "add", Args: map[string]any{"a": float64(2), "b": float64(40), "opts": map[string]any{"exact": true, "n": float64(1)}, "list": []any{float64(1), "x"}}}, {Name: "log", Args: map[string]any{}}},
		Steps:     3, Tokens: 120, CostUSD: 0.002, LatencyMS: 350,
	}
	jsonOut := &Outcome{Text: `{"n": 42, "unit": "none"}`}
	structured := &Outcome{Text: "ignored", Value: map[string]any{"n": float64(42)}}
	tests := []struct {
		name, src string
		out       *Outcome
		pass      bool
		actual    string
	}{
		{"contains_pass", `{contains: "42"}`, out, true, `"The answer is 42."`},
		{"contains_fail", `{contains: "43"}`, out, false, `"The answer is 42."`},
		{"not_contains_pass", `{not_contains: "43"}`, out, true, ""},
		{"not_contains_fail", `{not_contains: answer}`, out, false, `"The answer is 42."`},
		{"regex_pass", `{regex: "\\b4[0-9]\\b"}`, out, true, ""},
		{"regex_fail", `{regex: "^42$"}`, out, false, `"The answer is 42."`},
		{"equals_pass_trimmed", `{equals: " The answer is 42. "}`, out, true, ""},
		{"equals_fail", `{equals: "42"}`, out, false, `"The answer is 42."`},
		{"json_schema_pass_text", `{json_schema: {type: object, required: [n], properties: {n: {type: integer}}}}`, jsonOut, true, ""},
		{"json_schema_pass_structured", `{json_schema: {type: object, required: [n]}}`, structured, true, ""},
		{"json_schema_fail_shape", `{json_schema: {type: object, required: [total]}}`, jsonOut, false, `{"n":42,"unit":"none"}`},
		{"json_schema_fail_not_json", `{json_schema: {type: object}}`, out, false, `"The answer is 42."`},
		{"tool_called_name_pass", `{tool_called: add}`, out, true, ""},
		{"tool_called_subset_pass", `{tool_called: {name: add, args: {a: 2, b: 40}}}`, out, true, ""},
		{"tool_called_nested_subset_pass", `{tool_called: {name: add, args: {opts: {exact: true}, list: [1, x]}}}`, out, true, ""},
		{"tool_called_args_fail", `{tool_called: {name: add, args: {a: 3}}}`, out, false, `add{"a":2,"b":40,"list":[1,"x"],"opts":{"exact":true,"n":1}}, log{}`},
		{"tool_called_list_differs_fail", `{tool_called: {name: add, args: {list: [1]}}}`, out, false, ""},
		{"tool_called_missing_key_fail", `{tool_called: {name: add, args: {c: 1}}}`, out, false, ""},
		{"tool_called_absent_fail", `{tool_called: sub}`, &Outcome{}, false, "no tool calls"},
		{"not_tool_called_pass", `{not_tool_called: sub}`, out, true, ""},
		{"not_tool_called_fail", `{not_tool_called: {name: add, args: {b: 40}}}`, out, false, ""},
		{"not_tool_called_other_args_pass", `{not_tool_called: {name: add, args: {b: 41}}}`, out, true, ""},
		{"max_tool_calls_pass", `{max_tool_calls: 2}`, out, true, "2"},
		{"max_tool_calls_fail", `{max_tool_calls: 1}`, out, false, "2"},
		{"max_cost_usd_pass", `{max_cost_usd: 0.002}`, out, true, "0.002"},
		{"max_cost_usd_fail", `{max_cost_usd: 0.001}`, out, false, "0.002"},
		{"max_tokens_pass", `{max_tokens: 120}`, out, true, "120"},
		{"max_tokens_fail", `{max_tokens: 119}`, out, false, "120"},
		{"max_latency_ms_pass", `{max_latency_ms: 1000}`, out, true, "350"},
		{"max_latency_ms_fail", `{max_latency_ms: 100}`, out, false, "350"},
		{"max_steps_pass", `{max_steps: 3}`, out, true, "3"},
		{"max_steps_fail", `{max_steps: 2}`, out, false, "3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := expectation(t, tc.src)
			r := x.Check(tc.out)
			if r.Pass != tc.pass {
				t.Errorf("%s: pass %v, want %v (%+v)", x.String(), r.Pass, tc.pass, r)
			}
			if tc.actual != "" && r.Actual != tc.actual {
				t.Errorf("actual %q, want %q", r.Actual, tc.actual)
			}
			if r.Kind != x.Kind || r.Expectation == "" {
				t.Errorf("result %+v", r)
			}
		})
	}
}

func TestExpectationString(t *testing.T) {
	tests := map[string]string{
		`{contains: "42"}`:                         `contains "42"`,
		`{tool_called: {name: add, args: {a: 2}}}`: `tool_called add {"a":2}`,
		`{not_tool_called: sub}`:                   `not_tool_called sub`,
		`{max_latency_ms: 2000}`:                   `max_latency_ms 2000`,
		`{json_schema: {type: object}}`:            `json_schema`,
	}
	for src, want := range tests {
		x := expectation(t, src)
		if got := x.String(); got != want {
			t.Errorf("%s: %q, want %q", src, got, want)
		}
	}
}

func TestQuoteCutsLongText(t *testing.T) {
	q := quote(strings.Repeat("é", 300))
	if !strings.HasSuffix(q, "…") || len([]rune(q)) != 203 {
		t.Errorf("%d runes: %s", len([]rune(q)), q)
	}
}

func TestReadScore(t *testing.T) {
	tests := []struct {
		text   string
		score  float64
		reason string
		ok     bool
	}{
		{`{"score": 4, "reason": "good"}`, 4, "good", true},
		{"```json\n{\"score\": 3.5}\n```", 3.5, "", true},
		{`{"rating": "5"}`, 5, "", true},
		{"4", 4, "", true},
		{"<S0>thinking</S0><S1>fine</S1><S2>2</S2>", 2, "", true},
		{"Score: 5", 5, "", true},
		{`{"verdict": "good"}`, 0, "", false},
		{"I cannot decide on a score for this one, it is hard to say.", 0, "", false},
	}
	for _, tc := range tests {
		s, reason, ok := readScore(tc.text)
		if ok != tc.ok || s != tc.score || reason != tc.reason {
			t.Errorf("%q: %v %q %v, want %v %q %v", tc.text, s, reason, ok, tc.score, tc.reason, tc.ok)
		}
	}
}
