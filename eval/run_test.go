package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"github.com/weft-agents/weft/validate"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/scripted"
)

func price(f float64) *float64 { return &f }

// mathRegistry: a math agent with an add tool, a dual_ai review agent, and two priced models.
func mathRegistry(t *testing.T) *weft.Registry {
	t.Helper()
	reg := weft.NewRegistry()
	reg.AddTool(weft.NewTool("add", "Adds two numbers.", func(ctx context.Context, st weft.State, a struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}) (weft.ToolResult, error) {
		return weft.Success(fmt.Sprint(a.A + a.B)), nil
	}))
	reg.AddModel(&weft.Model{Name: "m", Provider: "openai", Model: "gpt-x", InputPrice: price(1), OutputPrice: price(2)})
	reg.AddModel(&weft.Model{Name: "judge", Provider: "openai", Model: "gpt-judge", InputPrice: price(100), OutputPrice: price(100)})
	reg.AddPrompt(&weft.Prompt{Name: "math", ToolDescription: "Does sums.", Model: "m", IncludeChat: true,
		Prompt: weft.Text("You add numbers with the add tool."), Tools: []weft.ToolEntry{{Name: "add"}}})
	reg.AddAgent(&weft.Agent{Name: "math", SideA: weft.AgentSide{Prompt: "math"}})
	approve := weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		return weft.Success("ok"), nil
	})
	reg.AddTool(&weft.Tool{Name: "approve", Description: "Approve.", Execute: approve})
	reg.AddPrompt(&weft.Prompt{Name: "reviewer", ToolDescription: "Reviews.", Model: "m", IncludeChat: true,
		Prompt: weft.Text("You review drafts."), Tools: []weft.ToolEntry{{Name: "approve"}}})
	reg.AddPrompt(&weft.Prompt{Name: "author", ToolDescription: "Writes.", Model: "m", IncludeChat: true, Prompt: weft.Text("You revise drafts.")})
	reg.AddAgent(&weft.Agent{Name: "review", Type: weft.DualAI, MaxSessionTurns: 5,
		SideA: weft.AgentSide{Prompt: "reviewer", SessionStop: &weft.SessionTool{Name: "approve"}},
		SideB: &weft.AgentSide{Prompt: "author"}})
	if d := validate.Registry(reg); d.HasErrors() {
		t.Fatal(d.Err())
	}
	return reg
}

// noNetwork is the provider resolver of the tests: every call not scripted or replayed fails.
func noNetwork(m *weft.Model) (weft.Provider, error) {
	return nil, errors.New("tests reach no provider")
}

type fixture struct {
	dir   string
	store weft.Store
	rn    *Runner
}

func newFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &fixture{dir: dir, store: st, rn: &Runner{Options: engine.Options{Registry: mathRegistry(t), Store: st, Providers: noNetwork}}}
}

