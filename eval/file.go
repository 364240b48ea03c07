// Package eval runs eval files: an agent's cases, each a real thread through the engine, checked
// against expectations (text, tool calls, cost, tokens, latency, steps, judges) and reported.
// Every key and rule a user meets is in docs/evals.md.
package eval

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/weft-agents/weft/schema"
	"github.com/weft-agents/weft/scripted"
)

// MaxFileBytes bounds one eval file.
const MaxFileBytes = 4 << 20

// File is a parsed and validated eval file.
type File struct {
	// Path is the file as given; relative paths inside it are resolved against its directory.
	Path string `json:"path"`
	// Name names the eval (default: the file name without its extension).
	Name string `json:"name"`
	// Description documents the eval.
	Description string `json:"description,omitempty"`
	// Agent is the agent every case runs.
	Agent string `json:"agent"`
	// Repeat runs every case this many times (pass@k, flakiness); default 1.
	Repeat int `json:"repeat"`
	// MinPasses is how many of the Repeat runs must pass for the case to pass; default Repeat.
	MinPasses int `json:"min_passes"`
	// Concurrency bounds the case runs at once; default 1.
	Concurrency int `json:"concurrency"`
	// ModelScript, when set, answers every model call of each case run from this model script,
	// loaded afresh for every run (a case's own model_script wins). Absolute path.
	ModelScript string `json:"model_script,omitempty"`
	// JudgeModel names the model judges use when neither the judge nor its prompt names one.
	JudgeModel string `json:"judge_model,omitempty"`
	// Cases are the cases, in file order.
	Cases []Case `json:"cases"`
}

// Case is one scenario: a thread created with its arguments and env, then one or more user turns.
type Case struct {
	// Name identifies the case within the file (unique).
	Name string `json:"name"`
	// Args are the thread's arguments; Env its thread-layer env values.
	Args map[string]any    `json:"args,omitempty"`
	Env  map[string]string `json:"-"`
	// ModelScript overrides File.ModelScript for this case. Absolute path.
	ModelScript string `json:"model_script,omitempty"`
	// Turns are the user turns, each with its own expectations.
	Turns []Turn `json:"turns"`
}

// Turn is one user turn of a case and what must hold once the thread is quiet again.
type Turn struct {
	// Input is the user message's text (or the last message of Messages).
	Input string `json:"input,omitempty"`
	// Messages are queued in order before the turn runs (role user or assistant); the last one is
	// the turn's message.
	Messages []Message `json:"messages,omitempty"`
	// Attachments are files attached to the turn's message (absolute paths).
	Attachments []string `json:"attachments,omitempty"`
	// Expected is the expected answer, given to judges as `ground_truth` and `expected`.
	Expected any `json:"expected,omitempty"`
	// Context is given to judges as `context`.
	Context string `json:"context,omitempty"`
	// Expect lists the expectations, all of which must hold.
	Expect []Expectation `json:"expect"`
}

// Message is one message of a turn's Messages.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// The expectation kinds.
const (
	KindContains      = "contains"
	KindNotContains   = "not_contains"
	KindRegex         = "regex"
	KindEquals        = "equals"
	KindJSONSchema    = "json_schema"
	KindToolCalled    = "tool_called"
	KindNotToolCalled = "not_tool_called"
	KindMaxToolCalls  = "max_tool_calls"
	KindMaxCostUSD    = "max_cost_usd"
	KindMaxTokens     = "max_tokens"
	KindMaxLatencyMS  = "max_latency_ms"
	KindMaxSteps      = "max_steps"
	KindJudge         = "judge"
)

var kinds = []string{KindContains, KindNotContains, KindRegex, KindEquals, KindJSONSchema, KindToolCalled, KindNotToolCalled,
	KindMaxToolCalls, KindMaxCostUSD, KindMaxTokens, KindMaxLatencyMS, KindMaxSteps, KindJudge}

