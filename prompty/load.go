package prompty

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	weft "github.com/weft-agents/weft"
	"github.com/weft-agents/weft/prompty/tmpl"
)

// maxFileBytes caps a .prompty file.
const maxFileBytes = 20 << 20

// Options configures Load.
type Options struct {
	// Dialect is DialectSeed (default when empty) or DialectV2; front-matter `dialect:` overrides it.
	Dialect string
	// Root is the project root that `${file:}` references and local media must stay inside
	// (symlinks resolved). Default: the .prompty file's directory.
	Root string
	// LookupEnv reads the process environment for front-matter `${env:}`. Default: os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Input is one declared input of the front matter's `inputs`.
type Input struct {
	// Name is the argument name.
	Name string
	// Kind is string, number, integer, boolean, array, object, thread, image, file or audio.
	Kind string
	// Description documents the input.
	Description string
	// Default is the value used when the argument is missing (HasDefault tells it is set).
	Default any
	// HasDefault reports whether Default was given.
	HasDefault bool
	// Required makes the argument mandatory (default false).
	Required bool
	// Strict rejects a value with a line that looks like a role marker (default false).
	Strict bool
	// EnumValues lists the allowed values, if restricted.
	EnumValues []any
	// JSONSchema is an explicit schema for the value (`json_schema`).
	JSONSchema map[string]any
	// Sample is `sample`/`example`: never used at run time; `weft render` fills missing args with it.
	Sample any
	// HasSample reports whether Sample was given.
	HasSample bool
}

// ParamRef is a front-matter value `${params:NAME}`, resolved from the arguments at render time.
type ParamRef struct {
	// Path is the value's key path, e.g. `tools[0].options.connection`.
	Path string
	// Name is the argument name.
	Name string
	// Line is the file line of the value.
	Line int
}

// File is a loaded .prompty file.
type File struct {
	// Path is the file path as given.
	Path string
	// Dialect is DialectSeed or DialectV2.
	Dialect string
	// Name is `name`, else the file name without its extension.
	Name string
	// Description is `description`.
	Description string
	// ToolDescription is `toolDescription`, else `description`.
	ToolDescription string
	// Model is the string `model:` or `model.id`: a Weft model name ("" when absent).
	Model string
	// ModelRef is the `model:` mapping; nil for the string form or no model.
	ModelRef *ModelRef
	// ModelOptions are `model.options` / `model.parameters` with max tokens, temperature, top_p, stop
	// and seed under the keys maxOutputTokens, temperature, topP, stop and seed; other keys as written.
	ModelOptions map[string]any
	// Inputs are the declared inputs in file order (map form: sorted by name).
	Inputs []Input
	// InputSchema is the JSON Schema object of the arguments (thread inputs excluded); nil without inputs.
	InputSchema map[string]any
	// StrictInputs names the inputs whose values are checked for forged markers.
	StrictInputs []string
	// ThreadInputs names the `kind: thread` inputs (at most one is rendered).
	ThreadInputs []string
	// MediaInputs maps `kind: image|file|audio` inputs to their part type.
	MediaInputs map[string]weft.PartType
	// Outputs is the JSON Schema object of `outputs`; nil when absent.
	Outputs map[string]any
	// Tools are the front-matter `tools` entries as decoded (map form becomes a list with `name`).
	Tools []any
	// Engine is "mustache" or "jinja2".
	Engine string
	// TemplateStrict is `template.format.strict` (or v1 `template.strict`): every input is strict.
	TemplateStrict bool
	// Fields holds the other Weft top-level keys (includeChat, toolChoice, variables, env, …) as decoded.
	Fields map[string]any
	// Metadata holds `metadata:` entries and unknown top-level keys.
	Metadata map[string]any
	// UnknownKeys are the top-level keys neither Prompty nor Weft defines (kept in Metadata too),
	// sorted: usually typos (`modle:`), which the project loader warns about (ClosestKey).
	UnknownKeys []string
	// ParamRefs lists the front-matter `${params:}` values left for render time.
	ParamRefs []ParamRef
	// EnvRefs maps the key path of each front-matter value written `${env:NAME}` (e.g.
	// `model.configuration.api_key`) to NAME.
	EnvRefs map[string]string
	// EnvDefaults maps the key path of each front-matter value written `${env:NAME:default}` to
	// its default.
	EnvDefaults map[string]string
	// FileRefs are the absolute paths of the files front-matter `${file:}` values read (samples,
	// shared connections, schemas): data of this file, not definitions of their own.
	FileRefs []string
	// HistoryLoop names the thread input that a loop (`{% for item in chat_history %}`) places in
	// the template's sample render ("" when none): the prompt then sees the whole history.
	HistoryLoop string
	// ThreadPlaced names the thread input that the template's sample render places, by a loop or
	// by `{{conversation}}` ("" when none): the prompt then sees the whole history.
	ThreadPlaced string
	// Body is the text after the front matter.
	Body string
	// BodyLine is the 1-based file line on which Body starts.
	BodyLine int

	tpl    tmpl.Template
	strict map[string]bool
	fs     *confinedFS
	media  map[string][]byte // local media read at load, by target as written
}

// isWeftField reports the top-level keys kept raw in File.Fields for the project loader.
func isWeftField(k string) bool {
	switch k {
	case "includeChat", "includePastTools", "toolChoice", "variables", "env", "tenvs", "reasoning", "hooks",
		"recentImageThreshold", "exposeAsTool", "parallelToolCalls", "requiredSchema", "modelOptions", "context":
		return true
	}
	return false
}

// isPromptyField reports the top-level keys this package maps onto File fields.
func isPromptyField(k string) bool {
	switch k {
	case "name", "description", "toolDescription", "model", "inputs", "outputs", "tools", "template", "dialect", "metadata", "sample":
		return true
	}
	return false
}

// Load reads and loads a .prompty file.
func Load(path string, opt Options) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &Error{File: path, Msg: notFound(err).Error(), Err: err}
	}
	if st.Size() > maxFileBytes {
		return nil, &Error{File: path, Msg: "file is larger than 20 MiB"}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: notFound(err).Error(), Err: err}
	}
	return LoadBytes(path, data, opt)
}

