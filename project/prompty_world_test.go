package project_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/weft-agents/weft/project"
)

// TestPromptyCommonShapesLoad: the front-matter shapes Prompty users write every day load — a
// model named only by id gets the default connection from the environment, v2 provider names map
// to Weft's providers, nunjucks is Jinja, inputSchema declares inputs — and the ones Weft cannot
// run are refused saying why.
func TestPromptyCommonShapesLoad(t *testing.T) {
	const tail = "---\nsystem:\nS\n{% if q is defined and q is not none %}\nuser:\n{{q}}\n{% endif %}\n"
	cases := []struct {
		name     string
		env      map[string]string
		fm       string
		provider string // of the prompt's model ("" = no check)
		model    string // the model id sent
		opts     string // a model option that must be set, key=value
		required string // the requiredSchema's required names, comma-joined
		errs     []string
		warns    []string
	}{
		{name: "id_only_openai", fm: "model: gpt-4o\n", provider: "openai", model: "gpt-4o",
			warns: []string{`model "gpt-4o" is not defined in models/: using the default connection, OpenAI`}},
		{name: "id_only_azure", env: map[string]string{"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com"}, fm: "model:\n  id: gpt-4o\n",
			provider: "azure_openai", model: "gpt-4o"},
		{name: "provider_azure", fm: "model:\n  id: gpt-4o\n  provider: azure\n  connection:\n    kind: key\n    endpoint: https://r.openai.azure.com\n    apiKey: ${env:MY_AZ_KEY}\n",
			env: map[string]string{"MY_AZ_KEY": "k"}, provider: "azure_openai:MY_AZ_KEY", model: "gpt-4o"},
		{name: "provider_foundry", fm: "model:\n  id: gpt-4o\n  provider: foundry\n  connection:\n    kind: key\n    endpoint: https://r.openai.azure.com\n",
			provider: "azure_openai", model: "gpt-4o"},
		{name: "nunjucks", fm: "model: gpt-4o\ntemplate: nunjucks\n", provider: "openai"},
		{name: "nunjucks_mapping", fm: "model: gpt-4o\ntemplate:\n  format: nunjucks\n  parser: prompty\n", provider: "openai"},
		{name: "v2_options_additional_properties", fm: "model:\n  id: gpt-4o\n  provider: openai\n  options:\n    temperature: 0.1\n    additionalProperties:\n      logprobs: true\n",
			provider: "openai", opts: "logprobs=true"},
		{name: "responses_api", fm: "model:\n  id: gpt-4o\n  provider: openai\n  apiType: responses\n", provider: "openai", opts: "useResponsesApi=true"},
		{name: "input_schema_list", fm: "model: gpt-4o\ninputSchema:\n  properties:\n    - name: q\n      kind: string\n      required: true\n    - name: tone\n      kind: string\n      default: dry\n",
			required: "q"},
		{name: "input_schema_json_schema", fm: "model: gpt-4o\ninputSchema:\n  type: object\n  properties:\n    q: {type: string}\n    n: {type: integer}\n  required: [q, n]\n",
			required: "n,q"},
		{name: "apitype_embedding", fm: "model:\n  id: text-embedding-3-small\n  provider: openai\n  apiType: embedding\n",
			errs: []string{"model.apiType: apiType embedding is not supported: a Weft prompt is a chat model's conversation"}},
		{name: "apitype_image", fm: "model:\n  id: dall-e-3\n  provider: openai\n  apiType: image\n",
			errs: []string{"apiType image is not supported"}},
		{name: "inputs_and_input_schema", fm: "model: gpt-4o\ninputs:\n  q: {type: string}\ninputSchema:\n  properties: {q: {type: string}}\n",
			errs: []string{"give inputs or inputSchema, not both"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeProject(t, map[string]string{"prompts/p.prompty": "---\nname: p\ndescription: D\n" + tc.fm + tail})
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			reg, diags := project.Open(dir, project.Options{LookupEnv: lookup})
			got := lines(diags)
			for _, w := range append(append([]string(nil), tc.errs...), tc.warns...) {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in\n%s", w, got)
				}
			}
			if len(tc.errs) > 0 {
				if !diags.HasErrors() {
					t.Errorf("no error:\n%s", got)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatalf("errors:\n%s", got)
			}
			p, ok := reg.Prompt("p")
			if !ok {
				t.Fatal("no prompt p")
			}
			if tc.provider != "" || tc.model != "" {
				m, ok := reg.Model(p.Model)
				if !ok {
					t.Fatalf("model %q not defined", p.Model)
				}
				if tc.provider != "" && m.Provider != tc.provider {
					t.Errorf("provider %q, want %q", m.Provider, tc.provider)
				}
				if tc.model != "" && m.Model != tc.model {
					t.Errorf("model id %q, want %q", m.Model, tc.model)
				}
			}
			if tc.opts != "" {
				k, v, _ := strings.Cut(tc.opts, "=")
				if got := p.ModelOptions[k]; got == nil || strings.TrimSpace(strings.ToLower(strings.Trim(jsonText(got), `"`))) != v {
					t.Errorf("option %s = %v, want %s (options %v)", k, got, v, p.ModelOptions)
				}
				if _, leaked := p.ModelOptions["additionalProperties"]; leaked {
					t.Errorf("additionalProperties kept as an option: %v", p.ModelOptions)
				}
			}
			if tc.required != "" {
				if p.RequiredSchema == nil || strings.Join(p.RequiredSchema.Required, ",") != tc.required {
					t.Errorf("requiredSchema %+v, want required %s", p.RequiredSchema, tc.required)
				}
			}
		})
	}
}

