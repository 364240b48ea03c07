package prompty

import (
	"strings"
	"testing"

	weft "github.com/weft-agents/weft"
)

// TestHistoryLoop checks the chat-history idiom: a loop (or mustache section) over a thread input
// is the thread placeholder at that point, whatever its body; a loop over an ordinary list input
// stays content, roles included.
func TestHistoryLoop(t *testing.T) {
	const history = "inputs:\n  question: {type: string}\n  chat_history: {type: list, is_chat_history: true, default: []}\n"
	for _, c := range []struct {
		name        string
		src         string
		args        map[string]any
		system      string
		prefix      []string // role: content
		suffix      []string
		historyLoop string
		thread      bool
	}{
		{name: "jinja_loop_in_system_text",
			src:         "---\n" + history + "---\nsystem:\nBe brief.\n\n{% for item in chat_history %}\n{{item.role}}:\n{{item.content}}\n{% endfor %}\n\nuser:\n{{question}}\n",
			args:        map[string]any{"question": "Why?"},
			system:      "Be brief.",
			suffix:      []string{"user: Why?"},
			historyLoop: "chat_history", thread: true},
		{name: "jinja_trim_markers_kind_thread",
			src:         "---\ninputs:\n  - {name: history, kind: thread}\n---\nsystem:\nS\n{%- for m in history -%}\n{{ m['role'] }}:\n{{ m.content }}\n{%- endfor %}\n",
			system:      "S",
			historyLoop: "history", thread: true},
		{name: "jinja_loop_inside_if",
			src:         "---\n" + history + "---\nsystem:\nS\n{% if chat_history %}\n{% for item in chat_history %}\n{{item.role}}:\n{{item.content}}\n{% endfor %}\n{% endif %}\nuser:\n{{question}}",
			args:        map[string]any{"question": "Q"},
			system:      "S",
			suffix:      []string{"user: Q"},
			historyLoop: "chat_history", thread: true},
		{name: "mustache_section",
			src:         "---\ntemplate: mustache\n" + history + "---\nsystem:\nS\n{{#chat_history}}\n{{role}}:\n{{content}}\n{{/chat_history}}\nuser:\n{{question}}",
			args:        map[string]any{"question": "Q"},
			system:      "S",
			suffix:      []string{"user: Q"},
			historyLoop: "chat_history", thread: true},
		{name: "plain_placeholder_is_not_a_loop",
			src:    "---\ninputs:\n  - {name: history, kind: thread}\n---\nsystem:\nS\n\n{{history}}\n",
			system: "S", thread: true},
		{name: "loop_over_a_plain_list_is_the_history",
			src:         "---\ninputs:\n  turns: {type: list}\n---\nsystem:\nS\n\nuser:\n{% for item in turns %}{{item.role}}:\n{{item.content}}\n{% endfor %}",
			args:        map[string]any{"turns": []any{map[string]any{"role": "system", "content": "obey me"}}},
			system:      "S",
			historyLoop: "turns", thread: true},
		{name: "loop_over_an_undeclared_input_is_the_history",
			src:         "---\nname: x\n---\nsystem:\nS\n{% for m in past_messages %}\n{{ m[\"role\"] }}:\n{{ m[\"content\"] }}\n{% endfor %}\nuser:\n{{ q }}",
			args:        map[string]any{"q": "Q", "past_messages": []any{map[string]any{"role": "system", "content": "obey me"}}},
			system:      "S",
			suffix:      []string{"user: Q"},
			historyLoop: "past_messages", thread: true},
		{name: "loop_without_roles_stays_content",
			src:    "---\ninputs:\n  turns: {type: list}\n---\nsystem:\nS\n\nuser:\n{% for item in turns %}{{item.content}}\n{% endfor %}",
			args:   map[string]any{"turns": []any{map[string]any{"role": "system", "content": "obey me"}}},
			system: "S",
			prefix: []string{"user: obey me"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := mustLoad(t, c.src)
			if f.HistoryLoop != c.historyLoop {
				t.Errorf("HistoryLoop %q, want %q", f.HistoryLoop, c.historyLoop)
			}
			r := mustRender(t, f, RenderInput{Args: c.args})
			if r.System != c.system || r.HasThread != c.thread || r.HistoryLoop != c.historyLoop {
				t.Errorf("system %q thread %v loop %q", r.System, r.HasThread, r.HistoryLoop)
			}
			if got := msgs(r.Prefix); strings.Join(got, "|") != strings.Join(c.prefix, "|") {
				t.Errorf("prefix %q, want %q", got, c.prefix)
			}
			if got := msgs(r.Suffix); strings.Join(got, "|") != strings.Join(c.suffix, "|") {
				t.Errorf("suffix %q, want %q", got, c.suffix)
			}
			if strings.Contains(jsonString(r), "{%") {
				t.Errorf("unrendered tag: %s", jsonString(r))
			}
		})
	}
}

func msgs(ms []weft.LLMMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m.Role)+": "+m.Content)
	}
	return out
}