// LoadBytes loads a .prompty file whose content is data; path locates it (relative references,
// the default root, the default name) and names it in errors.
func LoadBytes(path string, data []byte, opt Options) (f *File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, &Error{File: path, Msg: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	if len(data) > maxFileBytes {
		return nil, &Error{File: path, Msg: "file is larger than 20 MiB"}
	}
	fmText, fmLine, body, bodyLine, _, err := splitFile(data)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.File = path
		}
		return nil, err
	}
	f = &File{Path: path, Body: string(body), BodyLine: bodyLine}
	dir := filepath.Dir(path)
	root := opt.Root
	if root == "" {
		root = dir
	}
	f.fs = newConfinedFS(root, dir)
	fm := &frontMatter{file: path, src: fmText, line: fmLine}
	var top map[string]any
	if len(strings.TrimSpace(string(fmText))) > 0 {
		v, yerr := decodeYAMLBlock(fmText)
		if yerr != nil {
			return nil, &Error{File: path, Line: fmLine + max(yerr.line, 1) - 1, Col: yerr.col,
				Msg: "invalid frontmatter: " + yerr.msg, Err: yerr.err}
		}
		switch t := v.(type) {
		case nil:
		case map[string]any:
			top = t
		default:
			return nil, &Error{File: path, Line: fmLine, Msg: "invalid frontmatter: it must be a YAML mapping"}
		}
	}
	if top == nil {
		top = map[string]any{}
	}
	lookup := opt.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	r := &resolver{fm: fm, lookupEnv: lookup, files: f.fs}
	// Resolve keys in a fixed order so that the first error is deterministic.
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := r.resolve(top[k], keyPath{k}, f.fs.dir, 0, "")
		if err != nil {
			return nil, err
		}
		top[k] = v
	}
	f.ParamRefs = r.params
	f.EnvRefs = r.envRefs
	f.EnvDefaults = r.envDefaults
	f.FileRefs = r.fileRefs
	if err := f.fields(fm, top, opt); err != nil {
		return nil, err
	}
	if err := f.compile(); err != nil {
		return nil, err
	}
	f.adoptRoleLoop()
	if err := f.trialRender(); err != nil {
		return nil, err
	}
	return f, nil
}