// Expectation is one check of a turn's outcome.
type Expectation struct {
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Text is the string of contains, not_contains, regex and equals.
	Text string `json:"text,omitempty"`
	// Schema is json_schema's schema (the reply, parsed as JSON or its structured value, must match).
	Schema map[string]any `json:"schema,omitempty"`
	// Tool and Args are tool_called's and not_tool_called's: a call of Tool whose arguments include
	// Args (a subset match; nil matches any arguments).
	Tool string         `json:"tool,omitempty"`
	Args map[string]any `json:"args,omitempty"`
	// Max is the bound of the max_ kinds.
	Max float64 `json:"max,omitempty"`
	// Judge is judge's.
	Judge *JudgeSpec `json:"judge,omitempty"`

	re        *regexp.Regexp
	validator *schema.Validator
}

// JudgeSpec asks a judge prompt for a score.
type JudgeSpec struct {
	// Prompt is the judge's .prompty or YAML file (absolute path).
	Prompt string `json:"prompt"`
	// MinScore is the lowest passing score.
	MinScore float64 `json:"min_score"`
	// Model names the model that judges (overrides the prompt's and the file's judge_model).
	Model string `json:"model,omitempty"`
	// Inputs are extra inputs given to the judge prompt.
	Inputs map[string]any `json:"inputs,omitempty"`
}

// String describes the expectation as written, e.g. `contains "42"`.
func (x *Expectation) String() string {
	switch x.Kind {
	case KindContains, KindNotContains, KindRegex, KindEquals:
		return fmt.Sprintf("%s %q", x.Kind, x.Text)
	case KindJSONSchema:
		return "json_schema"
	case KindToolCalled, KindNotToolCalled:
		if len(x.Args) > 0 {
			return fmt.Sprintf("%s %s %s", x.Kind, x.Tool, compactJSON(x.Args))
		}
		return x.Kind + " " + x.Tool
	case KindJudge:
		return fmt.Sprintf("judge %s ≥ %s", filepath.Base(x.Judge.Prompt), formatNumber(x.Judge.MinScore))
	}
	return fmt.Sprintf("%s %s", x.Kind, formatNumber(x.Max))
}

// Problem is one rule an eval file breaks.
type Problem struct {
	// Field is the key path, e.g. cases[0].expect[1].tool_called.name ("" for the whole file).
	Field string
	// Rule says what is wrong.
	Rule string
}

// FileError lists every problem of an eval file.
type FileError struct {
	// File is the eval file.
	File string
	// Problems are the broken rules, in file order.
	Problems []Problem
}

func (e *FileError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.File)
		b.WriteString(": ")
		if p.Field != "" {
			b.WriteString(p.Field)
			b.WriteString(": ")
		}
		b.WriteString(p.Rule)
	}
	return b.String()
}

// Load reads and parses an eval file.
func Load(path string) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &FileError{File: path, Problems: []Problem{{Rule: "cannot read: " + unwrapPath(err).Error()}}}
	}
	if st.Size() > MaxFileBytes {
		return nil, &FileError{File: path, Problems: []Problem{{Rule: fmt.Sprintf("the file is over the %d MiB limit", MaxFileBytes>>20)}}}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &FileError{File: path, Problems: []Problem{{Rule: "cannot read: " + unwrapPath(err).Error()}}}
	}
	return Parse(path, data)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Parse parses and validates an eval file's content; path names it in errors and anchors its
// relative paths. Every problem is reported, each with its field and rule (*FileError).
func Parse(path string, data []byte) (*File, error) {
	p := &parser{file: path, dir: filepath.Dir(path)}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &FileError{File: path, Problems: []Problem{{Rule: "not valid YAML: " + firstLine(err.Error())}}}
	}
	f := p.file0(doc)
	if len(p.problems) > 0 {
		return nil, &FileError{File: path, Problems: p.problems}
	}
	return f, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

type parser struct {
	file, dir string
	problems  []Problem
}

