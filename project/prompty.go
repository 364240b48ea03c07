package project

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/prompty"
	"github.com/weft-agents/weft/schema"
)

// prompty loads a .prompty file of prompts/ as a Weft prompt (prompty.md §6): the template renders
// each step's system text and the messages around the history; front-matter fields fill the prompt.
func (l *loader) prompty(pf *parsed) {
	rel := pf.rel
	f, err := prompty.Load(pf.full, prompty.Options{Root: l.dir, LookupEnv: l.opt.LookupEnv})
	if err != nil {
		d := weft.Diagnostic{Source: rel, Severity: weft.SeverityError, Message: err.Error()}
		var pe *prompty.Error
		if errors.As(err, &pe) {
			d.Line, d.Column, d.Message = pe.Line, pe.Col, pe.Msg
		}
		pf.diags = append(pf.diags, d)
		return
	}
	pf.refs = f.FileRefs
	d := &decoder{src: rel, diags: &pf.diags}
	tpl := &promptyTemplate{f: f, src: rel, systemOnly: true}
	if r, err := f.Render(prompty.RenderInput{Args: f.SampleArgs()}); err == nil {
		tpl.systemOnly = len(r.Prefix) == 0 && len(r.Suffix) == 0
	}
	p := &weft.Prompt{Name: f.Name, ToolDescription: f.ToolDescription, Model: f.Model, ModelOptions: f.ModelOptions,
		Template: tpl}
	// The Weft keys of the front matter read exactly as in YAML prompts (typos are errors there);
	// other unknown keys stay in the file's metadata.
	fields := ordered(f.Fields).(yaml.MapSlice)
	o := &obj{d: d, items: fields, used: map[string]bool{}}
	d.promptOptions(o, p)
	switch {
	case o.has("requiredSchema") && f.InputSchema != nil:
		d.errf("requiredSchema", "give inputs or requiredSchema, not both")
	case o.has("requiredSchema"):
		p.RequiredSchema = o.schemaAt("requiredSchema")
	case f.InputSchema != nil:
		p.RequiredSchema = inputSchema(d, f)
	}
	switch {
	case o.has("outputSchema") && f.Outputs != nil:
		d.errf("outputSchema", "give outputs or outputSchema, not both")
	case o.has("outputSchema"):
		p.OutputSchema = o.schemaAt("outputSchema")
	case f.Outputs != nil:
		// A Prompty file's outputs make its answer structured.
		s, err := schema.FromMap(f.Outputs)
		if err != nil {
			d.errf("outputs", "invalid outputs: %v", err)
		} else {
			p.OutputSchema = s
		}
	}
	// The chat-history idiom places the whole history, so the prompt sees the earlier turns.
	if f.HistoryLoop != "" && !o.has("includeChat") {
		p.IncludeChat = true
	}
	o.done()
	if m, pd := l.implicitModel(d, f, p); m != nil {
		if pd != nil {
			pf.defs = append(pf.defs, definition{provider: pd, implicitFor: m})
		}
		pf.defs = append(pf.defs, definition{model: m, implicitFor: p})
	}
	for i, t := range f.Tools {
		if e, ok := frontMatterTool(d, index("tools", i), t); ok {
			p.Tools = append(p.Tools, e)
		}
	}
	pf.defs = append(pf.defs, definition{prompt: p})
}

// implicitModel returns the model of `model: {id, provider, connection}` (v2) or of a v1
// `model.configuration` (openai, azure_openai, serverless), named after its id (the Azure
// deployment), when no model of that name is defined (prompty.md §2.2): the endpoint becomes
// providerOptions.baseUrl, api_version providerOptions.apiVersion, organization the
// OpenAI-Organization header. A key written `${env:NAME}` is read from NAME at call time — through
// an implicit provider when NAME is not the provider's own key variable; a key written in the file
// itself is not used (warning).
func (l *loader) implicitModel(d *decoder, f *prompty.File, p *weft.Prompt) (*weft.Model, *weft.ProviderDef) {
	ref := f.ModelRef
	if ref == nil || ref.Provider == "" || ref.ID == "" {
		return nil, nil
	}
	if _, ok := l.reg.Model(ref.ID); ok {
		return nil, nil
	}
	m := &weft.Model{Name: ref.ID, Provider: ref.Provider, Model: ref.ID}
	var pd *weft.ProviderDef
	if c := ref.Connection; c != nil {
		opts := map[string]any{}
		if c.Endpoint != "" {
			opts["baseUrl"] = c.Endpoint
		}
		if c.APIVersion != "" {
			opts["apiVersion"] = c.APIVersion
		}
		if c.Organization != "" {
			opts["headers"] = map[string]any{"OpenAI-Organization": c.Organization}
		}
		if len(opts) > 0 {
			m.ProviderOptions = opts
		}
		own, _ := weft.ProviderKeyEnv(ref.Provider)
		switch {
		case c.APIKey == "":
		case c.APIKeyEnv == "":
			d.warnf("model.connection.apiKey", "a key written in the file is not used; write it as ${env:NAME}, or set %s", keyHint(own))
		case c.APIKeyEnv != own:
			pd = &weft.ProviderDef{Name: ref.Provider + ":" + c.APIKeyEnv, Base: ref.Provider, APIKeyEnv: c.APIKeyEnv, BaseURL: c.Endpoint}
			m.Provider = pd.Name
		}
	}
	p.Model = ref.ID
	return m, pd
}

