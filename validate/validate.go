// Package validate checks a registry's definitions before anything runs: each problem is a
// diagnostic naming the file (or Go source), the field and the rule broken.
package validate

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// Registry checks every definition of r in one pass — required fields, allowed values, references
// between definitions, argument schemas, tool names — and returns every problem found, errors and
// warnings, each naming the definition's source and field. It never stops at the first error.
func Registry(r *weft.Registry) weft.Diagnostics {
	v := &validator{r: r}
	v.out = append(v.out, r.Duplicates()...)
	for _, m := range r.Models() {
		v.model(m)
	}
	for _, p := range r.Providers() {
		v.provider(p)
	}
	for _, t := range r.Tools() {
		v.tool(t)
	}
	for _, s := range r.MCPServers() {
		v.mcpServer(s)
	}
	for _, p := range r.Prompts() {
		v.prompt(p)
	}
	v.includeCycles()
	for _, a := range r.Agents() {
		v.agent(a)
	}
	for _, h := range r.Hooks() {
		v.hook(h)
	}
	for _, e := range r.Effects() {
		v.effect(e)
	}
	for _, h := range r.Handlers() {
		v.handler(h)
	}
	v.ambiguousNames()
	return v.out
}

type validator struct {
	r   *weft.Registry
	out weft.Diagnostics
}

