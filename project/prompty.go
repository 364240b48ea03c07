package project

import (
	"context"
	"errors"
	"fmt"
	"github.com/weft-agents/weft/validate"
	"maps"
	"os"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/prompty"
	"github.com/weft-agents/weft/schema"
)

// prompty loads a .prompty file of prompts/ as a Weft prompt: the template renders
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
	tpl := &promptyTemplate{f: f, src: rel, systemOnly: true, samples: f.SampleArgs()}
	for _, in := range f.Inputs {
		if v, ok := tpl.samples[in.Name]; ok && in.HasSample && !sampleFits(in.Kind, v) {
			// A sample only fills a preview: one of another type is dropped with a warning, not refused.
			d.warnf("inputs."+in.Name+".sample", "the sample is not of type %s, so previews do not use it", in.Kind)
			delete(tpl.samples, in.Name)
			if in.HasDefault {
				tpl.samples[in.Name] = in.Default
			}
		}
	}
	if r, err := f.Render(prompty.RenderInput{Args: tpl.samples}); err == nil {
		tpl.systemOnly = len(r.Prefix) == 0 && len(r.Suffix) == 0
	}
	p := &weft.Prompt{Name: f.Name, ToolDescription: f.ToolDescription, Model: f.Model, ModelOptions: flatOptions(f.ModelOptions),
		Template: tpl}
	if ref := f.ModelRef; ref != nil {
		switch api := strings.ToLower(strings.TrimSpace(ref.APIType)); api {
		case "", "chat":
		case "responses":
			// Prompty v2's Responses API: the OpenAI adapter's Responses wire.
			if p.ModelOptions == nil {
				p.ModelOptions = map[string]any{}
			}
			if _, set := p.ModelOptions["useResponsesApi"]; !set {
				p.ModelOptions["useResponsesApi"] = true
			}
		default:
			d.errf("model.apiType", "apiType %s is not supported: a Weft prompt is a chat model's conversation (apiType chat or responses); call an embeddings or image endpoint from a tool instead", ref.APIType)
		}
	}
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
	if (f.HistoryLoop != "" || f.ThreadPlaced != "") && !o.has("includeChat") {
		p.IncludeChat = true
	}
	o.done()
	// A top-level key neither Prompty nor Weft defines is kept as metadata, as Prompty says, but
	// it is most often a typo: a warning (an error under --strict) names the key it resembles.
	for _, k := range f.UnknownKeys {
		if c := prompty.ClosestKey(k); c != "" {
			d.warnf(k, "unknown front-matter key %q (did you mean %q?); it is kept as metadata and has no effect", k, c)
		} else {
			d.warnf(k, "unknown front-matter key %q; it is kept as metadata and has no effect (put it under metadata: to say so)", k)
		}
	}
	if m, pd := l.implicitModel(d, f, p); m != nil {
		if pd != nil {
			pf.defs = append(pf.defs, definition{provider: pd, implicitFor: m})
		}
		pf.defs = append(pf.defs, definition{model: m, implicitFor: p})
	}
	// at names each entry by where the file writes it, however many entries it became.
	at := func(path string, entries []weft.ToolEntry) []weft.ToolEntry {
		for k := range entries {
			entries[k].Path = path
		}
		return entries
	}
	for i, t := range f.Tools {
		if raw, ok := t.(map[string]any); ok && (raw["kind"] == "openapi" || raw["type"] == "openapi") {
			p.Tools = append(p.Tools, at(index("tools", i), l.openapiEntries(d, index("tools", i), raw, f, pf))...)
			continue
		}
		p.Tools = append(p.Tools, at(index("tools", i), frontMatterTool(d, index("tools", i), t, func(def definition) { pf.defs = append(pf.defs, def) }))...)
	}
	if tools, ok := p.ModelOptions["tools"].([]any); ok {
		// Prompty v1 writes OpenAI function definitions under model.parameters.tools (often
		// ${file:functions.json}): they are function tools the file declares, bound by name.
		p.ModelOptions = maps.Clone(p.ModelOptions)
		delete(p.ModelOptions, "tools")
		for i, t := range tools {
			path := index("model.parameters.tools", i)
			fn, _ := t.(map[string]any)
			if inner, ok := fn["function"].(map[string]any); ok {
				fn = inner
			}
			name, _ := fn["name"].(string)
			if name == "" {
				d.errf(path, "a tool definition needs function.name")
				continue
			}
			entry := map[string]any{"kind": "function", "name": name, "description": fn["description"], "parameters": fn["parameters"]}
			if entry["description"] == nil {
				entry["description"] = ""
			}
			p.Tools = append(p.Tools, at(path, frontMatterTool(d, path, entry, nil))...)
		}
	}
	pf.defs = append(pf.defs, definition{prompt: p})
	for i, def := range pf.defs {
		if c, ok := def.implicitFor.(promptyChild); ok {
			// A child .prompty file (a kind: prompty tool) is a prompt of its own, loaded like this one.
			child := &parsed{rel: c.rel, full: filepath.Join(l.dir, filepath.FromSlash(c.rel)), depth: pf.depth + 1}
			if _, err := os.Stat(child.full); err != nil {
				pf.diags = append(pf.diags, weft.Diagnostic{Source: rel, Path: c.path, Severity: weft.SeverityError,
					Message: fmt.Sprintf("child prompt %s not found", c.rel)})
				pf.defs[i] = definition{}
				continue
			}
			if child.depth > maxPromptyNesting {
				pf.diags = append(pf.diags, weft.Diagnostic{Source: rel, Path: c.path, Severity: weft.SeverityError,
					Message: fmt.Sprintf("kind: prompty tools nest more than %d files deep (a cycle?)", maxPromptyNesting)})
				continue
			}
			l.prompty(child)
			pf.diags = append(pf.diags, child.diags...)
			pf.refs = append(pf.refs, child.full)
			for _, cd := range child.defs {
				if cd.prompt != nil && cd.prompt.Template != nil && cd.prompt.Template.(*promptyTemplate).src == c.rel {
					cd.prompt.Name = c.name
					if c.description != "" {
						cd.prompt.ToolDescription = c.description
					}
					cd.implicitFor = c
				}
				pf.defs = append(pf.defs, cd)
			}
			pf.defs[i] = definition{}
		}
	}
}