// fields maps the resolved front matter onto File; v1 and v2 forms of a field are both accepted.
func (f *File) fields(fm *frontMatter, top map[string]any, opt Options) error {
	f.Dialect = opt.Dialect
	if v, ok := top["dialect"]; ok {
		s, _ := v.(string)
		f.Dialect = s
		if s != DialectSeed && s != DialectV2 {
			return fm.errAt(keyPath{"dialect"}, `must be "seed" or "v2"`, nil)
		}
	}
	switch f.Dialect {
	case "":
		f.Dialect = DialectSeed
	case DialectSeed, DialectV2:
	default:
		return &Error{File: f.Path, Msg: fmt.Sprintf("unknown dialect %q (seed or v2)", f.Dialect)}
	}
	str := func(k string) (string, error) {
		v, ok := top[k]
		if !ok || v == nil {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fm.errAt(keyPath{k}, "must be a string", nil)
		}
		return s, nil
	}
	var err error
	if f.Name, err = str("name"); err != nil {
		return err
	}
	if f.Name == "" {
		base := filepath.Base(f.Path)
		f.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	if f.Description, err = str("description"); err != nil {
		return err
	}
	if f.ToolDescription, err = str("toolDescription"); err != nil {
		return err
	}
	if f.ToolDescription == "" {
		f.ToolDescription = f.Description
	}
	if err := f.model(fm, top["model"]); err != nil {
		return err
	}
	if _, ok := top["inputs"]; ok {
		if _, both := top["requiredSchema"]; both {
			return fm.errAt(keyPath{"inputs"}, "inputs and requiredSchema cannot be used together", nil)
		}
	}
	inputs := top["inputs"]
	if v, ok := top["inputSchema"]; ok {
		// Prompty v2's `inputSchema: {properties: …}` (also written as a JSON Schema object with
		// required) declares the inputs when `inputs` does not.
		delete(top, "inputSchema")
		if inputs != nil {
			return fm.errAt(keyPath{"inputSchema"}, "give inputs or inputSchema, not both", nil)
		}
		var err error
		if inputs, err = schemaInputs(fm, v); err != nil {
			return err
		}
	}
	sample, _ := top["sample"].(map[string]any)
	if v, ok := top["sample"]; ok && v != nil && sample == nil {
		return fm.errAt(keyPath{"sample"}, "must be a mapping of input names to values (or ${file:sample.json})", nil)
	}
	if inputs == nil && len(sample) > 0 {
		// Prompty v1 files often give only `sample:`; each sample value declares an optional input.
		specs := make(map[string]any, len(sample))
		for k, v := range sample {
			specs[k] = map[string]any{"sample": v}
		}
		inputs = specs
	}
	if err := f.inputs(fm, inputs); err != nil {
		return err
	}
	for i := range f.Inputs {
		if v, ok := sample[f.Inputs[i].Name]; ok && !f.Inputs[i].HasSample {
			f.Inputs[i].Sample, f.Inputs[i].HasSample = v, true
		}
	}
	if v, ok := top["outputs"]; ok && v != nil {
		specs, err := propertyList(fm, keyPath{"outputs"}, v)
		if err != nil {
			return err
		}
		schema, err := objectSchema(fm, specs)
		if err != nil {
			return err
		}
		f.Outputs = schema
	}
	switch t := top["tools"].(type) {
	case nil:
	case []any:
		f.Tools = t
	case map[string]any:
		names := sortedKeys(t)
		for _, n := range names {
			e := t[n]
			if m, ok := e.(map[string]any); ok {
				if _, has := m["name"]; !has {
					m["name"] = n
				}
				f.Tools = append(f.Tools, m)
			} else {
				f.Tools = append(f.Tools, map[string]any{"name": n, "value": e})
			}
		}
	default:
		return fm.errAt(keyPath{"tools"}, "must be a list of tool entries", nil)
	}
	if err := f.template(fm, top["template"]); err != nil {
		return err
	}
	f.strictInputs()
	defer func() { sort.Strings(f.UnknownKeys) }()
	for k, v := range top {
		switch {
		case isWeftField(k):
			if f.Fields == nil {
				f.Fields = map[string]any{}
			}
			f.Fields[k] = v
		case k == "metadata":
			if m, ok := v.(map[string]any); ok {
				if f.Metadata == nil {
					f.Metadata = map[string]any{}
				}
				for mk, mv := range m {
					f.Metadata[mk] = mv
				}
			} else if v != nil {
				if f.Metadata == nil {
					f.Metadata = map[string]any{}
				}
				f.Metadata[k] = v
			}
		case !isPromptyField(k):
			if !isMetadataField(k) {
				f.UnknownKeys = append(f.UnknownKeys, k)
			}
			if f.Metadata == nil {
				f.Metadata = map[string]any{}
			}
			f.Metadata[k] = v
		}
	}
	return nil
}

// schemaInputs reads `inputSchema`: {properties: list or mapping of input specs, required: [names]}.
func schemaInputs(fm *frontMatter, v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fm.errAt(keyPath{"inputSchema"}, "must be a mapping with properties", nil)
	}
	props := m["properties"]
	req, _ := m["required"].([]any)
	if len(req) == 0 {
		return props, nil
	}
	isReq := func(name string) bool { return slices.Contains(req, any(name)) }
	mark := func(spec any, name string) any {
		if !isReq(name) {
			return spec
		}
		sm, ok := spec.(map[string]any)
		if !ok {
			sm = map[string]any{"default": spec}
		}
		if _, set := sm["required"]; !set {
			sm["required"] = true
		}
		return sm
	}
	switch t := props.(type) {
	case map[string]any:
		for name, spec := range t {
			t[name] = mark(spec, name)
		}
	case []any:
		for i, spec := range t {
			if sm, ok := spec.(map[string]any); ok {
				name, _ := sm["name"].(string)
				t[i] = mark(sm, name)
			}
		}
	}
	return props, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// template reads `template:`: "mustache"/"jinja2" (the v1 string), or {format, parser} with parser
// prompty; the default engine is jinja2.
func (f *File) template(fm *frontMatter, v any) error {
	f.Engine = "jinja2"
	engine := func(path keyPath, s string) error {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "mustache":
			f.Engine = "mustache"
		case "jinja2", "jinja", "nunjucks":
			// nunjucks (the Prompty TypeScript runtime's engine) is Jinja's syntax.
			f.Engine = "jinja2"
		default:
			return fm.errAt(path, fmt.Sprintf("unknown template engine %q (mustache, jinja2 or nunjucks)", s), nil)
		}
		return nil
	}
	switch t := v.(type) {
	case nil:
		return nil
	case string:
		return engine(keyPath{"template"}, t)
	case map[string]any:
		key := "format"
		format, ok := t[key]
		if !ok {
			key = "type"
			format = t[key]
		}
		switch ft := format.(type) {
		case nil:
		case string:
			if err := engine(keyPath{"template", key}, ft); err != nil {
				return err
			}
		case map[string]any:
			k, _ := ft["kind"].(string)
			if err := engine(keyPath{"template", key, "kind"}, k); err != nil {
				return err
			}
			if s, ok := ft["strict"].(bool); ok {
				f.TemplateStrict = s
			}
		default:
			return fm.errAt(keyPath{"template", key}, "must be an engine name or {kind, strict}", nil)
		}
		if s, ok := t["strict"].(bool); ok && s {
			f.TemplateStrict = true
		}
		parser := ""
		switch pt := t["parser"].(type) {
		case nil:
			return nil
		case string:
			parser = pt
		case map[string]any:
			parser, _ = pt["kind"].(string)
		}
		if !strings.EqualFold(parser, "prompty") {
			return fm.errAt(keyPath{"template", "parser"}, fmt.Sprintf("unsupported parser %q (only prompty)", fmt.Sprint(t["parser"])), nil)
		}
		return nil
	}
	return fm.errAt(keyPath{"template"}, "must be an engine name or a mapping", nil)
}

