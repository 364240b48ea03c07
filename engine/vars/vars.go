// Package vars resolves a thread's variables: the env layers a value is found in (thread,
// inherited from ancestors, agent, tool entry, prompt, user, instance), the variables an agent's
// prompts and tools declare, which required ones have no value, and which values are secret —
// and, through Secrets, a thread's one Redactor and the providers' keys. It reads the store's env
// layers; it never writes.
package vars

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/redact"
)

// Value is a value found in an env layer.
type Value struct {
	// Value is the variable's value.
	Value string
	// Type is its declared type, else the stored value's own (a value without one is secret).
	Type weft.VarType
	// Layer names the layer it was found in: thread, inherited, agent, tool entry, prompt, user
	// or instance.
	Layer string
}

// View resolves variables for one thread in one context (active prompt and tool entry) through
// its layers, the first that holds a name winning: thread > inherited > agent > tool entry > prompt
// > user > instance.
type View struct {
	// Thread holds the thread's own values.
	Thread map[string]weft.EnvValue
	// Inherited holds ancestor threads' thread-layer values, nearest first.
	Inherited map[string]weft.EnvValue
	// Agent, Entry and Prompt hold the env the agent, the active tool entry and the active
	// prompt define.
	Agent, Entry, Prompt map[string]string
	// User and Instance hold the thread's owner's values and the instance's.
	User, Instance map[string]weft.EnvValue
	// Declared holds the declared type of every variable of the thread's graph (secret wins).
	Declared map[string]weft.VarType
}

// Lookup finds name in the first layer that holds it.
func (v *View) Lookup(name string) (Value, bool) {
	if x, ok := v.Thread[name]; ok {
		return Value{x.Value, v.TypeOf(name, x.Type), "thread"}, true
	}
	if x, ok := v.Inherited[name]; ok {
		return Value{x.Value, v.TypeOf(name, x.Type), "inherited"}, true
	}
	for _, l := range []struct {
		m    map[string]string
		name string
	}{{v.Agent, "agent"}, {v.Entry, "tool entry"}, {v.Prompt, "prompt"}} {
		if x, ok := l.m[name]; ok {
			return Value{x, v.TypeOf(name, weft.VarText), l.name}, true
		}
	}
	if x, ok := v.User[name]; ok {
		return Value{x.Value, v.TypeOf(name, x.Type), "user"}, true
	}
	if x, ok := v.Instance[name]; ok {
		return Value{x.Value, v.TypeOf(name, x.Type), "instance"}, true
	}
	return Value{}, false
}

// TypeOf is the declared type, else the stored value's own type.
func (v *View) TypeOf(name string, own weft.VarType) weft.VarType {
	if t, ok := v.Declared[name]; ok {
		return t
	}
	if own == "" {
		return weft.VarSecret
	}
	return own
}

// With returns a copy resolving for another prompt and tool entry.
func (v *View) With(prompt, entry map[string]string) *View {
	c := *v
	c.Prompt, c.Entry = prompt, entry
	return &c
}

// Secrets returns every secret value visible in any layer, for redaction.
func (v *View) Secrets() []string {
	var out []string
	add := func(name, value string, own weft.VarType) {
		if value != "" && v.TypeOf(name, own) == weft.VarSecret {
			out = append(out, value)
		}
	}
	for n, x := range v.Thread {
		add(n, x.Value, x.Type)
	}
	for n, x := range v.Inherited {
		add(n, x.Value, x.Type)
	}
	for _, m := range []map[string]string{v.Agent, v.Entry, v.Prompt} {
		for n, x := range m {
			add(n, x, weft.VarText)
		}
	}
	for n, x := range v.User {
		add(n, x.Value, x.Type)
	}
	for n, x := range v.Instance {
		add(n, x.Value, x.Type)
	}
	return out
}

// Layer maps a store's env values by name; nil when there are none.
func Layer(vals []weft.EnvValue) map[string]weft.EnvValue {
	if len(vals) == 0 {
		return nil // most layers are empty; a nil map reads as one
	}
	m := make(map[string]weft.EnvValue, len(vals))
	for _, v := range vals {
		m[v.Name] = v
	}
	return m
}

// ThreadLayer types the thread-layer values given to a new thread (or a render): each as declared,
// else as types says, else secret.
func ThreadLayer(env map[string]string, declared, types map[string]weft.VarType) map[string]weft.EnvValue {
	layer := make(map[string]weft.EnvValue, len(env))
	for k, v := range env {
		t, ok := declared[k]
		if !ok {
			t = types[k]
		}
		if t == "" {
			t = weft.VarSecret
		}
		layer[k] = weft.EnvValue{Name: k, Value: v, Type: t}
	}
	return layer
}