func (fx *fixture) run(t *testing.T, file string) *Report {
	t.Helper()
	f, err := Load(filepath.Join(fx.dir, file))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := fx.rn.Run(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

const mathEval = `
name: math
agent: math
judge_model: judge
concurrency: 3
cases:
  - name: adds
    model_script: scripts/adds.yaml
    input: What is 2 + 40?
    expected: "42"
    expect:
      - tool_called: {name: add, args: {a: 2, b: 40}}
      - contains: "42"
      - max_steps: 2
      - max_tool_calls: 1
      - max_cost_usd: 0.01
      - judge: {prompt: judges/correct.prompty, min_score: 4}
  - name: wrong
    model_script: scripts/wrong.yaml
    input: What is 2 + 2?
    expected: "4"
    expect:
      - contains: "4"
      - judge: {prompt: judges/correct.prompty, min_score: 4}
  - name: conversation
    model_script: scripts/conversation.yaml
    turns:
      - input: Hello
        expect: [{not_tool_called: add}, {contains: numbers}]
      - messages: [{role: user, content: "Remember 7."}, {role: user, content: "Add 1 to 7."}]
        expect: [{tool_called: {name: add, args: {a: 7}}}, {equals: "8"}]
`

// correctJudge has the shape of Microsoft's evaluator prompts: inputs question, answer,
// context and ground_truth, a 1–5 score, an Azure connection through ${env:}.
const correctJudge = `---
name: correct
description: Rates the correctness of an answer from 1 to 5.
model:
  api: chat
  configuration:
    type: azure_openai
    azure_endpoint: ${env:AZURE_OPENAI_ENDPOINT}
    azure_deployment: ${env:AZURE_OPENAI_DEPLOYMENT}
  parameters:
    temperature: 0
inputs:
  question:
    type: string
  answer:
    type: string
  context:
    type: string
  ground_truth:
    type: string
---
system:
You are an AI assistant. Rate the answer's correctness from 1 to 5 against the ground truth.

user:
question: {{question}}
answer: {{answer}}
ground_truth: {{ground_truth}}
`

var mathFiles = map[string]string{
	"math.yaml":              mathEval,
	"judges/correct.prompty": correctJudge,
	"scripts/adds.yaml": `
- {match: {prompt: math}, expect: {last_contains: "2 + 40"}, tool_calls: [{name: add, arguments: {a: 2, b: 40}}]}
- {match: {prompt: math}, expect: {tool_result_contains: "42"}, text: "It is 42.", usage: {input_tokens: 100, output_tokens: 10}}
- match: {prompt: correct, model: judge}
  expect: {system_contains: correctness from 1 to 5, contains: ["question: What is 2 + 40?", "answer: It is 42.", "ground_truth: 42"]}
  text: '{"score": 5, "reason": "matches the ground truth"}'
  usage: {input_tokens: 1000, output_tokens: 0}
`,
	"scripts/wrong.yaml": `
- {match: {prompt: math}, text: "It is 5."}
- {match: {prompt: correct}, expect: {contains: "answer: It is 5."}, text: "2"}
`,
	"scripts/conversation.yaml": `
- {match: {prompt: math}, expect: {last_contains: Hello}, text: "Hi! Give me numbers."}
- {match: {prompt: math}, expect: {roles: [user, assistant, user, user], last_contains: Add 1 to 7.}, tool_calls: [{name: add, arguments: {a: 7, b: 1}}]}
- {match: {prompt: math}, text: "8"}
`,
}

func TestRunVerdictsAndThreads(t *testing.T) {
	fx := newFixture(t, mathFiles)
	rep := fx.run(t, "math.yaml")
	if rep.Passed != 2 || rep.Failed != 1 || rep.OK() {
		t.Fatalf("passed %d failed %d: %s", rep.Passed, rep.Failed, jsonText(rep))
	}
	adds, _ := rep.Case("adds")
	if !adds.Pass || adds.Failure != "" {
		t.Errorf("adds: %s", jsonText(adds))
	}
	judged := adds.Details[0].Turns[0].Results[5]
	if judged.Score == nil || *judged.Score != 5 || judged.Reason != "matches the ground truth" || !judged.Pass {
		t.Errorf("judge result %s", jsonText(judged))
	}
	// The agent's cost (100 in, 10 out at $1/$2 per million + the first call) and the judge's
	// ($100 per million, 1,000 tokens = $0.1) are reported apart.
	if adds.JudgeCostUSD != 0.1 {
		t.Errorf("judge cost %v, want 0.1", adds.JudgeCostUSD)
	}
	if adds.CostUSD <= 0 || adds.CostUSD > 0.001 {
		t.Errorf("agent cost %v", adds.CostUSD)
	}
	wrong, _ := rep.Case("wrong")
	if wrong.Pass || wrong.Failure != `contains "4" — got "It is 5."` {
		t.Errorf("wrong: failure %q", wrong.Failure)
	}
	jr := wrong.Details[0].Turns[0].Results[1]
	if jr.Pass || jr.Actual != "score 2" {
		t.Errorf("wrong's judge %s", jsonText(jr))
	}
	conv, _ := rep.Case("conversation")
	if !conv.Pass || len(conv.Details[0].Turns) != 2 {
		t.Errorf("conversation %s", jsonText(conv))
	}
	// Every case ran as a thread tagged with the run, its verdicts on it.
	ctx := context.Background()
	ths, n, err := fx.store.Threads(ctx, weft.ThreadQuery{Tag: TagCase + ":" + rep.ID, Limit: 10})
	if err != nil || n != 3 {
		t.Fatalf("%d threads, %v", n, err)
	}
	for _, th := range ths {
		raw, ok, err := fx.store.GetKV(ctx, th.ID, KVVerdict)
		if err != nil || !ok {
			t.Fatalf("thread %s: no verdict (%v)", th.ID, err)
		}
		var cr CaseRun
		if err := json.Unmarshal(raw, &cr); err != nil {
			t.Fatal(err)
		}
		want := "pass"
		if !cr.Pass {
			want = "fail"
		}
		if th.Properties["eval_verdict"] != want || th.Properties["eval_case"] != cr.Case || th.Properties["eval_run"] != rep.ID || cr.ThreadID != th.ID {
			t.Errorf("thread %s properties %v, verdict %s", th.ID, th.Properties, want)
		}
	}
}

func jsonText(v any) string {
	b, _ := json.MarshalIndent(v, "", " ")
	return string(b)
}

func TestRunRepeatFlaky(t *testing.T) {
	fx := newFixture(t, map[string]string{"e.yaml": `
agent: math
repeat: 3
min_passes: 2
concurrency: 4
cases:
  - {name: answer, input: "2+2?", expect: [{contains: "4"}]}
`})
	// One script shared by every case run (as --model-script): the runs take its answers in turn.
	s, err := scripted.Parse("shared.yaml", []byte(`
- {text: "4"}
- {text: "5"}
- {text: "4"}
`))
	if err != nil {
		t.Fatal(err)
	}
	fx.rn.Options.Override = scripted.New(s)
	rep := fx.run(t, "e.yaml")
	c := rep.Cases[0]
	if !c.Pass || c.Passes != 2 || c.Runs != 3 || !c.Flaky || c.Failure != `contains "4" — got "5"` {
		t.Errorf("%s", jsonText(c))
	}
	var table bytes.Buffer
	rep.WriteTable(&table)
	if !strings.Contains(table.String(), "pass 2/3 flaky") {
		t.Errorf("table:\n%s", table.String())
	}
}

func TestRunDualAI(t *testing.T) {
	fx := newFixture(t, map[string]string{"e.yaml": `
agent: review
model_script: s.yaml
cases:
  - name: review loop
    input: "Review: 'Teh cat.'"
    expect: [{contains: Fixed}, {tool_called: approve}, {max_steps: 3}]
`, "s.yaml": `
- {match: {prompt: reviewer}, text: Fix the typo.}
- {match: {prompt: author, side: b}, text: Fixed the typo.}
- {match: {prompt: reviewer}, tool_calls: [{name: approve, arguments: {}}]}
`})
	rep := fx.run(t, "e.yaml")
	if !rep.OK() {
		t.Errorf("%s", jsonText(rep))
	}
}

func TestRunFailingRunAndScript(t *testing.T) {
	fx := newFixture(t, map[string]string{"e.yaml": `
agent: math
cases:
  - {name: provider fails, input: hi, expect: []}
  - {name: script mismatch, model_script: s.yaml, input: hi, expect: []}
`, "s.yaml": `
- {expect: {system_contains: nonsense}, text: x}
`})
	rep := fx.run(t, "e.yaml")
	if rep.Failed != 2 {
		t.Fatalf("%s", jsonText(rep))
	}
	if f := rep.Cases[0].Failure; !strings.Contains(f, "the run stops well — got step_error") || !strings.Contains(f, "tests reach no provider") {
		t.Errorf("failure %q", f)
	}
	if f := rep.Cases[1].Failure; !strings.Contains(f, "model script") || !strings.Contains(f, "nonsense") {
		t.Errorf("failure %q", f)
	}
}

func TestRunUnknownAgentAndJudge(t *testing.T) {
	fx := newFixture(t, map[string]string{"e.yaml": "agent: nobody\ncases: [{name: c, input: i, expect: []}]\n",
		"j.yaml":   "agent: math\ncases: [{name: c, input: i, expect: [{judge: {prompt: bad.yaml, min_score: 1}}]}]\n",
		"bad.yaml": "name: bad\nsystem: x\n"})
	for file, want := range map[string]string{
		"e.yaml": `agent: no agent named "nobody" in the project`,
		"j.yaml": "cases[0].turns[0].expect[0].judge.prompt: ",
	} {
		f, err := Load(filepath.Join(fx.dir, file))
		if err != nil {
			t.Fatal(err)
		}
		_, err = fx.rn.Run(context.Background(), f)
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
}

func TestYAMLJudge(t *testing.T) {
	fx := newFixture(t, map[string]string{"e.yaml": `
agent: math
cases:
  - name: c
    model_script: s.yaml
    input: What is 1+1?
    context: school maths
    expect:
      - judge: {prompt: tone.yaml, min_score: 3, inputs: {style: polite}}
`, "tone.yaml": `
name: tone
model: judge
system: Rate the tone from 1 to 5; the house style is {{style}}.
prompt: "Q: {{question}} A: {{answer}} C: {{ context }} T: {{transcript}}"
`, "s.yaml": `
- {match: {prompt: math}, text: "Two."}
- match: {prompt: tone, model: judge}
  expect: {system_contains: "house style is polite", contains: ["Q: What is 1+1? A: Two. C: school maths", "user: What is 1+1?", "assistant: Two."]}
  text: '{"score": 3}'
`})
	rep := fx.run(t, "e.yaml")
	if !rep.OK() {
		t.Errorf("%s", jsonText(rep))
	}
}

func TestRecordReplaySameVerdicts(t *testing.T) {
	fx := newFixture(t, mathFiles)
	fx.rn.Record = NewRecording()
	first := fx.run(t, "math.yaml")
	path := filepath.Join(fx.dir, "rec.json")
	if err := fx.rn.Record.Save(path); err != nil {
		t.Fatal(err)
	}
	// The recording holds the agent's and the judges' calls: 2+1 (adds), 1+1 (wrong), 3.
	if n := fx.rn.Record.Len(); n != 8 {
		t.Errorf("%d calls recorded, want 8", n)
	}
	rec, err := LoadRecording(path)
	if err != nil {
		t.Fatal(err)
	}
	// Replayed: the scripts now answer otherwise and no provider answers, yet every verdict is
	// the same.
	for _, s := range []string{"adds", "wrong", "conversation"} {
		os.WriteFile(filepath.Join(fx.dir, "scripts", s+".yaml"), []byte("- {text: changed}\n"), 0o600)
	}
	fx.rn.Record, fx.rn.Replay = nil, rec
	second := fx.run(t, "math.yaml")
	if verdicts(first) != verdicts(second) {
		t.Errorf("replayed verdicts differ:\n%s\n%s", verdicts(first), verdicts(second))
	}
	if first.JudgeCostUSD != second.JudgeCostUSD {
		t.Errorf("judge cost %v then %v", first.JudgeCostUSD, second.JudgeCostUSD)
	}
	// A call the recording lacks fails, naming it.
	empty := NewRecording()
	fx.rn.Replay = empty
	third := fx.run(t, "math.yaml")
	if third.Failed != 3 || !strings.Contains(third.Cases[0].Failure, "the recording holds no answer for call math/adds#1/math#1") {
		t.Errorf("%s", third.Cases[0].Failure)
	}
}

// verdicts lists every expectation's verdict and actual value.
func verdicts(r *Report) string {
	var b strings.Builder
	for _, c := range r.Cases {
		for _, d := range c.Details {
			for _, tr := range d.Turns {
				for _, x := range tr.Results {
					fmt.Fprintf(&b, "%s/%s: %v %s\n", c.Name, x.Expectation, x.Pass, x.Actual)
				}
			}
		}
	}
	return b.String()
}

func TestLoadRecordingErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ src, want string }{
		{"nope", "r.json: not a recording"},
		{`{"version": 2, "calls": []}`, "r.json: version: want 1, not 2"},
		{`{"version": 1, "calls": [{"key": "k"}]}`, "r.json: calls[0]: want a key and exactly one of response and error"},
		{`{"version": 1, "calls": [{"key": "k", "response": {}}, {"key": "", "response": {}}]}`, "r.json: calls[1]: want a key"},
	} {
		p := filepath.Join(dir, "r.json")
		os.WriteFile(p, []byte(tc.src), 0o600)
		if _, err := LoadRecording(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.src, err, tc.want)
		}
	}
}