// flatOptions returns the model options with Prompty v2's options.additionalProperties (provider
// parameters without a field of their own) merged in as options of their own, so that no literal
// additionalProperties key reaches a request body.
func flatOptions(o map[string]any) map[string]any {
	extra, ok := o["additionalProperties"].(map[string]any)
	if !ok {
		return o
	}
	out := make(map[string]any, len(o)+len(extra))
	for k, v := range extra {
		out[k] = v
	}
	for k, v := range o {
		if k != "additionalProperties" {
			out[k] = v
		}
	}
	return out
}

// maxPromptyNesting bounds how deep kind: prompty tools may nest child files.
const maxPromptyNesting = 8

// promptyChild marks the prompt of a child .prompty file a kind: prompty tool names.
type promptyChild struct {
	name, description, rel, path string
}

// implicitModel returns the model of `model: {id, provider, connection}` (v2) or of a v1
// `model.configuration` (openai, azure_openai, serverless), named after its id (the Azure
// deployment), when no model of that name is defined: the endpoint becomes
// providerOptions.baseUrl, api_version providerOptions.apiVersion, organization the
// OpenAI-Organization header. A key written `${env:NAME}` is read from NAME at call time — through
// an implicit provider when NAME is not the provider's own key variable; a key written in the file
// itself is not used (warning).
func (l *loader) implicitModel(d *decoder, f *prompty.File, p *weft.Prompt) (*weft.Model, *weft.ProviderDef) {
	ref := f.ModelRef
	if ref == nil && f.Model != "" {
		ref = &prompty.ModelRef{ID: f.Model}
	}
	if ref == nil || ref.ID == "" {
		return nil, nil
	}
	if _, ok := l.reg.Model(ref.ID); ok {
		return nil, nil
	}
	if ref.Provider == "" {
		// A model named only by id (`model: gpt-4o`, `model.id`) uses the default connection, as
		// Prompty's runtimes do: Azure OpenAI when AZURE_OPENAI_ENDPOINT is set (the id is the
		// deployment), else OpenAI (OPENAI_API_KEY, OPENAI_BASE_URL).
		c := *ref
		c.Provider = "openai"
		lookup := l.opt.LookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		if v, ok := lookup("AZURE_OPENAI_ENDPOINT"); ok && strings.TrimSpace(v) != "" {
			c.Provider = "azure_openai"
		}
		ref = &c
		d.warnf("model", "model %q is not defined in models/: using the default connection, %s (define it in models/ to choose another)", ref.ID, defaultConnection[ref.Provider])
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
		case c.APIKeyEnv == "" && c.APIKey != "":
			d.warnf("model.connection.apiKey", "a key written in the file is not used; write it as ${env:NAME}, or set %s", keyHint(own))
		case c.APIKeyEnv != "" && c.APIKeyEnv != own:
			pd = &weft.ProviderDef{Name: ref.Provider + ":" + c.APIKeyEnv, Base: ref.Provider, APIKeyEnv: c.APIKeyEnv, BaseURL: c.Endpoint}
			m.Provider = pd.Name
		}
	}
	p.Model = ref.ID
	return m, pd
}

