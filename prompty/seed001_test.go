package prompty

import (
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	weft "github.com/weft-agents/weft"
)

// writeFile writes a file under dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadText loads a .prompty file written to a temporary directory.
func loadText(t *testing.T, text string, opt Options) (*File, error) {
	t.Helper()
	dir := t.TempDir()
	return LoadBytes(filepath.Join(dir, "p.prompty"), []byte(text), opt)
}

func mustLoad(t *testing.T, text string) *File {
	t.Helper()
	f, err := loadText(t, text, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustRender(t *testing.T, f *File, in RenderInput) *Rendered {
	t.Helper()
	r, err := f.Render(in)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func parseText(t *testing.T, text string) *Parsed {
	t.Helper()
	p, err := ParseSegments(lit(text), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantErr checks that err is a *Error naming file and line and containing msg.
func wantErr(t *testing.T, err error, msg string) *Error {
	t.Helper()
	if err == nil {
		t.Fatalf("want error %q, got none", msg)
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a *Error", err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("error %q does not contain %q", err, msg)
	}
	if pe.Line == 0 {
		t.Fatalf("error %q has no line", err)
	}
	return pe
}

// seedPrompt is seed 001's prompt-section example, with front matter.
const seedPrompt = `---
name: seed
inputs:
  firstName: Jane
  lastName: Doe
  question: What is the meaning of life?
  table: Customers
  location: Seattle
---
tools:
  - id: query
    type: dataverse
    options:
      connection: "https://contoso.crm.dynamics.com"
      query: SELECT * FROM {{table}} WHERE firstName = '{{firstName}}' AND lastName = '{{lastName}}'
    
  - id: search
    type: bing
    options:
      parameters: [{{question}}]
      location: {{location}}

system:
You are an AI assistant who helps people find information.
As the assistant, you answer questions briefly, succinctly, 
and in a personable manner using markdown and even add some personal flair with appropriate emojis.

# Customer
You are helping {{firstName}} {{lastName}} to find answers to their questions.
Use their name to address them in your responses.

thread[key="value"]:
content

user[name="{{firstName}} {{lastName}}"]:
{{question}}
`

// TestSeed001 covers every example of seed 001 (the prompt section), by rule.
func TestSeed001(t *testing.T) {
	t.Run("S001_roles_and_attributes/seed_example", func(t *testing.T) {
		f := mustLoad(t, seedPrompt)
		r := mustRender(t, f, RenderInput{Args: f.SampleArgs()})
		if !strings.HasPrefix(r.System, "You are an AI assistant") || !strings.Contains(r.System, "helping Jane Doe to find") ||
			strings.HasSuffix(r.System, "\n") {
			t.Errorf("system = %q", r.System)
		}
		if len(r.Prefix) != 0 || !r.HasThread || len(r.Suffix) != 2 {
			t.Fatalf("prefix %v suffix %v", r.Prefix, r.Suffix)
		}
		// The text after thread[...]: continues the role before it (system).
		if r.Suffix[0].Role != weft.RoleSystem || r.Suffix[0].Content != "content" {
			t.Errorf("suffix[0] = %+v", r.Suffix[0])
		}
		u := r.Suffix[1]
		if u.Role != weft.RoleUser || u.Name != "Jane Doe" || u.Content != "What is the meaning of life?" || u.Metadata["name"] != "Jane Doe" {
			t.Errorf("user = %+v", u)
		}
		if len(r.Tools) != 2 {
			t.Fatalf("tools = %v", r.Tools)
		}
		q := r.Tools[0].(map[string]any)
		if q["name"] != "query" || q["options"].(map[string]any)["query"] != "SELECT * FROM Customers WHERE firstName = 'Jane' AND lastName = 'Doe'" {
			t.Errorf("tool query = %v", q)
		}
		s := r.Tools[1].(map[string]any)["options"].(map[string]any)
		if !jsonEqual(t, s["parameters"], []any{"What is the meaning of life?"}) || s["location"] != "Seattle" {
			t.Errorf("tool search options = %v", s)
		}
	})
	t.Run("S001_roles_and_attributes/system_user_named", func(t *testing.T) {
		p := parseText(t, "system:\nYou are a helpful assistant\n\nuser[name=\"Seth\"]:\nWhat is the meaning of life?")
		want := `[{"role":"system","content":"You are a helpful assistant"},{"role":"user","content":"What is the meaning of life?","name":"Seth","metadata":{"name":"Seth"}}]`
		if got := jsonString(p.Messages); got != want {
			t.Errorf("got %s", got)
		}
	})
	t.Run("S001_roles_and_attributes/assistant", func(t *testing.T) {
		p := parseText(t, "assistant:\nThe weather in Seattle is 72 degrees and sunny.")
		if got := jsonString(p.Messages); got != `[{"role":"assistant","content":"The weather in Seattle is 72 degrees and sunny."}]` {
			t.Errorf("got %s", got)
		}
	})
	t.Run("S001_roles_and_attributes/typed_and_quoted_values", func(t *testing.T) {
		p := parseText(t, `user[name="a, \"b\" \\ c", n=3, f=-1.5, ok=TRUE, no=false, s= bare word , role="assistant", content="x"]:`+"\nhi")
		m := p.Messages[0]
		want := map[string]any{"name": `a, "b" \ c`, "n": 3, "f": -1.5, "ok": true, "no": false, "s": "bare word", "role": "assistant", "content": "x"}
		if m.Role != weft.RoleUser || m.Content != "hi" || m.Name != `a, "b" \ c` || !jsonEqual(t, m.Metadata, want) {
			t.Errorf("got %s", jsonString(m))
		}
	})
	t.Run("S001_roles_and_attributes/markers_and_content", func(t *testing.T) {
		p := parseText(t, "intro\n# System:\nA\n  USER :\nB\nfoo:\nThe user: said\nuser: hello\nASSISTANT:\nC\nDeveloper:\n\nsystem:\nuser:\nD")
		want := `[{"role":"system","content":"intro"},{"role":"system","content":"A"},{"role":"user","content":"B\nfoo:\nThe user: said\nuser: hello"},{"role":"assistant","content":"C"},{"role":"developer","content":""},{"role":"user","content":"D"}]`
		if got := jsonString(p.Messages); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	})
	t.Run("S001_roles_and_attributes/v2_roles_only", func(t *testing.T) {
		p, err := ParseSegments(lit("user:\nhi\ntool[name=\"x\"]:\nr\nthread:\n![thread]\n![a](https://e/x.png)"), ParseOptions{Dialect: DialectV2})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Messages) != 1 || p.Thread != -1 || p.Messages[0].Content != "hi\ntool[name=\"x\"]:\nr\nthread:\n![thread]\n![a](https://e/x.png)" {
			t.Errorf("got %s", jsonString(p))
		}
	})
	t.Run("S001_roles_and_attributes/rendered_system_prompt", func(t *testing.T) {
		f := mustLoad(t, "system:\nA\n\ndeveloper:\nB\n\nuser:\nU\n\nsystem:\nlate")
		r := mustRender(t, f, RenderInput{})
		if r.System != "A\n\nB" || len(r.Prefix) != 2 || r.HasThread || r.Suffix != nil {
			t.Errorf("got %s", jsonString(r))
		}
	})

	t.Run("S001_tools_section_first/hoisted", func(t *testing.T) {
		p := parseText(t, "\ntools:\n  - id: callable\n    type: function\n  - name: other\n\nsystem:\nS\n\nuser:\nU")
		if len(p.Tools) != 2 || p.Tools[0].(map[string]any)["name"] != "callable" || len(p.Messages) != 2 {
			t.Errorf("got %s", jsonString(p))
		}
	})
	t.Run("S001_tools_section_first/after_text", func(t *testing.T) {
		_, err := loadText(t, "---\nname: x\n---\nsystem:\nS\n\ntools:\n  - id: late\n", Options{})
		e := wantErr(t, err, "tools section must precede the text prompt")
		if e.Line != 7 {
			t.Errorf("line %d, want 7", e.Line)
		}
		_, err = ParseSegments(lit("text first\ntools:\n  - id: a"), ParseOptions{})
		wantErr(t, err, "tools section must precede the text prompt")
		_, err = ParseSegments(lit("tools:\n  - id: a\ntools:\n  - id: b"), ParseOptions{})
		wantErr(t, err, "tools section must precede the text prompt")
	})
	t.Run("S001_tools_section_first/bad_yaml", func(t *testing.T) {
		_, err := loadText(t, "---\nname: x\n---\ntools:\n  - id: a\n   bad: [\n\nuser:\nU\n", Options{})
		e := wantErr(t, err, "invalid YAML in tools section")
		if e.Line < 5 || e.Line > 6 {
			t.Errorf("line %d", e.Line)
		}
		_, err = ParseSegments(lit("tools:\n  id: a"), ParseOptions{})
		wantErr(t, err, "must be a YAML list")
	})
	t.Run("S001_tools_section_first/v2_is_text", func(t *testing.T) {
		p, err := ParseSegments(lit("tools:\n  - id: a\n\nuser:\nU"), ParseOptions{Dialect: DialectV2})
		if err != nil || len(p.Tools) != 0 || len(p.Messages) != 2 || p.Messages[0].Content != "tools:\n  - id: a" {
			t.Errorf("got %s %v", jsonString(p), err)
		}
	})

	t.Run("S001_tool_call_yaml/seed_example", func(t *testing.T) {
		p := parseText(t, "assistant[type=\"tool_call\"]:\nid: tool_call_123\ntype: function\nfunction:\n  name: get_account_info\n  arguments:\n    account_number: 123456\n\nuser:\nnext")
		want := `[{"role":"assistant","content":"","tool_calls":[{"id":"tool_call_123","name":"get_account_info","arguments":"{\"account_number\":123456}"}],"metadata":{"type":"tool_call"}},{"role":"user","content":"next"}]`
		if got := jsonString(p.Messages); got != want {
			t.Errorf("got %s", got)
		}
	})
	t.Run("S001_tool_call_yaml/list_and_json_string", func(t *testing.T) {
		p := parseText(t, "assistant[type=\"tool_call\"]:\n- id: a\n  type: function\n  function: {name: f, arguments: '{\"x\": 1}'}\n- id: b\n  function:\n    name: g\n")
		c := p.Messages[0].ToolCalls
		if len(c) != 2 || c[0].Arguments != `{"x": 1}` || c[1].Name != "g" || c[1].Arguments != "{}" {
			t.Errorf("got %+v", c)
		}
	})
	t.Run("S001_tool_call_yaml/interp_values_typed", func(t *testing.T) {
		f := mustLoad(t, "---\ninputs:\n  n: 5\n  who: Ann <a@b>\n---\nassistant[type=\"tool_call\"]:\nid: c1\nfunction:\n  name: lookup\n  arguments:\n    account_number: {{n}}\n    who: \"{{who}}\"\n")
		r := mustRender(t, f, RenderInput{Args: map[string]any{"n": 42, "who": "Ann <a@b>"}})
		if got := r.Prefix[0].ToolCalls[0].Arguments; got != `{"account_number":42,"who":"Ann <a@b>"}` {
			t.Errorf("arguments %s", got)
		}
	})
	t.Run("S001_tool_call_yaml/errors", func(t *testing.T) {
		_, err := loadText(t, "---\nname: x\n---\nuser:\nhi\n\nassistant[type=\"tool_call\"]:\nid: a\nfunction: [\n", Options{})
		e := wantErr(t, err, "invalid YAML in tool call")
		if e.Line < 7 {
			t.Errorf("line %d", e.Line)
		}
		_, err = ParseSegments(lit("assistant[type=\"tool_call\"]:\nfunction:\n  name: f"), ParseOptions{})
		wantErr(t, err, "needs an id")
		_, err = ParseSegments(lit("assistant[type=\"tool_call\"]:\nid: a\ntype: other\nfunction:\n  name: f"), ParseOptions{})
		wantErr(t, err, `type must be "function"`)
		// Other type values are metadata only.
		p := parseText(t, "assistant[type=\"text\"]:\nid: a")
		if p.Messages[0].Content != "id: a" || p.Messages[0].Metadata["type"] != "text" {
			t.Errorf("got %s", jsonString(p))
		}
	})

	t.Run("S001_tool_result/seed_example", func(t *testing.T) {
		p := parseText(t, "tool[name=\"ask_database\", tool_call_id=\"12323\"]:\nThe album with the most tracks is titled \"Greatest Hits,\" which contains 57 tracks.")
		m := p.Messages[0]
		if m.Role != weft.RoleTool || m.ToolCallID != "12323" || m.Name != "ask_database" || m.ToolStatus != "" ||
			m.Content != `The album with the most tracks is titled "Greatest Hits," which contains 57 tracks.` || len(p.Warnings) != 0 {
			t.Errorf("got %s", jsonString(m))
		}
	})
	t.Run("S001_tool_result/status_and_function", func(t *testing.T) {
		p, err := ParseSegments(lit("function[name=\"f\", status=\"error\"]:\nboom\ntool[name=\"g\", tool_call_id=7, status=\"success\"]:\nok"), ParseOptions{File: "x.prompty", Line: 10})
		if err != nil {
			t.Fatal(err)
		}
		if p.Messages[0].Role != weft.RoleTool || p.Messages[0].ToolStatus != weft.ToolError || p.Messages[1].ToolCallID != "7" || p.Messages[1].ToolStatus != weft.ToolSuccess {
			t.Errorf("got %s", jsonString(p.Messages))
		}
		if len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], "x.prompty:11: tool message without tool_call_id") {
			t.Errorf("warnings %q", p.Warnings)
		}
	})

	t.Run("S001_thread_placeholder/bang_line", func(t *testing.T) {
		f := mustLoad(t, "system:\nBe nice.\n![thread]\nuser:\nHi")
		r := mustRender(t, f, RenderInput{})
		if r.System != "Be nice." || !r.HasThread || len(r.Prefix) != 0 || len(r.Suffix) != 1 || r.Suffix[0].Content != "Hi" {
			t.Errorf("got %s", jsonString(r))
		}
	})
	t.Run("S001_thread_placeholder/continues_role", func(t *testing.T) {
		// v1 tools/basic.prompty and thread_split.prompty: text after the placeholder keeps the role.
		p := parseText(t, "before\n![thread]\nafter")
		if p.Thread != 1 || len(p.Messages) != 2 || p.Messages[1].Role != weft.RoleSystem || p.Messages[1].Content != "after" {
			t.Errorf("got %s", jsonString(p))
		}
		p = parseText(t, "user[name=\"u\"]:\nQ\n![thread]\nmore")
		if p.Thread != 1 || p.Messages[1].Role != weft.RoleUser || p.Messages[1].Name != "u" {
			t.Errorf("got %s", jsonString(p))
		}
	})
	t.Run("S001_thread_placeholder/marker_with_limit", func(t *testing.T) {
		p := parseText(t, "system:\nS\nthread[limit=5]:\nuser:\nU")
		if p.Thread != 1 || p.ThreadLimit != 5 || len(p.Messages) != 2 {
			t.Errorf("got %s", jsonString(p))
		}
		_, err := ParseSegments(lit("thread[limit=0]:"), ParseOptions{})
		wantErr(t, err, "thread limit must be a positive integer")
	})
	t.Run("S001_thread_placeholder/thread_input", func(t *testing.T) {
		for _, engine := range []string{"mustache", "jinja2"} {
			f := mustLoad(t, "---\ntemplate: "+engine+"\ninputs:\n  - name: conversation\n    kind: thread\n  - name: q\n    kind: string\n---\nsystem:\nS\n\n{{conversation}}\n\nuser:\n{{q}}")
			if len(f.ThreadInputs) != 1 || f.InputSchema["properties"].(map[string]any)["conversation"] != nil {
				t.Fatalf("thread inputs %v schema %v", f.ThreadInputs, f.InputSchema)
			}
			r := mustRender(t, f, RenderInput{Args: map[string]any{"q": "Hi"}})
			if r.System != "S" || !r.HasThread || len(r.Suffix) != 1 || r.Suffix[0].Content != "Hi" {
				t.Errorf("%s: got %s", engine, jsonString(r))
			}
		}
	})
	t.Run("S001_thread_placeholder/at_most_one", func(t *testing.T) {
		_, err := loadText(t, "system:\nS\n![thread]\nuser:\nU\n![thread]\n", Options{})
		e := wantErr(t, err, "more than one thread placeholder")
		if e.Line != 6 {
			t.Errorf("line %d", e.Line)
		}
	})

	t.Run("S001_media_parts/forms", func(t *testing.T) {
		p := parseText(t, "user:\nThis is an image:\n![image](https://example.com/image.png)\nA file ![file](https://example.com/file.pdf) and\n![type=\"image\", quality=\"high\", detail=low](https://example.com/file.jpg \"A title\")\n![clip](https://e.com/a.mp3)![audio](data:audio/wav;base64,AAAA)")
		want := `[{"type":"text","text":"This is an image:"},{"type":"image","url":"https://example.com/image.png","mime_type":"image/png"},{"type":"text","text":"A file"},{"type":"file","url":"https://example.com/file.pdf","mime_type":"application/pdf"},{"type":"text","text":"and"},{"type":"image","url":"https://example.com/file.jpg","mime_type":"image/jpeg","options":{"detail":"low","quality":"high"},"description":"A title"},{"type":"file","url":"https://e.com/a.mp3","mime_type":"audio/mpeg"},{"type":"audio","url":"data:audio/wav;base64,AAAA","mime_type":"audio/wav"}]`
		if got := jsonString(p.Messages[0].Parts); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
		p = parseText(t, "user:\nno media ![x] here, ![x] (y), !(y), ![a\nb](c)")
		if p.Messages[0].Parts != nil {
			t.Errorf("got %s", jsonString(p))
		}
		// An empty target (an optional input left empty) drops the construct, with a warning.
		p = parseText(t, "user:\nsee ![image]() here")
		if jsonString(p.Messages[0].Parts) != `[{"type":"text","text":"see"},{"type":"text","text":"here"}]` || len(p.Warnings) != 1 {
			t.Errorf("got %s", jsonString(p))
		}
	})
	t.Run("S001_media_parts/local_file", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "img/cat.png", "\x89PNG\r\n\x1a\nfake")
		writeFile(t, filepath.Dir(dir), "secret.png", "secret")
		path := writeFile(t, dir, "p.prompty", "user:\nLook ![cat](img/cat.png)")
		f, err := Load(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := mustRender(t, f, RenderInput{})
		part := r.Prefix[0].Parts[1]
		if part.Type != weft.PartImage || part.URL != "data:image/png;base64,"+base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nfake")) {
			t.Errorf("part %+v", part)
		}
		writeFile(t, dir, "q.prompty", "user:\n![x](../secret.png)")
		_, err = Load(filepath.Join(dir, "q.prompty"), Options{})
		wantErr(t, err, "outside allowed roots")
		big := filepath.Join(dir, "big.png")
		if err := os.WriteFile(big, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(big, 21<<20); err != nil {
			t.Fatal(err)
		}
		_, err = loadIn(t, dir, "r.prompty", "user:\n![x](big.png)")
		wantErr(t, err, "larger than 20 MiB")
	})
	t.Run("S001_media_parts/interp_target", func(t *testing.T) {
		f := mustLoad(t, "---\ninputs:\n  url: https://e.com/a.png\n---\nuser:\nSee ![image]({{url}}) now")
		r := mustRender(t, f, RenderInput{Args: map[string]any{"url": "https://e.com/b.jpg"}})
		if p := r.Prefix[0].Parts; len(p) != 3 || p[1].URL != "https://e.com/b.jpg" || p[1].Type != weft.PartImage {
			t.Errorf("got %s", jsonString(r.Prefix))
		}
		_, err := f.Render(RenderInput{Args: map[string]any{"url": `https://e.com/x.png" onerror="x`}})
		wantErr(t, err, `unsafe value for "url" in media`)
		_, err = f.Render(RenderInput{Args: map[string]any{"url": "../../etc/passwd"}})
		wantErr(t, err, `unsafe value for "url" in media`)
		r = mustRender(t, f, RenderInput{Args: map[string]any{"url": ""}})
		if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "empty media target") {
			t.Errorf("warnings %q", r.Warnings)
		}
	})
	t.Run("S001_media_parts/media_inputs", func(t *testing.T) {
		for _, dialect := range []string{DialectSeed, DialectV2} {
			f, err := loadText(t, "---\ninputs:\n  - name: photo\n    kind: image\n  - name: q\n---\nuser:\n{{q}}\n{{photo}}", Options{Dialect: dialect})
			if err != nil {
				t.Fatal(err)
			}
			r := mustRender(t, f, RenderInput{Args: map[string]any{"q": "What is it?", "photo": "/attachments/cat.png"}})
			want := `[{"type":"text","text":"What is it?"},{"type":"image","url":"/attachments/cat.png","mime_type":"image/png"}]`
			if got := jsonString(r.Prefix[0].Parts); got != want {
				t.Errorf("%s: got %s", dialect, got)
			}
			_, err = f.Render(RenderInput{Args: map[string]any{"q": "x", "photo": "cat.png"}})
			wantErr(t, err, `unsafe value for "photo" in media`)
		}
	})
	t.Run("S001_media_parts/v2_literal", func(t *testing.T) {
		p, _ := ParseSegments(lit("user:\n![image](https://e.com/a.png)"), ParseOptions{Dialect: DialectV2})
		if p.Messages[0].Content != "![image](https://e.com/a.png)" {
			t.Errorf("got %s", jsonString(p))
		}
	})

	t.Run("S001_replacement_constructs/front_matter", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "conn.json", `{"kind": "key", "endpoint": "https://e", "apiKey": "${env:KEY}"}`)
		writeFile(t, dir, "opts.yaml", "temperature: 0.5\nmax_tokens: 100\n")
		writeFile(t, dir, "note.txt", "plain text")
		env := mapEnv(map[string]string{"KEY": "k-123", "URL": "https://u"})
		f, err := loadIn(t, dir, "p.prompty", "---\nmodel:\n  id: m\n  connection: ${file:conn.json}\n  options: ${file:opts.yaml}\ndescription: ${file:note.txt}\nenv:\n  A: ${env:URL}\n  B: ${env:MISSING:https://a:b}\n  C: $${env:URL}\n  D: ${other:thing}\n  E: x ${env:URL}\ntools:\n  - name: t\n    options:\n      conn: ${params:AI_CONNECTION}\n---\nhi", Options{LookupEnv: env})
		if err != nil {
			t.Fatal(err)
		}
		if f.ModelRef.Connection.APIKey != "k-123" || f.ModelOptions["maxOutputTokens"] != 100 || f.ModelOptions["temperature"] != 0.5 || f.Description != "plain text" {
			t.Errorf("model %+v options %v description %q", f.ModelRef.Connection, f.ModelOptions, f.Description)
		}
		want := map[string]any{"A": "https://u", "B": "https://a:b", "C": "${env:URL}", "D": "${other:thing}", "E": "x ${env:URL}"}
		if !jsonEqual(t, f.Fields["env"], want) {
			t.Errorf("env = %v", f.Fields["env"])
		}
		if len(f.ParamRefs) != 1 || f.ParamRefs[0] != (ParamRef{Path: "tools[0].options.conn", Name: "AI_CONNECTION", Line: 16}) {
			t.Errorf("param refs %v", f.ParamRefs)
		}
		tool, err := f.ResolveParams(f.Tools[0], map[string]any{"AI_CONNECTION": map[string]any{"endpoint": "x"}})
		if err != nil || !jsonEqual(t, tool, map[string]any{"name": "t", "options": map[string]any{"conn": map[string]any{"endpoint": "x"}}}) {
			t.Errorf("resolved %v %v", tool, err)
		}
		_, err = f.ResolveParams(f.Tools[0], nil)
		wantErr(t, err, "p.prompty:16: ${params:AI_CONNECTION}: no argument")
	})
	t.Run("S001_replacement_constructs/missing_env_names_key_not_values", func(t *testing.T) {
		env := mapEnv(map[string]string{"OTHER": "s3cr3t-value"})
		_, err := loadText(t, "---\nname: x\nmodel:\n  id: m\n  connection:\n    apiKey: ${env:API_KEY}\n    other: ${env:OTHER}\n---\n", Options{LookupEnv: env})
		e := wantErr(t, err, "model.connection.apiKey: environment variable 'API_KEY' not set")
		if e.Line != 6 || !strings.Contains(err.Error(), "p.prompty:6:") || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("error %q", err)
		}
	})
	t.Run("S001_replacement_constructs/traversal_refused", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "secret.json", `{"apiKey": "leaked"}`)
		sub := filepath.Join(dir, "app")
		_, err := loadIn(t, sub, "p.prompty", "---\nmodel:\n  connection: ${file:../secret.json}\n---\n", Options{})
		wantErr(t, err, "outside allowed roots")
		// Allowed with the project root above it.
		if _, err := loadIn(t, sub, "q.prompty", "---\nmodel:\n  connection: ${file:../secret.json}\n---\n", Options{Root: dir}); err != nil {
			t.Error(err)
		}
		// A symlink out of the root is refused too.
		if err := os.Symlink(filepath.Join(dir, "secret.json"), filepath.Join(sub, "link.json")); err == nil {
			_, err = loadIn(t, sub, "r.prompty", "---\nmodel:\n  connection: ${file:link.json}\n---\n", Options{})
			wantErr(t, err, "outside allowed roots")
		}
		_, err = loadIn(t, sub, "s.prompty", "---\nmodel:\n  connection: ${file:nope.json}\n---\n", Options{})
		if wantErr(t, err, "not found"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("not fs.ErrNotExist: %v", err)
		}
	})
	t.Run("S001_replacement_constructs/body", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "rules.txt", "Rule one.\nuser:\nnot a marker")
		writeFile(t, filepath.Dir(dir), "outside.txt", "x")
		f, err := loadIn(t, dir, "p.prompty", "---\ninputs:\n  q: hi\n---\nsystem:\nURL ${env:URL}, key ${ENV:KEY}, d ${env:NOPE:https://a:b}, m [${env:MISSING}], p ${params:q}/${Params:absent}, $${env:URL}, ${other:x}\n${file:rules.txt}\n\nuser:\n{{q}}", Options{})
		if err != nil {
			t.Fatal(err)
		}
		env := func(n string) (string, bool, bool) {
			switch n {
			case "URL":
				return "https://u", false, true
			case "KEY":
				return "sk-secret", true, true
			}
			return "", false, false
		}
		r := mustRender(t, f, RenderInput{Args: map[string]any{"q": "${env:KEY} ${file:rules.txt}"}, Env: env})
		if want := "URL https://u, key [redacted], d https://a:b, m [], p ${env:KEY} ${file:rules.txt}/, ${env:URL}, ${other:x}\nRule one.\nuser:\nnot a marker"; r.System != want {
			t.Errorf("system  %q\nwant    %q", r.System, want)
		}
		// The input's text is never scanned for constructs.
		if len(r.Prefix) != 1 || r.Prefix[0].Content != "${env:KEY} ${file:rules.txt}" {
			t.Errorf("prefix %s", jsonString(r.Prefix))
		}
		if len(r.Warnings) != 2 || !strings.Contains(r.Warnings[0], "p.prompty:6: ${env:MISSING}") || !strings.Contains(r.Warnings[1], "${params:absent}") {
			t.Errorf("warnings %q", r.Warnings)
		}
		g, err := loadIn(t, dir, "q.prompty", "system:\n${file:../outside.txt}", Options{})
		if err == nil {
			_, err = g.Render(RenderInput{})
		}
		wantErr(t, err, "outside allowed roots")
		h, _ := loadIn(t, dir, "r.prompty", "system:\n{% if x %}${file:missing.txt}{% endif %}", Options{})
		_, err = h.Render(RenderInput{Args: map[string]any{"x": true}})
		wantErr(t, err, "${file:missing.txt}: not found")
		r = mustRender(t, h, RenderInput{Args: map[string]any{"x": true}, Files: func(p string) ([]byte, error) {
			if p != "missing.txt" {
				t.Errorf("Files got %q", p)
			}
			return []byte("from Files"), nil
		}})
		if r.System != "from Files" {
			t.Errorf("system %q", r.System)
		}
	})
}

// loadIn writes name into dir and loads it.
func loadIn(t *testing.T, dir, name, text string, opt ...Options) (*File, error) {
	t.Helper()
	p := writeFile(t, dir, name, text)
	var o Options
	if len(opt) > 0 {
		o = opt[0]
	}
	return Load(p, o)
}
