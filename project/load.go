// Package project loads a definitions directory — models, providers, prompts, agents and declarative
// tools as YAML/JSON files — into a weft.Registry, reporting every problem with
// its file, field path and rule.
package project

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/weft-agents/weft/validate"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"

	"github.com/weft-agents/weft"
)

// Options tune loading.
type Options struct {
	// Registry receives the definitions; nil creates a new one. Pass a registry that already holds
	// Go-defined tools, hooks, effects and handlers so that files can reference them.
	Registry *weft.Registry
	// LookupEnv reads the process environment for load-time ${env:} in .prompty front matter;
	// nil = os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// folders are the definition folders of a project and what each holds.
var folders = []string{"models", "providers", "prompts", "agents", "tools"}

// MaxFileSize bounds one definition file.
const MaxFileSize = 4 << 20

// Load reads every definition file under dir into the registry and returns it with the problems
// found while reading (syntax, unknown keys, wrong types). It does not run the cross-definition
// checks; Open does both.
func Load(dir string, opt Options) (*weft.Registry, weft.Diagnostics) {
	reg := opt.Registry
	if reg == nil {
		reg = weft.NewRegistry()
	}
	var diags weft.Diagnostics
	info, err := os.Stat(dir)
	switch {
	case err != nil:
		diags = append(diags, weft.Diagnostic{Source: dir, Severity: weft.SeverityError, Message: fmt.Sprintf("cannot read the definitions directory: %v", unwrapPathError(err))})
		return reg, diags
	case !info.IsDir():
		diags = append(diags, weft.Diagnostic{Source: dir, Severity: weft.SeverityError, Message: "not a directory"})
		return reg, diags
	}
	if abs, err := filepath.Abs(dir); err == nil {
		reg.Root = abs
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		if skipped(name) {
			continue
		}
		if !e.IsDir() || !slices.Contains(folders, name) {
			diags = append(diags, weft.Diagnostic{Source: name, Severity: weft.SeverityWarning,
				Message: fmt.Sprintf("not a definitions folder (%s); ignored", strings.Join(folders, ", "))})
		}
	}
	l := &loader{dir: dir, reg: reg, diags: &diags, opt: opt}
	for _, f := range folders {
		l.folder(f)
	}
	return reg, diags
}

// Open loads dir and validates the result: every problem of the files and of the definitions
// together, errors first, each group in file order.
//
// A field the loader already reported (a wrong type, an invalid shape) is not reported again by the
// cross-definition checks: one mistake, one line.
func Open(dir string, opt Options) (*weft.Registry, weft.Diagnostics) {
	reg, diags := Load(dir, opt)
	reported := map[[2]string]bool{}
	for _, d := range diags {
		if d.Severity == weft.SeverityError {
			reported[[2]string{d.Source, d.Path}] = true
		}
	}
	for _, d := range validate.Registry(reg) {
		if !reported[[2]string{d.Source, d.Path}] {
			diags = append(diags, d)
		}
	}
	return reg, Sort(diags)
}

// Sort orders diagnostics: errors before warnings, then by source, path and message, without
// duplicates.
func Sort(ds weft.Diagnostics) weft.Diagnostics {
	out := slices.Clone(ds)
	slices.SortStableFunc(out, func(a, b weft.Diagnostic) int {
		if a.Severity != b.Severity {
			if a.Severity == weft.SeverityError {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.CompactFunc(out, func(a, b weft.Diagnostic) bool { return a == b })
}

type loader struct {
	dir   string
	reg   *weft.Registry
	diags *weft.Diagnostics
	opt   Options
}

func skipped(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

func (l *loader) errf(src string, format string, args ...any) {
	*l.diags = append(*l.diags, weft.Diagnostic{Source: src, Severity: weft.SeverityError, Message: fmt.Sprintf(format, args...)})
}

// folder loads every file below one definitions folder, recursively. Files are read and parsed in
// parallel, then decoded and registered one by one in lexical order, so results are deterministic.
func (l *loader) folder(kind string) {
	root := filepath.Join(l.dir, kind)
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return
	}
	var files []*parsed
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(l.dir, p)
		rel = filepath.ToSlash(rel)
		if err != nil {
			l.errf(rel, "cannot read: %v", unwrapPathError(err))
			return nil
		}
		if p != root && skipped(e.Name()) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.IsDir() {
			files = append(files, &parsed{full: p, rel: rel})
		}
		return nil
	})
	var wg sync.WaitGroup
	work := make(chan *parsed)
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for f := range work {
				l.read(kind, f)
			}
		})
	}
	for _, f := range files {
		work <- f
	}
	close(work)
	wg.Wait()
	// A JSON or YAML file that a .prompty file reads with ${file:} (a Prompty sample.json, a
	// shared connection) is that file's data, not a definition.
	data := map[string]bool{}
	for _, f := range files {
		for _, r := range f.refs {
			if abs, err := filepath.Abs(r); err == nil {
				data[abs] = true
			}
		}
	}
	for _, f := range files {
		if len(data) > 0 && !strings.EqualFold(path.Ext(f.rel), ".prompty") && l.isData(f.full, data) {
			continue
		}
		l.add(kind, f)
	}
}

