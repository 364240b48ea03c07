package vars

import (
	"context"

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
	// keys returns the provider keys a thread's env sees (engine/modelcall's Models.Keys).
	keys func(*View) []string
	// cache holds the Redactors built.
	cache *redact.Cache
}

// redactorSlots bounds the Redactors a Secrets holds (redact.Cache): threads without secrets take
// none, and threads with the same ones (the provider keys alone) share one.
const redactorSlots = 1024

// NewSecrets returns the Secrets of the threads of a registry in a store; declared gives an
// agent's declared variable types, keys the provider keys an env sees.
func NewSecrets(reg *weft.Registry, st weft.Store, declared func(*weft.Agent) map[string]weft.VarType, keys func(*View) []string) *Secrets {
	return &Secrets{reg: reg, store: st, declared: declared, keys: keys, cache: redact.NewCache(redactorSlots)}
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
	return s.cache.For(env.Secrets(), s.keys(env))
}
