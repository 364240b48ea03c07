package engine

import (
	"slices"
	"strings"

	"github.com/weft-agents/weft"
)

// DeclaredVariable is a variable an agent's graph declares, merged over its declarations: required
// or scoped when any declaration says so, secret when any declares it secret.
type DeclaredVariable struct {
	weft.VariableDefinition
	// DeclaredBy names the definitions that declare it (prompt, tool or agent).
	DeclaredBy []string `json:"declared_by"`
	// HasDefault tells whether a definition gives it a value (a prompt's or an entry's env).
	HasDefault bool `json:"has_default"`
}

// AgentVariables lists, by name, the variables an agent's graph declares (every prompt, tool and
// subagent it reaches, optional entries included). An unknown agent is not found.
func (e *Engine) AgentVariables(name string) ([]DeclaredVariable, error) {
	a, ok := e.reg.Agent(name)
	if !ok {
		return nil, weft.Errorf(weft.ENotFound, "no agent named %q", name)
	}
	decls := newGraph(e.reg, a, func(string) bool { return true }).declared()
	out := make([]DeclaredVariable, 0, len(decls))
	for _, d := range decls {
		v := DeclaredVariable{VariableDefinition: d.VariableDefinition}
		_, v.HasDefault = a.Env[d.Name]
		for _, by := range d.by {
			if !slices.Contains(v.DeclaredBy, by.by) {
				v.DeclaredBy = append(v.DeclaredBy, by.by)
			}
			_, inPrompt := by.promptEnv[d.Name]
			_, inEntry := by.entryEnv[d.Name]
			v.HasDefault = v.HasDefault || inPrompt || inEntry
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(x, y DeclaredVariable) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}
