// Package validate checks a registry's definitions before anything runs: each problem is a
// diagnostic naming the file (or Go source), the field and the rule broken.
package validate

import (
	"fmt"
	"path"
	"regexp"
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
