package project_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/project"
)

var update = flag.Bool("update", false, "rewrite golden files")

func lines(diags weft.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		if d.Severity == weft.SeverityWarning {
			b.WriteString("warning: ")
		}
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// TestMCPDefinitions: an MCP server whose program does not exist is a validation error naming the
// file (issue 21, bad input); Prompty 2 tool kinds bind: `kind: mcp` to a declared server (by
// reference, serverName or an inline endpoint, allowedTools narrowing it) and `kind: prompty` to
// a child .prompty file loaded as a sub-prompt; another kind binds to the project's tool of its
// name, with a warning saying how to add one.
func TestMCPDefinitions(t *testing.T) {
	_, diags := project.Open("testdata/mcp", project.Options{})
	got := lines(diags)
	if !diags.HasErrors() || !strings.Contains(got, `tools/kb.yaml: server.command[0]: program "kb-server" not found in PATH`) ||
		strings.Contains(got, "not supported") {
		t.Fatalf("diagnostics:\n%s", got)
	}
	dir := t.TempDir()
	files := map[string]string{
		"models/m.yaml":   "{name: m, provider: test, model: x}\n",
		"tools/desk.yaml": "kind: mcp\nserver: {url: 'http://127.0.0.1:1/mcp'}\n",
		"prompts/fs.prompty": "---\nname: fs\ndescription: Reads files.\nmodel: m\ntools:\n" +
			"  - {name: files, kind: mcp, connection: {kind: reference, name: desk}, allowedTools: [read, list]}\n" +
			"  - {name: desk, kind: mcp, serverName: desk}\n" +
			"  - {name: remote, kind: mcp, connection: {kind: key, endpoint: 'http://127.0.0.1:2/mcp', headers: {X-Team: weft}}}\n" +
			"  - {name: summarize, kind: prompty, path: _parts/summarize.prompty, description: Summarize a text.}\n" +
			"  - {name: search, kind: bing_search}\n" +
			"---\nsystem:\nHelp.\n",
		"prompts/_parts/summarize.prompty": "---\nname: summary\ndescription: Summaries.\nmodel: m\ninputs: [{name: text, kind: string}]\n---\nsystem:\nSummarize {{text}}.\n",
	}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg, diags := project.Open(dir, project.Options{})
	got = lines(diags)
	// The path is where the file writes the entry, though files above it became two entries.
	if want := `warning: prompts/fs.prompty: tools[4]: tool "search" of kind "bing_search" is declared in the front matter but no tool of that name is defined: add tools/search.yaml`; !strings.Contains(got, want) {
		t.Errorf("missing %q in:\n%s", want, got)
	}
	if n := len(diags.Errors()); n != 0 {
		t.Errorf("want no error, got:\n%s", got)
	}
	p, ok := reg.Prompt("fs")
	if !ok {
		t.Fatal("prompt fs not loaded")
	}
	var entries []string
	for _, e := range p.Tools {
		entries = append(entries, string(e.Kind)+":"+e.Name)
	}
	if want := "mcp:desk/read mcp:desk/list mcp:desk mcp:remote prompt:summarize tool:search"; strings.Join(entries, " ") != want {
		t.Errorf("entries %v, want %s", entries, want)
	}
	if s, ok := reg.MCPServer("remote"); !ok || s.URL != "http://127.0.0.1:2/mcp" || s.Headers["X-Team"] != "weft" || reg.Source("mcp", "remote") != "prompts/fs.prompty" {
		t.Errorf("inline server: %+v from %s", s, reg.Source("mcp", "remote"))
	}
	child, ok := reg.Prompt("summarize")
	if !ok || child.ToolDescription != "Summarize a text." || child.RequiredSchema == nil || child.RequiredSchema.Properties["text"] == nil ||
		reg.Source("prompt", "summarize") != "prompts/_parts/summarize.prompty" {
		t.Errorf("child prompt: %+v", child)
	}
}

// TestFullProject loads a project that uses every definition kind and every tool-entry form
// (name, tool config, sub-prompt config, subagent config): it must validate without a single diagnostic.
func TestFullProject(t *testing.T) {
	reg, diags := project.Open("testdata/full", project.Options{})
	if len(diags) > 0 {
		t.Fatalf("want no diagnostics, got:\n%s", lines(diags))
	}
	counts := fmt.Sprintf("models=%d providers=%d prompts=%d agents=%d tools=%d mcp=%d",
		len(reg.Models()), len(reg.Providers()), len(reg.Prompts()), len(reg.Agents()), len(reg.Tools()), len(reg.MCPServers()))
	if counts != "models=3 providers=1 prompts=10 agents=4 tools=9 mcp=0" {
		t.Errorf("loaded %s", counts)
	}
	h, _ := reg.Prompt("helper")
	roles := map[string]string{}
	for _, e := range h.Tools {
		tgt, ok := reg.Resolve(e)
		if !ok {
			t.Fatalf("entry %q unresolved", e.Name)
		}
		roles[e.Name] = tgt.Role(e)
	}
	want := map[string]string{"word_count": "tool", "lookup_order": "tool", "search_docs": "tool", "fetch_page": "tool",
		"summarize": "prompt", "translate": "prompt", "support": "handoff", "reviewer": "subagent",
		"researcher": "resumable subagent", "web_search": "tool"}
	if fmt.Sprint(roles) != fmt.Sprint(want) {
		t.Errorf("roles %v\nwant  %v", roles, want)
	}
	// Property order of file schemas is kept (it is the order the model sees).
	sd, _ := reg.Tool("search_docs")
	if got := strings.Join(sd.Args.PropertyOrder, ","); got != "query,limit,filters" {
		t.Errorf("property order %s", got)
	}
	if got := weft.ToolVariables(sd); len(got) != 1 || got[0].Name != "VECTOR_STORE_ID" || !got[0].Required {
		t.Errorf("tenvs read as variables: %+v", got)
	}
	// A .prompty prompt: inputs become the requiredSchema in file order, the template renders.
	cl, _ := reg.Prompt("classify")
	if cl.Template == nil || strings.Join(cl.RequiredSchema.PropertyOrder, ",") != "request,categories" || cl.ToolDescription != "Classify a support request into a category." {
		t.Fatalf("classify: %+v", cl)
	}
	out, err := cl.Template.RenderPrompt(context.Background(), weft.TemplateInput{Args: map[string]any{"request": "Where is my parcel?", "categories": []any{"billing", "shipping"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.System != "You classify requests for the billing shipping teams of support." || len(out.Suffix) != 1 || out.Suffix[0].Content != "Where is my parcel?" || out.Suffix[0].Name != "customer" {
		t.Errorf("rendered %q prefix=%v suffix=%+v", out.System, out.Prefix, out.Suffix)
	}
	// A v2 function tool binds a parameter to an input.
	w, _ := reg.Prompt("weather")
	if len(w.Tools) != 1 || w.Tools[0].Name != "get_weather" || w.Tools[0].Bindings["unit"] != "preferred_unit" {
		t.Errorf("weather tools %+v", w.Tools)
	}
	m, _ := reg.Model("fast")
	if m.Timeouts.Stall.D().Seconds() != 20 || m.Retry.BaseDelay.D().Milliseconds() != 500 {
		t.Errorf("durations: %+v %+v", m.Timeouts, m.Retry)
	}
}

// TestBrokenProject loads a project with more than twenty distinct mistakes: each is reported once
// with file, field and rule, and nothing else is reported (golden file).
func TestBrokenProject(t *testing.T) {
	_, diags := project.Open("testdata/broken", project.Options{})
	got := lines(diags)
	golden := filepath.Join("testdata", "broken.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("diagnostics differ from %s (run go test ./project -update to accept)\ngot:\n%s", golden, got)
	}
	if n := len(diags.Errors()); n < 20 {
		t.Errorf("want at least 20 errors, got %d", n)
	}
	// Every broken file is named by at least one diagnostic.
	files := map[string]bool{}
	for _, d := range diags {
		files[d.Source] = true
	}
	_ = filepath.Walk("testdata/broken", func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("testdata/broken", p)
		rel = filepath.ToSlash(rel)
		switch rel {
		case "models/fast.yaml", "models/dup_a.yaml", "prompts/chatty.prompty", "prompts/base.yaml", "prompts/house_rules.yaml", "prompts/summarize.yaml", "tools/count.yaml", "agents/helper.yaml", "prompts/cycle_b.yaml":
			return nil // valid files other mistakes refer to
		}
		if !files[rel] {
			t.Errorf("%s has a mistake that was not reported", rel)
		}
		return nil
	})
}

func TestLoadErrors(t *testing.T) {
	write := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		for name, body := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"missing_dir", nil, "cannot read the definitions directory"},
		{"empty_file", map[string]string{"models/a.yaml": "  \n"}, "models/a.yaml: file is empty"},
		{"json_syntax", map[string]string{"models/a.json": "{\"name\": \"a\",\n \"provider\": }"}, "models/a.json:2:"},
		{"yaml_syntax_line_col", map[string]string{"prompts/p.yaml": "name: p\nprompt: \"unterminated\n"}, "prompts/p.yaml:2:"},
		{"not_a_mapping", map[string]string{"agents/a.yaml": "- just\n- a list\n"}, "agents/a.yaml: must be a mapping"},
		{"wrong_type", map[string]string{"models/a.yaml": "{name: a, provider: openai, model: m, fallbacks: fast}"}, "models/a.yaml: fallbacks: must be a list of strings"},
		{"bad_duration", map[string]string{"models/a.yaml": "{name: a, provider: openai, model: m, timeouts: {stall: soon}}"}, "models/a.yaml: timeouts.stall: invalid duration \"soon\""},
		{"skipped_names", map[string]string{"models/_draft.yaml": "not: [valid", "models/.hidden/x.yaml": "{"}, ""},
		{"nested_folders", map[string]string{"models/team/a.yaml": "{name: a, provider: openai, model: m, bogus: 1}"}, "models/team/a.yaml: bogus: unknown key \"bogus\""},
		{"stray_folder", map[string]string{"schemas/x.json": "{}"}, "warning: schemas: not a definitions folder"},
		{"tool_name_is_stem", map[string]string{"tools/a.yaml": "{name: b, kind: command, description: d, command: [x]}"}, `tools/a.yaml: name: a tool's name is its file name ("a")`},
		{"prompty_elsewhere", map[string]string{"agents/a.prompty": "---\n---\n"}, "agents/a.prompty: a .prompty file belongs in prompts/"},
		{"prompty_typo", map[string]string{"prompts/p.prompty": "---\nname: p\nmodle: fast\n---\nsystem:\nHi\n"}, `warning: prompts/p.prompty: modle: unknown front-matter key "modle" (did you mean "model"?)`},
		{"prompty_unknown", map[string]string{"prompts/p.prompty": "---\nname: p\nmodel: {id: m, provider: openai}\nowner: ops\n---\nsystem:\nHi\n"}, `warning: prompts/p.prompty: owner: unknown front-matter key "owner"; it is kept as metadata`},
		{"prompty_metadata_quiet", map[string]string{"prompts/p.prompty": "---\nname: p\ndescription: d\nmodel: {id: m, provider: openai}\nauthors: [a]\nmetadata: {owner: ops}\n---\nsystem:\nHi\n"}, ""},
		{"context_summarizer_unknown", map[string]string{"models/m.yaml": "{name: m, provider: openai, model: m, capabilities: {maxContextTokens: 8000}}",
			"prompts/p.yaml": "{name: p, toolDescription: d, model: m, prompt: x, context: {strategy: summarize, summarizer: digest}}"},
			`prompts/p.yaml: context.summarizer: no prompt named "digest"`},
		{"context_strategy_enum", map[string]string{"models/m.yaml": "{name: m, provider: openai, model: m}",
			"prompts/p.yaml": "{name: p, toolDescription: d, model: m, prompt: x, context: {strategy: compact}}"},
			`prompts/p.yaml: context.strategy: context.strategy must be window, summarize or none, got "compact"`},
		{"context_summarize_valid", map[string]string{"models/m.yaml": "{name: m, provider: openai, model: m, capabilities: {maxContextTokens: 8000}}",
			"prompts/p.yaml":      "{name: p, toolDescription: d, model: m, prompt: x, context: {strategy: summarize, summarizer: digest, reserveOutput: 500}}",
			"prompts/digest.yaml": "{name: digest, toolDescription: d, model: m, prompt: Keep the facts.}"}, ""},
		{"http_path_param", map[string]string{"tools/order.yaml": "{kind: http, description: d, url: 'https://x/orders', method: DELETE, in: {id: path}}"}, `tools/order.yaml: in.id: path parameter "id" has no {id} in url`},
		{"http_in_where", map[string]string{"tools/order.yaml": "{kind: http, description: d, url: 'https://x/{id}', in: {id: path, t: cookie}}"}, `tools/order.yaml: in.t: an argument goes in path, query or header, got "cookie"`},
		{"http_method", map[string]string{"tools/ftp.yaml": "{kind: http, description: d, url: 'https://x', method: FETCH}"}, `tools/ftp.yaml: method: method must be GET, POST, PUT, PATCH or DELETE, got "FETCH"`},
		{"resumable_true", map[string]string{"prompts/p.yaml": "{name: p, toolDescription: d, model: m, prompt: x, tools: [{name: a, resumable: true}]}"}, "tools[0].resumable: resumable is false or a mapping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "nope")
			if tc.files != nil {
				dir = write(t, tc.files)
			}
			_, diags := project.Open(dir, project.Options{})
			got := lines(diags)
			if tc.want == "" {
				if got != "" {
					t.Errorf("want nothing, got:\n%s", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("want %q in:\n%s", tc.want, got)
			}
		})
	}
}

// TestGoAndFilesTogether: files reference hooks and tools registered in Go.
func TestGoAndFilesTogether(t *testing.T) {
	reg := weft.NewRegistry()
	reg.AddTool(&weft.Tool{Name: "go_tool", Description: "A Go tool.", Execute: weft.ToolFunc(nil)})
	reg.AddHook(&weft.Hook{ID: "audit", Point: weft.HookAfterRunStopped, Fn: weft.RunStoppedFunc(nil)})
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "prompts"), 0o755)
	os.MkdirAll(filepath.Join(dir, "models"), 0o755)
	os.WriteFile(filepath.Join(dir, "models/m.yaml"), []byte("{name: m, provider: test}"), 0o644)
	os.WriteFile(filepath.Join(dir, "prompts/p.yaml"), []byte("{name: p, toolDescription: d, model: m, prompt: x, tools: [go_tool], hooks: [audit]}"), 0o644)
	_, diags := project.Open(dir, project.Options{Registry: reg})
	if len(diags) > 0 {
		t.Fatalf("got:\n%s", lines(diags))
	}
}

// TestMessagesCiteNoSections: validation messages say their rule in words, never by a section
// number of a document outside the repository.
func TestMessagesCiteNoSections(t *testing.T) {
	_, diags := project.Open("testdata/broken", project.Options{})
	if len(diags) == 0 {
		t.Fatal("the broken project has no diagnostics")
	}
	for _, d := range diags {
		if strings.Contains(d.String(), "§") {
			t.Errorf("cites a section: %s", d)
		}
	}
}
