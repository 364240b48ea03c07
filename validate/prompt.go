package validate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

var reasoningEfforts = []string{"low", "medium", "high"}

func (v *validator) prompt(p *weft.Prompt) {
	src := v.r.Source("prompt", p.Name)
	// Required fields: name and toolDescription non-empty, model defined, prompt a string or parts.
	if strings.TrimSpace(p.Name) == "" {
		v.errf(src, "name", "name is required (a non-empty string)")
	}
	prompty := strings.HasSuffix(strings.ToLower(src), ".prompty")
	if strings.TrimSpace(p.ToolDescription) == "" {
		if prompty {
			// A .prompty file is often an agent's side prompt, never a tool: it needs a description
			// only once a prompt lists it as a tool (checked there).
			v.warnf(src, "toolDescription", "no description: add `description: <what this prompt does>` to the front matter if this prompt is exposed as a tool")
		} else {
			v.errf(src, "toolDescription", "toolDescription is required (a non-empty string)")
		}
	}
	var model *weft.Model
	if p.Model == "" {
		if prompty {
			v.errf(src, "model", "model is required: name a defined model (`model: NAME`) or give `model.configuration` (type openai, azure_openai or serverless) in the front matter")
		} else {
			v.errf(src, "model", "model is required (the name of a defined model)")
		}
	} else if m, ok := v.r.Model(p.Model); ok {
		model = m
	} else {
		v.errf(src, "model", "no model named %q", p.Model)
	}
	if len(p.Prompt) == 0 && p.Template == nil {
		v.errf(src, "prompt", "prompt is required (a string or a list of parts)")
	}
	declared := declaredTypes(p.Variables)
	for i, part := range p.Prompt {
		base := fmt.Sprintf("prompt[%d]", i)
		switch part.Type {
		case weft.PartKindText:
		case weft.PartKindInclude:
			switch {
			case part.Prompt == "":
				v.errf(src, base+".prompt", "an include part names a prompt")
			default:
				inc, ok := v.r.Prompt(part.Prompt)
				if !ok {
					v.errf(src, base+".prompt", "no prompt named %q to include", part.Prompt)
				} else if so, ok := inc.Template.(interface{ SystemOnly() bool }); ok && !so.SystemOnly() {
					v.errf(src, base+".prompt", "prompt %q has messages besides its system text and cannot be included", part.Prompt)
				}
			}
		case weft.PartKindEnv:
			if part.Property == "" {
				v.errf(src, base+".property", "an env part names a variable in property")
			} else if !varName.MatchString(part.Property) {
				v.errf(src, base+".property", "invalid variable name %q", part.Property)
			}
		default:
			v.errf(src, base+".type", "part type must be text, include or env, got %q", part.Type)
		}
	}
	// Optional fields: toolChoice, reasoning.effort and recentImageThreshold take allowed values only.
	if !p.ToolChoice.Valid() {
		v.errf(src, "toolChoice", "toolChoice must be auto, none or required, got %q", p.ToolChoice)
	}
	if r := p.Reasoning; r != nil {
		if r.Effort != "" && !slices.Contains(reasoningEfforts, r.Effort) {
			v.errf(src, "reasoning.effort", "reasoning.effort must be low, medium or high, got %q", r.Effort)
		}
		if r.MaxTokens < 0 {
			v.errf(src, "reasoning.maxTokens", "reasoning.maxTokens must be a positive integer")
		}
		if model != nil && r.Effort != "" && len(model.Capabilities.ReasoningLevels) > 0 && !slices.Contains(model.Capabilities.ReasoningLevels, r.Effort) {
			v.warnf(src, "reasoning.effort", "model %q does not list reasoning level %q", model.Name, r.Effort)
		}
	}
	if p.RecentImageThreshold < 0 {
		v.errf(src, "recentImageThreshold", "recentImageThreshold must be a positive integer")
	}
	if c := p.Context; c != nil {
		switch c.Strategy {
		case "", weft.ContextWindow, weft.ContextNone, weft.ContextSummarize:
		default:
			v.errf(src, "context.strategy", "context.strategy must be window, summarize or none, got %q", c.Strategy)
		}
		if c.Summarizer != "" {
			sp, ok := v.r.Prompt(c.Summarizer)
			switch {
			case c.Strategy != weft.ContextSummarize:
				v.errf(src, "context.summarizer", "context.summarizer applies to context.strategy summarize only, got strategy %q", p.StrategyOf())
			case !ok:
				v.errf(src, "context.summarizer", "no prompt named %q", c.Summarizer)
			case sp.Name == p.Name:
				v.errf(src, "context.summarizer", "prompt %q cannot summarize for itself", p.Name)
			case sp.StrategyOf() == weft.ContextSummarize:
				v.errf(src, "context.summarizer", "prompt %q uses context.strategy summarize itself and cannot be a summarizer", sp.Name)
			}
		}
		if c.Strategy == weft.ContextSummarize {
			if p.Name == weft.SummarizerPrompt {
				v.errf(src, "context.strategy", "prompt %q writes the summaries and cannot use context.strategy summarize itself", p.Name)
			}
			if model != nil && model.Capabilities.MaxContextTokens == 0 {
				v.warnf(src, "context.strategy", "model %q declares no capabilities.maxContextTokens: summarize folds nothing until the provider first refuses a request as too long, and what that request loses is not summarized", model.Name)
			}
		}
		if c.ReserveOutput < 0 {
			v.errf(src, "context.reserveOutput", "context.reserveOutput must be a positive integer")
		}
	}
	if p.OutputSchema != nil {
		v.schema(src, "outputSchema", p.OutputSchema)
	}
	if p.RequiredSchema != nil {
		v.schema(src, "requiredSchema", p.RequiredSchema)
	}
	v.variables(src, "variables", p.Variables)
	v.env(src, "env", p.Env, declared)
	for i, h := range p.Hooks {
		if _, ok := v.r.Hook(h); !ok {
			v.errf(src, fmt.Sprintf("hooks[%d]", i), "no hook with id %q", h)
		}
	}
	offered := v.toolEntries(src, p)
	if p.ToolChoice == weft.ToolChoiceRequired && offered == 0 && p.Template == nil {
		v.errf(src, "toolChoice", "toolChoice is required but the prompt offers no tools")
	}
	if model != nil && offered > 0 && !model.Capabilities.ToolCalls() {
		v.warnf(src, "tools", "model %q does not support tool calls; the tools will not be offered", model.Name)
	}
}

