package engine

import (
	"fmt"
	"maps"
	"slices"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/modelcall"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/schema"
)

// scope is the prompt a step runs: the top-level side's prompt, or a sub-prompt at depth > 0.
type scope struct {
	prompt *weft.Prompt
	depth  int
	side   weft.Side
	// parentID is the caller's tool message id for sub-prompt rows.
	parentID string
	// args are the validated arguments the prompt renders with.
	args map[string]any
	// offered are the tools offered to the model, by name and in order.
	offered map[string]*offered
	specs   []weft.ToolSpec
	env     *vars.View
	// rendered holds the template rendering of this step (prefix/suffix messages), if any.
	rendered *weft.RenderedPrompt
	// nested are the rows of a sub-prompt's own run (its init message, calls and results).
	nested []weft.Message
	// via is the call that runs this sub-prompt's nested run (nil at top level).
	via *subCall
	// resumed: the scope finishes the calls a crashed or parked run left open (resume), or is
	// nested in one that does; the observer is told its calls are resumed.
	resumed bool
	// toolCalled: a tool was called in the current turn (toolChoice required).
	toolCalled bool
	// final, at depth 0, tells whether a reply without calls ends the run (see finalPlan).
	final finalPlan
	// provider is the provider of the prompt's model: provider-executed results and reasoning
	// blocks are replayed verbatim only to it.
	provider string
	// strict: tools are offered in strict form (option strictTools), so a null the model returns
	// for an optional property counts as absent.
	strict bool
	// fx collects what the scope's tools and hooks ask of the run: the step's own effects, which a
	// sub-prompt's scope shares with its caller.
	fx      *toolEffects
	effects toolEffects
	// summary is the summary row the scope's requests carry (context.strategy summarize), set by
	// requests.history.
	summary *weft.Message
	// req is what the scope's requests are built from (requests.step), reqHooks whether it has
	// their hooks.
	req      modelcall.Step
	reqHooks bool
}

// offered is a tool offered in a scope.
type offered struct {
	entry  weft.ToolEntry
	target weft.Target
	spec   weft.ToolSpec
	// lifecycle names an injected subagent lifecycle tool (subagent_create, …); entries are the
	// enabled resumable entries it serves.
	lifecycle string
	entries   []children.Entry
	// check, when set, validates arguments instead of spec.Parameters (an unknown agent name gets
	// the lifecycle tool's own error rather than an enum mismatch).
	check *schema.Schema
}

// newScope resolves a prompt's enabled tool entries into offered tools.
func (r *run) newScope(p *weft.Prompt, depth int, side weft.Side, args map[string]any) (*scope, error) {
	s := &scope{prompt: p, depth: depth, side: side, args: args, env: r.env.With(p.Env, nil)}
	s.fx = &s.effects
	if p.Template != nil {
		out, err := p.Template.RenderPrompt(r.ctx, weft.TemplateInput{Args: args, Env: envLookup(s.env), InThread: depth == 0 && !standalone(r.ctx)})
		if err != nil {
			return nil, fmt.Errorf("rendering prompt %q: %w", p.Name, err)
		}
		s.rendered = out
	}
	entries := p.Tools
	templated := s.rendered != nil && len(s.rendered.Tools) > 0
	if templated {
		entries = append(append([]weft.ToolEntry(nil), entries...), s.rendered.Tools...)
	}
	// shared: s.offered and s.specs are the engine's kept tool set of p, read by every scope of it
	// (copied before a change).
	shared := false
	if ts, ok := r.e.derived.Load(p); ok && !templated {
		t := ts.(*toolset)
		s.offered, s.specs, s.provider, s.strict = t.offered, t.specs, t.provider, t.strict
		shared = true
	} else {
		kept, err := r.resolveTools(s, entries, !templated)
		if err != nil {
			return nil, err
		}
		shared = kept
	}
	if row, ok := children.Row(r.thread); ok && row["parent_communication"] == "explicit" && depth == 0 {
		// A child that reports explicitly gets notify_parent.
		o := &offered{lifecycle: children.ToolNotifyParent, spec: children.NotifyParentSpec()}
		if _, dup := s.offered[children.ToolNotifyParent]; !dup {
			if shared {
				s.offered, s.specs = maps.Clone(s.offered), slices.Clone(s.specs)
			}
			s.offered[children.ToolNotifyParent] = o
			s.specs = append(s.specs, o.spec)
		}
	}
	s.offerClientTools(r.thread, shared, r.e.store)
	return s, nil
}

// toolset is what a prompt's tool entries resolve to, when nothing but the registry decides it
// (no entry depends on the env, a template or an MCP server's listing, and none is a resumable
// agent): resolved once per engine and shared, read-only, by every scope of the prompt. A registry
// is read-only once the engine has it, so the set never changes.
type toolset struct {
	offered  map[string]*offered
	specs    []weft.ToolSpec // full: a scope that adds to it copies it first
	provider string
	strict   bool
}

