package engine

import (
	"context"
	"sync"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/engine/vars"
)

// A thread's secrets are found one way, whoever asks — its runs, the engine's own writes outside
// a run, a read of its rows, the API: the values of its env View (its own layer, its ancestors',
// its owner's and the instance's, with what its agent declares secret) and the provider keys,
// and one Redactor of them from the engine's cache (redact.Cache), which every asker of the same
// values shares.
//
// The cache is keyed by the values themselves, so it never needs invalidating: a run has its
// thread's layers from its start (and follows what its tools set); a reader reads the thread's env
// rows each time — a few small rows, where building a Redactor encodes every secret a dozen ways
// and compiles a replacer — so that a secret set by anyone (a tool, the API, the CLI, another
// node sharing the store) is redacted by the next read anywhere.

// redactorSlots bounds the Redactors the cache holds (redact.Cache): threads without secrets take
// none, and threads with the same ones (the provider keys alone) share one.
const redactorSlots = 1024

// Redactor returns a function replacing the thread's secret values (every env layer) and the
// provider keys by [redacted], for output that leaves Weft (CLI, API).
func (e *Engine) Redactor(ctx context.Context, threadID string) (func(string) string, error) {
	red, err := e.redactorOf(ctx, threadID)
	if err != nil {
		return nil, err
	}
	return red.String, nil
}

// threadRedactor returns the thread's redactor, or one that redacts nothing when it cannot be
// built.
func (e *Engine) threadRedactor(ctx context.Context, threadID string) *redact.Redactor {
	red, err := e.redactorOf(ctx, threadID)
	if err != nil {
		e.log.Warn("no redactor for the thread", "thread", threadID, "error", err)
		return keep
	}
	return red
}

// redactorOf reads the thread and its env rows and returns the Redactor of their secrets: no
// lease, no run state and no rows are read. A thread whose agent is no longer defined is redacted
// with its stored values alone.
func (e *Engine) redactorOf(ctx context.Context, threadID string) (*redact.Redactor, error) {
	t, err := e.store.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	thread, user, instance, err := vars.Load(ctx, e.store, threadID, t.UserID)
	if err != nil {
		return nil, err
	}
	a, ok := e.reg.Agent(t.Agent)
	if !ok {
		a = nil
	}
	env, err := e.envOf(ctx, t, a, thread, user, instance)
	if err != nil {
		return nil, err
	}
	return e.redactorFor(env), nil
}

// envOf is the View of thread t's variables with the stored layers given, for its agent a (nil:
// not defined, so no agent env and no declared types).
func (e *Engine) envOf(ctx context.Context, t *weft.Thread, a *weft.Agent, thread, user, instance []weft.EnvValue) (*vars.View, error) {
	var decls map[string]*vars.Declaration
	if a != nil && t.ParentID != "" {
		decls = vars.NewGraph(e.reg, a, nil).Declared() // the names its graph scopes are not inherited
	}
	env, err := vars.Stored(ctx, e.store, t, thread, user, instance, decls)
	if err != nil {
		return nil, err
	}
	if a != nil {
		env.Agent, env.Declared = a.Env, e.declaredOf(a)
	}
	return env, nil
}

// redactorFor returns the Redactor of the secrets of env and the provider keys it sees, from the
// cache.
func (e *Engine) redactorFor(env *vars.View) *redact.Redactor {
	return e.redactors.For(env.Secrets(), e.keys.all(env))
}

// providerKeys finds the providers' API keys: a model's for its call, every one the registry's
// models use for redaction.
type providerKeys struct {
	// reg holds the models and the custom providers.
	reg *weft.Registry
	// lookupEnv reads the process environment (Options.LookupEnv).
	lookupEnv func(string) (string, bool)

	// once fills vars and proc at the first redactor built.
	once sync.Once
	// vars are the key variables of the providers the registry's models use.
	vars []string
	// proc holds their values in the process environment.
	proc map[string]string
}

// keyVar returns the variable holding a provider's key and the built-in provider it is, or that
// a custom provider is based on.
func (k *providerKeys) keyVar(provider string) (string, weft.ProviderInfo) {
	if info, ok := weft.LookupProvider(provider); ok {
		return info.KeyEnv, info
	}
	if cp, ok := k.reg.Provider(provider); ok {
		info, _ := weft.LookupProvider(cp.Base)
		return orDefault(cp.APIKeyEnv, info.KeyEnv), info
	}
	return "", weft.ProviderInfo{}
}

// lookup resolves a provider key: thread env → user env → instance env → process env. An empty
// value counts as unset.
func (k *providerKeys) lookup(env *vars.View, name string) (string, bool) {
	if v, ok := env.Thread[name]; ok && v.Value != "" {
		return v.Value, true
	}
	if v, ok := env.User[name]; ok && v.Value != "" {
		return v.Value, true
	}
	if v, ok := env.Instance[name]; ok && v.Value != "" {
		return v.Value, true
	}
	if v, ok := k.proc[name]; ok && v != "" {
		return v, true
	}
	v, ok := k.lookupEnv(name)
	return v, ok && v != ""
}

// all returns the keys of every provider the registry's models use, as env sees them.
func (k *providerKeys) all(env *vars.View) []string {
	k.once.Do(func() {
		proc := map[string]string{}
		seen := map[string]bool{}
		for _, m := range k.reg.Models() {
			v, base := k.keyVar(m.Provider)
			if v == "" || seen[v] {
				continue
			}
			seen[v] = true
			names := []string{v}
			if v == base.KeyEnv && base.AltKeyEnv != "" {
				names = append(names, base.AltKeyEnv)
			}
			for _, v := range names {
				k.vars = append(k.vars, v)
				if key, ok := k.lookupEnv(v); ok && key != "" {
					proc[v] = key
				}
			}
		}
		k.proc = proc
	})
	var keys []string
	for _, v := range k.vars {
		if key, ok := k.lookup(env, v); ok {
			keys = append(keys, key)
		}
	}
	return keys
}