// approval checks an approval setting.
func (v *validator) approval(src, field string, a weft.Approval) {
	switch a {
	case "", weft.ApprovalRequired, weft.ApprovalNever:
	default:
		v.errf(src, field, "approval is required or never, not %q", a)
	}
}

// entryKeys lists, per key, which target roles accept it; a key given for any other role is an error.
var entryKeys = []struct {
	key   string
	roles []string
	set   func(e weft.ToolEntry) bool
}{
	{"env", []string{"tool"}, func(e weft.ToolEntry) bool { return e.Env != nil }},
	{"bindings", []string{"tool"}, func(e weft.ToolEntry) bool { return e.Bindings != nil }},
	{"options", []string{"tool"}, func(e weft.ToolEntry) bool { return e.Options != nil }},
	{"includeTextResponse", []string{"prompt"}, func(e weft.ToolEntry) bool { return e.IncludeTextResponse != nil }},
	{"includeToolCalls", []string{"prompt"}, func(e weft.ToolEntry) bool { return e.IncludeToolCalls != nil }},
	{"includeErrors", []string{"prompt"}, func(e weft.ToolEntry) bool { return e.IncludeErrors != nil }},
	{"initUserMessageProperty", []string{"prompt", "handoff", "subagent"}, func(e weft.ToolEntry) bool { return e.InitUserMessageProperty != "" }},
	{"initAttachmentsProperty", []string{"prompt", "handoff", "subagent"}, func(e weft.ToolEntry) bool { return e.InitAttachmentsProperty != "" }},
	{"initAgentNameProperty", []string{"subagent"}, func(e weft.ToolEntry) bool { return e.InitAgentNameProperty != "" }},
	{"blocking", []string{"subagent", "resumable subagent"}, func(e weft.ToolEntry) bool { return e.Blocking != nil }},
	{"immediate", []string{"subagent", "resumable subagent"}, func(e weft.ToolEntry) bool { return e.Immediate != nil }},
	{"resumable", []string{"subagent", "resumable subagent"}, func(e weft.ToolEntry) bool { return e.Resumable != nil }},
}

