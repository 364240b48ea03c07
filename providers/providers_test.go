package providers_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/anthropic"
	"github.com/weft-agents/weft/gemini"
	"github.com/weft-agents/weft/openai"
	"github.com/weft-agents/weft/providers"
	"github.com/weft-agents/weft/scripted"
)

// TestNewBuiltins: every built-in provider builds, on the adapter of its wire.
func TestNewBuiltins(t *testing.T) {
	for _, info := range weft.Providers() {
		p, err := providers.New(info.Name, providers.Options{LookupEnv: noEnv})
		if err != nil {
			t.Errorf("%s: %v", info.Name, err)
			continue
		}
		var ok bool
		switch info.Wire {
		case weft.WireOpenAI, weft.WireAzureOpenAI:
			_, ok = p.(*openai.Provider)
		case weft.WireAnthropic:
			_, ok = p.(*anthropic.Provider)
		case weft.WireGemini:
			_, ok = p.(*gemini.Provider)
		case weft.WireScripted:
			_, ok = p.(*scripted.Provider)
		}
		if !ok {
			t.Errorf("%s (wire %s) built a %T", info.Name, info.Wire, p)
		}
	}
}

// TestNewUnknown: a name neither built in nor defined is ENotFound, and the message names it.
func TestNewUnknown(t *testing.T) {
	reg := weft.NewRegistry()
	reg.AddProvider(&weft.ProviderDef{Name: "mine", Base: "openai", BaseURL: "http://127.0.0.1:1/v1"})
	_, err := providers.New("nope", providers.Options{Registry: reg, LookupEnv: noEnv})
	var we *weft.Error
	if !errors.As(err, &we) || we.Code != weft.ENotFound || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("New(nope) = %v, want ENotFound naming it", err)
	}
	if _, err := providers.New("mine", providers.Options{LookupEnv: noEnv}); err == nil {
		t.Error("a custom provider built without the registry that defines it")
	}
}

// TestNewReachesItsAPI: the base URL comes from the SDK's variable for a built-in provider and from
// baseUrl for a custom one, whose headers have ${env:NAME} expanded.
func TestNewReachesItsAPI(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
		http.Error(w, `{"error":{"message":"no"}}`, http.StatusBadRequest)
	}))
	defer srv.Close()
	reg := weft.NewRegistry()
	reg.AddProvider(&weft.ProviderDef{Name: "team", Base: "anthropic", BaseURL: srv.URL + "/team/v1",
		Headers: map[string]string{"X-Team": "${env:TEAM}"}})
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "GOOGLE_GEMINI_BASE_URL": srv.URL, "TEAM": "blue"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct{ provider, path, header string }{
		{"openai", "/v1/", ""},
		{"google", "/v1beta/", ""},
		{"team", "/team/v1/messages", "blue"},
	} {
		mu.Lock()
		got = nil
		mu.Unlock()
		p, err := providers.New(tc.provider, providers.Options{Registry: reg, LookupEnv: lookup})
		if err != nil {
			t.Fatalf("%s: %v", tc.provider, err)
		}
		req := &weft.Request{Model: &weft.Model{Name: "m", Provider: tc.provider, Model: "x"}, APIKey: "k",
			Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "hi"}}}
		if _, err := p.Call(context.Background(), req, nil); err == nil {
			t.Errorf("%s: the call succeeded against a server that refuses", tc.provider)
		}
		mu.Lock()
		if len(got) == 0 {
			t.Errorf("%s: no request reached the server", tc.provider)
		} else if r := got[0]; !strings.HasPrefix(r.URL.Path, tc.path) || r.Header.Get("X-Team") != tc.header {
			t.Errorf("%s: request to %s with X-Team %q; want under %s with %q", tc.provider, r.URL.Path, r.Header.Get("X-Team"), tc.path, tc.header)
		}
		mu.Unlock()
	}
}

// TestCache: one adapter per provider name, shared by the models naming it.
func TestCache(t *testing.T) {
	get := providers.Cache(providers.Options{LookupEnv: noEnv})
	a, err := get(&weft.Model{Name: "a", Provider: "openai"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := get(&weft.Model{Name: "b", Provider: "openai"})
	c, _ := get(&weft.Model{Name: "c", Provider: "groq"})
	if a != b || a == c {
		t.Errorf("Cache: openai models share %v, groq differs %v", a == b, a != c)
	}
	if _, err := get(&weft.Model{Name: "d", Provider: "nope"}); err == nil {
		t.Error("Cache built an unknown provider")
	}
}

func noEnv(string) (string, bool) { return "", false }
