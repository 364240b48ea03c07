package weft

import (
	"fmt"
	"slices"

	"github.com/weft-agents/weft/schema"
)

// ToolVariables returns a tool's variable declarations with its legacy tenvs read as text variables,
// required unless optional in the tenvs schema.
func ToolVariables(t *Tool) []VariableDefinition {
	vars := slices.Clone(t.Variables)
	if t.Tenvs != nil {
		req := map[string]bool{}
		for _, n := range t.Tenvs.Required {
			req[n] = true
		}
		for _, n := range schemaPropertyNames(t.Tenvs) {
			p := t.Tenvs.Properties[n]
			vars = append(vars, VariableDefinition{Name: n, Type: VarText, Required: req[n], Description: p.Description})
		}
	}
	return vars
}

func schemaPropertyNames(s *schema.Schema) []string {
	names := slices.Clone(s.PropertyOrder)
	for n := range s.Properties {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) > len(s.PropertyOrder) {
		slices.Sort(names[len(s.PropertyOrder):])
	}
	return names
}

// UndeclaredToolHint says how to provide a tool a prompt file declares (a Prompty function tool)
// when the project defines none of that name.
func UndeclaredToolHint(name string) string {
	return ToolEntry{Name: name}.UndeclaredHint()
}

// UndeclaredHint says how to provide the tool a prompt file declares (a Prompty function tool, or
// a tool of a custom kind) when the project defines none of its name.
func (e ToolEntry) UndeclaredHint() string {
	what, provider := fmt.Sprintf("function tool %q", e.Name), ""
	if e.DeclaredKind != "" && e.DeclaredKind != "function" {
		what = fmt.Sprintf("tool %q of kind %q", e.Name, e.DeclaredKind)
		provider = ", or executionMode: provider for a tool the model's provider runs"
	}
	return fmt.Sprintf("%s is declared in the front matter but no tool of that name is defined: add tools/%s.yaml "+
		"(an http, command or code tool%s), a tool of an MCP server, or a Go tool registered as %q; runs fail until then", what, e.Name, provider, e.Name)
}
