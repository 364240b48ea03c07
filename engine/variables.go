package engine

import (
	"context"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/vars"
)

// DeclaredVariable is a variable an agent's graph declares, merged over its declarations
// (vars.DeclaredVariable).
type DeclaredVariable = vars.DeclaredVariable

// AgentVariables lists, by name, the variables an agent's graph declares (every prompt, tool and
// subagent it reaches, optional entries included). An unknown agent is not found.
func (e *Engine) AgentVariables(name string) ([]DeclaredVariable, error) {
	a, ok := e.reg.Agent(name)
	if !ok {
		return nil, weft.Errorf(weft.ENotFound, "no agent named %q", name)
	}
	return vars.Variables(e.reg, a), nil
}

// MissingVariablesError reports required variables without values at thread creation.
type MissingVariablesError = vars.MissingError

// StoreRedactor returns a function replacing by [redacted] the secret values a store holds for a
// thread — its own, its ancestors', its owner's and the instance's secret variables — and the
// providers' keys in the process environment. It needs no definitions, so tools that read a store
// outside any project (weft threads show, export, list) redact what they print too.
func StoreRedactor(ctx context.Context, st weft.Store, threadID string) (func(string) string, error) {
	return vars.StoreRedactor(ctx, st, threadID)
}

// Redactor returns a function replacing the thread's secret values (every env layer) and the
// provider keys by [redacted], for output that leaves Weft (CLI, API). It is the Redactor the
// thread's runs and the engine's writes use (vars.Secrets).
func (e *Engine) Redactor(ctx context.Context, threadID string) (func(string) string, error) {
	red, err := e.secrets.Redactor(ctx, threadID)
	if err != nil {
		return nil, err
	}
	return red.String, nil
}
