package weft_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// TestProviderBaseURL: the SDKs' standard variables point a built-in provider elsewhere (a local
// OpenAI-compatible server, a proxy), with the version path added when they give none.
func TestProviderBaseURL(t *testing.T) {
	cases := []struct {
		provider, env, value, want string
	}{
		{"openai", "", "", "https://api.openai.com/v1"},
		{"openai", "OPENAI_BASE_URL", "http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"},
		{"openai", "OPENAI_BASE_URL", "http://127.0.0.1:8080", "http://127.0.0.1:8080/v1"},
		{"anthropic", "ANTHROPIC_BASE_URL", "https://proxy.example/", "https://proxy.example/v1"},
		{"google", "GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9000", "http://127.0.0.1:9000/v1beta"},
		{"ollama", "OLLAMA_HOST", "127.0.0.1:11500", "http://127.0.0.1:11500/v1"},
		{"groq", "OPENAI_BASE_URL", "http://127.0.0.1:8080/v1", "https://api.groq.com/openai/v1"},
		{"openai", "OPENAI_BASE_URL", "  ", "https://api.openai.com/v1"},
		{"azure_openai", "AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com", "https://res.openai.azure.com"},
		{"azure_openai", "", "", ""},
	}
	for _, tc := range cases {
		lookup := func(k string) (string, bool) {
			if k == tc.env {
				return tc.value, true
			}
			return "", false
		}
		info, ok := weft.LookupProvider(tc.provider)
		if !ok {
			t.Fatalf("%s is not built in", tc.provider)
		}
		if got := info.BaseURL(lookup); got != tc.want {
			t.Errorf("%s with %s=%q: %s, want %s", tc.provider, tc.env, tc.value, got, tc.want)
		}
	}
}

// TestProviders: the catalog is sorted, its names unique, every entry names a wire, and
// ProviderKeyEnv answers from it.
func TestProviders(t *testing.T) {
	ps := weft.Providers()
	if len(ps) == 0 {
		t.Fatal("no built-in providers")
	}
	if !slices.IsSortedFunc(ps, func(a, b weft.ProviderInfo) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("Providers() is not sorted by name")
	}
	for i, p := range ps {
		if i > 0 && ps[i-1].Name == p.Name {
			t.Errorf("%s is listed twice", p.Name)
		}
		if p.Wire == "" {
			t.Errorf("%s has no wire", p.Name)
		}
		if key, ok := weft.ProviderKeyEnv(p.Name); !ok || key != p.KeyEnv {
			t.Errorf("ProviderKeyEnv(%s) = %q, %v; want %q, true", p.Name, key, ok, p.KeyEnv)
		}
	}
	ps[0].Name = "changed"
	if weft.Providers()[0].Name == "changed" {
		t.Error("Providers() shares its slice with the catalog")
	}
	if _, ok := weft.LookupProvider("nope"); ok {
		t.Error(`LookupProvider("nope") found a provider`)
	}
	if key, ok := weft.ProviderKeyEnv("google"); !ok || key != "GOOGLE_API_KEY" {
		t.Errorf("ProviderKeyEnv(google) = %q, %v", key, ok)
	}
}
