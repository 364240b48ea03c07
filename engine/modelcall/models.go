package modelcall

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/schema"
	"github.com/weft-agents/weft/tokens"
)

// Models is what the model calls of an engine's runs share: the definitions, how providers are
// reached, the engine's hooks on requests, and what is read from the environment once. Set its
// exported fields before the first call; they are not changed afterwards.
type Models struct {
	// Registry holds the models, their fallbacks and the custom providers.
	Registry *weft.Registry
	// Clock tells time and waits between retries.
	Clock weft.Clock
	// Tokens counts requests' tokens for their models' windows.
	Tokens *tokens.Counter
	// Logger receives the warnings about the environment's timeouts.
	Logger *slog.Logger
	// Override, when set, answers every call (a model script).
	Override weft.Provider
	// Providers returns the provider of a model when there is no Override.
	Providers func(model *weft.Model) (weft.Provider, error)
	// LookupEnv reads the process environment (provider keys, timeouts).
	LookupEnv func(string) (string, bool)
	// OnRequest sees every request before the last-line redaction pass (nil: none does).
	OnRequest func(req *weft.Request)
	// OnTrace receives every request as a redacted JSON line (nil: none does).
	OnTrace func(line []byte)
	// Validator returns the compiled validator of an output schema.
	Validator func(*schema.Schema) (*schema.Validator, error)

	// limits are the context limits refusals taught (Learned).
	limits limits

	// envTimeouts are WEFT_FIRST_CHUNK_TIMEOUT and WEFT_STALL_TIMEOUT, read once (envTimeoutsOnce).
	envTimeoutsOnce sync.Once
	envTimeouts     weft.Timeouts

	// keyVars are the key variables of the providers the registry's models use, read once
	// (keysOnce).
	keysOnce sync.Once
	keyVars  []string
	// procKeys are their values in the process environment.
	procKeys map[string]string
}

// Timeouts returns a model's timeouts: its own, else WEFT_FIRST_CHUNK_TIMEOUT and
// WEFT_STALL_TIMEOUT from the environment (read once), else the defaults.
func (ms *Models) Timeouts(m *weft.Model) weft.Timeouts {
	ms.envTimeoutsOnce.Do(func() {
		for name, dst := range map[string]*weft.Duration{"WEFT_FIRST_CHUNK_TIMEOUT": &ms.envTimeouts.FirstChunk, "WEFT_STALL_TIMEOUT": &ms.envTimeouts.Stall} {
			v, ok := ms.LookupEnv(name)
			if !ok || v == "" {
				continue
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				ms.Logger.Warn("ignoring an invalid timeout from the environment (want a positive duration such as 90s)", "variable", name, "value", v)
				continue
			}
			*dst = weft.Duration(d)
		}
	})
	t := m.Timeouts
	if t.FirstChunk == 0 {
		t.FirstChunk = ms.envTimeouts.FirstChunk
	}
	if t.Stall == 0 {
		t.Stall = ms.envTimeouts.Stall
	}
	return t.WithDefaults()
}

// Keys returns the keys of every provider the registry's models use, as env resolves them, for
// redaction.
func (ms *Models) Keys(env *vars.View) []string {
	ms.keysOnce.Do(func() {
		ms.procKeys = map[string]string{}
		seen := map[string]bool{}
		for _, m := range ms.Registry.Models() {
			v, base := ms.keyVar(m.Provider)
			if v == "" || seen[v] {
				continue
			}
			seen[v] = true
			vars := []string{v}
			if v == base.KeyEnv && base.AltKeyEnv != "" {
				vars = append(vars, base.AltKeyEnv)
			}
			for _, v := range vars {
				ms.keyVars = append(ms.keyVars, v)
				if k, ok := ms.LookupEnv(v); ok && k != "" {
					ms.procKeys[v] = k
				}
			}
		}
	})
	var keys []string
	for _, v := range ms.keyVars {
		if k, ok := ms.lookupKey(env, v); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// provider returns the provider of a model and its API key, looked up in the thread env, then the
// user env, the instance env and the process env.
func (ms *Models) provider(env *vars.View, m *weft.Model) (weft.Provider, string, error) {
	if ms.Override != nil {
		return ms.Override, "", nil
	}
	p, err := ms.Providers(m)
	if err != nil {
		return nil, "", err
	}
	keyVar, base := ms.keyVar(m.Provider)
	if keyVar == "" {
		return p, "", nil
	}
	if key, ok := ms.lookupKey(env, keyVar); ok {
		return p, key, nil
	}
	if base.AltKeyEnv != "" {
		if key, ok := ms.lookupKey(env, base.AltKeyEnv); ok {
			return p, key, nil
		}
	}
	if base.KeyOptional {
		// azure_openai without a key authenticates with a Microsoft Entra ID token when its
		// adapter has one, else its call fails auth_error naming both variables.
		return p, "", nil
	}
	return nil, "", fmt.Errorf("No API key found for provider %q (set %s)", m.Provider, keyVar)
}

// keyVar returns the variable holding a provider's key and the built-in provider it is, or that
// a custom provider is based on.
func (ms *Models) keyVar(provider string) (string, weft.ProviderInfo) {
	if info, ok := weft.LookupProvider(provider); ok {
		return info.KeyEnv, info
	}
	if cp, ok := ms.Registry.Provider(provider); ok {
		info, _ := weft.LookupProvider(cp.Base)
		if cp.APIKeyEnv != "" {
			return cp.APIKeyEnv, info
		}
		return info.KeyEnv, info
	}
	return "", weft.ProviderInfo{}
}

// lookupKey resolves a provider key: thread env → user env → instance env → process env. An
// empty value counts as unset.
func (ms *Models) lookupKey(env *vars.View, name string) (string, bool) {
	if v, ok := env.Thread[name]; ok && v.Value != "" {
		return v.Value, true
	}
	if v, ok := env.User[name]; ok && v.Value != "" {
		return v.Value, true
	}
	if v, ok := env.Instance[name]; ok && v.Value != "" {
		return v.Value, true
	}
	if v, ok := ms.procKeys[name]; ok && v != "" {
		return v, true
	}
	v, ok := ms.LookupEnv(name)
	return v, ok && v != ""
}