// TestPromptyDescriptionOnlyForTools: a .prompty without description loads as a side prompt with a
// warning, and is an error once another prompt lists it as a tool.
func TestPromptyDescriptionOnlyForTools(t *testing.T) {
	side := map[string]string{
		"models/m.yaml":        "name: m\nprovider: test\n",
		"prompts/bare.prompty": "---\nname: bare\nmodel: m\n---\nsystem:\nS\n",
		"agents/a.yaml":        "{name: a, sideA: {prompt: bare}}\n",
	}
	_, diags := project.Open(writeProject(t, side), project.Options{})
	if diags.HasErrors() || !strings.Contains(lines(diags), "no description: add `description: <what this prompt does>` to the front matter if this prompt is exposed as a tool") {
		t.Errorf("side prompt without description:\n%s", lines(diags))
	}
	side["prompts/caller.prompty"] = "---\nname: caller\ndescription: D\nmodel: m\ntools: [bare]\n---\nsystem:\nS\n"
	_, diags = project.Open(writeProject(t, side), project.Options{})
	if !diags.HasErrors() || !strings.Contains(lines(diags), `prompt "bare" is listed as a tool but has no description`) {
		t.Errorf("tool prompt without description:\n%s", lines(diags))
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestPromptySampleOfAnotherType: a sample that does not match its input's declared type is a
// warning (a sample only fills previews), and the preview falls back to the default.
func TestPromptySampleOfAnotherType(t *testing.T) {
	dir := writeProject(t, map[string]string{
		"models/m.yaml":     "name: m\nprovider: test\n",
		"prompts/e.prompty": "---\nname: e\ndescription: D\nmodel: m\ninputs:\n  score: {type: integer, sample: high, default: 3}\n  answer: {type: string, sample: [a, b]}\n  q: {type: string, sample: ok}\n---\nsystem:\n{{score}} {{answer}} {{q}}\n",
	})
	reg, diags := project.Open(dir, project.Options{})
	got := lines(diags)
	if diags.HasErrors() {
		t.Fatal(got)
	}
	for _, w := range []string{"inputs.score.sample: the sample is not of type integer", "inputs.answer.sample: the sample is not of type string"} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in\n%s", w, got)
		}
	}
	p, _ := reg.Prompt("e")
	sa := p.Template.(interface{ SampleArgs() map[string]any }).SampleArgs()
	if jsonText(sa) != `{"q":"ok","score":3}` {
		t.Errorf("samples %s", jsonText(sa))
	}
}