func TestBaselineComparison(t *testing.T) {
	fx := newFixture(t, mathFiles)
	ctx := context.Background()
	first := fx.run(t, "math.yaml")
	if _, err := SaveRun(ctx, fx.store, first); err != nil {
		t.Fatal(err)
	}
	// The agent changed: "adds" now answers wrong, "wrong" now answers right.
	os.WriteFile(filepath.Join(fx.dir, "scripts/adds.yaml"), []byte(`
- {match: {prompt: math}, text: "It is 41."}
- {match: {prompt: correct}, text: "1"}
`), 0o600)
	os.WriteFile(filepath.Join(fx.dir, "scripts/wrong.yaml"), []byte(`
- {match: {prompt: math}, text: "It is 4."}
- {match: {prompt: correct}, text: "5"}
`), 0o600)
	second := fx.run(t, "math.yaml")
	prev, err := Runs(ctx, fx.store, "math", 1)
	if err != nil || len(prev) != 1 || prev[0].ID != first.ID {
		t.Fatalf("previous run %v %v", prev, err)
	}
	second.Baseline = Compare(second, prev[0])
	b := second.Baseline
	if strings.Join(b.Regressed, ",") != "adds" || strings.Join(b.Improved, ",") != "wrong" || b.CostUSD[0] != first.CostUSD || b.CostUSD[1] != second.CostUSD {
		t.Errorf("%s", jsonText(b))
	}
	if _, err := SaveRun(ctx, fx.store, second); err != nil {
		t.Fatal(err)
	}
	all, _ := Runs(ctx, fx.store, "", 10)
	if len(all) != 2 || all[0].ID != second.ID {
		t.Errorf("runs newest first: %v", all)
	}
	got, err := LoadRun(ctx, fx.store, first.ID)
	if err != nil || verdicts(got) != verdicts(first) {
		t.Errorf("stored run differs: %v", err)
	}
	if _, err := LoadRun(ctx, fx.store, "evr_none"); weft.ErrorCode(err) != weft.ENotFound {
		t.Errorf("unknown run: %v", err)
	}
	var table bytes.Buffer
	second.WriteTable(&table)
	for _, want := range []string{"against " + first.ID + ": 1 regressed, 1 improved", "regressed: adds", "improved: wrong", "mean latency"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	// Cases added and removed are named.
	c := Compare(&Report{Cases: []CaseResult{{Name: "x", Pass: true}}}, &Report{ID: "evr_1", Cases: []CaseResult{{Name: "y"}}})
	if strings.Join(c.New, ",") != "x" || strings.Join(c.Gone, ",") != "y" {
		t.Errorf("%+v", c)
	}
}

// junitSchema is the JUnit XML shape (the Jenkins/Ant junit.xsd): declared here apart from the
// writer's types, so that the file is read the way a CI reader reads it.
type junitSchema struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    *int     `xml:"tests,attr"`
	Failures *int     `xml:"failures,attr"`
	Suites   []struct {
		Name      *string  `xml:"name,attr"`
		Tests     *int     `xml:"tests,attr"`
		Failures  *int     `xml:"failures,attr"`
		Errors    *int     `xml:"errors,attr"`
		Skipped   *int     `xml:"skipped,attr"`
		Time      *float64 `xml:"time,attr"`
		Timestamp *string  `xml:"timestamp,attr"`
		Props     []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name      *string  `xml:"name,attr"`
			ClassName *string  `xml:"classname,attr"`
			Time      *float64 `xml:"time,attr"`
			Failure   *struct {
				Message *string `xml:"message,attr"`
				Type    *string `xml:"type,attr"`
				Text    string  `xml:",chardata"`
			} `xml:"failure"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnitReadBack(t *testing.T) {
	fx := newFixture(t, mathFiles)
	rep := fx.run(t, "math.yaml")
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, []*Report{rep}); err != nil {
		t.Fatal(err)
	}
	var doc junitSchema
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if doc.Tests == nil || *doc.Tests != 3 || *doc.Failures != 1 || len(doc.Suites) != 1 {
		t.Fatalf("%s", buf.String())
	}
	s := doc.Suites[0]
	if s.Name == nil || *s.Name != "math" || *s.Tests != 3 || *s.Failures != 1 || s.Errors == nil || s.Skipped == nil || s.Time == nil || s.Timestamp == nil {
		t.Errorf("suite attributes: %s", buf.String())
	}
	if len(s.Props) == 0 || s.Props[0].Name != "run" || s.Props[0].Value != rep.ID {
		t.Errorf("properties %+v", s.Props)
	}
	failed := 0
	for _, c := range s.Cases {
		if c.Name == nil || c.ClassName == nil || *c.ClassName != "math" || c.Time == nil {
			t.Errorf("testcase attributes missing: %s", buf.String())
		}
		if c.Failure != nil {
			failed++
			if *c.Name != "wrong" || c.Failure.Message == nil || !strings.Contains(*c.Failure.Message, `contains "4" — got "It is 5."`) || c.Failure.Type == nil {
				t.Errorf("failure %+v", c.Failure)
			}
		}
		if !strings.Contains(c.SystemOut, "thr_") {
			t.Errorf("system-out %q names no thread", c.SystemOut)
		}
	}
	if failed != 1 {
		t.Errorf("%d failures", failed)
	}
}

func TestSecretsRedactedInReport(t *testing.T) {
	fx := newFixture(t, map[string]string{"e.yaml": `
agent: math
model_script: s.yaml
cases:
  - name: leak
    env: {API_TOKEN: sk-very-secret-123}
    input: hi
    expect: [{contains: nothing}]
`, "s.yaml": `
- {text: "the token is sk-very-secret-123", tool_calls: [{name: add, arguments: {a: 1, b: 2, note: sk-very-secret-123}}]}
- {text: "done, sk-very-secret-123"}
`})
	fx.rn.Record = NewRecording()
	rep := fx.run(t, "e.yaml")
	rec := filepath.Join(fx.dir, "rec.json")
	if err := fx.rn.Record.Save(rec); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(rec); strings.Contains(string(data), "sk-very-secret-123") || !strings.Contains(string(data), "[redacted]") {
		t.Errorf("secret in the recording:\n%s", data)
	}
	doc := jsonText(rep)
	if strings.Contains(doc, "sk-very-secret-123") {
		t.Errorf("secret in the report:\n%s", doc)
	}
	raw, _, _ := fx.store.GetKV(context.Background(), rep.Cases[0].Details[0].ThreadID, KVVerdict)
	if strings.Contains(string(raw), "sk-very-secret-123") || !strings.Contains(string(raw), "[redacted]") {
		t.Errorf("verdict KV: %s", raw)
	}
}

func TestUseModel(t *testing.T) {
	fx := newFixture(t, map[string]string{"e.yaml": `
agent: math
model_script: s.yaml
cases:
  - {name: c, input: "2+2?", expect: [{contains: "4"}, {max_cost_usd: 0.5}]}
`, "s.yaml": `
- {match: {model: judge, prompt: math}, text: "4", usage: {input_tokens: 1000, output_tokens: 0}}
`})
	// Without the override the math prompt's model m is called, which the script does not answer.
	if rep := fx.run(t, "e.yaml"); rep.OK() {
		t.Fatalf("the script answered model m: %s", jsonText(rep))
	}
	if err := UseModel(fx.rn.Options.Registry, "judge"); err != nil {
		t.Fatal(err)
	}
	fx.rn.Model = "judge"
	rep := fx.run(t, "e.yaml")
	// Priced as the judge model: 1,000 input tokens at $100 per million.
	if !rep.OK() || rep.Model != "judge" || rep.CostUSD != 0.1 {
		t.Errorf("%s", jsonText(rep))
	}
	if err := UseModel(fx.rn.Options.Registry, "nope"); weft.ErrorCode(err) != weft.ENotFound {
		t.Errorf("unknown model: %v", err)
	}
}