func keyHint(v string) string {
	if v == "" {
		return "the provider's key variable"
	}
	return v
}

// inputSchema builds the requiredSchema of the inputs in their file order.
func inputSchema(d *decoder, f *prompty.File) *schema.Schema {
	s, err := schema.FromMap(f.InputSchema)
	if err != nil {
		d.errf("inputs", "invalid inputs: %v", err)
		return nil
	}
	s.PropertyOrder = s.PropertyOrder[:0]
	for _, in := range f.Inputs {
		if _, ok := s.Properties[in.Name]; ok {
			s.PropertyOrder = append(s.PropertyOrder, in.Name)
		}
	}
	return s
}

// frontMatterTool maps one front-matter tools entry (prompty.md §2.3): strings and objects without
// kind/type are Weft tool entries; kind function binds the Weft tool of that name; mcp and native
// kinds are not bound here and are reported.
func frontMatterTool(d *decoder, path string, v any) (weft.ToolEntry, bool) {
	v = ordered(v)
	if s, ok := v.(string); ok {
		name, kind := entryName(s)
		return weft.ToolEntry{Name: name, Kind: kind}, true
	}
	m, ok := v.(yaml.MapSlice)
	if !ok {
		d.errf(path, "a tool entry is a name or a mapping, got %s", describe(v))
		return weft.ToolEntry{}, false
	}
	kind := ""
	for _, it := range m {
		if k := fmt.Sprint(it.Key); k == "kind" || k == "type" {
			kind, _ = it.Value.(string)
		}
	}
	switch kind {
	case "":
		return d.toolEntry(path, m), true
	case "function":
		name := ""
		for _, it := range m {
			if k := fmt.Sprint(it.Key); k == "name" || (k == "id" && name == "") {
				name, _ = it.Value.(string)
			}
		}
		if name == "" {
			d.errf(path+".name", "a function tool names the Weft tool it binds")
			return weft.ToolEntry{}, false
		}
		e := weft.ToolEntry{Name: name, Kind: weft.EntryTool}
		for _, it := range m {
			if fmt.Sprint(it.Key) != "bindings" {
				continue
			}
			bm, ok := it.Value.(yaml.MapSlice)
			if !ok {
				d.errf(path+".bindings", "bindings map tool parameters to inputs")
				continue
			}
			e.Bindings = map[string]string{}
			for _, b := range bm {
				param := fmt.Sprint(b.Key)
				switch x := b.Value.(type) {
				case string:
					e.Bindings[param] = x
				case yaml.MapSlice:
					for _, kv := range x {
						if fmt.Sprint(kv.Key) == "input" {
							e.Bindings[param], _ = kv.Value.(string)
						}
					}
				}
				if e.Bindings[param] == "" {
					d.errf(path+".bindings."+param, "a binding names an input: {input: NAME}")
				}
			}
		}
		return e, true
	case "mcp":
		d.errf(path, "kind: mcp tools in .prompty front matter cannot be bound (this version of Weft has no MCP client); remove the entry")
	default:
		d.errf(path, "tool kind %q cannot be bound to a Weft tool (kinds: function, or a tool defined in tools/); remove the entry or define the tool", kind)
	}
	return weft.ToolEntry{}, false
}

