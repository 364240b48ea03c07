package engine

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/redact"
)

// layerValue is a value found in an env layer.
type layerValue struct {
	value string
	typ   weft.VarType
	layer string
}

// envView resolves variables for one thread in one context (active prompt and tool entry) through
// its layers, the first that holds a name winning: thread > inherited > agent > tool entry > prompt
// > user > instance.
type envView struct {
	thread map[string]weft.EnvValue
	// inherited holds ancestor threads' thread-layer values, nearest first.
	inherited map[string]weft.EnvValue
	agent     map[string]string
	entry     map[string]string
	prompt    map[string]string
	user      map[string]weft.EnvValue
	instance  map[string]weft.EnvValue
	// declared holds the declared type of every variable of the thread's graph (secret wins).
	declared map[string]weft.VarType
}

func (v *envView) lookup(name string) (layerValue, bool) {
	if x, ok := v.thread[name]; ok {
		return layerValue{x.Value, v.typeOf(name, x.Type), "thread"}, true
	}
	if x, ok := v.inherited[name]; ok {
		return layerValue{x.Value, v.typeOf(name, x.Type), "inherited"}, true
	}
	for _, l := range []struct {
		m    map[string]string
		name string
	}{{v.agent, "agent"}, {v.entry, "tool entry"}, {v.prompt, "prompt"}} {
		if x, ok := l.m[name]; ok {
			return layerValue{x, v.typeOf(name, weft.VarText), l.name}, true
		}
	}
	if x, ok := v.user[name]; ok {
		return layerValue{x.Value, v.typeOf(name, x.Type), "user"}, true
	}
	if x, ok := v.instance[name]; ok {
		return layerValue{x.Value, v.typeOf(name, x.Type), "instance"}, true
	}
	return layerValue{}, false
}

// typeOf is the declared type, else the stored value's own type.
func (v *envView) typeOf(name string, own weft.VarType) weft.VarType {
	if t, ok := v.declared[name]; ok {
		return t
	}
	if own == "" {
		return weft.VarSecret
	}
	return own
}

// with returns a copy resolving for another prompt and tool entry.
func (v *envView) with(prompt, entry map[string]string) *envView {
	c := *v
	c.prompt, c.entry = prompt, entry
	return &c
}

// secrets returns every secret value visible in any layer, for redaction.
func (v *envView) secrets() []string {
	var out []string
	add := func(name, value string, own weft.VarType) {
		if value != "" && v.typeOf(name, own) == weft.VarSecret {
			out = append(out, value)
		}
	}
	for n, x := range v.thread {
		add(n, x.Value, x.Type)
	}
	for n, x := range v.inherited {
		add(n, x.Value, x.Type)
	}
	for _, m := range []map[string]string{v.agent, v.entry, v.prompt} {
		for n, x := range m {
			add(n, x, weft.VarText)
		}
	}
	for n, x := range v.user {
		add(n, x.Value, x.Type)
	}
	for n, x := range v.instance {
		add(n, x.Value, x.Type)
	}
	return out
}

func toMap(vals []weft.EnvValue) map[string]weft.EnvValue {
	if len(vals) == 0 {
		return nil // most layers are empty; a nil map reads as one
	}
	m := make(map[string]weft.EnvValue, len(vals))
	for _, v := range vals {
		m[v.Name] = v
	}
	return m
}