// Graph collects what a thread's agent reaches: its side prompts, their enabled tool
// entries, the tools and sub-prompts those reach (recursively), and the tools' `uses`. Subagent and
// handoff targets are not part of it.
type Graph struct {
	reg     *weft.Registry
	prompts []*weft.Prompt
	tools   []graphTool
	seen    map[string]bool
	// flag resolves an `optional` entry flag; nil treats optional entries as enabled.
	flag func(name string) bool
}

type graphTool struct {
	tool  *weft.Tool
	entry weft.ToolEntry
	// promptEnv is the env of the prompt that lists the tool.
	promptEnv map[string]string
}

// NewGraph collects what agent a reaches; flag resolves an optional entry's flag (nil: every
// optional entry is enabled).
func NewGraph(reg *weft.Registry, a *weft.Agent, flag func(string) bool) *Graph {
	g := &Graph{reg: reg, seen: map[string]bool{}, flag: flag}
	for _, s := range []weft.AgentSide{a.SideA, a.Side(weft.SideB)} {
		if p, ok := reg.Prompt(s.Prompt); ok {
			g.addPrompt(p)
		}
	}
	return g
}

func (g *Graph) addPrompt(p *weft.Prompt) {
	if g.seen["prompt:"+p.Name] {
		return
	}
	g.seen["prompt:"+p.Name] = true
	g.prompts = append(g.prompts, p)
	for _, part := range p.Prompt {
		if part.Type == weft.PartKindInclude {
			if inc, ok := g.reg.Prompt(part.Prompt); ok {
				g.addPrompt(inc)
			}
		}
	}
	for _, e := range p.Tools {
		if e.Optional != "" && g.flag != nil && !g.flag(e.Optional) {
			continue
		}
		t, ok := g.reg.Resolve(e)
		if !ok {
			continue
		}
		switch {
		case t.Tool != nil:
			g.addTool(t.Tool, e, p.Env)
		case t.Prompt != nil:
			g.addPrompt(t.Prompt)
		}
	}
}

func (g *Graph) addTool(t *weft.Tool, e weft.ToolEntry, promptEnv map[string]string) {
	key := "tool:" + t.Name + "\x00" + fmt.Sprint(e.Env) + "\x00" + fmt.Sprint(promptEnv)
	if g.seen[key] {
		return
	}
	g.seen[key] = true
	g.tools = append(g.tools, graphTool{tool: t, entry: e, promptEnv: promptEnv})
	for _, u := range t.Uses {
		if ut, ok := g.reg.Tool(u); ok {
			g.addTool(ut, weft.ToolEntry{Name: u}, promptEnv)
		}
	}
}

// Declared returns every variable declaration of the graph with who declared it; repeated
// declarations merge (required if any says so; secret wins).
func (g *Graph) Declared() map[string]*Declaration {
	out := map[string]*Declaration{}
	add := func(v weft.VariableDefinition, by string, promptEnv, entryEnv map[string]string) {
		d, ok := out[v.Name]
		if !ok {
			d = &Declaration{VariableDefinition: v}
			out[v.Name] = d
		} else {
			d.Required = d.Required || v.Required
			d.Scoped = d.Scoped || v.Scoped
			if v.Type == weft.VarSecret {
				d.Type = weft.VarSecret
			}
		}
		d.By = append(d.By, Declarer{By: by, Required: v.Required, PromptEnv: promptEnv, EntryEnv: entryEnv})
	}
	for _, p := range g.prompts {
		for _, v := range p.Variables {
			add(v, "prompt "+p.Name, p.Env, nil)
		}
		for _, part := range p.Prompt {
			if part.Type == weft.PartKindEnv {
				if _, ok := out[part.Property]; !ok {
					add(weft.VariableDefinition{Name: part.Property, Type: weft.VarText}, "prompt "+p.Name, p.Env, nil)
				}
			}
		}
	}
	for _, t := range g.tools {
		for _, v := range weft.ToolVariables(t.tool) {
			add(v, "tool "+t.tool.Name, t.promptEnv, t.entry.Env)
		}
	}
	return out
}

// Declaration is a variable as a graph declares it, merged over its declarations.
type Declaration struct {
	weft.VariableDefinition
	// By lists each declaration, in the graph's order.
	By []Declarer
}

