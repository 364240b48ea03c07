package vars

import (
	"context"
	"sync"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/redact"
)

// Secrets finds a thread's secrets one way, whoever asks — its runs, the engine's writes outside
// a run, a read of its rows, the API: the secret values of its env View (its own layer, its
// ancestors', its owner's and the instance's, with what its agent declares secret) and the
// provider keys, and one Redactor of them from a redact.Cache, which every asker of the same
// values shares.
//
// The cache is keyed by the values themselves, so it never needs invalidating: a run has its
// thread's layers from its start (and follows what its tools set); a reader reads the thread's env
// rows each time — a few small rows, where building a Redactor encodes every secret a dozen ways
// and compiles a replacer — so that a secret set by anyone (a tool, the API, the CLI, another
// node sharing the store) is redacted by the next read anywhere.
type Secrets struct {
	// reg holds the agents, the models and the custom providers.
	reg *weft.Registry
	// store holds the env layers and the threads.
	store weft.Store
	// declared returns the declared types of an agent's graph (the engine caches them).
	declared func(*weft.Agent) map[string]weft.VarType
	// lookupEnv reads the process environment.
	lookupEnv func(string) (string, bool)
	// cache holds the Redactors built.
	cache *redact.Cache

	// once fills keyVars and procKeys at the first redactor built.
	once sync.Once
	// keyVars are the key variables of the providers the registry's models use.
	keyVars []string
	// procKeys holds their values in the process environment.
	procKeys map[string]string
}

// redactorSlots bounds the Redactors a Secrets holds (redact.Cache): threads without secrets take
// none, and threads with the same ones (the provider keys alone) share one.
const redactorSlots = 1024

// NewSecrets returns the Secrets of the threads of a registry in a store; lookupEnv reads the
// process environment, declared gives an agent's declared variable types.
func NewSecrets(reg *weft.Registry, st weft.Store, lookupEnv func(string) (string, bool), declared func(*weft.Agent) map[string]weft.VarType) *Secrets {
	return &Secrets{reg: reg, store: st, lookupEnv: lookupEnv, declared: declared, cache: redact.NewCache(redactorSlots)}
}

// Redactor reads the thread and its env rows and returns the Redactor of their secrets: no
// lease, no run state and no rows are read. A thread whose agent is no longer defined is redacted
// with its stored values alone.
func (s *Secrets) Redactor(ctx context.Context, threadID string) (*redact.Redactor, error) {
	t, err := s.store.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	thread, user, instance, err := Load(ctx, s.store, threadID, t.UserID)
	if err != nil {
		return nil, err
	}
	a, ok := s.reg.Agent(t.Agent)
	if !ok {
		a = nil
	}
	env, err := s.View(ctx, t, a, thread, user, instance)
	if err != nil {
		return nil, err
	}
	return s.For(env), nil
}

// View is the View of thread t's variables with the stored layers given (Load), for its agent a
// (nil: not defined, so no agent env and no declared types).
func (s *Secrets) View(ctx context.Context, t *weft.Thread, a *weft.Agent, thread, user, instance []weft.EnvValue) (*View, error) {
	var decls map[string]*Declaration
	if a != nil && t.ParentID != "" {
		decls = NewGraph(s.reg, a, nil).Declared() // the names its graph scopes are not inherited
	}
	env, err := Stored(ctx, s.store, t, thread, user, instance, decls)
	if err != nil {
		return nil, err
	}
	if a != nil {
		env.Agent, env.Declared = a.Env, s.declared(a)
	}
	return env, nil
}

// For returns the Redactor of the secrets of env and of the provider keys it sees, from the cache.
func (s *Secrets) For(env *View) *redact.Redactor {
	return s.cache.For(env.Secrets(), s.providerKeys(env))
}

// KeyVar returns the variable holding a provider's key and the built-in provider it is, or that
// a custom provider is based on.
func (s *Secrets) KeyVar(provider string) (string, weft.ProviderInfo) {
	if info, ok := weft.LookupProvider(provider); ok {
		return info.KeyEnv, info
	}
	if cp, ok := s.reg.Provider(provider); ok {
		info, _ := weft.LookupProvider(cp.Base)
		if cp.APIKeyEnv != "" {
			return cp.APIKeyEnv, info
		}
		return info.KeyEnv, info
	}
	return "", weft.ProviderInfo{}
}

// LookupKey resolves a provider key: thread env → user env → instance env → process env. An
// empty value counts as unset.
func (s *Secrets) LookupKey(env *View, name string) (string, bool) {
	if v, ok := env.Thread[name]; ok && v.Value != "" {
		return v.Value, true
	}
	if v, ok := env.User[name]; ok && v.Value != "" {
		return v.Value, true
	}
	if v, ok := env.Instance[name]; ok && v.Value != "" {
		return v.Value, true
	}
	s.once.Do(s.readKeys)
	if v, ok := s.procKeys[name]; ok && v != "" {
		return v, true
	}
	v, ok := s.lookupEnv(name)
	return v, ok && v != ""
}

// providerKeys returns the keys of every provider the registry's models use, as env sees them.
func (s *Secrets) providerKeys(env *View) []string {
	s.once.Do(s.readKeys)
	var keys []string
	for _, v := range s.keyVars {
		if key, ok := s.LookupKey(env, v); ok {
			keys = append(keys, key)
		}
	}
	return keys
}

// readKeys finds the key variables of the providers the registry's models use, and their values
// in the process environment (once).
func (s *Secrets) readKeys() {
	proc := map[string]string{}
	seen := map[string]bool{}
	for _, m := range s.reg.Models() {
		v, base := s.KeyVar(m.Provider)
		if v == "" || seen[v] {
			continue
		}
		seen[v] = true
		names := []string{v}
		if v == base.KeyEnv && base.AltKeyEnv != "" {
			names = append(names, base.AltKeyEnv)
		}
		for _, v := range names {
			s.keyVars = append(s.keyVars, v)
			if key, ok := s.lookupEnv(v); ok && key != "" {
				proc[v] = key
			}
		}
	}
	s.procKeys = proc
}