// resolveTools resolves a scope's tool entries into s.offered and s.specs. keep: the engine may
// keep the result as the prompt's tool set; kept: it did.
func (r *run) resolveTools(s *scope, entries []weft.ToolEntry, keep bool) (kept bool, err error) {
	p := s.prompt
	s.offered = map[string]*offered{}
	model, _ := r.e.reg.Model(p.Model)
	if model != nil {
		s.provider = model.Provider
		strict := (&weft.Request{Model: model, Options: p.ModelOptions}).Option("strictTools")
		s.strict = strict == true
	}
	var resumable []children.Entry
	for _, e := range entries {
		if e.Optional != "" {
			keep = false
			v, ok := s.env.Lookup(e.Optional)
			if !ok || !vars.FlagOn(v.Value) {
				continue
			}
		}
		t, ok := r.e.reg.Resolve(e)
		if !ok && (e.Kind == weft.EntryAny || e.Kind == weft.EntryTool) {
			mcp := dispatch.MCP{Client: r.e.opt.MCP, Log: r.e.log}
			t, ok = mcp.Open(r.ctx, r.e.reg.MCPServers(), e.Name, envLookup(s.env.With(s.prompt.Env, e.Env)))
		}
		if !ok && e.Declared != nil && previewing(r.ctx) {
			// A preview shows a declared tool without an implementation as the file declares it.
			o := &offered{entry: e, spec: *e.Declared}
			if _, dup := s.offered[o.spec.Name]; !dup {
				s.offered[o.spec.Name] = o
				s.specs = append(s.specs, o.spec)
			}
			keep = false
			continue
		}
		if !ok && e.Declared != nil {
			return false, fmt.Errorf("prompt %q: %s", p.Name, e.UndeclaredHint())
		}
		if !ok {
			return false, fmt.Errorf("prompt %q: tool %q is not defined", p.Name, e.Name)
		}
		if t.MCP != nil {
			keep = false
			mcp := dispatch.MCP{Client: r.e.opt.MCP, Log: r.e.log}
			tools, err := mcp.Tools(r.ctx, t.MCP, envLookup(s.env.With(s.prompt.Env, e.Env)))
			s.offerMCP(e, t, tools, err, r.e.log)
			continue
		}
		o := &offered{entry: e, target: t}
		switch {
		case t.Tool != nil:
			o.spec = weft.ToolSpec{Name: t.Name, Description: t.Tool.Description, Parameters: unbound(argsSchema(t.Tool.Args), e.Bindings)}
			if t.Tool.ExecutionMode == weft.ExecProvider {
				if model == nil || model.Provider != t.Tool.ExecutionProvider {
					r.e.log.Warn("provider-executed tool omitted: the model's provider does not run it",
						"tool", t.Name, "provider", t.Tool.ExecutionProvider)
					continue
				}
				o.spec.Provider = t.Tool.ExecutionProvider
			}
		case t.Prompt != nil:
			o.spec = weft.ToolSpec{Name: t.Name, Description: t.Prompt.ToolDescription, Parameters: argsSchema(t.Prompt.RequiredSchema)}
		case t.Agent != nil && e.Resumable != nil && e.Resumable.Enabled:
			// Resumable agents are reached through the injected lifecycle tools.
			keep = false
			resumable = append(resumable, children.Entry{Entry: e, Agent: t.Agent})
			continue
		case t.Agent != nil:
			desc := t.Agent.ToolDescription
			var params *schema.Schema
			if sp, ok := r.e.reg.Prompt(t.Agent.SideA.Prompt); ok && sp.RequiredSchema != nil {
				params = sp.RequiredSchema
			} else {
				params = schema.Object(schema.Field("message", schema.String()),
					schema.OptionalField("attachments", schema.Array(schema.String())))
			}
			o.spec = weft.ToolSpec{Name: t.Name, Description: desc, Parameters: params}
		}
		if _, dup := s.offered[o.spec.Name]; dup {
			continue
		}
		s.offered[o.spec.Name] = o
		s.specs = append(s.specs, o.spec)
	}
	if len(resumable) > 0 {
		if err := (parentRun{r, s}).offerLifecycle(resumable); err != nil {
			return false, err
		}
	}
	if keep {
		s.specs = slices.Clip(s.specs)
		r.e.derived.Store(p, &toolset{offered: s.offered, specs: s.specs, provider: s.provider, strict: s.strict})
	}
	return keep, nil
}

// unbound returns the schema offered for a tool whose bound parameters are filled from the prompt's
// arguments: those parameters removed (a shallow copy; the tool's own schema is untouched).
func unbound(s *schema.Schema, bindings map[string]string) *schema.Schema {
	if len(bindings) == 0 {
		return s
	}
	c := *s
	c.Properties = map[string]*schema.Schema{}
	for k, v := range s.Properties {
		if _, bound := bindings[k]; !bound {
			c.Properties[k] = v
		}
	}
	c.Required = slices.DeleteFunc(slices.Clone(s.Required), func(k string) bool { _, b := bindings[k]; return b })
	c.PropertyOrder = slices.DeleteFunc(slices.Clone(s.PropertyOrder), func(k string) bool { _, b := bindings[k]; return b })
	return &c
}

func argsSchema(s *schema.Schema) *schema.Schema {
	if s == nil {
		return schema.NoArgs()
	}
	return s
}

// envLookup adapts an env view to the EnvLookup prompts render with.
func envLookup(v *vars.View) weft.EnvLookup {
	return func(name string) (string, bool, bool) {
		x, ok := v.Lookup(name)
		return x.Value, x.Type == weft.VarSecret, ok
	}
}