func (v *validator) errf(src, path, format string, args ...any) {
	v.out = append(v.out, weft.Diagnostic{Source: src, Path: path, Severity: weft.SeverityError, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) warnf(src, path, format string, args ...any) {
	v.out = append(v.out, weft.Diagnostic{Source: src, Path: path, Severity: weft.SeverityWarning, Message: fmt.Sprintf(format, args...)})
}

var (
	snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	varName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ---- models and providers ----

func (v *validator) model(m *weft.Model) {
	src := v.r.Source("model", m.Name)
	if strings.TrimSpace(m.Name) == "" {
		v.errf(src, "name", "name is required (a non-empty string)")
	}
	switch {
	case m.Provider == "":
		v.errf(src, "provider", "provider is required")
	default:
		if _, ok := weft.ProviderKeyEnv(m.Provider); !ok {
			if _, ok := v.r.Provider(m.Provider); !ok {
				v.errf(src, "provider", "unknown provider %q (built in: %s; or define it in providers/)", m.Provider, strings.Join(builtinProviderNames(), ", "))
			}
		}
	}
	if m.Model == "" && m.Provider != "test" {
		v.errf(src, "model", "model is required (the upstream model id)")
	}
	if m.Provider == "openai-compatible" {
		if s, _ := m.ProviderOptions["baseUrl"].(string); s == "" {
			v.errf(src, "providerOptions.baseUrl", "provider openai-compatible needs providerOptions.baseUrl")
		}
	}
	for i, f := range m.Fallbacks {
		p := fmt.Sprintf("fallbacks[%d]", i)
		switch {
		case f == m.Name:
			v.errf(src, p, "a model cannot fall back to itself")
		case f == "":
			v.errf(src, p, "fallback name is empty")
		default:
			if _, ok := v.r.Model(f); !ok {
				v.errf(src, p, "no model named %q", f)
			}
		}
	}
	for _, pr := range []struct {
		key string
		val *float64
	}{{"inputPrice", m.InputPrice}, {"outputPrice", m.OutputPrice}, {"cachedPrice", m.CachedPrice}} {
		if pr.val != nil && *pr.val < 0 {
			v.errf(src, pr.key, "price must not be negative")
		}
	}
	if m.Retry.Attempts < 0 {
		v.errf(src, "retry.attempts", "attempts must be at least 1")
	}
	if m.Capabilities.MaxContextTokens < 0 || m.Capabilities.MaxOutputTokens < 0 {
		v.errf(src, "capabilities", "token limits must not be negative")
	}
}

func builtinProviderNames() []string {
	providers := weft.Providers()
	names := make([]string, len(providers))
	for i, p := range providers {
		names[i] = p.Name
	}
	return names
}

func (v *validator) provider(p *weft.ProviderDef) {
	src := v.r.Source("provider", p.Name)
	if p.Name == "" {
		v.errf(src, "name", "name is required (a non-empty string)")
	} else if _, builtin := weft.ProviderKeyEnv(p.Name); builtin {
		v.errf(src, "name", "%q is a built-in provider; choose another name", p.Name)
	}
	if _, ok := weft.ProviderKeyEnv(p.Base); !ok || p.Base == "test" {
		v.errf(src, "base", "base must name a built-in provider, got %q", p.Base)
	}
	if p.Base == "openai-compatible" && p.BaseURL == "" {
		v.errf(src, "baseUrl", "a provider based on openai-compatible needs baseUrl")
	}
	if p.APIKeyEnv != "" && !varName.MatchString(p.APIKeyEnv) {
		v.errf(src, "apiKeyEnv", "invalid variable name %q", p.APIKeyEnv)
	}
}

// ---- variables and env ----

func (v *validator) variables(src, base string, vars []weft.VariableDefinition) {
	seen := map[string]bool{}
	for i, d := range vars {
		p := fmt.Sprintf("%s[%d]", base, i)
		switch {
		case d.Name == "":
			v.errf(src, p+".name", "variable name is required")
		case !varName.MatchString(d.Name):
			v.errf(src, p+".name", "invalid variable name %q (letters, digits and _, not starting with a digit)", d.Name)
		case seen[d.Name]:
			v.warnf(src, p+".name", "variable %q is declared twice", d.Name)
		}
		seen[d.Name] = true
		if d.Type != weft.VarText && d.Type != weft.VarSecret {
			v.errf(src, p+".type", "type must be text or secret, got %q", d.Type)
		}
		if strings.TrimSpace(d.Description) == "" {
			v.warnf(src, p+".description", "variable %q has no description; people will not know what to provide", d.Name)
		}
	}
}

func (v *validator) env(src, base string, env map[string]string, declared map[string]weft.VarType) {
	for _, k := range sortedKeys(env) {
		if !varName.MatchString(k) {
			v.errf(src, base+"."+k, "invalid variable name %q", k)
			continue
		}
		if declared[k] == weft.VarSecret {
			if len(env[k]) < 4 {
				v.warnf(src, base+"."+k, "secret %q is shorter than 4 characters and cannot be redacted reliably", k)
			}
			v.warnf(src, base+"."+k, "secret %q has a value in a definition, which is not encrypted; set it per thread or instance instead", k)
		}
	}
}

func declaredTypes(vars []weft.VariableDefinition) map[string]weft.VarType {
	m := map[string]weft.VarType{}
	for _, d := range vars {
		if m[d.Name] != weft.VarSecret {
			m[d.Name] = d.Type
		}
	}
	return m
}

// envRefs checks that every ${env:NAME} in s names a declared variable.
func (v *validator) envRefs(src, p, s string, declared map[string]weft.VarType) {
	for _, name := range weft.EnvRefs(s) {
		if _, ok := declared[name]; !ok {
			v.errf(src, p, "${env:%s} is not declared in variables", name)
		}
	}
}

// ---- schemas ----

func (v *validator) schema(src, base string, s *schema.Schema) {
	for _, pr := range schema.Check(s) {
		p := base
		if pr.Path != "" {
			p += "." + pr.Path
		}
		v.errf(src, p, "%s", pr.Message)
	}
}

// ---- tools ----

func (v *validator) tool(t *weft.Tool) {
	src := v.r.Source("tool", t.Name)
	if t.Name == "" {
		v.errf(src, "name", "name is required (a non-empty string)")
	} else if !snakeCase.MatchString(t.Name) || len(t.Name) > 64 {
		v.warnf(src, "name", "tool name %q should be snake_case and 1–64 characters: some providers refuse other names", t.Name)
	}
	if strings.TrimSpace(t.Description) == "" {
		v.errf(src, "description", "description is required (a non-empty string that tells the model what the tool does)")
	}
	if t.Args != nil {
		v.schema(src, "args", t.Args)
	}
	if t.Tenvs != nil {
		v.schema(src, "tenvs", t.Tenvs)
	}
	v.variables(src, "variables", t.Variables)
	v.approval(src, "approval", t.Approval)
	if t.Approval == weft.ApprovalRequired && t.ExecutionMode == weft.ExecProvider {
		v.errf(src, "approval", "a provider-executed tool runs at the provider and cannot wait for approval")
	}
	declared := declaredTypes(weft.ToolVariables(t))
	switch t.ExecutionMode {
	case "", weft.ExecLocal:
		n := 0
		// A kind: a2a tool's Execute is its A2A handler (package a2a attaches it).
		for _, set := range []bool{t.Execute != nil && t.A2A == nil, t.Command != nil, t.HTTP != nil, t.A2A != nil} {
			if set {
				n++
			}
		}
		implPath := "kind"
		if strings.HasPrefix(src, "go:") {
			implPath = "Execute"
		}
		switch {
		case n == 0:
			v.errf(src, implPath, "tool %q has no implementation (a Go function, command, http or a2a)", t.Name)
		case n > 1:
			v.errf(src, "kind", "a tool has exactly one implementation (Go function, command, http or a2a)")
		}
	case weft.ExecProvider:
		if t.ExecutionProvider == "" {
			v.errf(src, "executionProvider", "executionProvider is required when executionMode is provider")
		}
	default:
		v.errf(src, "executionMode", "executionMode must be local or provider, got %q", t.ExecutionMode)
	}
	if t.Timeout < 0 {
		v.errf(src, "timeout", "timeout must not be negative")
	}
	if c := t.Command; c != nil {
		if len(c.Argv) == 0 || c.Argv[0] == "" {
			v.errf(src, "command", "command needs a program: [program, args...]")
		}
		for i, a := range c.Argv {
			v.envRefs(src, fmt.Sprintf("command[%d]", i), a, declared)
		}
		if c.Dir != "" && (path.IsAbs(c.Dir) || strings.HasPrefix(path.Clean(filepathToSlash(c.Dir)), "..")) {
			v.errf(src, "cwd", "cwd must be a path inside the project root")
		}
		for _, k := range sortedKeys(c.Env) {
			v.envRefs(src, "env."+k, c.Env[k], declared)
		}
	}
	if h := t.HTTP; h != nil {
		if h.URL == "" {
			v.errf(src, "url", "url is required for an http tool")
		} else if !strings.HasPrefix(h.URL, "http://") && !strings.HasPrefix(h.URL, "https://") && !strings.HasPrefix(h.URL, "${env:") {
			v.errf(src, "url", "url must start with http:// or https://")
		}
		v.envRefs(src, "url", h.URL, declared)
		switch strings.ToUpper(h.Method) {
		case "", "GET", "POST", "PUT", "PATCH", "DELETE":
		default:
			v.errf(src, "method", "method must be GET, POST, PUT, PATCH or DELETE, got %q", h.Method)
		}
		for _, arg := range sortedKeys(h.In) {
			switch where := h.In[arg]; where {
			case "path":
				if !strings.Contains(h.URL, "{"+arg+"}") {
					v.errf(src, "in."+arg, "path parameter %q has no {%s} in url", arg, arg)
				}
			case "query", "header":
			default:
				v.errf(src, "in."+arg, "an argument goes in path, query or header, got %q", where)
			}
		}
		for _, k := range sortedKeys(h.Headers) {
			v.envRefs(src, "headers."+k, h.Headers[k], declared)
		}
	}
	for i, u := range t.Uses {
		if _, ok := v.r.Tool(u); !ok && v.r.MCPServerOf(u) == nil {
			v.errf(src, fmt.Sprintf("uses[%d]", i), "no tool named %q", u)
		}
	}
}

func filepathToSlash(p string) string { return strings.ReplaceAll(p, `\`, "/") }

func (v *validator) mcpServer(s *weft.MCPServer) {
	src := v.r.Source("mcp", s.Name)
	v.variables(src, "variables", s.Variables)
	declared := declaredTypes(s.Variables)
	switch {
	case len(s.Command) == 0 && s.URL == "":
		v.errf(src, "server", "server needs a command (stdio) or a url (streamable HTTP)")
	case len(s.Command) > 0 && s.URL != "":
		v.errf(src, "server", "server has both a command and a url; give one")
	}
	for i, a := range s.Command {
		v.envRefs(src, fmt.Sprintf("server.command[%d]", i), a, declared)
	}
	if len(s.Command) > 0 && !strings.Contains(s.Command[0], "${") {
		// A server that cannot start would fail every call: say so now, naming the file.
		if _, err := weft.LookProgram(v.r.Root, s.Command[0]); err != nil {
			v.errf(src, "server.command[0]", "%v", err)
		}
	}
	if s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") && !strings.HasPrefix(s.URL, "${env:") {
		v.errf(src, "server.url", "url must start with http:// or https://")
	}
	for _, k := range sortedKeys(s.Env) {
		v.envRefs(src, "server.env."+k, s.Env[k], declared)
	}
	v.envRefs(src, "server.url", s.URL, declared)
	for _, k := range sortedKeys(s.Headers) {
		v.envRefs(src, "server.headers."+k, s.Headers[k], declared)
	}
	for i, t := range s.Tools {
		if t == "" {
			v.errf(src, fmt.Sprintf("tools[%d]", i), "tool name is empty")
		} else if other, ok := v.r.Tool(s.Prefix + t); ok {
			v.errf(src, fmt.Sprintf("tools[%d]", i), "duplicate tool %q (%s, %s)", other.Name, v.r.Source("tool", other.Name), src)
		}
	}
}

// ---- prompts ----

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

// ---- agents ----

func (v *validator) agent(a *weft.Agent) {
	src := v.r.Source("agent", a.Name)
	if strings.TrimSpace(a.Name) == "" {
		v.errf(src, "name", "name is required (a non-empty string)")
	}
	switch a.Type {
	case "", weft.AIHuman, weft.DualAI:
	default:
		v.errf(src, "type", "type must be ai_human or dual_ai, got %q", a.Type)
	}
	if a.Budget != nil {
		for _, p := range a.Budget.Problems() {
			v.errf(src, "budget."+p[0], "%s", p[1])
		}
	}
	kind := a.Kind()
	if a.SideA.Human {
		v.errf(src, "sideA", "sideA is the AI side; a human side can only be sideB of an ai_human agent")
	} else {
		v.side(src, "sideA", a.SideA)
	}
	switch kind {
	case weft.AIHuman:
		if a.SideB != nil && !a.SideB.Human {
			v.errf(src, "sideB", "sideB of an ai_human agent is the human side ({human: true}) or absent")
		}
		if a.SideB != nil && a.SideB.Human {
			v.humanSide(src, "sideB", *a.SideB)
		}
	case weft.DualAI:
		switch {
		case a.SideB == nil:
			v.errf(src, "sideB", "a dual_ai agent needs an AI sideB (a prompt or handler)")
		case a.SideB.Human:
			v.errf(src, "sideB", "sideB of a dual_ai agent must be an AI side, not human")
		default:
			v.side(src, "sideB", *a.SideB)
		}
		ends := a.MaxSessionTurns > 0
		for _, s := range []*weft.AgentSide{&a.SideA, a.SideB} {
			if s != nil && (s.SessionStop != nil || s.SessionFail != nil) {
				ends = true
			}
		}
		if !ends {
			v.warnf(src, "", "dual_ai agent %q has no session end (sessionStop, sessionFail or maxSessionTurns); it runs until a step cap", a.Name)
		}
	}
	if a.MaxSessionTurns < 0 {
		v.errf(src, "maxSessionTurns", "maxSessionTurns must be a positive integer")
	}
	if a.ExposeAsTool && strings.TrimSpace(a.ToolDescription) == "" {
		v.errf(src, "toolDescription", "toolDescription is required when exposeAsTool is true")
	}
	for i, h := range a.Hooks {
		if _, ok := v.r.Hook(h); !ok {
			v.errf(src, fmt.Sprintf("hooks[%d]", i), "no hook with id %q", h)
		}
	}
	v.env(src, "env", a.Env, v.agentDeclared(a))
}

func (v *validator) agentDeclared(a *weft.Agent) map[string]weft.VarType {
	m := map[string]weft.VarType{}
	for _, s := range []weft.AgentSide{a.SideA, a.Side(weft.SideB)} {
		if p, ok := v.r.Prompt(s.Prompt); ok {
			for k, t := range declaredTypes(p.Variables) {
				m[k] = t
			}
		}
	}
	return m
}

func (v *validator) humanSide(src, base string, s weft.AgentSide) {
	if s.Prompt != "" || s.Handler != "" || s.StopTool != "" || s.SessionStop != nil || s.SessionFail != nil || s.SessionStatus != nil || s.MaxSteps != 0 {
		v.errf(src, base, "a human side takes only label")
	}
}

func (v *validator) side(src, base string, s weft.AgentSide) {
	if s == (weft.AgentSide{}) {
		v.errf(src, base, "%s is required ({prompt: NAME} or {handler: NAME})", base)
		return
	}
	switch {
	case s.Prompt != "" && s.Handler != "":
		v.errf(src, base, "a side has exactly one of prompt or handler")
	case s.Prompt == "" && s.Handler == "":
		v.errf(src, base+".prompt", "an AI side needs a prompt (or a Go handler)")
	}
	var p *weft.Prompt
	if s.Prompt != "" {
		if pp, ok := v.r.Prompt(s.Prompt); ok {
			p = pp
		} else {
			v.errf(src, base+".prompt", "no prompt named %q", s.Prompt)
		}
	}
	if s.Handler != "" {
		if _, ok := v.r.Handler(s.Handler); !ok {
			v.errf(src, base+".handler", "no handler named %q (handlers are registered in Go)", s.Handler)
		}
	}
	if s.MaxSteps < 0 {
		v.errf(src, base+".maxSteps", "maxSteps must be a positive integer")
	}
	if s.StopToolResponseProperty != "" && s.StopTool == "" {
		v.errf(src, base+".stopToolResponseProperty", "stopToolResponseProperty needs stopTool")
	}
	if s.StopTool != "" {
		if t := v.sideTool(src, base+".stopTool", p, s.StopTool); t != nil && s.StopToolResponseProperty != "" {
			v.stringArg(src, base+".stopToolResponseProperty", t, s.StopToolResponseProperty)
		}
	}
	for _, st := range []struct {
		key string
		t   *weft.SessionTool
	}{{"sessionStop", s.SessionStop}, {"sessionFail", s.SessionFail}, {"sessionStatus", s.SessionStatus}} {
		if st.t == nil {
			continue
		}
		if st.t.Name == "" {
			v.errf(src, base+"."+st.key+".name", "%s names a tool", st.key)
			continue
		}
		t := v.sideTool(src, base+"."+st.key, p, st.t.Name)
		if t != nil && st.t.MessageProperty != "" {
			v.stringArg(src, base+"."+st.key+".messageProperty", t, st.t.MessageProperty)
		}
		if t != nil && st.t.AttachmentsProperty != "" && (t.Args == nil || t.Args.Properties[st.t.AttachmentsProperty] == nil) {
			v.errf(src, base+"."+st.key+".attachmentsProperty", "%q is not an argument of tool %q", st.t.AttachmentsProperty, t.Name)
		}
	}
}

// sideTool checks that name is a tool offered by the side's prompt and returns it.
func (v *validator) sideTool(src, p string, pr *weft.Prompt, name string) *weft.Tool {
	if pr != nil && pr.Template == nil {
		listed := false
		for _, e := range pr.Tools {
			if e.Name == name {
				listed = true
			}
		}
		if !listed {
			v.errf(src, p, "%q is not among the tools of prompt %q", name, pr.Name)
		}
	}
	t, ok := v.r.Tool(name)
	if !ok {
		if v.r.MCPServerOf(name) == nil {
			v.errf(src, p, "no tool named %q", name)
		}
		return nil
	}
	return t
}

func (v *validator) stringArg(src, p string, t *weft.Tool, prop string) {
	if t.Args == nil || t.Args.Properties[prop] == nil {
		v.errf(src, p, "%q is not an argument of tool %q", prop, t.Name)
		return
	}
	ps := t.Args.Properties[prop]
	if ps.Type != "" && ps.Type != "string" || len(ps.Types) > 0 && !slices.Contains(ps.Types, "string") {
		v.errf(src, p, "argument %q of tool %q must be a string", prop, t.Name)
	}
}

// ---- Go-only definitions ----

func (v *validator) hook(h *weft.Hook) {
	src := v.r.Source("hook", h.ID)
	if h.ID == "" {
		v.errf(src, "ID", "hook id is required")
	}
	if err := h.CheckFn(); err != nil {
		v.errf(src, "Fn", "%v", err)
	}
}

func (v *validator) effect(e *weft.Effect) {
	src := v.r.Source("effect", e.Name)
	if e.Name == "" {
		v.errf(src, "Name", "effect name is required")
	}
	if e.Run == nil {
		v.errf(src, "Run", "effect %q has no Run function", e.Name)
	}
	if e.Args != nil {
		v.schema(src, "Args", e.Args)
	}
	if e.MaxAttempts < 0 {
		v.errf(src, "MaxAttempts", "MaxAttempts must not be negative")
	}
}

func (v *validator) handler(h *weft.Handler) {
	src := v.r.Source("handler", h.Name)
	if h.Name == "" {
		v.errf(src, "Name", "handler name is required")
	}
	if h.Fn == nil {
		v.errf(src, "Fn", "handler %q has no function", h.Name)
	}
}

// ambiguousNames warns where a bare tool entry resolves to a tool although a prompt or agent has the
// same name (a prefix such as `prompt:` forces the kind).
func (v *validator) ambiguousNames() {
	for _, p := range v.r.Prompts() {
		for i, e := range p.Tools {
			if e.Kind != weft.EntryAny {
				continue
			}
			var kinds []string
			if _, ok := v.r.Tool(e.Name); ok {
				kinds = append(kinds, "tool")
			}
			if _, ok := v.r.Prompt(e.Name); ok {
				kinds = append(kinds, "prompt")
			}
			if _, ok := v.r.Agent(e.Name); ok {
				kinds = append(kinds, "agent")
			}
			if len(kinds) > 1 {
				v.warnf(v.r.Source("prompt", p.Name), fmt.Sprintf("tools[%d]", i), "%q names both %s; the bare name resolves to the %s (write %s:%s for the other)", e.Name, strings.Join(kinds, " and "), kinds[0], kinds[1], e.Name)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