// toolEntries validates a prompt's tools list and returns how many entries it offers.
func (v *validator) toolEntries(src string, p *weft.Prompt) int {
	seen := map[string]int{}
	offered := 0
	for i, e := range p.Tools {
		base := fmt.Sprintf("tools[%d]", i)
		if e.Path != "" {
			base = e.Path
		}
		if e.Name == "" {
			v.errf(src, base+".name", "a tool entry needs a name")
			continue
		}
		if j, dup := seen[e.Name]; dup {
			v.errf(src, base, "%q is already listed at tools[%d]", e.Name, j)
		}
		seen[e.Name] = i
		if e.Optional != "" && !varName.MatchString(e.Optional) {
			v.errf(src, base+".optional", "optional names an environment flag; %q is not a variable name", e.Optional)
		}
		t, ok := v.r.Resolve(e)
		if !ok {
			v.unresolvedEntry(src, base, e)
			continue
		}
		offered++
		role := t.Role(e)
		hint := ""
		if _, isAgent := v.r.Agent(e.Name); isAgent && t.Kind != weft.EntryAgent && e.Kind == weft.EntryAny {
			hint = fmt.Sprintf(" (an agent %q exists too: write agent:%s)", e.Name, e.Name)
		}
		for _, k := range entryKeys {
			if k.set(e) && !slices.Contains(k.roles, role) {
				v.errf(src, base+"."+k.key, "%s does not apply to %s %q%s", k.key, role, e.Name, hint)
			}
		}
		v.approval(src, base+".approval", e.Approval)
		if e.Approval == weft.ApprovalRequired && t.Kind == weft.EntryProvider {
			v.errf(src, base+".approval", "a provider-executed tool runs at the provider and cannot wait for approval")
		}
		switch t.Kind {
		case weft.EntryProvider:
			if t.Tool.ExecutionMode != weft.ExecProvider {
				v.errf(src, base, "provider:%s names a tool that is not provider-executed (executionMode: provider)", e.Name)
			}
		case weft.EntryPrompt:
			if strings.TrimSpace(t.Prompt.ToolDescription) == "" {
				v.errf(src, base, "prompt %q is listed as a tool but has no description: add `description: <what this prompt does>` to its front matter", e.Name)
			}
			if !t.Prompt.Exposed() {
				v.errf(src, base, "prompt %q has exposeAsTool: false and cannot be listed as a tool", e.Name)
			}
			if t.Prompt == p {
				v.errf(src, base, "a prompt cannot list itself as a tool")
			}
			v.initProperties(src, base, e, t.Prompt.RequiredSchema, t.Prompt.Name)
		case weft.EntryAgent:
			a := t.Agent
			if !a.ExposeAsTool {
				v.errf(src, base, "agent %q is not exposed as a tool (set exposeAsTool: true on it)", e.Name)
			}
			if sp, ok := v.r.Prompt(a.SideA.Prompt); ok && role != "resumable subagent" {
				v.initProperties(src, base, e, sp.RequiredSchema, sp.Name)
			}
			if rs := e.Resumable; rs != nil && rs.Enabled {
				if a.Kind() != weft.DualAI {
					v.errf(src, base+".resumable", "resumable does not apply to handoff %q", e.Name)
				}
				if rs.ReceivesMessages != "side_a" && rs.ReceivesMessages != "side_b" {
					v.errf(src, base+".resumable.receives_messages", "receives_messages must be side_a or side_b, got %q", rs.ReceivesMessages)
				}
				if rs.MaxInstances < 0 {
					v.errf(src, base+".resumable.maxInstances", "maxInstances must be a positive integer")
				}
				if rs.ParentCommunication != "" && rs.ParentCommunication != "implicit" && rs.ParentCommunication != "explicit" {
					v.errf(src, base+".resumable.parentCommunication", "parentCommunication must be implicit or explicit, got %q", rs.ParentCommunication)
				}
			}
		case weft.EntryTool:
			if t.MCP != nil && e.Kind == weft.EntryMCP {
				if _, tool := weft.SplitMCPEntry(e.Name); tool == "" && strings.Contains(e.Name, "/") {
					v.errf(src, base, "mcp:%s names no tool: write mcp:SERVER or mcp:SERVER/TOOL", e.Name)
				} else if tool != "" && t.MCP.Tools != nil && !slices.Contains(t.MCP.Tools, tool) {
					v.errf(src, base, "MCP server %q's tools allow-list does not include %q", t.MCP.Name, tool)
				}
			}
			for _, param := range sortedKeys(e.Bindings) {
				if t.Tool == nil || t.Tool.Args == nil || t.Tool.Args.Properties[param] == nil {
					v.errf(src, base+".bindings."+param, "%q is not a parameter of tool %q", param, e.Name)
				} else if arg := e.Bindings[param]; p.RequiredSchema == nil || p.RequiredSchema.Properties[arg] == nil {
					v.errf(src, base+".bindings."+param, "%q is not an input of prompt %q", arg, p.Name)
				}
			}
			if t.Tool != nil && t.Tool.ExecutionMode == weft.ExecProvider {
				v.warnf(src, base, "%q is provider-executed; it is sent only to models of provider %q", e.Name, t.Tool.ExecutionProvider)
			}
		}
	}
	return offered
}

