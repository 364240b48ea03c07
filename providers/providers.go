// Package providers builds a model provider's adapter from its name, as the weft CLI does: a
// built-in provider of weft.Providers on its wire (OpenAI, Azure OpenAI, Anthropic, Gemini, the
// model-script provider), or a custom provider (providers/*.yaml) on its built-in base. It is the
// one package that knows every adapter; the root only describes them.
package providers

import (
	"os"
	"strings"
	"sync"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/anthropic"
	"github.com/weft-agents/weft/gemini"
	"github.com/weft-agents/weft/openai"
	"github.com/weft-agents/weft/scripted"
)

// Options configures New and Cache.
type Options struct {
	// Registry holds the custom providers; nil knows only the built-in ones.
	Registry *weft.Registry
	// LookupEnv reads the process environment: the SDKs' base-URL variables (OPENAI_BASE_URL, …),
	// ${env:NAME} in custom providers' header values, OPENAI_API_VERSION and AZURE_OPENAI_AD_TOKEN.
	// Nil is os.LookupEnv. API keys are not read here: the engine resolves them per call.
	LookupEnv func(string) (string, bool)
}

// New builds the adapter of the provider called name. Its API root is, in order: a custom
// provider's baseUrl, the standard variable of the built-in provider's SDK (weft.ProviderInfo's
// BaseURL), its public endpoint; a model's providerOptions.baseUrl still wins at call time. The
// test provider answers without a script (engine.Options.Override takes one). An unknown name is
// an ENotFound error.
func New(name string, o Options) (weft.Provider, error) {
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	info, ok := weft.LookupProvider(name)
	baseURL := info.BaseURL(lookup)
	var headers map[string]string
	if !ok && o.Registry != nil {
		if cp, custom := o.Registry.Provider(name); custom {
			info, ok = weft.LookupProvider(cp.Base)
			if baseURL = cp.BaseURL; baseURL == "" {
				baseURL = info.BaseURL(lookup)
			}
			headers = expandHeaders(cp.Headers, lookup)
		}
	}
	if !ok {
		return nil, weft.Errorf(weft.ENotFound, "provider %q is neither built in (%s) nor defined in providers/", name, builtinNames())
	}
	switch info.Wire {
	case weft.WireAnthropic:
		return anthropic.New(anthropic.Options{BaseURL: baseURL, Headers: headers}), nil
	case weft.WireGemini:
		return gemini.New(gemini.Options{BaseURL: baseURL, Headers: headers}), nil
	case weft.WireOpenAI:
		return openai.New(openai.Options{BaseURL: baseURL, Headers: headers, Name: info.Name}), nil
	case weft.WireAzureOpenAI:
		return openai.NewAzure(azureOptions(o.Registry, name, baseURL, headers, lookup)), nil
	case weft.WireScripted:
		return scripted.New(nil), nil
	}
	return nil, weft.Errorf(weft.EInternal, "provider %q: no adapter speaks wire %q", name, info.Wire)
}

// Cache returns a function fit for engine.Options.Providers: New for a model's provider, built once
// per provider name and shared by every model naming it. It is safe for concurrent use.
func Cache(o Options) func(m *weft.Model) (weft.Provider, error) {
	var mu sync.Mutex
	cache := map[string]weft.Provider{}
	return func(m *weft.Model) (weft.Provider, error) {
		mu.Lock()
		defer mu.Unlock()
		if p, ok := cache[m.Provider]; ok {
			return p, nil
		}
		p, err := New(m.Provider, o)
		if err != nil {
			return nil, err
		}
		cache[m.Provider] = p
		return p, nil
	}
}

// azureOptions configures the azure_openai adapter: the endpoint (a custom provider's baseUrl,
// else AZURE_OPENAI_ENDPOINT; a model's providerOptions.baseUrl wins over both), the api-version (a
// custom provider's options.apiVersion, else OPENAI_API_VERSION, else the adapter's default; a
// model's providerOptions.apiVersion wins) and, for requests without AZURE_OPENAI_API_KEY, the
// Microsoft Entra ID token of AZURE_OPENAI_AD_TOKEN.
func azureOptions(reg *weft.Registry, name, endpoint string, headers map[string]string, lookup func(string) (string, bool)) openai.AzureOptions {
	o := openai.AzureOptions{Endpoint: endpoint, Headers: headers, Name: name}
	if v, ok := lookup("OPENAI_API_VERSION"); ok {
		o.APIVersion = strings.TrimSpace(v)
	}
	if reg != nil {
		if cp, ok := reg.Provider(name); ok {
			if v, ok := cp.Options["apiVersion"].(string); ok && v != "" {
				o.APIVersion = v
			}
		}
	}
	if v, ok := lookup("AZURE_OPENAI_AD_TOKEN"); ok && strings.TrimSpace(v) != "" {
		o.TokenCredential = openai.StaticToken(strings.TrimSpace(v))
	}
	return o
}

// expandHeaders resolves ${env:NAME} in custom-provider header values from the process
// environment, as provider keys are.
func expandHeaders(h map[string]string, lookup func(string) (string, bool)) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		// An unset variable without a default expands to nothing; the provider's error names the
		// header's effect (an authentication failure) better than a start-up error would.
		out[k], _ = weft.ExpandEnv(v, func(name string) (string, bool, error) {
			val, ok := lookup(name)
			return val, ok, nil
		})
	}
	return out
}

// builtinNames lists the built-in providers' names for an error message.
func builtinNames() string {
	var names []string
	for _, p := range weft.Providers() {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}