// Declarer is one declaration of a variable.
type Declarer struct {
	// By names the definition: "prompt NAME" or "tool NAME".
	By string
	// Required is whether this declaration requires a value.
	Required bool
	// PromptEnv and EntryEnv are the env of the prompt and of the tool entry the declaration is
	// read under (their values count as the variable's).
	PromptEnv, EntryEnv map[string]string
}

// DeclaredTypes maps each declared variable to its type.
func DeclaredTypes(d map[string]*Declaration) map[string]weft.VarType {
	m := make(map[string]weft.VarType, len(d))
	for n, x := range d {
		m[n] = x.Type
	}
	return m
}

// Missing lists the required variables that resolve in no layer, as
// `A (prompt helper), B (tool search)` items. A tool's variables also see its entry's env.
func Missing(decls map[string]*Declaration, view *View) []MissingVar {
	var out []MissingVar
	names := make([]string, 0, len(decls))
	for n := range decls {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		d := decls[n]
		var missingBy []string
		for _, by := range d.By {
			if !by.Required {
				continue
			}
			v := view.With(by.PromptEnv, by.EntryEnv)
			if _, ok := v.Lookup(n); !ok {
				missingBy = append(missingBy, by.By)
			}
		}
		if len(missingBy) > 0 {
			out = append(out, MissingVar{Name: n, DeclaredBy: missingBy})
		}
	}
	return out
}

// RenderView is the View of a render without a thread (`weft render`) of agent a: the user and
// instance layers from st, env as the thread layer (typed as declared), with the declarations of
// a's prompts and tools.
func RenderView(ctx context.Context, st weft.Store, reg *weft.Registry, a *weft.Agent, env map[string]string) (*View, map[string]*Declaration, error) {
	_, user, instance, err := Load(ctx, st, "", "")
	if err != nil {
		return nil, nil, err
	}
	decls := NewGraph(reg, a, nil).Declared()
	declared := DeclaredTypes(decls)
	return &View{Thread: ThreadLayer(env, declared, nil), User: Layer(user), Instance: Layer(instance), Declared: declared}, decls, nil
}

// MissingBy lists the Missing variables that by requires (a declarer as MissingVar.DeclaredBy
// names it: "prompt helper").
func MissingBy(decls map[string]*Declaration, view *View, by string) []MissingVar {
	return slices.DeleteFunc(Missing(decls, view), func(m MissingVar) bool { return !slices.Contains(m.DeclaredBy, by) })
}

// MissingVar is a required variable without a value, with the definitions that require it.
type MissingVar struct {
	Name       string   `json:"name"`
	DeclaredBy []string `json:"declared_by"`
}

// MissingError reports required variables without values at thread creation.
type MissingError struct {
	// Missing lists each variable with the definitions that require it.
	Missing []MissingVar
}

// Error reads `thread creation failed: missing required variables: A (prompt helper), B (tool x)`.
func (e *MissingError) Error() string {
	parts := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		parts[i] = fmt.Sprintf("%s (%s)", m.Name, strings.Join(m.DeclaredBy, ", "))
	}
	return "thread creation failed: missing required variables: " + strings.Join(parts, ", ")
}

// Unwrap classifies the error for the CLI and the HTTP API.
func (e *MissingError) Unwrap() error {
	return &weft.Error{Code: weft.EMissingVariables, Message: "missing required variables"}
}

// FlagOn reports whether an optional entry's flag value enables it: true, 1 or yes.
func FlagOn(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes":
		return true
	}
	return false
}

// Load reads the thread, user and instance layers of a thread from the store.
func Load(ctx context.Context, st weft.Store, threadID, userID string) (thread, user, instance []weft.EnvValue, err error) {
	if thread, err = st.Env(ctx, weft.EnvThread, threadID); err != nil {
		return
	}
	if userID != "" {
		if user, err = st.Env(ctx, weft.EnvUser, userID); err != nil {
			return
		}
	}
	instance, err = st.Env(ctx, weft.EnvInstance, "")
	return
}