func (v *validator) unresolvedEntry(src, base string, e weft.ToolEntry) {
	what := "tool, prompt or agent"
	if e.Kind != weft.EntryAny {
		what = string(e.Kind)
		if e.Kind == weft.EntryProvider {
			what = "provider-executed tool"
		}
	}
	if e.Declared != nil {
		v.warnf(src, base, "%s", e.UndeclaredHint())
		return
	}
	if e.Kind == weft.EntryMCP {
		server, _ := weft.SplitMCPEntry(e.Name)
		v.errf(src, base, "no MCP server named %q (declare it in tools/%s.yaml with kind: mcp)", server, server)
		return
	}
	if open := v.r.OpenMCPServers(); len(open) > 0 && (e.Kind == weft.EntryAny || e.Kind == weft.EntryTool) {
		v.warnf(src, base, "no %s named %q is defined; it may come from MCP server %s, which lists no tools (add a tools allow-list to check it)", what, e.Name, strings.Join(open, ", "))
		return
	}
	v.errf(src, base, "no %s named %q", what, e.Name)
}

// initProperties checks that init*Property keys name properties of the target's schema.
func (v *validator) initProperties(src, base string, e weft.ToolEntry, s *schema.Schema, target string) {
	if s == nil {
		return
	}
	for _, k := range []struct{ key, val string }{
		{"initUserMessageProperty", e.InitUserMessageProperty},
		{"initAttachmentsProperty", e.InitAttachmentsProperty},
		{"initAgentNameProperty", e.InitAgentNameProperty},
	} {
		if k.val == "" {
			continue
		}
		if _, ok := s.Properties[k.val]; !ok {
			v.errf(src, base+"."+k.key, "%q is not a property of %s's requiredSchema", k.val, target)
		}
	}
}

// includeCycles reports every include cycle once, at the include part of the prompt where the
// cycle is first entered: `prompt[1].prompt: circular include a → b → a`.
func (v *validator) includeCycles() {
	const (
		unvisited = iota
		active
		done
	)
	type frame struct {
		name string
		part int
	}
	state := map[string]int{}
	var stack []frame
	reported := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		p, ok := v.r.Prompt(name)
		if !ok {
			return
		}
		state[name] = active
		stack = append(stack, frame{name: name})
		for i, part := range p.Prompt {
			if part.Type != weft.PartKindInclude {
				continue
			}
			stack[len(stack)-1].part = i
			switch state[part.Prompt] {
			case unvisited:
				visit(part.Prompt)
			case active:
				start := slices.IndexFunc(stack, func(f frame) bool { return f.name == part.Prompt })
				names := make([]string, 0, len(stack)-start+1)
				for _, f := range stack[start:] {
					names = append(names, f.name)
				}
				key := canonicalCycle(names)
				names = append(names, part.Prompt)
				if !reported[key] {
					reported[key] = true
					first := stack[start]
					v.errf(v.r.Source("prompt", first.name), fmt.Sprintf("prompt[%d].prompt", first.part), "circular include %s", strings.Join(names, " → "))
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = done
	}
	for _, p := range v.r.Prompts() {
		if state[p.Name] == unvisited {
			visit(p.Name)
		}
	}
}

// canonicalCycle names a cycle independently of where it was entered.
func canonicalCycle(c []string) string {
	if len(c) == 0 {
		return ""
	}
	min := 0
	for i := range c {
		if c[i] < c[min] {
			min = i
		}
	}
	return strings.Join(append(slices.Clone(c[min:]), c[:min]...), "\x00")
}
