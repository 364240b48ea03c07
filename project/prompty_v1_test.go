package project_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-agents/weft/project"
)

func writeProject(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestPromptyV1Models: a v1 `model.configuration` becomes an implicit model (and, for a key in a
// variable of its own, an implicit provider) exactly as a v2 provider/connection does; an explicit
// Weft model wins; the same implicit model of two files is one model.
func TestPromptyV1Models(t *testing.T) {
	env := map[string]string{"AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com", "AZURE_OPENAI_API_KEY": "az-key",
		"CONTOSO_KEY": "c-key", "PHI_KEY": "p-key"}
	const body = "---\nname: %s\ndescription: D\nmodel:\n%s---\nsystem:\nS\n"
	files := map[string]string{
		"prompts/azure.prompty": strings.Replace(strings.Replace(body, "%s", "azure", 1), "%s",
			"  api: chat\n  configuration:\n    type: azure_openai\n    azure_endpoint: ${env:AZURE_OPENAI_ENDPOINT}\n    azure_deployment: gpt-4o\n    api_version: 2024-10-21\n    api_key: ${env:AZURE_OPENAI_API_KEY}\n  parameters:\n    max_tokens: 100\n", 1),
		"prompts/azure2.prompty": strings.Replace(strings.Replace(body, "%s", "azure2", 1), "%s",
			"  configuration:\n    type: azure_openai\n    azure_endpoint: ${env:AZURE_OPENAI_ENDPOINT}\n    azure_deployment: gpt-4o\n    api_version: 2024-10-21\n", 1),
		"prompts/openai.prompty": strings.Replace(strings.Replace(body, "%s", "openai", 1), "%s",
			"  configuration:\n    type: openai\n    name: gpt-4o-mini\n    api_key: ${env:CONTOSO_KEY}\n    organization: org-1\n", 1),
		"prompts/phi.prompty": strings.Replace(strings.Replace(body, "%s", "phi", 1), "%s",
			"  configuration:\n    type: serverless\n    endpoint: https://phi.eastus2.models.ai.azure.com\n    model: Phi-4\n    key: ${env:PHI_KEY}\n", 1),
		"prompts/explicit.prompty": "---\nname: explicit\ndescription: D\nmodel: mine\n---\nS\n",
		"prompts/literal.prompty": strings.Replace(strings.Replace(body, "%s", "literal", 1), "%s",
			"  configuration:\n    type: openai\n    name: gpt-4o\n    api_key: sk-written-in-the-file\n", 1),
		"models/mine.yaml": "name: mine\nprovider: openai\nmodel: gpt-4.1\n",
	}
	reg, diags := project.Open(writeProject(t, files), project.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if diags.HasErrors() {
		t.Fatalf("diagnostics:\n%s", lines(diags))
	}
	if w := lines(diags); !strings.Contains(w, "prompts/literal.prompty: model.connection.apiKey: a key written in the file is not used") || strings.Contains(w, "sk-written") {
		t.Errorf("warnings:\n%s", w)
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for _, c := range []struct{ prompt, model, want string }{
		{"azure", "gpt-4o", `{"name":"gpt-4o","provider":"azure_openai","model":"gpt-4o","capabilities":{},"providerOptions":{"apiVersion":"2024-10-21","baseUrl":"https://res.openai.azure.com"},"timeouts":{},"retry":{}}`},
		{"azure2", "gpt-4o", ""},
		{"openai", "gpt-4o-mini", `{"name":"gpt-4o-mini","provider":"openai:CONTOSO_KEY","model":"gpt-4o-mini","capabilities":{},"providerOptions":{"headers":{"OpenAI-Organization":"org-1"}},"timeouts":{},"retry":{}}`},
		{"phi", "Phi-4", `{"name":"Phi-4","provider":"openai-compatible:PHI_KEY","model":"Phi-4","capabilities":{},"providerOptions":{"baseUrl":"https://phi.eastus2.models.ai.azure.com"},"timeouts":{},"retry":{}}`},
		{"explicit", "mine", ""},
	} {
		p, _ := reg.Prompt(c.prompt)
		if p == nil || p.Model != c.model {
			t.Fatalf("prompt %s model %+v", c.prompt, p)
		}
		m, _ := reg.Model(c.model)
		if c.want != "" && js(m) != c.want {
			t.Errorf("%s model\n%s\nwant\n%s", c.prompt, js(m), c.want)
		}
	}
	if p, _ := reg.Prompt("azure"); p.ModelOptions["maxOutputTokens"] != 100 {
		t.Errorf("model options %v", p.ModelOptions)
	}
	if pd, ok := reg.Provider("openai:CONTOSO_KEY"); !ok || pd.Base != "openai" || pd.APIKeyEnv != "CONTOSO_KEY" {
		t.Errorf("provider %+v", pd)
	}
	if pd, ok := reg.Provider("openai-compatible:PHI_KEY"); !ok || pd.BaseURL != "https://phi.eastus2.models.ai.azure.com" {
		t.Errorf("provider %+v", pd)
	}
	for _, m := range reg.Models() {
		if strings.Contains(js(m), "az-key") || strings.Contains(js(m), "c-key") {
			t.Errorf("a key is in a model definition: %s", js(m))
		}
	}
}

// TestPromptyMissingFields: a .prompty without description or model says what to add to the
// front matter.
func TestPromptyMissingFields(t *testing.T) {
	dir := writeProject(t, map[string]string{"prompts/bare.prompty": "---\nname: bare\n---\nsystem:\nS\n"})
	_, diags := project.Open(dir, project.Options{})
	got := lines(diags)
	for _, want := range []string{
		"prompts/bare.prompty: toolDescription: no description: add `description: <what this prompt does>` to the front matter if this prompt is exposed as a tool",
		"prompts/bare.prompty: model: model is required: name a defined model (`model: NAME`) or give `model.configuration`",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

// TestPromptyHistoryLoopIncludesChat: a chat-history loop (or a thread input placed by value) makes the prompt see the whole history
// unless the front matter says includeChat itself.
func TestPromptyHistoryLoopIncludesChat(t *testing.T) {
	loop := "{% for item in chat_history %}\n{{item.role}}:\n{{item.content}}\n{% endfor %}\n"
	dir := writeProject(t, map[string]string{
		"models/m.yaml":         "name: m\nprovider: test\n",
		"prompts/loop.prompty":  "---\ndescription: D\nmodel: m\ninputs:\n  chat_history: {type: list, is_chat_history: true}\n---\nsystem:\nS\n" + loop,
		"prompts/off.prompty":   "---\ndescription: D\nmodel: m\nincludeChat: false\ninputs:\n  chat_history: {kind: thread}\n---\nsystem:\nS\n" + loop,
		"prompts/plain.prompty": "---\ndescription: D\nmodel: m\ninputs:\n  chat_history: {type: list}\n---\nsystem:\nS\n" + loop,
		"prompts/bare.prompty":  "---\ndescription: D\nmodel: m\n---\nsystem:\nS\n" + loop,
		"prompts/value.prompty": "---\ndescription: D\nmodel: m\ninputs:\n  c: {kind: thread}\n---\nsystem:\nS\n{{c}}\n",
		"prompts/text.prompty":  "---\ndescription: D\nmodel: m\ninputs:\n  xs: {type: list}\n---\nsystem:\nS\n{% for x in xs %}{{x}}{% endfor %}\n",
	})
	reg, diags := project.Open(dir, project.Options{})
	if diags.HasErrors() {
		t.Fatal(lines(diags))
	}
	// A loop over a list writing each item's role is the history whether or not the input says
	// so (Prompty makes messages of it); a thread placed by value brings the history too.
	for name, want := range map[string]bool{"loop": true, "off": false, "plain": true, "bare": true, "value": true, "text": false} {
		if p, _ := reg.Prompt(name); p.IncludeChat != want {
			t.Errorf("%s: includeChat %v", name, p.IncludeChat)
		}
	}
}