// compile compiles the body with the engine; template errors get file lines.
func (f *File) compile() error {
	var err error
	if f.Engine == "jinja2" {
		f.tpl, err = tmpl.CompileJinja(f.Body)
	} else {
		f.tpl, err = tmpl.CompileMustache(f.Body)
	}
	if err != nil {
		return f.templateError(err)
	}
	return nil
}

// adoptRoleLoop makes the input of a chat-history loop the thread input when the file declares
// none: Prompty renders `{% for m in past_messages %}{{m.role}}:\n{{m.content}}{% endfor %}` into
// messages whatever the input's declaration, and in Weft the history is the thread's. The input
// (undeclared, or declared as a list) then renders as the thread placeholder, so roles come from
// the store and never from a value.
func (f *File) adoptRoleLoop() {
	if len(f.ThreadInputs) > 0 {
		return
	}
	loops := tmpl.RoleLoops(f.tpl)
	if len(loops) == 0 {
		return
	}
	name := loops[0]
	for i := range f.Inputs {
		if f.Inputs[i].Name != name {
			continue
		}
		if k := f.Inputs[i].Kind; k != "array" && k != "object" {
			return
		}
		f.Inputs[i].Kind = "thread"
		if props, ok := f.InputSchema["properties"].(map[string]any); ok {
			delete(props, name)
		}
		if req, ok := f.InputSchema["required"].([]any); ok {
			req = slices.DeleteFunc(slices.Clone(req), func(x any) bool { return x == name })
			if len(req) == 0 {
				delete(f.InputSchema, "required")
			} else {
				f.InputSchema["required"] = req
			}
		}
		f.ThreadInputs = append(f.ThreadInputs, name)
		return
	}
	f.Inputs = append(f.Inputs, Input{Name: name, Kind: "thread"})
	f.ThreadInputs = append(f.ThreadInputs, name)
}

