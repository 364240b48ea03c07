package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/anthropic"
	"github.com/weft-agents/weft/gemini"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/openai"
	"github.com/weft-agents/weft/postgres"
	"github.com/weft-agents/weft/project"
	"github.com/weft-agents/weft/scripted"
)

// loadProject loads and validates the definitions; invalid ones exit 3 with every problem listed.
func loadProject(dir string) (*weft.Registry, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, exit(exitUsage, fmt.Errorf("cannot read the definitions directory %s: %w", dir, unwrapPath(err)))
	}
	reg, diags := project.Open(dir, project.Options{})
	if diags.HasErrors() {
		return nil, exit(exitDefinitions, diags.Err())
	}
	return reg, nil
}

// openStore opens the store a DSN names: ":memory:" (the default for run) keeps everything in
// process memory.
func openStore(ctx context.Context, dsn string, log *slog.Logger, now func() time.Time) (weft.Store, error) {
	switch {
	case dsn == "" || dsn == ":memory:":
		return memstore.New(memstore.Options{Now: now})
	case postgres.IsURL(dsn):
		return openPostgres(ctx, dsn, log, now)
	}
	return openSQLite(ctx, dsn, log, now)
}

// redactDSN is a database URL fit to print: its password (in the user info or a password
// parameter) replaced by "redacted".
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		if i := strings.Index(dsn, "@"); i > 0 {
			if j := strings.Index(dsn, "://"); j > 0 && j < i {
				return dsn[:j+3] + "…" + dsn[i:]
			}
		}
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "redacted")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "redacted")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// defaultBaseURLs are the built-in providers' API roots, version included.
var defaultBaseURLs = map[string]string{
	"openai":     "https://api.openai.com/v1",
	"anthropic":  "https://api.anthropic.com/v1",
	"google":     "https://generativelanguage.googleapis.com/v1beta",
	"openrouter": "https://openrouter.ai/api/v1",
	"groq":       "https://api.groq.com/openai/v1",
	"xai":        "https://api.x.ai/v1",
	"deepinfra":  "https://api.deepinfra.com/v1/openai",
	"cerebras":   "https://api.cerebras.ai/v1",
	"ollama":     "http://localhost:11434/v1",
}

// baseURLEnv names, per built-in provider, the environment variable its official SDK reads for
// its API root, and the version path Weft's root includes when the variable's value has no path.
var baseURLEnv = map[string]struct{ name, version string }{
	"openai":     {"OPENAI_BASE_URL", "/v1"},
	"anthropic":  {"ANTHROPIC_BASE_URL", "/v1"},
	"google":     {"GOOGLE_GEMINI_BASE_URL", "/v1beta"},
	"openrouter": {"OPENROUTER_BASE_URL", "/api/v1"},
	"ollama":     {"OLLAMA_HOST", "/v1"},
	// Azure OpenAI's endpoint is the resource root; openai-go adds /openai/deployments/….
	"azure_openai": {"AZURE_OPENAI_ENDPOINT", ""},
}

// defaultBaseURL is a built-in provider's API root: the SDKs' standard environment variable when
// set (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, …), else the public endpoint. An explicit baseUrl (a
// model's providerOptions, a providers/*.yaml file) wins over both.
func defaultBaseURL(provider string, lookup func(string) (string, bool)) string {
	e, ok := baseURLEnv[provider]
	if !ok {
		return defaultBaseURLs[provider]
	}
	v, ok := lookup(e.name)
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return defaultBaseURLs[provider]
	}
	if !strings.Contains(v, "://") {
		v = "http://" + v // OLLAMA_HOST is host:port
	}
	if u, err := url.Parse(v); err == nil && (u.Path == "" || u.Path == "/") && e.version != "" {
		v = strings.TrimSuffix(v, "/") + e.version
	}
	return v
}

// providers resolves a model's provider to an adapter, one per provider name: the OpenAI wire for
// openai, openrouter, groq, xai, deepinfra, cerebras, ollama and openai-compatible servers and, with
// openai-go's Azure support, azure_openai; the
// Anthropic messages API, Gemini, custom providers (providers/*.yaml) on their base, and the test
// provider.
func providers(reg *weft.Registry, test weft.Provider) func(m *weft.Model) (weft.Provider, error) {
	var mu sync.Mutex
	cache := map[string]weft.Provider{}
	return func(m *weft.Model) (weft.Provider, error) {
		mu.Lock()
		defer mu.Unlock()
		if p, ok := cache[m.Provider]; ok {
			return p, nil
		}
		name, base, baseURL := m.Provider, m.Provider, defaultBaseURL(m.Provider, os.LookupEnv)
		var headers map[string]string
		if cp, ok := reg.Provider(name); ok {
			base = cp.Base
			if baseURL = cp.BaseURL; baseURL == "" {
				baseURL = defaultBaseURL(base, os.LookupEnv)
			}
			headers = expandHeaders(cp.Headers)
		}
		var p weft.Provider
		switch base {
		case "test":
			p = test
		case "anthropic":
			p = anthropic.New(anthropic.Options{BaseURL: baseURL, Headers: headers})
		case "google":
			p = gemini.New(gemini.Options{BaseURL: baseURL, Headers: headers})
		case "openai", "openrouter", "groq", "xai", "deepinfra", "cerebras", "ollama", "openai-compatible":
			p = openai.New(openai.Options{BaseURL: baseURL, Headers: headers, Name: base})
		case "azure_openai":
			p = openai.NewAzure(azureOptions(reg, name, baseURL, headers, os.LookupEnv))
		default:
			return nil, fmt.Errorf("provider %q is not available in this version of Weft; run with --model-script FILE", m.Provider)
		}
		cache[name] = p
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
	if cp, ok := reg.Provider(name); ok {
		if v, ok := cp.Options["apiVersion"].(string); ok && v != "" {
			o.APIVersion = v
		}
	}
	if v, ok := lookup("AZURE_OPENAI_AD_TOKEN"); ok && strings.TrimSpace(v) != "" {
		o.TokenCredential = openai.StaticToken(strings.TrimSpace(v))
	}
	return o
}

// expandHeaders resolves ${env:NAME} in custom-provider header values from the process
// environment, as provider keys are.
func expandHeaders(h map[string]string) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		// An unset variable without a default expands to nothing; the provider's error names the
		// header's effect (an authentication failure) better than a start-up error would.
		out[k], _ = weft.ExpandEnv(v, func(name string) (string, bool, error) {
			val, ok := os.LookupEnv(name)
			return val, ok, nil
		})
	}
	return out
}

// loadScript reads a model script; an unreadable or invalid file is a usage error.
func loadScript(path string) (*scripted.Provider, error) {
	if path == "" {
		return nil, nil
	}
	s, err := scripted.Load(path)
	if err != nil {
		return nil, exit(exitUsage, err)
	}
	return scripted.New(s), nil
}

func newLogger(level string, w *os.File) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
