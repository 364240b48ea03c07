package prompty

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	weft "github.com/weft-agents/weft"
)

// v1Differences lists, by case name, where Weft's seed dialect differs from the v1 Python parser
// and what Weft produces instead, in the LLMMessage JSON shape. Cases not listed
// must match the v1 output as is. Thread is the expected placeholder index (-1 none) and tools the
// expected hoisted tool names.
var v1Differences = map[string]struct {
	why    string
	want   string
	thread int
	tools  []string
}{
	"seed_system_user_named": {why: "trailing newline stripped; attribute kept in metadata (and name)",
		want: `[{"role":"system","content":"You are a helpful assistant"},
		        {"role":"user","name":"Seth","content":"What is the meaning of life?","metadata":{"name":"Seth"}}]`, thread: -1},
	"seed_assistant_tool_call_yaml": {why: "YAML body becomes one assistant message with a tool call",
		want: `[{"role":"assistant","content":"","tool_calls":[{"id":"tool_call_123","name":"get_account_info","arguments":"{\"account_number\":123456}"}],"metadata":{"type":"tool_call"}}]`, thread: -1},
	"seed_tool_role_not_recognized": {why: "tool[...] is a tool result message (id 12323)",
		want: `[{"role":"tool","name":"ask_database","tool_call_id":"12323","content":"The album with the most tracks is titled \"Greatest Hits,\" which contains 57 tracks.","metadata":{"name":"ask_database","tool_call_id":"12323"}}]`, thread: -1},
	"function_role": {why: "function[...] is a tool message without id (warning)",
		want: `[{"role":"tool","name":"ask_database","content":"57 tracks","metadata":{"name":"ask_database"}}]`, thread: -1},
	"seed_thread_bang_marker": {why: "![thread] is the placeholder",
		want: `[{"role":"system","content":"Be nice."},{"role":"user","content":"Hi"}]`, thread: 1},
	"seed_thread_attr_role_not_recognized": {why: "thread[...]: is the placeholder; the text after it continues the (implicit system) role",
		want: `[{"role":"system","content":"content"}]`, thread: 0},
	"seed_inline_image": {why: "media parts in the LLMMessage shape (image part with url)",
		want: `[{"role":"user","content":[{"type":"text","text":"This is an image:"},{"type":"image","url":"https://example.com/image.png"},{"type":"text","text":"you should consider it in your response."}]}]`, thread: -1},
	"seed_inline_file_treated_as_image": {why: "ALT file gives a file part",
		want: `[{"role":"user","content":[{"type":"text","text":"This is a file:"},{"type":"file","url":"https://example.com/file.pdf"},{"type":"text","text":"you should consider it in your response."}]}]`, thread: -1},
	"seed_image_attribute_syntax": {why: "image part with option quality: high",
		want: `[{"role":"user","content":[{"type":"image","url":"https://example.com/file.jpg","options":{"quality":"high"}}]}]`, thread: -1},
	"image_with_title": {why: "the title becomes the part description (§5.8)",
		want: `[{"role":"user","content":[{"type":"text","text":"Look"},{"type":"image","url":"https://example.com/a.png","description":"A title"},{"type":"text","text":"here"}]}]`, thread: -1},
	"image_data_uri": {why: "image part shape",
		want: `[{"role":"user","content":[{"type":"text","text":"Describe"},{"type":"image","url":"data:image/png;base64,bW9ja19iYXNlNjRfZGF0YQ=="}]}]`, thread: -1},
	"two_images_same_line": {why: "image part shape",
		want: `[{"role":"user","content":[{"type":"image","url":"https://e.com/1.png"},{"type":"image","url":"https://e.com/2.png"}]}]`, thread: -1},
	"typed_attributes": {why: "trailing newline stripped; attributes in metadata",
		want: `[{"role":"system","content":"You are an AI assistant","metadata":{"key":"value 1","post":false,"great":true,"other":3.2,"pre":2}},{"role":"user","content":"Q?"}]`, thread: -1},
	"attrs_cannot_override_role_or_content": {why: "role/content keys kept in metadata; trailing newline stripped (content rule §5.3)",
		want: `[{"role":"system","content":"You are an AI assistant","metadata":{"role":"value 1","content":"overwrite content","post":false}},{"role":"user","content":"Q?"}]`, thread: -1},
	"unquoted_string_attr_dropped": {why: "unquoted strings kept (name: Bob)",
		want: `[{"role":"user","name":"Bob","content":"Hi","metadata":{"name":"Bob","id":7}}]`, thread: -1},
	"heading_and_case_variants": {why: "# System: is system (v1 keeps '# system' as the role)",
		want: `[{"role":"system","content":"A"},{"role":"user","content":"B"},{"role":"assistant","content":"C"}]`, thread: -1},
	"role_word_mid_line": {why: "trailing newline stripped (content rule §5.3)",
		want: `[{"role":"system","content":"The user: said hello"},{"role":"user","content":"Hi"}]`, thread: -1},
	"crlf_line_endings": {why: "trailing newline stripped",
		want: `[{"role":"system","content":"A"},{"role":"user","content":"B"}]`, thread: -1},
	"whitespace_preserved": {why: "trailing newline stripped",
		want: `[{"role":"system","content":"  indented line  "},{"role":"user","content":"  Hello  "}]`, thread: -1},
	"dynamic_tools_section": {why: "tool callable hoisted; messages system S, user U",
		want: `[{"role":"system","content":"S"},{"role":"user","content":"U"}]`, thread: -1, tools: []string{"callable"}},
	"rendered_injection_splits_message": {why: "all-literal text: the markers are the template's; trailing newline stripped (content rule §5.3)",
		want: `[{"role":"system","content":"You are helpful."},{"role":"user","content":"ignore this"},{"role":"assistant","content":"I am forged"}]`, thread: -1},
}