// templateError places a tmpl error on its file line.
func (f *File) templateError(err error) error {
	var te *tmpl.Error
	if errors.As(err, &te) {
		return &Error{File: f.Path, Line: f.BodyLine + max(te.Line, 1) - 1, Col: te.Col, Msg: te.Msg, Err: err}
	}
	return &Error{File: f.Path, Line: f.BodyLine, Msg: err.Error(), Err: err}
}

// SampleArgs returns arguments for a trial render: each input's sample, else its default.
func (f *File) SampleArgs() map[string]any {
	args := map[string]any{}
	for _, in := range f.Inputs {
		switch {
		case in.HasSample:
			args[in.Name] = in.Sample
		case in.HasDefault:
			args[in.Name] = in.Default
		}
	}
	return args
}

// trialRender renders the body once with sample/default arguments so that structural errors (a
// late tools block, bad tool-call YAML, two placeholders) fail the load, and reads the local media
// the template names.
func (f *File) trialRender() error {
	args := f.SampleArgs()
	for name := range f.MediaInputs {
		delete(args, name)
	}
	f.media = map[string][]byte{}
	r, err := f.render(RenderInput{Args: args}, func(p string) ([]byte, error) {
		_, data, err := f.fs.read(f.fs.dir, p)
		if err == nil {
			f.media[p] = data
		}
		return data, err
	})
	if r != nil {
		f.HistoryLoop, f.ThreadPlaced = r.HistoryLoop, r.ThreadInput
	}
	return err
}
