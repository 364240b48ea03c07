package prompty

import (
	"strings"
	"sync"
	"testing"

	weft "github.com/weft-agents/weft"
)

func TestErrorFormat(t *testing.T) {
	for _, c := range []struct {
		e    Error
		want string
	}{
		{Error{File: "a.prompty", Line: 3, Col: 7, Msg: "m"}, "a.prompty:3:7: m"},
		{Error{File: "a.prompty", Line: 3, Msg: "m"}, "a.prompty:3: m"},
		{Error{File: "a.prompty", Msg: "m"}, "a.prompty: m"},
		{Error{Line: 2, Msg: "m"}, "2: m"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

func TestLoadFields(t *testing.T) {
	f := mustLoad(t, `---
name: helper
description: Helps
toolDescription: Use it to help
dialect: v2
model:
  id: gpt-4o
  provider: openai
  connection: {kind: key, endpoint: "https://e", apiKey: k}
  options: {max_tokens: 10, top_p: 0.5, temperature: 0, stop: ["x"], seed: 1, frequency_penalty: 0.1}
inputs:
  - name: q
    type: string
    required: true
    description: The question
    strict: true
  - name: n
    kind: integer
    default: 3
    enumValues: [1, 3]
  - name: data
    json_schema: {type: object, properties: {a: {type: string}}}
    sample: {a: x}
  - name: history
    kind: thread
  - name: doc
    kind: file
outputs:
  answer: {type: string, description: The answer, required: true}
tools:
  - search
  - name: mcp_fs
    kind: mcp
includeChat: true
toolChoice: auto
env: {A: b}
metadata:
  authors: [me]
version: 2
---
system:
{{q}}
`)
	if f.Name != "helper" || f.Description != "Helps" || f.ToolDescription != "Use it to help" || f.Dialect != DialectV2 {
		t.Errorf("names: %+v", f)
	}
	if f.Model != "gpt-4o" || f.ModelRef.Provider != "openai" || f.ModelRef.Connection.Endpoint != "https://e" || f.ModelRef.Connection.APIKey != "k" {
		t.Errorf("model %+v", f.ModelRef)
	}
	wantOpts := map[string]any{"maxOutputTokens": 10, "topP": 0.5, "temperature": 0, "stop": []any{"x"}, "seed": 1, "frequency_penalty": 0.1}
	if !jsonEqual(t, f.ModelOptions, wantOpts) {
		t.Errorf("options %v", f.ModelOptions)
	}
	wantSchema := `{"properties":{"data":{"properties":{"a":{"type":"string"}},"type":"object"},"doc":{"type":"string"},"n":{"default":3,"enum":[1,3],"type":"integer"},"q":{"description":"The question","type":"string"}},"required":["q"],"type":"object"}`
	if got := jsonString(f.InputSchema); got != wantSchema {
		t.Errorf("schema %s", got)
	}
	if strings.Join(f.StrictInputs, ",") != "q" || strings.Join(f.ThreadInputs, ",") != "history" || f.MediaInputs["doc"] != weft.PartFile {
		t.Errorf("strict %v thread %v media %v", f.StrictInputs, f.ThreadInputs, f.MediaInputs)
	}
	if got := jsonString(f.Outputs); got != `{"properties":{"answer":{"description":"The answer","type":"string"}},"required":["answer"],"type":"object"}` {
		t.Errorf("outputs %s", got)
	}
	if len(f.Tools) != 2 || f.Tools[0] != "search" {
		t.Errorf("tools %v", f.Tools)
	}
	if !jsonEqual(t, f.Fields, map[string]any{"includeChat": true, "toolChoice": "auto", "env": map[string]any{"A": "b"}}) {
		t.Errorf("fields %v", f.Fields)
	}
	if !jsonEqual(t, f.Metadata, map[string]any{"authors": []any{"me"}, "version": 2}) {
		t.Errorf("metadata %v", f.Metadata)
	}
	if f.SampleArgs()["data"] == nil || f.SampleArgs()["n"] != 3 {
		t.Errorf("sample args %v", f.SampleArgs())
	}
	if f.BodyLine != 41 || f.Body != "system:\n{{q}}\n" {
		t.Errorf("body line %d %q", f.BodyLine, f.Body)
	}
}

func TestLoadDefaultsAndShorthand(t *testing.T) {
	f := mustLoad(t, "no front matter {{x}}")
	if f.Name != "p" || f.Engine != "jinja2" || f.Dialect != DialectSeed || f.BodyLine != 1 || f.InputSchema != nil {
		t.Errorf("%+v", f)
	}
	f = mustLoad(t, "\n\n  +++  \n+++\nbody")
	if f.BodyLine != 5 || f.Body != "body" {
		t.Errorf("line %d body %q", f.BodyLine, f.Body)
	}
	f = mustLoad(t, "\ufeff---\ninputs:\n  a: text\n  b: 2\n  c: [1]\n  d:\n---\n")
	if got := jsonString(f.InputSchema); got != `{"properties":{"a":{"default":"text","type":"string"},"b":{"default":2,"type":"integer"},"c":{"default":[1],"type":"array"},"d":{"type":"string"}},"type":"object"}` {
		t.Errorf("schema %s", got)
	}
	f = mustLoad(t, "---\ntemplate:\n  format: {kind: jinja2, strict: true}\n  parser: {kind: prompty}\ninputs:\n  a: x\n---\n")
	if f.Engine != "jinja2" || !f.TemplateStrict || strings.Join(f.StrictInputs, ",") != "a" {
		t.Errorf("%+v", f)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, c := range []struct{ text, msg string }{
		{"---\nname: x\n", "front matter is not closed"},
		{"---\n- a\n---\n", "must be a YAML mapping"},
		{"---\nname: [\n---\n", "invalid frontmatter"},
		{"---\ninputs: {a: 1}\nrequiredSchema: {type: object}\n---\n", "inputs and requiredSchema cannot be used together"},
		{"---\ntemplate: {format: jinja2, parser: handlebars}\n---\n", "template.parser: unsupported parser"},
		{"---\ntemplate: liquid\n---\n", "unknown template engine"},
		{"---\ndialect: v3\n---\n", "dialect: must be"},
		{"---\ninputs:\n  - name: a\n    kind: blob\n---\n", "inputs[0].kind: unknown kind"},
		{"---\ninputs:\n  a: {required: maybe}\n---\n", "inputs.a.required: must be true or false"},
		{"---\nmodel: 3\n---\n", "model: must be a model name or a mapping"},
		{"---\ntemplate: jinja2\n---\nline one\n{% macro x() %}{% endmacro %}\n", "p.prompty:5:"},
		{"---\nname: x\ntemplate: mustache\n---\nsystem:\n{{> partial}}\n", "p.prompty:6:1:"},
	} {
		_, err := loadText(t, c.text, Options{})
		wantErr(t, err, c.msg)
	}
	_, err := loadText(t, "x", Options{Dialect: "v9"})
	if err == nil || !strings.Contains(err.Error(), "unknown dialect") {
		t.Errorf("got %v", err)
	}
}

// TestRenderConcurrent renders one File from many goroutines (run with -race).
func TestRenderConcurrent(t *testing.T) {
	f := mustLoad(t, seedPrompt)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				r, err := f.Render(RenderInput{Args: f.SampleArgs()})
				if err != nil || len(r.Tools) != 2 || len(r.Suffix) != 2 {
					t.Errorf("%v %v", err, r)
					return
				}
			}
		}()
	}
	wg.Wait()
}