// messagesJSON normalises messages for comparison; mime_type is dropped because the v1 output has
// none (Weft adds it when the extension or data: URI tells).
func messagesJSON(t *testing.T, msgs []weft.LLMMessage) any {
	t.Helper()
	c := make([]weft.LLMMessage, len(msgs))
	for i, m := range msgs {
		c[i] = m
		if m.Parts != nil {
			c[i].Parts = make([]weft.ContentPart, len(m.Parts))
			for j, p := range m.Parts {
				p.MimeType = ""
				c[i].Parts[j] = p
			}
		}
	}
	return jsonNorm(t, c)
}

// TestPythonV1ParserBehaviour runs the parse cases of derived/python_v1_parser_behaviour.json in the
// seed dialect. sanitize_cases are not applicable (Weft uses no nonces).
func TestPythonV1ParserBehaviour(t *testing.T) {
	var f struct {
		ParseCases []struct {
			Name   string
			Input  string
			Output []map[string]any
		} `json:"parse_cases"`
	}
	readJSON(t, filepath.Join(sharedDir(t), "derived/python_v1_parser_behaviour.json"), &f)
	pass := 0
	for _, c := range f.ParseCases {
		t.Run(c.Name, func(t *testing.T) {
			res, err := ParseSegments(lit(c.Input), ParseOptions{Dialect: DialectSeed})
			if err != nil {
				t.Fatal(err)
			}
			var want any
			thread := -1
			var tools []string
			if d, ok := v1Differences[c.Name]; ok {
				if err := json.Unmarshal([]byte(d.want), &want); err != nil {
					t.Fatal(err)
				}
				thread, tools = d.thread, d.tools
			} else {
				// Same as v1: role and string content, nothing else.
				var msgs []weft.LLMMessage
				for _, o := range c.Output {
					if len(o) != 2 {
						t.Fatalf("v1 output %v has more than role and content: list the case in v1Differences", o)
					}
					msgs = append(msgs, weft.LLMMessage{Role: weft.Role(o["role"].(string)), Content: o["content"].(string)})
				}
				want = jsonNorm(t, msgs)
			}
			if got := messagesJSON(t, res.Messages); !jsonEqual(t, got, want) {
				t.Errorf("got  %s\nwant %s", jsonString(got), jsonString(want))
			}
			if res.Thread != thread {
				t.Errorf("thread = %d, want %d", res.Thread, thread)
			}
			var names []string
			for _, tl := range res.Tools {
				names = append(names, tl.(map[string]any)["name"].(string))
			}
			if strings.Join(names, ",") != strings.Join(tools, ",") {
				t.Errorf("tools = %v, want %v", names, tools)
			}
			if c.Name == "function_role" && len(res.Warnings) != 1 {
				t.Errorf("want a warning for the missing tool_call_id, got %v", res.Warnings)
			}
			if !t.Failed() {
				pass++
			}
		})
	}
	t.Logf("python_v1_parser_behaviour parse_cases: %d/%d pass (sanitize_cases not applicable: no nonces)", pass, len(f.ParseCases))
}

// TestPythonV1GeneratedMD runs derived/python_v1_generated_md_parsed.json in the seed dialect, after
// content trimming: string content and text parts lose the trailing newlines v1 keeps, and image_url
// parts are image parts. Local files are read next to runtime/prompty/tests/generated, as the
// generator did.
func TestPythonV1GeneratedMD(t *testing.T) {
	root := sharedDir(t)
	var f struct {
		Cases []struct {
			InputFile string `json:"input_file"`
			Messages  []struct {
				Role    string
				Content any
			}
		}
	}
	readJSON(t, filepath.Join(root, "derived/python_v1_generated_md_parsed.json"), &f)
	mediaDir := filepath.Join(root, "microsoft-prompty@v1/runtime/prompty/tests/generated")
	pass := 0
	for _, c := range f.Cases {
		t.Run(filepath.Base(c.InputFile), func(t *testing.T) {
			data := readV1File(t, root, c.InputFile)
			res, err := ParseSegments(lit(string(data)), ParseOptions{Dialect: DialectSeed,
				ReadFile: func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(mediaDir, p)) }})
			if err != nil {
				t.Fatal(err)
			}
			var want []weft.LLMMessage
			for _, m := range c.Messages {
				msg := weft.LLMMessage{Role: weft.Role(m.Role)}
				switch ct := m.Content.(type) {
				case string:
					msg.Content = strings.Trim(ct, "\n")
				case []any:
					for _, p := range ct {
						pm := p.(map[string]any)
						switch pm["type"] {
						case "text":
							msg.Parts = append(msg.Parts, weft.ContentPart{Type: weft.PartText, Text: pm["text"].(string)})
						case "image_url":
							msg.Parts = append(msg.Parts, weft.ContentPart{Type: weft.PartImage, URL: pm["image_url"].(map[string]any)["url"].(string)})
						}
					}
				}
				want = append(want, msg)
			}
			got := res.Messages
			// Weft adds the title as the part's description; v1 drops it.
			for i := range got {
				for j := range got[i].Parts {
					got[i].Parts[j].Description = ""
				}
			}
			if g, w := messagesJSON(t, got), messagesJSON(t, want); !jsonEqual(t, g, w) {
				t.Errorf("got  %.3000s\nwant %.3000s", jsonString(g), jsonString(w))
			}
			if !t.Failed() {
				pass++
			}
		})
	}
	t.Logf("python_v1_generated_md_parsed: %d/%d pass", pass, len(f.Cases))
}
