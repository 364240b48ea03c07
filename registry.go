package weft

import (
	"fmt"
	"slices"
	"strings"
)

// Registry holds a project's definitions, from Go code and from files alike, with where each came
// from. Adding never fails: duplicates and every other problem are reported together by Validate.
// A Registry is built at start-up and read-only afterwards; it is not safe for concurrent writes.
type Registry struct {
	models    table[Model]
	providers table[ProviderDef]
	prompts   table[Prompt]
	tools     table[Tool]
	mcp       table[MCPServer]
	agents    table[Agent]
	hooks     table[Hook]
	effects   table[Effect]
	handlers  table[Handler]
	dups      Diagnostics
	// Root is the project directory definitions were loaded from ("" for Go-only registries); command
	// tools resolve their cwd against it.
	Root string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// table is one kind's definitions in insertion order.
type table[T any] struct {
	items map[string]*T
	src   map[string]string
	names []string
}

func (t *table[T]) add(r *Registry, kind, name, source string, v *T) {
	if t.items == nil {
		t.items = map[string]*T{}
		t.src = map[string]string{}
	}
	if prev, ok := t.src[name]; ok {
		r.dups = append(r.dups, Diagnostic{Source: source, Path: "name", Severity: SeverityError,
			Message: fmt.Sprintf("duplicate %s %q (%s, %s)", kind, name, prev, source)})
		return
	}
	t.items[name] = v
	t.src[name] = source
	t.names = append(t.names, name)
}

func (t *table[T]) get(name string) (*T, bool) {
	v, ok := t.items[name]
	return v, ok
}

func (t *table[T]) list() []*T {
	out := make([]*T, 0, len(t.names))
	for _, n := range t.names {
		out = append(out, t.items[n])
	}
	return out
}

// GoSource is the source of a definition added from Go code: go:<kind>/<name>.
func GoSource(kind, name string) string { return "go:" + kind + "/" + name }

// AddModel adds a model defined in Go.
func (r *Registry) AddModel(m *Model) { r.AddModelFrom(GoSource("model", m.Name), m) }

// AddModelFrom adds a model read from source (a file path relative to the project root).
func (r *Registry) AddModelFrom(source string, m *Model) { r.models.add(r, "model", m.Name, source, m) }

// AddProvider adds a custom provider defined in Go.
func (r *Registry) AddProvider(p *ProviderDef) { r.AddProviderFrom(GoSource("provider", p.Name), p) }

// AddProviderFrom adds a custom provider read from source.
func (r *Registry) AddProviderFrom(source string, p *ProviderDef) {
	r.providers.add(r, "provider", p.Name, source, p)
}

// AddPrompt adds a prompt defined in Go.
func (r *Registry) AddPrompt(p *Prompt) { r.AddPromptFrom(GoSource("prompt", p.Name), p) }

// AddPromptFrom adds a prompt read from source.
func (r *Registry) AddPromptFrom(source string, p *Prompt) {
	r.prompts.add(r, "prompt", p.Name, source, p)
}

// AddTool adds a tool defined in Go.
func (r *Registry) AddTool(t *Tool) { r.AddToolFrom(GoSource("tool", t.Name), t) }

// AddToolFrom adds a tool read from source.
func (r *Registry) AddToolFrom(source string, t *Tool) { r.tools.add(r, "tool", t.Name, source, t) }

// AddMCPServer adds an MCP server declaration defined in Go.
func (r *Registry) AddMCPServer(s *MCPServer) { r.AddMCPServerFrom(GoSource("mcp", s.Name), s) }

// AddMCPServerFrom adds an MCP server declaration read from source.
func (r *Registry) AddMCPServerFrom(source string, s *MCPServer) {
	r.mcp.add(r, "mcp server", s.Name, source, s)
}

// AddAgent adds an agent defined in Go.
func (r *Registry) AddAgent(a *Agent) { r.AddAgentFrom(GoSource("agent", a.Name), a) }

// AddAgentFrom adds an agent read from source.
func (r *Registry) AddAgentFrom(source string, a *Agent) { r.agents.add(r, "agent", a.Name, source, a) }

// AddHook adds a hook (hooks exist only in Go).
func (r *Registry) AddHook(h *Hook) { r.hooks.add(r, "hook", h.ID, GoSource("hook", h.ID), h) }

// AddEffect adds an effect (effects exist only in Go).
func (r *Registry) AddEffect(e *Effect) {
	r.effects.add(r, "effect", e.Name, GoSource("effect", e.Name), e)
}

// AddHandler adds a side handler (handlers exist only in Go).
func (r *Registry) AddHandler(h *Handler) {
	r.handlers.add(r, "handler", h.Name, GoSource("handler", h.Name), h)
}

// Model returns the named model.
func (r *Registry) Model(name string) (*Model, bool) { return r.models.get(name) }

// Provider returns the named custom provider.
func (r *Registry) Provider(name string) (*ProviderDef, bool) { return r.providers.get(name) }

// Prompt returns the named prompt.
func (r *Registry) Prompt(name string) (*Prompt, bool) { return r.prompts.get(name) }

// Tool returns the named tool.
func (r *Registry) Tool(name string) (*Tool, bool) { return r.tools.get(name) }

// MCPServer returns the named MCP server declaration.
func (r *Registry) MCPServer(name string) (*MCPServer, bool) { return r.mcp.get(name) }

// Agent returns the named agent.
func (r *Registry) Agent(name string) (*Agent, bool) { return r.agents.get(name) }

// Hook returns the hook with the given id.
func (r *Registry) Hook(id string) (*Hook, bool) { return r.hooks.get(id) }

// Effect returns the named effect.
func (r *Registry) Effect(name string) (*Effect, bool) { return r.effects.get(name) }

// Handler returns the named handler.
func (r *Registry) Handler(name string) (*Handler, bool) { return r.handlers.get(name) }

// Models lists the models in the order they were added; likewise the other list methods.
func (r *Registry) Models() []*Model { return r.models.list() }

// Providers lists the custom providers.
func (r *Registry) Providers() []*ProviderDef { return r.providers.list() }

// Prompts lists the prompts.
func (r *Registry) Prompts() []*Prompt { return r.prompts.list() }

// Tools lists the tools.
func (r *Registry) Tools() []*Tool { return r.tools.list() }

// MCPServers lists the MCP server declarations.
func (r *Registry) MCPServers() []*MCPServer { return r.mcp.list() }

// Agents lists the agents.
func (r *Registry) Agents() []*Agent { return r.agents.list() }

// Hooks lists the hooks.
func (r *Registry) Hooks() []*Hook { return r.hooks.list() }

// Effects lists the effects.
func (r *Registry) Effects() []*Effect { return r.effects.list() }

// Handlers lists the handlers.
func (r *Registry) Handlers() []*Handler { return r.handlers.list() }

// Source returns where a definition of the given kind (model, provider, prompt, tool, mcp, agent,
// hook, effect, handler) came from, or "".
func (r *Registry) Source(kind, name string) string {
	switch kind {
	case "model":
		return r.models.src[name]
	case "provider":
		return r.providers.src[name]
	case "prompt":
		return r.prompts.src[name]
	case "tool":
		return r.tools.src[name]
	case "mcp":
		return r.mcp.src[name]
	case "agent":
		return r.agents.src[name]
	case "hook":
		return r.hooks.src[name]
	case "effect":
		return r.effects.src[name]
	case "handler":
		return r.handlers.src[name]
	}
	return ""
}

// Target is what a prompt's tool entry resolves to.
type Target struct {
	// Kind is tool, prompt, agent or provider (a provider-executed tool entry).
	Kind EntryKind
	// Name is the resolved definition's name.
	Name   string
	Tool   *Tool
	Prompt *Prompt
	Agent  *Agent
	// MCP is set when the tool comes from an MCP server declaration.
	MCP *MCPServer
	// MCPTool is the tool's name on that server; "" = every tool the server offers (`mcp:SERVER`).
	MCPTool string
}

// Role names the target's role for messages: tool, prompt, handoff, subagent or resumable subagent.
func (t Target) Role(e ToolEntry) string {
	switch t.Kind {
	case EntryPrompt:
		return "prompt"
	case EntryAgent:
		if t.Agent.Kind() == AIHuman {
			return "handoff"
		}
		if e.Resumable != nil && e.Resumable.Enabled {
			return "resumable subagent"
		}
		return "subagent"
	}
	return "tool"
}

// Resolve finds what a tool entry names: with no forced kind a bare name resolves tool → prompt →
// agent; a prefix (`tool:`, `prompt:`, …) forces the kind. Tools of MCP servers resolve when the
// server's allow-list names them, or through an `mcp:SERVER[/TOOL]` entry (whose target's Name is
// "" for a whole server).
func (r *Registry) Resolve(e ToolEntry) (Target, bool) {
	kinds := []EntryKind{EntryTool, EntryPrompt, EntryAgent}
	if e.Kind != EntryAny {
		kinds = []EntryKind{e.Kind}
	}
	for _, k := range kinds {
		switch k {
		case EntryTool:
			if t, ok := r.tools.get(e.Name); ok {
				return Target{Kind: EntryTool, Name: e.Name, Tool: t}, true
			}
			if s := r.MCPServerOf(e.Name); s != nil {
				return Target{Kind: EntryTool, Name: e.Name, MCP: s, MCPTool: strings.TrimPrefix(e.Name, s.Prefix)}, true
			}
		case EntryMCP:
			server, tool := SplitMCPEntry(e.Name)
			if s, ok := r.mcp.get(server); ok {
				name := ""
				if tool != "" {
					name = s.Prefix + tool
				}
				return Target{Kind: EntryTool, Name: name, MCP: s, MCPTool: tool}, true
			}
		case EntryProvider:
			if t, ok := r.tools.get(e.Name); ok {
				return Target{Kind: EntryProvider, Name: e.Name, Tool: t}, true
			}
		case EntryPrompt:
			if p, ok := r.prompts.get(e.Name); ok {
				return Target{Kind: EntryPrompt, Name: e.Name, Prompt: p}, true
			}
		case EntryAgent:
			if a, ok := r.agents.get(e.Name); ok {
				return Target{Kind: EntryAgent, Name: e.Name, Agent: a}, true
			}
		}
	}
	return Target{}, false
}

// MCPServerOf returns the MCP server whose allow-list yields the tool name.
func (r *Registry) MCPServerOf(name string) *MCPServer {
	for _, s := range r.mcp.list() {
		for _, t := range s.Tools {
			if s.Prefix+t == name {
				return s
			}
		}
	}
	return nil
}

// OpenMCPServers returns servers without an allow-list: their tools are known only once started.
func (r *Registry) OpenMCPServers() []string {
	var out []string
	for _, s := range r.mcp.list() {
		if s.Tools == nil {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return out
}

// Duplicates reports the definitions added under a name already taken (the first one stands).
func (r *Registry) Duplicates() Diagnostics { return slices.Clone(r.dups) }