// defaultConnection describes the default connection of a model named only by id.
var defaultConnection = map[string]string{
	"openai":       "OpenAI (OPENAI_API_KEY, OPENAI_BASE_URL)",
	"azure_openai": "Azure OpenAI (AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_API_KEY, the id as the deployment)",
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

// frontMatterTool maps one front-matter tools entry: strings and objects without
// kind/type are Weft tool entries; kind function binds the Weft tool of that name; mcp and native
// kinds are not bound here and are reported.
func frontMatterTool(d *decoder, path string, v any, define func(definition)) []weft.ToolEntry {
	e, ok := frontMatterEntry(d, path, v, define)
	if !ok {
		return nil
	}
	return e
}

func frontMatterEntry(d *decoder, path string, v any, define func(definition)) ([]weft.ToolEntry, bool) {
	one := func(e weft.ToolEntry, ok bool) ([]weft.ToolEntry, bool) { return []weft.ToolEntry{e}, ok }
	raw, _ := v.(map[string]any)
	v = ordered(v)
	if s, ok := v.(string); ok {
		name, kind := entryName(s)
		return one(weft.ToolEntry{Name: name, Kind: kind}, true)
	}
	m, ok := v.(yaml.MapSlice)
	if !ok {
		d.errf(path, "a tool entry is a name or a mapping, got %s", describe(v))
		return nil, false
	}
	kind := ""
	for _, it := range m {
		if k := fmt.Sprint(it.Key); k == "kind" || k == "type" {
			kind, _ = it.Value.(string)
		}
	}
	switch kind {
	case "":
		return one(d.toolEntry(path, m), true)
	case "mcp":
		return mcpEntries(d, path, m, define)
	case "prompty":
		return promptyEntry(d, path, m, define)
	case "function":
		name := ""
		for _, it := range m {
			if k := fmt.Sprint(it.Key); k == "name" || (k == "id" && name == "") {
				name, _ = it.Value.(string)
			}
		}
		if name == "" {
			d.errf(path+".name", "a function tool names the Weft tool it binds")
			return nil, false
		}
		e := weft.ToolEntry{Name: name, Kind: weft.EntryTool, Declared: declaredSpec(d, path, name, raw), DeclaredKind: kind}
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
		return one(e, true)
	case "openapi":
		d.errf(path, "a tools section cannot add an openapi tool; list it in the front matter")
	default:
		// A custom kind (`kind: my_provider`), or a provider's hosted tool (web_search,
		// code_interpreter, …), binds like a function tool: to the project's tool of its name
		// (tools/NAME.yaml — executionMode: provider for one the model's provider runs — an MCP
		// server's tool or a Go tool); without one, validation warns and a run fails saying so.
		name := ""
		for _, it := range m {
			if k := fmt.Sprint(it.Key); k == "name" || (k == "id" && name == "") {
				name, _ = it.Value.(string)
			}
		}
		if name == "" {
			d.errf(path+".name", "a tool of kind %q needs a name: the project tool (tools/NAME.yaml, an MCP server's tool or a Go tool) it binds", kind)
			return nil, false
		}
		spec := declaredSpec(d, path, name, raw)
		if spec == nil {
			spec = &weft.ToolSpec{Name: name, Description: fmt.Sprintf("A %s tool.", kind)}
		}
		return one(weft.ToolEntry{Name: name, Kind: weft.EntryTool, Declared: spec, DeclaredKind: kind}, true)
	}
	return nil, false
}

// declaredSpec returns the tool a `kind: function` entry declares with its description and
// parameters (Prompty's property list, or a JSON Schema), nil when it declares neither. They are
// read from the entry, else from its `options` (Prompty v1's C# form, where parameters may sit
// one `options` deeper still).
func declaredSpec(d *decoder, path, name string, raw map[string]any) *weft.ToolSpec {
	desc, _ := raw["description"].(string)
	params, hasParams := raw["parameters"]
	paramsPath := path + ".parameters"
	for o, p := raw["options"], path+".options"; ; p += ".options" {
		om, ok := o.(map[string]any)
		if !ok {
			break
		}
		if s, ok := om["description"].(string); ok && desc == "" {
			desc = s
		}
		if v, ok := om["parameters"]; ok && !hasParams {
			params, hasParams, paramsPath = v, true, p+".parameters"
		}
		o = om["options"]
	}
	if desc == "" && !hasParams {
		return nil
	}
	spec := &weft.ToolSpec{Name: name, Description: desc}
	if hasParams && params != nil {
		m, err := prompty.ParametersSchema(params)
		if err == nil {
			spec.Parameters, err = schema.FromMap(m)
		}
		if err != nil {
			d.errf(paramsPath, "invalid parameters: %v", err)
			return nil
		}
	}
	return spec
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
	// samples are the inputs' samples (else defaults) that fit their declared types.
	samples map[string]any
}

// SystemOnly reports whether the template renders only system text, so that it can be included:
// an include inserts only system text.
func (t *promptyTemplate) SystemOnly() bool { return t.systemOnly }

// RenderPrompt renders the template with the step's arguments and env.
func (t *promptyTemplate) RenderPrompt(ctx context.Context, in weft.TemplateInput) (*weft.RenderedPrompt, error) {
	r, err := t.f.Render(prompty.RenderInput{Args: in.Args, Env: in.Env})
	if err != nil {
		return nil, err
	}
	out := &weft.RenderedPrompt{System: r.System, Prefix: sendable(r.Prefix, nil), Suffix: sendable(r.Suffix, nil),
		HistoryLimit: r.ThreadLimit, Warnings: r.Warnings}
	if r.ThreadInput != "" && in.InThread {
		// Where a thread input places the history (`{{conversation}}` or the chat-history loop),
		// the turn's question is the thread's newest message, sent once and last: a user message
		// after it made only of input values (`user:\n{{question}}`) is the place Prompty's caller
		// puts the new question, so it is not sent — neither an input's default nor the value an
		// earlier message of the thread gave.
		out.Suffix = sendable(r.Suffix, r.QuestionSlots)
	}
	if len(r.Tools) > 0 {
		var diags weft.Diagnostics
		d := &decoder{src: t.src, diags: &diags}
		for i, e := range r.Tools {
			out.Tools = append(out.Tools, frontMatterTool(d, index("tools", i), e, nil)...)
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

// sendable returns msgs without the messages at the indices skip and without user messages that
// render empty (an empty section, or one whose input was not given): chat APIs refuse or
// mis-answer an empty user message.
func sendable(msgs []weft.LLMMessage, skip []int) []weft.LLMMessage {
	var out []weft.LLMMessage
	for i, m := range msgs {
		empty := m.Role == weft.RoleUser && strings.TrimSpace(m.Content) == "" && len(m.Parts) == 0 && len(m.ToolCalls) == 0
		if empty || slices.Contains(skip, i) {
			if out == nil {
				out = append(make([]weft.LLMMessage, 0, len(msgs)), msgs[:i]...)
			}
			continue
		}
		if out != nil {
			out = append(out, m)
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

// SampleArgs returns the inputs' samples (else defaults), for `weft render` without arguments.
func (t *promptyTemplate) SampleArgs() map[string]any { return maps.Clone(t.samples) }

// sampleFits reports whether a sample value is of the declared input kind.
func sampleFits(kind string, v any) bool {
	switch v.(type) {
	case nil:
		return true
	case string:
		return kind != "number" && kind != "integer" && kind != "boolean" && kind != "array" && kind != "object"
	case bool:
		return kind == "boolean"
	case int, int64:
		return kind == "integer" || kind == "number"
	case float64:
		return kind == "number"
	case []any:
		return kind == "array" || kind == "thread"
	case map[string]any:
		return kind == "object" || kind == "image" || kind == "file" || kind == "audio"
	}
	return true
}

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
		// An MCP server the file names but does not declare is declared in a project's tools/,
		// which a file on its own has not: the preview goes on without its tools.
		p.Tools = slices.DeleteFunc(slices.Clone(p.Tools), func(e weft.ToolEntry) bool {
			if e.Kind != weft.EntryMCP {
				return false
			}
			server, _ := weft.SplitMCPEntry(e.Name)
			if _, ok := reg.MCPServer(server); ok {
				return false
			}
			path := e.Path
			if path == "" {
				path = "tools"
			}
			diags = append(diags, weft.Diagnostic{Source: pf.rel, Path: path, Severity: weft.SeverityWarning,
				Message: fmt.Sprintf("MCP server %q is not declared here (a project declares it in tools/%s.yaml); previewing without its tools", server, server)})
			return true
		})
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
		diags = append(diags, validate.Registry(reg)...)
	}
	return reg, name, Sort(diags)
}

// mapValue returns the value of key in an ordered mapping.
func mapValue(m yaml.MapSlice, key string) (any, bool) {
	for _, it := range m {
		if fmt.Sprint(it.Key) == key {
			return it.Value, true
		}
	}
	return nil, false
}

func mapString(m yaml.MapSlice, key string) string {
	v, _ := mapValue(m, key)
	s, _ := v.(string)
	return s
}

// mcpEntries binds a Prompty 2 `kind: mcp` tool through Weft's MCP client: a
// `connection` of kind reference (or a serverName, else the tool's name) names a server declared
// in tools/; a connection with an endpoint (streamable HTTP, with headers) or a command (stdio)
// declares one named after the tool. allowedTools limits the tools offered; the entries are
// mcp:SERVER or mcp:SERVER/TOOL.
func mcpEntries(d *decoder, path string, m yaml.MapSlice, define func(definition)) ([]weft.ToolEntry, bool) {
	name := mapString(m, "name")
	server := mapString(m, "serverName")
	if server == "" {
		server = name
	}
	if cv, ok := mapValue(m, "connection"); ok {
		conn, ok := cv.(yaml.MapSlice)
		if !ok {
			d.errf(path+".connection", "connection is a mapping: {kind: reference, name: SERVER} or {endpoint: URL}")
			return nil, false
		}
		endpoint := mapString(conn, "endpoint")
		if endpoint == "" {
			endpoint = mapString(conn, "url")
		}
		cmd, hasCmd := mapValue(conn, "command")
		switch {
		case endpoint != "" || hasCmd:
			if name == "" {
				d.errf(path+".name", "an mcp tool with its own connection needs a name (the server's name)")
				return nil, false
			}
			if define == nil {
				d.errf(path+".connection", "a tools section cannot declare an MCP server; declare it in the front matter or in tools/")
				return nil, false
			}
			s := &weft.MCPServer{Name: name, Description: mapString(m, "description"), URL: endpoint}
			if hv, ok := mapValue(conn, "headers"); ok {
				hm, _ := hv.(yaml.MapSlice)
				s.Headers = map[string]string{}
				for _, h := range hm {
					s.Headers[fmt.Sprint(h.Key)] = fmt.Sprint(h.Value)
				}
			}
			if hasCmd {
				s.Command = d.strList(path+".connection.command", cmd)
			}
			define(definition{mcp: s})
			server = name
		case mapString(conn, "name") != "":
			server = mapString(conn, "name")
		}
	}
	if server == "" {
		d.errf(path, "an mcp tool names its server: connection: {kind: reference, name: SERVER}, serverName or name")
		return nil, false
	}
	var out []weft.ToolEntry
	if av, ok := mapValue(m, "allowedTools"); ok {
		for _, t := range d.strList(path+".allowedTools", av) {
			out = append(out, weft.ToolEntry{Name: server + "/" + t, Kind: weft.EntryMCP})
		}
		return out, true
	}
	return []weft.ToolEntry{{Name: server, Kind: weft.EntryMCP}}, true
}

// promptyEntry binds a Prompty 2 `kind: prompty` tool: the child .prompty file at `path` (relative
// to this file, inside the project) becomes a prompt named after the tool, offered as a sub-prompt.
func promptyEntry(d *decoder, p string, m yaml.MapSlice, define func(definition)) ([]weft.ToolEntry, bool) {
	name, file := mapString(m, "name"), mapString(m, "path")
	switch {
	case name == "":
		d.errf(p+".name", "a prompty tool needs a name (the sub-prompt's name)")
		return nil, false
	case file == "":
		d.errf(p+".path", "a prompty tool needs path: the child .prompty file")
		return nil, false
	case define == nil:
		d.errf(p, "a tools section cannot add a prompty tool; list it in the front matter")
		return nil, false
	case strings.HasPrefix(file, "/") || !strings.EqualFold(pathpkg.Ext(file), ".prompty"):
		d.errf(p+".path", "path names a .prompty file relative to this one, got %q", file)
		return nil, false
	}
	rel := pathpkg.Join(pathpkg.Dir(d.src), file)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		d.errf(p+".path", "%q is outside the project", file)
		return nil, false
	}
	define(definition{implicitFor: promptyChild{name: name, description: mapString(m, "description"), rel: rel, path: p + ".path"}})
	return []weft.ToolEntry{{Name: name, Kind: weft.EntryPrompt}}, true
}