// isData reports whether the file at full is among the data files (symlinks resolved as the
// Prompty loader resolves them).
func (l *loader) isData(full string, data map[string]bool) bool {
	if abs, err := filepath.Abs(full); err == nil {
		if data[abs] {
			return true
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil && data[real] {
			return true
		}
	}
	return false
}

// parsed is one definition file after the parallel phase: its definitions and its problems.
type parsed struct {
	full, rel string
	diags     weft.Diagnostics
	defs      []definition
	// refs are the files a .prompty file's front matter read with ${file:} (absolute paths).
	refs []string
	// depth counts the kind: prompty tools that led to this file (0 for a file of prompts/).
	depth int
}

// definition is one decoded definition, registered in the sequential phase.
type definition struct {
	model    *weft.Model
	provider *weft.ProviderDef
	prompt   *weft.Prompt
	agent    *weft.Agent
	tool     *weft.Tool
	mcp      *weft.MCPServer
	// implicitFor is set on a model or provider a .prompty front matter implies: the prompt (or
	// model) that refers to it, renamed along with it when another definition took the name.
	implicitFor any
}

// read checks the file type, reads, parses and decodes the file. It runs concurrently with other
// files of the same folder and only reads the registry (earlier folders).
func (l *loader) read(kind string, f *parsed) {
	fail := func(format string, args ...any) {
		f.diags = append(f.diags, weft.Diagnostic{Source: f.rel, Severity: weft.SeverityError, Message: fmt.Sprintf(format, args...)})
	}
	ext := strings.ToLower(path.Ext(f.rel))
	switch ext {
	case ".yaml", ".yml", ".json":
	case ".prompty":
		if kind != "prompts" {
			fail("a .prompty file belongs in prompts/")
			return
		}
		l.prompty(f)
		return
	default:
		hint := ""
		if kind == "prompts" {
			hint = "; prompts may also be .prompty"
		}
		fail("unsupported file type %q (definitions are .yaml, .yml or .json%s)", ext, hint)
		return
	}
	data, err := readLimited(f.full)
	if err != nil {
		fail("%v", err)
		return
	}
	f.defs = decodeDefinition(kind, f.rel, data, &f.diags)
}

// parseDefinition parses a YAML or JSON definition file.
func parseDefinition(rel string, data []byte) (any, *weft.Diagnostic) {
	if strings.EqualFold(path.Ext(rel), ".json") {
		if diag := checkJSON(rel, data); diag != nil {
			return nil, diag
		}
	}
	return parseYAML(rel, data)
}

// add registers a parsed file's definitions and records its problems.
func (l *loader) add(_ string, f *parsed) {
	*l.diags = append(*l.diags, f.diags...)
	for _, d := range f.defs {
		*l.diags = append(*l.diags, l.expandURLs(f.rel, d)...)
		l.register(f.rel, d)
	}
}

func (l *loader) register(rel string, d definition) {
	switch {
	case d.model != nil && d.implicitFor != nil:
		if old, ok := l.reg.Model(d.model.Name); ok {
			if reflect.DeepEqual(old, d.model) {
				return // the same implicit model of another .prompty file
			}
			p := d.implicitFor.(*weft.Prompt)
			d.model.Name = p.Name + "/" + d.model.Name
			p.Model = d.model.Name
		}
		l.reg.AddModelFrom(rel, d.model)
	case d.provider != nil && d.implicitFor != nil:
		if old, ok := l.reg.Provider(d.provider.Name); ok {
			if reflect.DeepEqual(old, d.provider) {
				return
			}
			m := d.implicitFor.(*weft.Model)
			d.provider.Name += "/" + strings.TrimSuffix(path.Base(rel), path.Ext(rel))
			m.Provider = d.provider.Name
		}
		l.reg.AddProviderFrom(rel, d.provider)
	case d.model != nil:
		l.reg.AddModelFrom(rel, d.model)
	case d.provider != nil:
		l.reg.AddProviderFrom(rel, d.provider)
	case d.prompt != nil:
		if c, ok := d.implicitFor.(promptyChild); ok {
			rel = c.rel
		}
		if l.reg.Source("prompt", d.prompt.Name) == rel {
			return // a child .prompty file that prompts/ holds too, under the same name
		}
		l.reg.AddPromptFrom(rel, d.prompt)
	case d.agent != nil:
		l.reg.AddAgentFrom(rel, d.agent)
	case d.tool != nil:
		l.reg.AddToolFrom(rel, d.tool)
	case d.mcp != nil:
		l.reg.AddMCPServerFrom(rel, d.mcp)
	}
}

// definition parses and registers one YAML/JSON definition given as bytes (used by the fuzzer).
func (l *loader) definition(kind, rel string, data []byte) {
	for _, d := range decodeDefinition(kind, rel, data, l.diags) {
		l.register(rel, d)
	}
}

// decodeDefinition parses and decodes one YAML/JSON definition of the given folder kind.
func decodeDefinition(kind, rel string, data []byte, diags *weft.Diagnostics) []definition {
	v, diag := parseDefinition(rel, data)
	if diag != nil {
		*diags = append(*diags, *diag)
		return nil
	}
	d := &decoder{src: rel, diags: diags}
	var def definition
	switch kind {
	case "models":
		def.model = d.model(v)
	case "providers":
		def.provider = d.provider(v)
	case "prompts":
		def.prompt = d.prompt(v)
	case "agents":
		def.agent = d.agent(v)
	case "tools":
		stem := strings.TrimSuffix(path.Base(rel), path.Ext(rel))
		def.tool, def.mcp = d.tool(stem, v)
	}
	if def == (definition{}) {
		return nil
	}
	return []definition{def}
}

func readLimited(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %v", unwrapPathError(err))
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read: %v", unwrapPathError(err))
	}
	if info.Size() > MaxFileSize {
		return nil, fmt.Errorf("file is larger than %d MiB", MaxFileSize>>20)
	}
	buf := make([]byte, info.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && info.Size() > 0 {
		return nil, fmt.Errorf("cannot read: %v", unwrapPathError(err))
	}
	return buf, nil
}

// checkJSON reports a JSON syntax error with its line and column; YAML would accept some invalid JSON
// (a missing value reads as null).
func checkJSON(src string, data []byte) *weft.Diagnostic {
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		return nil
	}
	d := &weft.Diagnostic{Source: src, Severity: weft.SeverityError, Message: "syntax error: " + strings.TrimPrefix(err.Error(), "json: ")}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		d.Line, d.Column = lineCol(data, se.Offset)
	}
	return d
}