// ordered turns decoded map[string]any values into ordered mappings (sorted keys) so the YAML
// decoders can read them.
func ordered(v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		m := make(yaml.MapSlice, 0, len(x))
		for _, k := range keys {
			m = append(m, yaml.MapItem{Key: k, Value: ordered(x[k])})
		}
		return m
	case yaml.MapSlice:
		out := make(yaml.MapSlice, len(x))
		for i, it := range x {
			out[i] = yaml.MapItem{Key: it.Key, Value: ordered(it.Value)}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ordered(e)
		}
		return out
	case int:
		return int64(x)
	}
	return v
}

func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// promptyTemplate renders a .prompty prompt per step (weft.PromptTemplate).
type promptyTemplate struct {
	f   *prompty.File
	src string
	// systemOnly: a sample rendering has no messages besides the system text.
	systemOnly bool
}

// SystemOnly reports whether the template renders only system text, so that it can be included
// (definitions.md §4.3).
func (t *promptyTemplate) SystemOnly() bool { return t.systemOnly }

// RenderPrompt renders the template with the step's arguments and env.
func (t *promptyTemplate) RenderPrompt(ctx context.Context, in weft.TemplateInput) (*weft.RenderedPrompt, error) {
	r, err := t.f.Render(prompty.RenderInput{Args: in.Args, Env: in.Env})
	if err != nil {
		return nil, err
	}
	suffix := r.Suffix
	if r.HistoryLoop != "" {
		// In the chat-history idiom the turn's question is the thread's newest message: a user
		// message after the loop that renders empty (its input not given) is not sent.
		suffix = slices.DeleteFunc(slices.Clone(suffix), func(m weft.LLMMessage) bool {
			return m.Role == weft.RoleUser && strings.TrimSpace(m.Content) == "" && len(m.Parts) == 0
		})
	}
	out := &weft.RenderedPrompt{System: r.System, Prefix: r.Prefix, Suffix: suffix, HistoryLimit: r.ThreadLimit, Warnings: r.Warnings}
	if len(r.Tools) > 0 {
		var diags weft.Diagnostics
		d := &decoder{src: t.src, diags: &diags}
		for i, e := range r.Tools {
			if te, ok := frontMatterTool(d, index("tools", i), e); ok {
				out.Tools = append(out.Tools, te)
			}
		}
		if diags.HasErrors() {
			msgs := make([]string, 0, len(diags))
			for _, x := range diags.Errors() {
				msgs = append(msgs, x.String())
			}
			return nil, fmt.Errorf("tools section: %s", strings.Join(msgs, "; "))
		}
	}
	return out, nil
}

// SampleArgs returns the inputs' samples (else defaults), for `weft render` without arguments.
func (t *promptyTemplate) SampleArgs() map[string]any { return t.f.SampleArgs() }

// OpenPrompty loads one .prompty file that need not be in a project, the way Prompty users preview
// a prompt (`weft render FILE.prompty`): the prompt, the model its front matter implies (without
// one, a stand-in model of the test provider), `${file:}` confined to the file's directory, and the
// project checks that only make sense inside a project (a description, a defined model) relaxed.
// It returns the registry and the prompt's name.
func OpenPrompty(file string, opt Options) (*weft.Registry, string, weft.Diagnostics) {
	reg := opt.Registry
	if reg == nil {
		reg = weft.NewRegistry()
	}
	var diags weft.Diagnostics
	dir := filepath.Dir(file)
	if abs, err := filepath.Abs(dir); err == nil {
		reg.Root = abs
	}
	l := &loader{dir: dir, reg: reg, diags: &diags, opt: opt}
	pf := &parsed{full: file, rel: filepath.Base(file)}
	l.prompty(pf)
	l.add("prompts", pf)
	name := ""
	for _, d := range pf.defs {
		if d.prompt == nil {
			continue
		}
		p := d.prompt
		name = p.Name
		if strings.TrimSpace(p.ToolDescription) == "" {
			p.ToolDescription = p.Name
		}
		if _, ok := reg.Model(p.Model); !ok {
			stand := &weft.Model{Name: "preview", Provider: "test", Model: "preview"}
			if p.Model != "" {
				diags = append(diags, weft.Diagnostic{Source: pf.rel, Path: "model", Severity: weft.SeverityWarning,
					Message: fmt.Sprintf("model %q is not defined here; previewing with a stand-in model", p.Model)})
			}
			reg.AddModelFrom(pf.rel, stand)
			p.Model = stand.Name
		}
	}
	if !diags.HasErrors() {
		diags = append(diags, reg.Validate()...)
	}
	return reg, name, Sort(diags)
}
