package eval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseFull(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "j.prompty"), []byte("---\nname: j\n---\nuser:\n{{answer}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := `
name: math-regression
agent: math
repeat: 3
min_passes: 2
concurrency: 4
model_script: all.yaml
judge_model: judge
args: {level: 1}
env: {TOKEN: abc, N: 3}
cases:
  - name: adds
    input: "What is 2 + 40?"
    args: {level: 2}
    attachments: [data/a.txt]
    expected: "42"
    context: arithmetic
    expect:
      - contains: "42"
      - not_contains: "41"
      - regex: "^4[0-9]$"
      - equals: "42"
      - json_schema: {type: object, required: [n]}
      - tool_called: {name: add, args: {a: 2, b: 40}}
      - not_tool_called: sub
      - max_tool_calls: 1
      - max_cost_usd: 0.01
      - max_tokens: 500
      - max_latency_ms: 2000
      - max_steps: 3
      - judge: {prompt: j.prompty, min_score: 4, model: m2, inputs: {rubric: strict}}
  - name: chat
    model_script: SCRIPT
    turns:
      - messages: [{role: user, content: hi}, {role: assistant, content: hello}, {role: user, content: 2+2?}]
        expect: [{contains: "4"}]
      - input: and 3+3?
        expect: [{contains: "6"}]
`
	script := filepath.Join(dir, "all.yaml")
	if err := os.WriteFile(script, []byte("- {text: hi}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src = strings.Replace(src, "SCRIPT", script, 1)
	path := filepath.Join(dir, "math.yaml")
	f, err := Parse(path, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "math-regression" || f.Agent != "math" || f.Repeat != 3 || f.MinPasses != 2 || f.Concurrency != 4 || f.JudgeModel != "judge" {
		t.Errorf("header %+v", f)
	}
	if f.ModelScript != filepath.Join(dir, "all.yaml") {
		t.Errorf("model_script %q: relative paths are relative to the eval file", f.ModelScript)
	}
	c := f.Cases[0]
	if c.Args["level"] != uint64(2) || c.Env["TOKEN"] != "abc" || c.Env["N"] != "3" {
		t.Errorf("args %v env %v: case args override the file's, env merged", c.Args, c.Env)
	}
	tr := c.Turns[0]
	if tr.Input != "What is 2 + 40?" || tr.Attachments[0] != filepath.Join(dir, "data/a.txt") || tr.Expected != "42" || tr.Context != "arithmetic" {
		t.Errorf("turn %+v", tr)
	}
	var kinds []string
	for _, x := range tr.Expect {
		kinds = append(kinds, x.Kind)
	}
	if got := strings.Join(kinds, ","); got != "contains,not_contains,regex,equals,json_schema,tool_called,not_tool_called,max_tool_calls,max_cost_usd,max_tokens,max_latency_ms,max_steps,judge" {
		t.Errorf("kinds %s", got)
	}
	if x := tr.Expect[5]; x.Tool != "add" || x.Args["b"] != uint64(40) {
		t.Errorf("tool_called %+v", x)
	}
	if x := tr.Expect[12]; x.Judge.Prompt != filepath.Join(dir, "j.prompty") || x.Judge.MinScore != 4 || x.Judge.Model != "m2" || x.Judge.Inputs["rubric"] != "strict" {
		t.Errorf("judge %+v", x.Judge)
	}
	if x := tr.Expect[8]; x.Max != 0.01 || x.String() != "max_cost_usd 0.01" {
		t.Errorf("max_cost_usd %+v %s", x, x.String())
	}
	chat := f.Cases[1]
	if len(chat.Turns) != 2 || len(chat.Turns[0].Messages) != 3 || chat.Turns[1].Input != "and 3+3?" || chat.ModelScript != script {
		t.Errorf("multi-turn case %+v", chat)
	}
}

func TestParseDefaults(t *testing.T) {
	f, err := Parse("evals/smoke.yml", []byte("agent: a\ncases: [{name: c, input: hi, expect: []}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "smoke" || f.Repeat != 1 || f.MinPasses != 1 || f.Concurrency != 1 {
		t.Errorf("%+v", f)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"not_yaml", "agent: [", []string{"e.yaml: not valid YAML"}},
		{"not_mapping", "- 1\n", []string{"e.yaml: must be a mapping, not a list"}},
		{"missing_agent_and_cases", "name: x\n", []string{"e.yaml: agent: required", "e.yaml: cases: required: a list of cases"}},
		{"unknown_key", "agent: a\nbogus: 1\ncases: [{name: c, input: i, expect: []}]\n", []string{"e.yaml: bogus: unknown key (allowed: name,"}},
		{"empty_cases", "agent: a\ncases: []\n", []string{"cases: must list at least one case"}},
		{"repeat_range", "agent: a\nrepeat: 0\ncases: [{name: c, input: i, expect: []}]\n", []string{"repeat: must be between 1 and 1000"}},
		{"repeat_fraction", "agent: a\nrepeat: 1.5\ncases: [{name: c, input: i, expect: []}]\n", []string{"repeat: must be a whole number"}},
		{"min_passes_over_repeat", "agent: a\nrepeat: 2\nmin_passes: 3\ncases: [{name: c, input: i, expect: []}]\n", []string{"min_passes: must not exceed repeat (2)"}},
		{"case_name_missing", "agent: a\ncases: [{input: i, expect: []}]\n", []string{"cases[0].name: required"}},
		{"duplicate_case", "agent: a\ncases: [{name: c, input: i, expect: []}, {name: c, input: j, expect: []}]\n", []string{`cases[1].name: "c" is also the name of cases[0]`}},
		{"no_input", "agent: a\ncases: [{name: c, expect: []}]\n", []string{"cases[0].input: required (or messages)"}},
		{"no_expect", "agent: a\ncases: [{name: c, input: i}]\n", []string{"cases[0].expect: required: a list of expectations"}},
		{"turns_and_input", "agent: a\ncases: [{name: c, input: i, turns: [{input: j, expect: []}]}]\n", []string{"cases[0]: give either turns or input/messages with expect, not both"}},
		{"empty_turns", "agent: a\ncases: [{name: c, turns: []}]\n", []string{"cases[0].turns: must be a non-empty list of turns"}},
		{"turn_unknown_key", "agent: a\ncases: [{name: c, turns: [{input: j, expect: [], args: {}}]}]\n", []string{"cases[0].turns[0].args: unknown key"}},
		{"messages_bad_role", "agent: a\ncases: [{name: c, messages: [{role: system, content: x}], expect: []}]\n", []string{"cases[0].messages[0].role: must be user or assistant"}},
		{"messages_last_not_user", "agent: a\ncases: [{name: c, messages: [{role: user, content: x}, {role: assistant, content: y}], expect: []}]\n", []string{"cases[0].messages[1].role: the last message must be the user's"}},
		{"input_and_messages", "agent: a\ncases: [{name: c, input: i, messages: [{role: user, content: x}], expect: []}]\n", []string{"cases[0]: give either input or messages, not both"}},
		{"unknown_expectation", "agent: a\ncases: [{name: c, input: i, expect: [{contain: x}]}]\n", []string{"cases[0].expect[0].contain: unknown expectation (want one of: contains,"}},
		{"two_keys", "agent: a\ncases: [{name: c, input: i, expect: [{contains: x, regex: y}]}]\n", []string{"cases[0].expect[0]: must be a mapping with exactly one key"}},
		{"bad_regex", "agent: a\ncases: [{name: c, input: i, expect: [{regex: '('}]}]\n", []string{"cases[0].expect[0].regex: not a valid regular expression (RE2)"}},
		{"empty_contains", "agent: a\ncases: [{name: c, input: i, expect: [{contains: ''}]}]\n", []string{"cases[0].expect[0].contains: must not be empty"}},
		{"contains_number", "agent: a\ncases: [{name: c, input: i, expect: [{contains: 42}]}]\n", []string{"cases[0].expect[0].contains: must be a string, not a number"}},
		{"bad_schema", "agent: a\ncases: [{name: c, input: i, expect: [{json_schema: {type: 7}}]}]\n", []string{"cases[0].expect[0].json_schema: not a valid JSON Schema"}},
		{"schema_not_object", "agent: a\ncases: [{name: c, input: i, expect: [{json_schema: x}]}]\n", []string{"cases[0].expect[0].json_schema: must be a JSON Schema object, not a string"}},
		{"tool_no_name", "agent: a\ncases: [{name: c, input: i, expect: [{tool_called: {args: {}}}]}]\n", []string{"cases[0].expect[0].tool_called.name: required"}},
		{"tool_unknown_key", "agent: a\ncases: [{name: c, input: i, expect: [{not_tool_called: {name: x, arg: {}}}]}]\n", []string{"cases[0].expect[0].not_tool_called.arg: unknown key (allowed: name, args)"}},
		{"negative_max", "agent: a\ncases: [{name: c, input: i, expect: [{max_cost_usd: -1}]}]\n", []string{"cases[0].expect[0].max_cost_usd: must not be negative"}},
		{"fractional_steps", "agent: a\ncases: [{name: c, input: i, expect: [{max_steps: 2.5}]}]\n", []string{"cases[0].expect[0].max_steps: must be a whole number"}},
		{"max_not_number", "agent: a\ncases: [{name: c, input: i, expect: [{max_tokens: many}]}]\n", []string{"cases[0].expect[0].max_tokens: must be a number, not a string"}},
		{"judge_missing_min", "agent: a\ncases: [{name: c, input: i, expect: [{judge: {prompt: j.prompty}}]}]\n", []string{"cases[0].expect[0].judge.min_score: required", "cases[0].expect[0].judge.prompt: cannot read"}},
		{"judge_bad_ext", "agent: a\ncases: [{name: c, input: i, expect: [{judge: {prompt: j.txt, min_score: 1}}]}]\n", []string{"cases[0].expect[0].judge.prompt: must be a .prompty or .yaml file"}},
		{"missing_script", "agent: a\nmodel_script: none.yaml\ncases: [{name: c, input: i, expect: []}]\n", []string{"e.yaml: model_script: ", "none.yaml"}},
		{"bad_case_script", "agent: a\ncases: [{name: c, model_script: e.yaml, input: i, expect: []}]\n", []string{"e.yaml: cases[0].model_script: "}},
		{"env_not_string", "agent: a\nenv: {A: [1]}\ncases: [{name: c, input: i, expect: []}]\n", []string{"env.A: must be a string, not a list"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "e.yaml")
			os.WriteFile(path, []byte(tc.src), 0o600) // a model script naming the file itself reads an eval file
			_, err := Parse(path, []byte(tc.src))
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("err %v, want a *FileError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%s\nlacks %q", err, w)
				}
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.Contains(line, "e.yaml: ") {
					t.Errorf("line %q does not name the file", line)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "none.yaml"))
	if err == nil || !strings.Contains(err.Error(), "none.yaml: cannot read: no such file or directory") {
		t.Errorf("%v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("agent: a\ncases: [{name: c, input: i, expect: [{contains: x}, {tool_called: {name: t, args: {a: 1}}}]}]\n"))
	f.Add([]byte("agent: a\nrepeat: 2\ncases: [{name: c, turns: [{messages: [{role: user, content: x}], expect: [{max_steps: 1}]}]}]\n"))
	f.Add([]byte("agent: a\ncases: [{name: c, input: i, expect: [{json_schema: {type: object}}, {regex: 'a+'}]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz/e.yaml", data)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) || len(fe.Problems) == 0 {
				t.Fatalf("error %v is not a FileError with problems", err)
			}
			return
		}
		if file.Agent == "" || len(file.Cases) == 0 || file.Repeat < 1 || file.MinPasses > file.Repeat {
			t.Fatalf("accepted an invalid file: %+v", file)
		}
		for _, c := range file.Cases {
			if len(c.Turns) == 0 {
				t.Fatalf("case %q has no turns", c.Name)
			}
			for _, tr := range c.Turns {
				for _, x := range tr.Expect {
					_ = x.String()
					x.Check(&Outcome{Text: "x"})
				}
			}
		}
	})
}