func (p *parser) errf(field, format string, a ...any) {
	rule := strings.ReplaceAll(strings.TrimSpace(fmt.Sprintf(format, a...)), "\n", "; ")
	p.problems = append(p.problems, Problem{Field: field, Rule: rule})
}

// object reads a mapping, reporting keys outside allowed.
func (p *parser) object(field string, v any, allowed ...string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		p.errf(field, "must be a mapping, not %s", typeName(v))
		return nil, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			p.errf(join(field, k), "unknown key (allowed: %s)", strings.Join(allowed, ", "))
		}
	}
	return m, true
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case int, int64, uint64, float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func (p *parser) str(field string, v any, required bool) string {
	if v == nil {
		if required {
			p.errf(field, "required")
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		p.errf(field, "must be a string, not %s", typeName(v))
		return ""
	}
	if required && strings.TrimSpace(s) == "" {
		p.errf(field, "must not be empty")
	}
	return s
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	}
	return 0, false
}

func (p *parser) num(field string, v any) (float64, bool) {
	n, ok := number(v)
	if !ok {
		p.errf(field, "must be a number, not %s", typeName(v))
		return 0, false
	}
	if n < 0 {
		p.errf(field, "must not be negative")
		return 0, false
	}
	return n, true
}

func (p *parser) count(field string, v any, def, lo, hi int) int {
	if v == nil {
		return def
	}
	n, ok := number(v)
	if !ok || n != math.Trunc(n) {
		p.errf(field, "must be a whole number")
		return def
	}
	if n < float64(lo) || n > float64(hi) {
		p.errf(field, "must be between %d and %d", lo, hi)
		return def
	}
	return int(n)
}

// path resolves a path written in the file against the file's directory.
func (p *parser) path(field string, v any) string {
	s := p.str(field, v, true)
	if s == "" || filepath.IsAbs(s) {
		return s
	}
	return filepath.Join(p.dir, s)
}

// script resolves a model script's path and checks that it loads.
func (p *parser) script(field string, v any) string {
	path := p.path(field, v)
	if path != "" {
		if _, err := scripted.Load(path); err != nil {
			p.errf(field, "%v", err)
		}
	}
	return path
}

func (p *parser) file0(doc any) *File {
	m, ok := p.object("", doc, "name", "description", "agent", "cases", "repeat", "min_passes", "concurrency", "model_script",
		"judge_model", "args", "env")
	if !ok {
		return nil
	}
	f := &File{Path: p.file}
	f.Name = p.str("name", m["name"], false)
	if f.Name == "" {
		f.Name = strings.TrimSuffix(filepath.Base(p.file), filepath.Ext(p.file))
	}
	f.Description = p.str("description", m["description"], false)
	f.Agent = p.str("agent", m["agent"], true)
	f.Repeat = p.count("repeat", m["repeat"], 1, 1, 1000)
	f.MinPasses = p.count("min_passes", m["min_passes"], f.Repeat, 1, 1000)
	if f.MinPasses > f.Repeat {
		p.errf("min_passes", "must not exceed repeat (%d)", f.Repeat)
	}
	f.Concurrency = p.count("concurrency", m["concurrency"], 1, 1, 256)
	if m["model_script"] != nil {
		f.ModelScript = p.script("model_script", m["model_script"])
	}
	f.JudgeModel = p.str("judge_model", m["judge_model"], false)
	defArgs := p.args("args", m["args"])
	defEnv := p.env("env", m["env"])
	list, ok := m["cases"].([]any)
	switch {
	case m["cases"] == nil:
		p.errf("cases", "required: a list of cases")
	case !ok:
		p.errf("cases", "must be a list, not %s", typeName(m["cases"]))
	case len(list) == 0:
		p.errf("cases", "must list at least one case")
	}
	seen := map[string]int{}
	for i, c := range list {
		field := fmt.Sprintf("cases[%d]", i)
		cs := p.case0(field, c, defArgs, defEnv)
		if cs == nil {
			continue
		}
		if j, dup := seen[cs.Name]; dup {
			p.errf(field+".name", "%q is also the name of cases[%d]; case names must be unique", cs.Name, j)
		}
		seen[cs.Name] = i
		f.Cases = append(f.Cases, *cs)
	}
	return f
}