// graph collects what a thread's agent reaches: its side prompts, their enabled tool
// entries, the tools and sub-prompts those reach (recursively), and the tools' `uses`. Subagent and
// handoff targets are not part of it.
type graph struct {
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

func newGraph(reg *weft.Registry, a *weft.Agent, flag func(string) bool) *graph {
	g := &graph{reg: reg, seen: map[string]bool{}, flag: flag}
	for _, s := range []weft.AgentSide{a.SideA, a.Side(weft.SideB)} {
		if p, ok := reg.Prompt(s.Prompt); ok {
			g.addPrompt(p)
		}
	}
	return g
}

func (g *graph) addPrompt(p *weft.Prompt) {
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

func (g *graph) addTool(t *weft.Tool, e weft.ToolEntry, promptEnv map[string]string) {
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

// declared returns every variable declaration of the graph with who declared it; repeated
// declarations merge (required if any says so; secret wins).
func (g *graph) declared() map[string]*declaration {
	out := map[string]*declaration{}
	add := func(v weft.VariableDefinition, by string, promptEnv, entryEnv map[string]string) {
		d, ok := out[v.Name]
		if !ok {
			d = &declaration{VariableDefinition: v}
			out[v.Name] = d
		} else {
			d.Required = d.Required || v.Required
			d.Scoped = d.Scoped || v.Scoped
			if v.Type == weft.VarSecret {
				d.Type = weft.VarSecret
			}
		}
		d.by = append(d.by, declarer{by: by, required: v.Required, promptEnv: promptEnv, entryEnv: entryEnv})
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

type declaration struct {
	weft.VariableDefinition
	by []declarer
}

type declarer struct {
	by                  string
	required            bool
	promptEnv, entryEnv map[string]string
}

func declaredTypes(d map[string]*declaration) map[string]weft.VarType {
	m := make(map[string]weft.VarType, len(d))
	for n, x := range d {
		m[n] = x.Type
	}
	return m
}

// missingVariables lists the required variables that resolve in no layer, as
// `A (prompt helper), B (tool search)` items. A tool's variables also see its entry's env.
func missingVariables(decls map[string]*declaration, view *envView) []missingVar {
	var out []missingVar
	names := make([]string, 0, len(decls))
	for n := range decls {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		d := decls[n]
		var missingBy []string
		for _, by := range d.by {
			if !by.required {
				continue
			}
			v := view.with(by.promptEnv, by.entryEnv)
			if _, ok := v.lookup(n); !ok {
				missingBy = append(missingBy, by.by)
			}
		}
		if len(missingBy) > 0 {
			out = append(out, missingVar{Name: n, DeclaredBy: missingBy})
		}
	}
	return out
}

type missingVar struct {
	Name       string   `json:"name"`
	DeclaredBy []string `json:"declared_by"`
}

// MissingVariablesError reports required variables without values at thread creation.
type MissingVariablesError struct {
	// Missing lists each variable with the definitions that require it.
	Missing []missingVar
}

// Error reads `thread creation failed: missing required variables: A (prompt helper), B (tool x)`.
func (e *MissingVariablesError) Error() string {
	parts := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		parts[i] = fmt.Sprintf("%s (%s)", m.Name, strings.Join(m.DeclaredBy, ", "))
	}
	return "thread creation failed: missing required variables: " + strings.Join(parts, ", ")
}

// Unwrap classifies the error for the CLI and the HTTP API.
func (e *MissingVariablesError) Unwrap() error {
	return &weft.Error{Code: weft.EMissingVariables, Message: "missing required variables"}
}

// flagOn reports whether an optional entry's flag value enables it: true, 1 or yes.
func flagOn(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes":
		return true
	}
	return false
}

// loadEnv reads the thread, user and instance layers of a thread from the store.
func loadEnv(ctx context.Context, st weft.Store, threadID, userID string) (thread, user, instance []weft.EnvValue, err error) {
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

// ancestorEnv walks a thread's ancestors and takes, per name, the nearest thread-layer value;
// names scoped anywhere in the thread's graph are not inherited.
func ancestorEnv(ctx context.Context, st weft.Store, parentID string, decls map[string]*declaration) (map[string]weft.EnvValue, error) {
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

// StoreRedactor returns a function replacing by [redacted] the secret values a store holds for a
// thread — its own, its ancestors', its owner's and the instance's secret variables — and the
// providers' keys in the process environment. It needs no definitions, so tools that read a store
// outside any project (weft threads show, export, list) redact what they print too.
func StoreRedactor(ctx context.Context, st weft.Store, threadID string) (func(string) string, error) {
	t, err := st.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	var secrets []string
	add := func(vals []weft.EnvValue) {
		for _, v := range vals {
			if v.Type != weft.VarText {
				secrets = append(secrets, v.Value)
			}
		}
	}
	for id := threadID; id != ""; {
		vals, err := st.Env(ctx, weft.EnvThread, id)
		if err != nil {
			return nil, err
		}
		add(vals)
		at, err := st.Thread(ctx, id)
		if err != nil {
			return nil, err
		}
		id = at.ParentID
	}
	_, user, instance, err := loadEnv(ctx, st, "", t.UserID)
	if err != nil {
		return nil, err
	}
	add(user)
	add(instance)
	for _, p := range weft.Providers() {
		for _, k := range []string{p.KeyEnv, p.AltKeyEnv} {
			if v := os.Getenv(k); k != "" && v != "" {
				secrets = append(secrets, v)
			}
		}
	}
	return redact.New(secrets).String, nil
}
