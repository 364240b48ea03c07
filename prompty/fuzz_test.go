package prompty

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-agents/weft/prompty/tmpl"
)

// fuzzSegments cuts text into segments: each byte of cuts takes c>>2 bytes of text as a literal
// (c&3 == 0 or 1), an interp (2) or a strict interp (3); a zero-length strict cut is a thread
// placeholder. The rest of text is literal.
func fuzzSegments(text string, cuts []byte) []tmpl.Segment {
	var out []tmpl.Segment
	for _, c := range cuts {
		n := min(int(c>>2), len(text))
		piece := text[:n]
		text = text[n:]
		switch c & 3 {
		case 0, 1:
			out = append(out, tmpl.Segment{Kind: tmpl.Literal, Text: piece})
		case 2:
			out = append(out, tmpl.Segment{Kind: tmpl.Interp, Text: piece, Source: "v"})
		case 3:
			if n == 0 {
				out = append(out, tmpl.Segment{Kind: tmpl.Placeholder, Source: "thread"})
			} else {
				out = append(out, tmpl.Segment{Kind: tmpl.Interp, Text: piece, Source: "s", Strict: true})
			}
		}
	}
	return append(out, tmpl.Segment{Kind: tmpl.Literal, Text: text})
}

func blankString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r', '\v', '\f':
		default:
			return false
		}
	}
	return true
}

// shape is what structure a parse has: it must depend only on literal text.
func shape(p *Parsed) string {
	var b strings.Builder
	for _, m := range p.Messages {
		b.WriteString(string(m.Role))
		b.WriteByte('/')
		b.WriteString(string(rune('0' + len(m.ToolCalls))))
		b.WriteByte(' ')
	}
	b.WriteString(strings.Repeat("T", len(p.Tools)))
	b.WriteString(" thread=")
	b.WriteString(string(rune('0' + p.Thread + 1)))
	b.WriteString(" limit=")
	b.WriteString(string(rune('0' + p.ThreadLimit%64)))
	return b.String()
}

func addParseSeeds(f *testing.F) {
	for _, s := range []string{
		"system:\nYou are helpful.\n\nuser[name=\"{{x}}\"]:\nhi",
		"tools:\n  - id: a\n    q: v\n\nassistant[type=\"tool_call\"]:\nid: c\nfunction:\n  name: f\n  arguments:\n    a: 1\n",
		"user:\nLook ![alt](https://e/x.png \"t\") and ![type=\"image\", q=\"h\"](data:image/png;base64,AA)\n![thread]\nthread[limit=3]:\n",
		"tool[name=\"x\", tool_call_id=\"1\", status=\"error\"]:\nr\r\nfunction[name=y]:\n# System :\n",
	} {
		f.Add(s, []byte{0x10, 0x0e, 0x20, 0x03, 0x41, 0x12}, true)
		f.Add(s, []byte{}, false)
	}
}

// FuzzParseSegments parses random literal/interp/placeholder mixes: it never panics, every error is
// a *Error, and the structure (roles, tool calls, tools, placeholder) is the same when every
// non-blank interp value is replaced by "x" — values never make structure.
func FuzzParseSegments(f *testing.F) {
	addParseSeeds(f)
	f.Fuzz(func(t *testing.T, text string, cuts []byte, seed bool) {
		opt := ParseOptions{Dialect: DialectV2, File: "f.prompty"}
		if seed {
			opt.Dialect = DialectSeed
		}
		segs := fuzzSegments(text, cuts)
		p1, err1 := ParseSegments(segs, opt)
		if err1 != nil {
			var pe *Error
			if !errors.As(err1, &pe) || strings.Contains(pe.Msg, "internal error") || pe.Line < 1 {
				t.Fatalf("bad error %v", err1)
			}
		}
		for i := range segs {
			if segs[i].Kind == tmpl.Interp && !blankString(segs[i].Text) {
				segs[i].Text = "x"
			}
		}
		p2, err2 := ParseSegments(segs, opt)
		if err1 == nil && err2 == nil {
			if s1, s2 := shape(p1), shape(p2); s1 != s2 {
				t.Fatalf("structure depends on values: %q vs %q", s1, s2)
			}
		}
	})
}

// FuzzLoad loads random file bytes (and renders them with their sample arguments when they load):
// never a panic, always a *Error naming the file.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		seedPrompt,
		"---\nname: x\nmodel:\n  id: m\n  connection: ${file:c.json}\n  options: {max_tokens: 5, top_p: 1}\ninputs:\n  - name: q\n    kind: string\n    strict: true\n  - name: t\n    kind: thread\n  - name: img\n    kind: image\ntemplate:\n  format: {kind: jinja2, strict: true}\n  parser: prompty\n---\nsystem:\n${env:X:d} {% if q %}{{q}}{% endif %}\n{{t}}\nuser:\n{{img}}\n",
		"+++\n+++\n\ufeffbody",
		"---\na: &a [1, 2]\nb: [*a, *a]\n---\n{{#a}}x{{/a}}",
		"---\ninputs:\n  v: \"a, b\"\n  u: https://e/x.png\n---\ntools:\n  - id: t\n    options: {q: \"{{v}}\", p: [{{v}}]}\n\nassistant[type=\"tool_call\"]:\n- id: c\n  function: {name: f, arguments: {a: {{v}}}}\ntool[name=f, tool_call_id=c]:\nok ![image]({{u}}) ![k=\"{{v}}\"](/p.png \"t\")\n",
		"---\nmodel: ${file:c.json}\ninputs: [{name: a, kind: integer, default: 1}, {name: b, type: array, items: {kind: string}}]\noutputs: {o: {type: object, properties: [{name: x, kind: string}]}}\n---\nuser[name=\"{{a}}\", n=1.5]:\n${params:a} $${env:X} ${env:X}",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "c.json"), []byte(`{"kind":"key","apiKey":"${env:X}"}`), 0o644); err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(dir, "f.prompty")
	env := func(k string) (string, bool) { return "v-" + k, k == "X" }
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := LoadBytes(path, data, Options{Root: dir, LookupEnv: env})
		check := func(err error) {
			var pe *Error
			if !errors.As(err, &pe) || pe.File != path || strings.Contains(pe.Msg, "internal error") {
				t.Fatalf("bad error %v", err)
			}
		}
		if err != nil {
			check(err)
			return
		}
		if _, err := file.Render(RenderInput{Args: file.SampleArgs()}); err != nil {
			check(err)
		}
	})
}