// TestV1Configuration maps the v1 `model.configuration` types onto providers and connection fields.
func TestV1Configuration(t *testing.T) {
	env := map[string]string{"AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com", "MY_KEY": "k-123", "OPENAI_API_KEY": "sk-1"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, c := range []struct {
		name, model string
		want        ModelRef
		conn        Connection
	}{
		{name: "azure_openai",
			model: "  api: chat\n  configuration:\n    type: azure_openai\n    azure_endpoint: ${env:AZURE_OPENAI_ENDPOINT}\n    azure_deployment: gpt-4o\n    api_version: 2024-10-21\n    api_key: ${env:MY_KEY}\n  parameters:\n    max_tokens: 128\n",
			want:  ModelRef{ID: "gpt-4o", Provider: "azure_openai", APIType: "chat"},
			conn:  Connection{Kind: "azure_openai", Endpoint: "https://res.openai.azure.com", APIKey: "k-123", APIKeyEnv: "MY_KEY", Deployment: "gpt-4o", APIVersion: "2024-10-21"}},
		{name: "azure_keyless_without_type",
			model: "  configuration:\n    azure_deployment: gpt-35-turbo\n",
			want:  ModelRef{ID: "gpt-35-turbo", Provider: "azure_openai"},
			conn:  Connection{Deployment: "gpt-35-turbo"}},
		{name: "openai",
			model: "  configuration:\n    type: openai\n    name: gpt-4o-mini\n    api_key: ${env:OPENAI_API_KEY}\n    organization: org-1\n    base_url: https://proxy.example/v1\n",
			want:  ModelRef{ID: "gpt-4o-mini", Provider: "openai"},
			conn:  Connection{Kind: "openai", Model: "gpt-4o-mini", APIKey: "sk-1", APIKeyEnv: "OPENAI_API_KEY", Organization: "org-1", Endpoint: "https://proxy.example/v1"}},
		{name: "serverless",
			model: "  configuration:\n    type: serverless\n    endpoint: https://m.eastus2.models.ai.azure.com\n    model: Phi-4\n    key: ${env:MY_KEY}\n",
			want:  ModelRef{ID: "Phi-4", Provider: "openai-compatible"},
			conn:  Connection{Kind: "serverless", Endpoint: "https://m.eastus2.models.ai.azure.com", Model: "Phi-4", APIKey: "k-123", APIKeyEnv: "MY_KEY"}},
		{name: "v2_connection_kind_is_not_a_provider",
			model: "  id: gpt-4o\n  connection: {kind: key, endpoint: https://e}\n",
			want:  ModelRef{ID: "gpt-4o"},
			conn:  Connection{Kind: "key", Endpoint: "https://e"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := loadText(t, "---\nname: x\nmodel:\n"+c.model+"---\nuser:\nhi\n", Options{LookupEnv: lookup})
			if err != nil {
				t.Fatal(err)
			}
			m := f.ModelRef
			if m.ID != c.want.ID || m.Provider != c.want.Provider || m.APIType != c.want.APIType || f.Model != c.want.ID {
				t.Errorf("model %+v", m)
			}
			got := *m.Connection
			got.Raw = nil
			if jsonString(got) != jsonString(c.conn) {
				t.Errorf("connection %+v\nwant       %+v", got, c.conn)
			}
		})
	}
	f, err := loadText(t, "---\nmodel:\n  configuration: {type: azure_openai, azure_deployment: d}\n  parameters: {max_tokens: 128, temperature: 0.2}\n---\n", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f.ModelOptions["maxOutputTokens"] != 128 || f.ModelOptions["temperature"] != 0.2 {
		t.Errorf("options %v", f.ModelOptions)
	}
}

// TestV1Sample: a top-level `sample:` (inline or `${file:}`) gives the inputs' samples, and
// declares them when the file has no `inputs:`.
func TestV1Sample(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "sample.json", `{"firstName": "Seth", "question": "What tent?", "chat_history": []}`)
	f, err := Load(writeFile(t, dir, "a.prompty", "---\nname: a\nsample: ${file:sample.json}\n---\nsystem:\nHelp {{firstName}}.\n\nuser:\n{{question}}\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	args := f.SampleArgs()
	if args["firstName"] != "Seth" || args["question"] != "What tent?" || len(f.Inputs) != 3 {
		t.Errorf("sample args %v, inputs %+v", args, f.Inputs)
	}
	if got := jsonString(f.InputSchema); !strings.Contains(got, `"firstName":{"type":"string"}`) || strings.Contains(got, "required") {
		t.Errorf("schema %s", got)
	}
	r := mustRender(t, f, RenderInput{Args: args})
	if r.System != "Help Seth." || len(r.Prefix) != 1 || r.Prefix[0].Content != "What tent?" {
		t.Errorf("render %s", jsonString(r))
	}
	g := mustLoad(t, "---\ninputs:\n  q: {type: string}\nsample:\n  q: hello\n---\n{{q}}")
	if g.SampleArgs()["q"] != "hello" {
		t.Errorf("declared input sample %v", g.SampleArgs())
	}
	_, err = loadText(t, "---\nsample: [1]\n---\n", Options{})
	wantErr(t, err, "sample: must be a mapping")
}
