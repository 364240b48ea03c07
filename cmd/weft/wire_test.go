package main

import "testing"

// TestDefaultBaseURL: the SDKs' standard variables point a built-in provider elsewhere (a local
// OpenAI-compatible server, a proxy), with the version path added when they give none.
func TestDefaultBaseURL(t *testing.T) {
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
	}
	for _, tc := range cases {
		lookup := func(k string) (string, bool) {
			if k == tc.env {
				return tc.value, true
			}
			return "", false
		}
		if got := defaultBaseURL(tc.provider, lookup); got != tc.want {
			t.Errorf("%s with %s=%q: %s, want %s", tc.provider, tc.env, tc.value, got, tc.want)
		}
	}
}
