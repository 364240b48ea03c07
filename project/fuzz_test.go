package project

import (
	"github.com/weft-agents/weft/validate"
	"testing"

	"github.com/weft-agents/weft"
)

// FuzzLoadDefinition feeds arbitrary bytes to the YAML/JSON loader of every folder kind and then to
// the validator: nothing may panic, and every problem must come back as a diagnostic.
func FuzzLoadDefinition(f *testing.F) {
	for _, s := range []string{
		"{name: fast, provider: openai, model: gpt-4o-mini, fallbacks: [b]}",
		"name: p\ntoolDescription: d\nmodel: fast\nprompt:\n  - {type: include, prompt: p}\ntools: [a, {name: b, resumable: {receives_messages: side_a}}]\n",
		"{name: a, sideA: {prompt: p, sessionStop: {name: t}}, sideB: {human: true}}",
		"kind: command\ndescription: d\nargs: {type: object, properties: {a: {anyOf: [{type: string}, {type: array, items: {$ref: '#/$defs/x'}}]}}, $defs: {x: {type: integer}}}\ncommand: [x]\n",
		"kind: mcp\nserver: {url: 'http://x'}\ntools: [a]\n",
		"[1, 2",
		"{\"name\": \"x\", \"base\": \"openai\"}",
		"a: &x [*x]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		reg := weft.NewRegistry()
		var diags weft.Diagnostics
		l := &loader{dir: ".", reg: reg, diags: &diags}
		for _, kind := range folders {
			l.definition(kind, kind+"/x.yaml", []byte(data))
		}
		_ = validate.Registry(reg)
	})
}
