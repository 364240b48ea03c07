package vars_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/vars"
)

// TestViewLayers: a name resolves in the first layer that holds it, with its declared type, else
// its own; a value without a type is secret; Secrets lists every secret value of every layer.
func TestViewLayers(t *testing.T) {
	v := &vars.View{
		Thread:    map[string]weft.EnvValue{"A": {Name: "A", Value: "thread-a", Type: weft.VarText}},
		Inherited: map[string]weft.EnvValue{"A": {Name: "A", Value: "parent-a"}, "B": {Name: "B", Value: "parent-b", Type: weft.VarText}},
		Agent:     map[string]string{"C": "agent-c"},
		Prompt:    map[string]string{"C": "prompt-c", "D": "prompt-d"},
		User:      map[string]weft.EnvValue{"E": {Name: "E", Value: "user-e"}},
		Instance:  map[string]weft.EnvValue{"E": {Name: "E", Value: "inst-e"}, "F": {Name: "F", Value: "inst-f", Type: weft.VarText}},
		Declared:  map[string]weft.VarType{"D": weft.VarSecret},
	}
	cases := []struct {
		name, value, layer string
		typ                weft.VarType
	}{
		{"A", "thread-a", "thread", weft.VarText},
		{"B", "parent-b", "inherited", weft.VarText},
		{"C", "agent-c", "agent", weft.VarText},
		{"D", "prompt-d", "prompt", weft.VarSecret},
		{"E", "user-e", "user", weft.VarSecret},
		{"F", "inst-f", "instance", weft.VarText},
	}
	for _, c := range cases {
		got, ok := v.Lookup(c.name)
		if !ok || got.Value != c.value || got.Layer != c.layer || got.Type != c.typ {
			t.Errorf("Lookup(%s) = %+v, %v; want %s from %s, %s", c.name, got, ok, c.value, c.layer, c.typ)
		}
	}
	if _, ok := v.Lookup("G"); ok {
		t.Error("Lookup(G) found a value no layer holds")
	}
	// With makes a view for another prompt and entry: the agent's env still comes first, an entry's
	// before the prompt's.
	if got, _ := v.With(map[string]string{"C": "p2"}, map[string]string{"C": "entry-c"}).Lookup("C"); got.Value != "agent-c" {
		t.Errorf("With: C = %q, want the agent's value first", got.Value)
	}
	if got, _ := v.With(nil, map[string]string{"D": "entry-d"}).Lookup("D"); got.Value != "entry-d" || got.Layer != "tool entry" {
		t.Errorf("With: D = %+v, want the entry's value", got)
	}
	secrets := v.Secrets()
	slices.Sort(secrets)
	if want := []string{"inst-e", "parent-a", "prompt-d", "user-e"}; !slices.Equal(secrets, want) {
		t.Errorf("Secrets() = %q, want %q", secrets, want)
	}
}

// TestMissing: a required variable that no layer holds is listed with the definitions requiring
// it; a value in the requiring prompt's env satisfies it; a MissingError names them all.
func TestMissing(t *testing.T) {
	reg := weft.NewRegistry()
	tool := &weft.Tool{Name: "search", Description: "d", Variables: []weft.VariableDefinition{{Name: "KEY", Type: weft.VarSecret, Required: true}},
		Execute: weft.ToolFunc(func(context.Context, weft.State, json.RawMessage) (weft.ToolResult, error) {
			return weft.ToolResult{}, nil
		})}
	p := &weft.Prompt{Name: "main", Model: "m", Prompt: weft.Text("hi"), Tools: []weft.ToolEntry{{Name: "search"}},
		Variables: []weft.VariableDefinition{{Name: "REGION", Type: weft.VarText, Required: true}, {Name: "MODE", Type: weft.VarText, Required: true}},
		Env:       map[string]string{"MODE": "fast"}}
	a := &weft.Agent{Name: "helper", SideA: weft.AgentSide{Prompt: "main"}}
	reg.AddTool(tool)
	reg.AddPrompt(p)
	reg.AddAgent(a)
	decls := vars.NewGraph(reg, a, nil).Declared()
	if got := vars.DeclaredTypes(decls); got["KEY"] != weft.VarSecret || got["REGION"] != weft.VarText {
		t.Fatalf("DeclaredTypes = %v", got)
	}
	missing := vars.Missing(decls, &vars.View{})
	want := []vars.MissingVar{{Name: "KEY", DeclaredBy: []string{"tool search"}}, {Name: "REGION", DeclaredBy: []string{"prompt main"}}}
	if len(missing) != len(want) {
		t.Fatalf("Missing = %+v, want %+v", missing, want)
	}
	for i := range want {
		if missing[i].Name != want[i].Name || !slices.Equal(missing[i].DeclaredBy, want[i].DeclaredBy) {
			t.Errorf("Missing[%d] = %+v, want %+v", i, missing[i], want[i])
		}
	}
	// Types keeps an agent's declared types: the same map each time.
	types := vars.NewTypes(reg)
	if first, again := types.Of(a), types.Of(a); first["REGION"] != weft.VarText || !sameMap(first, again) {
		t.Errorf("Types.Of = %v, then %v", first, again)
	}
	err := &vars.MissingError{Missing: missing}
	if got := err.Error(); got != "thread creation failed: missing required variables: KEY (tool search), REGION (prompt main)" {
		t.Errorf("Error() = %q", got)
	}
	if got := vars.Missing(decls, &vars.View{Thread: vars.Layer([]weft.EnvValue{{Name: "KEY", Value: "k"}, {Name: "REGION", Value: "eu"}})}); len(got) != 0 {
		t.Errorf("with values: Missing = %+v, want none", got)
	}
}

// sameMap tells whether a and b are the same map (not merely equal ones).
func sameMap(a, b map[string]weft.VarType) bool {
	const probe = "__probe__"
	a[probe] = weft.VarText
	_, ok := b[probe]
	delete(a, probe)
	return ok
}