// Inherited walks a thread's ancestors and takes, per name, the nearest thread-layer value;
// names scoped anywhere in the thread's graph are not inherited.
func Inherited(ctx context.Context, st weft.Store, parentID string, decls map[string]*Declaration) (map[string]weft.EnvValue, error) {
	out := map[string]weft.EnvValue{}
	for id := parentID; id != ""; {
		vals, err := st.Env(ctx, weft.EnvThread, id)
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			if d, ok := decls[v.Name]; ok && d.Scoped {
				continue
			}
			if _, seen := out[v.Name]; !seen {
				out[v.Name] = v
			}
		}
		t, err := st.Thread(ctx, id)
		if err != nil {
			return nil, err
		}
		id = t.ParentID
	}
	return out, nil
}

// Stored is the View of the values a store holds for thread t, given its own, its owner's and
// the instance's layers (Load): those and its ancestors' (Inherited; decls names the variables
// that are not inherited, nil: none). The definitions' layers and types are the caller's to add.
func Stored(ctx context.Context, st weft.Store, t *weft.Thread, thread, user, instance []weft.EnvValue, decls map[string]*Declaration) (*View, error) {
	v := &View{Thread: Layer(thread), User: Layer(user), Instance: Layer(instance)}
	if t.ParentID != "" {
		var err error
		if v.Inherited, err = Inherited(ctx, st, t.ParentID, decls); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// StoreRedactor returns a function replacing by [redacted] the secret values a store holds for a
// thread — the secrets of its Stored View: its own, its ancestors', its owner's and the
// instance's secret variables — and the providers' keys in the process environment. It needs no
// definitions, so tools that read a store outside any project (weft threads show, export, list)
// redact what they print too.
func StoreRedactor(ctx context.Context, st weft.Store, threadID string) (func(string) string, error) {
	t, err := st.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	thread, user, instance, err := Load(ctx, st, threadID, t.UserID)
	if err != nil {
		return nil, err
	}
	v, err := Stored(ctx, st, t, thread, user, instance, nil)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, p := range weft.Providers() {
		for _, k := range []string{p.KeyEnv, p.AltKeyEnv} {
			if v := os.Getenv(k); k != "" && v != "" {
				keys = append(keys, v)
			}
		}
	}
	return redact.New(v.Secrets(), keys).String, nil
}

// DeclaredVariable is a variable an agent's graph declares, merged over its declarations: required
// or scoped when any declaration says so, secret when any declares it secret.
type DeclaredVariable struct {
	weft.VariableDefinition
	// DeclaredBy names the definitions that declare it (prompt, tool or agent).
	DeclaredBy []string `json:"declared_by"`
	// HasDefault tells whether a definition gives it a value (a prompt's or an entry's env).
	HasDefault bool `json:"has_default"`
}

// Variables lists, by name, the variables agent a's graph declares (every prompt, tool and
// subagent it reaches, optional entries included).
func Variables(reg *weft.Registry, a *weft.Agent) []DeclaredVariable {
	decls := NewGraph(reg, a, func(string) bool { return true }).Declared()
	out := make([]DeclaredVariable, 0, len(decls))
	for _, d := range decls {
		v := DeclaredVariable{VariableDefinition: d.VariableDefinition}
		_, v.HasDefault = a.Env[d.Name]
		for _, by := range d.By {
			if !slices.Contains(v.DeclaredBy, by.By) {
				v.DeclaredBy = append(v.DeclaredBy, by.By)
			}
			_, inPrompt := by.PromptEnv[d.Name]
			_, inEntry := by.EntryEnv[d.Name]
			v.HasDefault = v.HasDefault || inPrompt || inEntry
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(x, y DeclaredVariable) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// Types keeps the types of the variables each agent's graph declares (DeclaredTypes), computed
// once for the agents of a registry: definitions do not change once loaded. It is read-only once
// made, so safe for concurrent use.
type Types struct {
	reg *weft.Registry
	m   map[string]map[string]weft.VarType // by agent name
}

// NewTypes returns the Types of a registry's agents.
func NewTypes(reg *weft.Registry) *Types {
	ts := &Types{reg: reg, m: map[string]map[string]weft.VarType{}}
	for _, a := range reg.Agents() {
		ts.m[a.Name] = DeclaredTypes(NewGraph(reg, a, nil).Declared())
	}
	return ts
}

// Of returns the types of the variables agent a's graph declares (the caller must not change
// them); an agent the registry did not hold when the Types were made has them computed anew.
// Not to be confused with declared tools, the command and http tools of package declared.
func (ts *Types) Of(a *weft.Agent) map[string]weft.VarType {
	if d, ok := ts.m[a.Name]; ok {
		return d
	}
	return DeclaredTypes(NewGraph(ts.reg, a, nil).Declared())
}