// lineCol converts a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	off = min(max(off, 1), int64(len(data)))
	line, col := 1, 1
	for _, c := range data[:off-1] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// syntaxDiagnostic turns a go-yaml error into file:line:column and a one-line message.
func syntaxDiagnostic(src string, err error) *weft.Diagnostic {
	d := &weft.Diagnostic{Source: src, Severity: weft.SeverityError}
	var se yaml.Error
	if errors.As(err, &se) {
		if tk := se.GetToken(); tk != nil && tk.Position != nil {
			d.Line, d.Column = tk.Position.Line, tk.Position.Column
		}
		d.Message = "syntax error: " + plainYAMLError(se.GetMessage())
		return d
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	d.Message = "syntax error: " + plainYAMLError(strings.TrimSpace(msg))
	return d
}

// yamlErrorWords says in plain words what go-yaml's most frequent messages mean, for a reader
// who does not know YAML's grammar; the parser's own words follow in parentheses.
var yamlErrorWords = []struct{ parser, plain string }{
	{"mapping value is not allowed in this context", "a `key:` where none can start: is this line indented deeper than the key above it, or does a value above hold an unquoted `: `?"},
	{"could not find expected ':'", "a line that is not `key: value` inside a mapping: check its indentation, or quote a value that runs over several lines"},
	{"found character that cannot start any token", "a character YAML cannot start a value with here (a tab used for indentation, or an unquoted @ or `): indent with spaces, quote the value"},
	{"tab character cannot use as a map key directly", "a tab used for indentation: indent with spaces"},
	{"found a tab character", "a tab used for indentation: indent with spaces"},
	{"did not find expected key", "a line out of line with its neighbours: keys of one mapping start in the same column"},
	{"unexpected key name", "a key where a value was expected: check the indentation of this line and the one above"},
	{"could not find end character of double-quoted text", "a double-quoted value with no closing \""},
	{"could not find end character of single-quoted text", "a single-quoted value with no closing '"},
}

// plainYAMLError rewrites a go-yaml message that yamlErrorWords knows; others pass unchanged.
func plainYAMLError(msg string) string {
	for _, w := range yamlErrorWords {
		if strings.Contains(msg, w.parser) {
			return w.plain + " (the parser: " + msg + ")"
		}
	}
	return msg
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