func (p *parser) args(field string, v any) map[string]any {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		p.errf(field, "must be a mapping, not %s", typeName(v))
	}
	return m
}

func (p *parser) env(field string, v any) map[string]string {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		p.errf(field, "must be a mapping of names to strings, not %s", typeName(v))
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		switch s := x.(type) {
		case string:
			out[k] = s
		case bool, int, int64, uint64, float64:
			out[k] = fmt.Sprint(s)
		default:
			p.errf(join(field, k), "must be a string, not %s", typeName(x))
		}
	}
	return out
}

func merged[V any](base, over map[string]V) map[string]V {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := make(map[string]V, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

var turnKeys = []string{"input", "messages", "attachments", "expected", "context", "expect"}

func (p *parser) case0(field string, v any, defArgs map[string]any, defEnv map[string]string) *Case {
	allowed := append([]string{"name", "args", "env", "model_script", "turns"}, turnKeys...)
	m, ok := p.object(field, v, allowed...)
	if !ok {
		return nil
	}
	c := &Case{Name: p.str(field+".name", m["name"], true)}
	c.Args = merged(defArgs, p.args(field+".args", m["args"]))
	c.Env = merged(defEnv, p.env(field+".env", m["env"]))
	if m["model_script"] != nil {
		c.ModelScript = p.script(field+".model_script", m["model_script"])
	}
	single := false
	for _, k := range turnKeys {
		single = single || m[k] != nil
	}
	switch {
	case m["turns"] != nil && single:
		p.errf(field, "give either turns or input/messages with expect, not both")
	case m["turns"] != nil:
		list, ok := m["turns"].([]any)
		if !ok || len(list) == 0 {
			p.errf(field+".turns", "must be a non-empty list of turns")
			break
		}
		for i, t := range list {
			tf := fmt.Sprintf("%s.turns[%d]", field, i)
			tm, ok := p.object(tf, t, turnKeys...)
			if ok {
				c.Turns = append(c.Turns, p.turn(tf, tm))
			}
		}
	default:
		c.Turns = []Turn{p.turn(field, m)}
	}
	return c
}

func (p *parser) turn(field string, m map[string]any) Turn {
	t := Turn{Input: p.str(field+".input", m["input"], false), Expected: m["expected"], Context: p.str(field+".context", m["context"], false)}
	if m["messages"] != nil {
		list, ok := m["messages"].([]any)
		if !ok || len(list) == 0 {
			p.errf(field+".messages", "must be a non-empty list of {role, content}")
		}
		for i, x := range list {
			mf := fmt.Sprintf("%s.messages[%d]", field, i)
			mm, ok := p.object(mf, x, "role", "content")
			if !ok {
				continue
			}
			msg := Message{Role: p.str(mf+".role", mm["role"], true), Content: p.str(mf+".content", mm["content"], true)}
			if msg.Role != "" && msg.Role != "user" && msg.Role != "assistant" {
				p.errf(mf+".role", "must be user or assistant")
			}
			t.Messages = append(t.Messages, msg)
		}
		if t.Input != "" {
			p.errf(field, "give either input or messages, not both")
		}
		if n := len(t.Messages); n > 0 && t.Messages[n-1].Role != "user" {
			p.errf(fmt.Sprintf("%s.messages[%d].role", field, n-1), "the last message must be the user's")
		}
	} else if strings.TrimSpace(t.Input) == "" {
		p.errf(field+".input", "required (or messages)")
	}
	if m["attachments"] != nil {
		list, ok := m["attachments"].([]any)
		if !ok {
			p.errf(field+".attachments", "must be a list of file paths")
		}
		for i, a := range list {
			t.Attachments = append(t.Attachments, p.path(fmt.Sprintf("%s.attachments[%d]", field, i), a))
		}
	}
	list, ok := m["expect"].([]any)
	switch {
	case m["expect"] == nil:
		p.errf(field+".expect", "required: a list of expectations")
	case !ok:
		p.errf(field+".expect", "must be a list, not %s", typeName(m["expect"]))
	}
	for i, x := range list {
		if e := p.expectation(fmt.Sprintf("%s.expect[%d]", field, i), x); e != nil {
			t.Expect = append(t.Expect, *e)
		}
	}
	return t
}

func (p *parser) expectation(field string, v any) *Expectation {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		p.errf(field, "must be a mapping with exactly one key, one of: %s", strings.Join(kinds, ", "))
		return nil
	}
	var kind string
	var val any
	for k, x := range m {
		kind, val = k, x
	}
	field = join(field, kind)
	x := &Expectation{Kind: kind}
	switch kind {
	case KindContains, KindNotContains, KindEquals:
		x.Text = p.str(field, val, kind != KindEquals)
		if kind == KindEquals && val == nil {
			p.errf(field, "required")
		}
	case KindRegex:
		x.Text = p.str(field, val, true)
		if x.Text != "" {
			re, err := regexp.Compile(x.Text)
			if err != nil {
				p.errf(field, "not a valid regular expression (RE2): %v", err)
			}
			x.re = re
		}
	case KindJSONSchema:
		sm, ok := val.(map[string]any)
		if !ok {
			p.errf(field, "must be a JSON Schema object, not %s", typeName(val))
			return nil
		}
		s, err := schema.FromMap(sm)
		if err == nil {
			x.validator, err = schema.Compile(s)
		}
		if err != nil {
			p.errf(field, "not a valid JSON Schema: %v", err)
			return nil
		}
		x.Schema = sm
	case KindToolCalled, KindNotToolCalled:
		switch t := val.(type) {
		case string:
			x.Tool = p.str(field, t, true)
		default:
			tm, ok := p.object(field, val, "name", "args")
			if !ok {
				return nil
			}
			x.Tool = p.str(field+".name", tm["name"], true)
			x.Args = p.args(field+".args", tm["args"])
		}
	case KindMaxToolCalls, KindMaxTokens, KindMaxSteps, KindMaxLatencyMS:
		n, ok := p.num(field, val)
		if ok && n != math.Trunc(n) {
			p.errf(field, "must be a whole number")
		}
		x.Max = n
	case KindMaxCostUSD:
		x.Max, _ = p.num(field, val)
	case KindJudge:
		jm, ok := p.object(field, val, "prompt", "min_score", "model", "inputs")
		if !ok {
			return nil
		}
		j := &JudgeSpec{Prompt: p.path(field+".prompt", jm["prompt"]), Model: p.str(field+".model", jm["model"], false)}
		if jm["min_score"] == nil {
			p.errf(field+".min_score", "required: the lowest passing score")
		} else {
			j.MinScore, _ = p.num(field+".min_score", jm["min_score"])
		}
		if jm["inputs"] != nil {
			j.Inputs = p.args(field+".inputs", jm["inputs"])
		}
		if j.Prompt != "" {
			ext := strings.ToLower(filepath.Ext(j.Prompt))
			if ext != ".prompty" && ext != ".yaml" && ext != ".yml" {
				p.errf(field+".prompt", "must be a .prompty or .yaml file")
			} else if _, err := os.Stat(j.Prompt); err != nil {
				p.errf(field+".prompt", "cannot read %s: %v", j.Prompt, unwrapPath(err))
			}
		}
		x.Judge = j
	default:
		p.errf(field, "unknown expectation (want one of: %s)", strings.Join(kinds, ", "))
		return nil
	}
	return x
}
