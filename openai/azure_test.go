package openai_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/openai"
	"github.com/weft-agents/weft/providertest"
)

// azureFake is the chat-completions fake plus Azure OpenAI's request shape: the deployment in the
// path, the api-version query parameter and the key in the api-key header (never as a bearer).
type azureFake struct{ fake }

func (azureFake) CheckRequest(t *testing.T, r *http.Request) {
	t.Helper()
	if !strings.HasSuffix(r.URL.Path, "/openai/deployments/fake-model-1/chat/completions") &&
		!strings.HasSuffix(r.URL.Path, "/openai/deployments/fake-model-2/chat/completions") {
		t.Errorf("path %q, want …/openai/deployments/{deployment}/chat/completions", r.URL.Path)
	}
	if v := r.URL.Query().Get("api-version"); v != openai.DefaultAzureAPIVersion {
		t.Errorf("api-version %q, want %q", v, openai.DefaultAzureAPIVersion)
	}
	if k := r.Header.Get("Api-Key"); k != providertest.APIKey {
		t.Errorf("api-key header %q", k)
	}
	if a := r.Header.Get("Authorization"); a != "" {
		t.Errorf("Authorization header sent to Azure with a key: %q", a)
	}
}

func TestAzureConformance(t *testing.T) {
	providertest.Run(t, func(baseURL string) weft.Provider {
		return openai.NewAzure(openai.AzureOptions{Endpoint: baseURL, HTTPClient: &http.Client{}})
	}, azureFake{})
}

func TestAzureEngineOverTheWire(t *testing.T) {
	providertest.RunEngine(t, providertest.Target{Provider: "azure_openai", KeyVar: "AZURE_OPENAI_API_KEY"}, func(baseURL string) weft.Provider {
		return openai.NewAzure(openai.AzureOptions{Endpoint: baseURL})
	}, azureFake{})
}

// TestAzureRequestShape: the model's providerOptions choose the endpoint and api-version (kept out
// of the body), an Entra ID token goes as a bearer when there is no key, and a request without
// key, token or endpoint fails with a message naming what to set.
func TestAzureRequestShape(t *testing.T) {
	var got *http.Request
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := new(strings.Builder)
		buf := make([]byte, 1024)
		for {
			n, err := r.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got, body = r, b.String()
		ct, out := fake{}.Encode(providertest.Reply{Model: "gpt-4o", Chunks: []weft.Chunk{{Text: "hi"}}, FinishReason: "stop"}, false)
		w.Header().Set("Content-Type", ct)
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	off := false
	tests := []struct {
		name     string
		opts     openai.AzureOptions
		model    map[string]any
		key      string
		wantPath string
		wantVer  string
		wantAuth string
		wantErr  string
	}{
		{name: "provider_options_override", opts: openai.AzureOptions{Endpoint: "http://127.0.0.1:1"},
			model: map[string]any{"baseUrl": srv.URL, "apiVersion": "2025-01-01-preview", "temperature": 0.5}, key: "k-1",
			wantPath: "/openai/deployments/gpt-4o/chat/completions", wantVer: "2025-01-01-preview"},
		{name: "entra_token", opts: openai.AzureOptions{Endpoint: srv.URL + "/", TokenCredential: openai.StaticToken("tok-1")},
			wantPath: "/openai/deployments/gpt-4o/chat/completions", wantVer: openai.DefaultAzureAPIVersion, wantAuth: "Bearer tok-1"},
		{name: "no_credentials", opts: openai.AzureOptions{Endpoint: srv.URL}, wantErr: "set AZURE_OPENAI_API_KEY"},
		{name: "no_endpoint", key: "k-1", wantErr: "AZURE_OPENAI_ENDPOINT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, body = nil, ""
			p := openai.NewAzure(tc.opts)
			req := &weft.Request{Model: &weft.Model{Name: "m", Provider: "azure_openai", Model: "gpt-4o", ProviderOptions: tc.model,
				Capabilities: weft.Capabilities{SupportsStreaming: &off}}, Options: tc.model, APIKey: tc.key,
				Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "hi"}}}
			resp, err := p.Call(context.Background(), req, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "hi" || got == nil || got.URL.Path != tc.wantPath || got.URL.Query().Get("api-version") != tc.wantVer {
				t.Fatalf("resp %q, request %v", resp.Text, got.URL)
			}
			if a := got.Header.Get("Authorization"); a != tc.wantAuth {
				t.Errorf("Authorization %q, want %q", a, tc.wantAuth)
			}
			if tc.key != "" && got.Header.Get("Api-Key") != tc.key {
				t.Errorf("api-key %q", got.Header.Get("Api-Key"))
			}
			if strings.Contains(body, "apiVersion") || strings.Contains(body, "baseUrl") || !strings.Contains(body, `"model":"gpt-4o"`) {
				t.Errorf("body %s", body)
			}
		})
	}
}

// TestAzureMaxTokensByAPIVersion: Azure api-versions before 2024-09-01-preview refuse
// max_completion_tokens, so a model's maxOutputTokens goes as max_tokens to them and as
// max_completion_tokens to later ones.
func TestAzureMaxTokensByAPIVersion(t *testing.T) {
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		ct, out := fake{}.Encode(providertest.Reply{Model: "gpt-4o", Chunks: []weft.Chunk{{Text: "hi"}}, FinishReason: "stop"}, false)
		w.Header().Set("Content-Type", ct)
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	off := false
	for _, tc := range []struct {
		version, want, not string
	}{
		{"2024-02-01", `"max_tokens":300`, "max_completion_tokens"},
		{"2024-06-01", `"max_tokens":300`, "max_completion_tokens"},
		{"2024-07-01-preview", `"max_tokens":300`, "max_completion_tokens"},
		{"2024-08-01-preview", `"max_tokens":300`, "max_completion_tokens"},
		{"2024-09-01-preview", `"max_completion_tokens":300`, "max_tokens"},
		{"2024-10-21", `"max_completion_tokens":300`, "max_tokens"},
		{"2025-04-01-preview", `"max_completion_tokens":300`, "max_tokens"},
		{"", `"max_completion_tokens":300`, "max_tokens"}, // the default, 2024-10-21
	} {
		t.Run(tc.version, func(t *testing.T) {
			opts := map[string]any{"baseUrl": srv.URL}
			if tc.version != "" {
				opts["apiVersion"] = tc.version
			}
			req := &weft.Request{Model: &weft.Model{Name: "m", Provider: "azure_openai", Model: "gpt-4o", ProviderOptions: opts,
				Capabilities: weft.Capabilities{SupportsStreaming: &off}}, Options: map[string]any{"maxOutputTokens": 300}, APIKey: "k-1",
				Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "hi"}}}
			if _, err := openai.NewAzure(openai.AzureOptions{}).Call(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(body, tc.want) || strings.Contains(body, `"`+tc.not+`"`) {
				t.Errorf("api-version %s: body %s, want %s and no %s", tc.version, body, tc.want, tc.not)
			}
		})
	}
}
