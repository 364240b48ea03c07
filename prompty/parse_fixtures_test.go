package prompty

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	weft "github.com/weft-agents/weft"
	"github.com/weft-agents/weft/prompty/tmpl"
)

// threadNonce matches the v2 renderer's thread nonce; Weft emits a placeholder segment there instead.
var threadNonce = regexp.MustCompile(`__PROMPTY_THREAD_[a-f0-9]+_([A-Za-z0-9_]+)__`)

// nonceSegments turns rendered v2 text into segments, the thread nonce becoming a placeholder.
func nonceSegments(text string) []tmpl.Segment {
	var out []tmpl.Segment
	for {
		loc := threadNonce.FindStringSubmatchIndex(text)
		if loc == nil {
			return append(out, tmpl.Segment{Kind: tmpl.Literal, Text: text})
		}
		out = append(out, tmpl.Segment{Kind: tmpl.Literal, Text: text[:loc[0]]},
			tmpl.Segment{Kind: tmpl.Placeholder, Source: text[loc[2]:loc[3]]})
		text = text[loc[1]:]
	}
}

// TestVectorsParse runs derived/vectors_parse.json (v2, normative).
func TestVectorsParse(t *testing.T) {
	var f struct {
		Vectors []struct {
			Name  string
			Input struct {
				Rendered     string
				ThreadInputs map[string][]v2Message `json:"thread_inputs"`
			}
			Expected struct{ Messages []v2Message }
		}
	}
	readJSON(t, filepath.Join(sharedDir(t), "derived/vectors_parse.json"), &f)
	pass := 0
	for _, v := range f.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			res, err := ParseSegments(nonceSegments(v.Input.Rendered), ParseOptions{Dialect: DialectV2})
			if err != nil {
				t.Fatal(err)
			}
			got := res.Messages
			if len(v.Input.ThreadInputs) > 0 {
				// Expand the placeholder with the thread's messages, as the runtime does.
				if res.Thread < 0 {
					t.Fatal("no thread placeholder")
				}
				var hist []weft.LLMMessage
				for _, msgs := range v.Input.ThreadInputs {
					for _, m := range msgs {
						hist = append(hist, weft.LLMMessage{Role: weft.Role(m.Role), Content: m.text()})
					}
				}
				got = append(append(append([]weft.LLMMessage{}, got[:res.Thread]...), hist...), got[res.Thread:]...)
			}
			compareV2(t, got, v.Expected.Messages)
			if !t.Failed() {
				pass++
			}
		})
	}
	t.Logf("vectors_parse: %d/%d pass", pass, len(f.Vectors))
}

// TestPythonV2ParserBehaviour runs derived/python_v2_parser_behaviour.json (v2, all literal).
func TestPythonV2ParserBehaviour(t *testing.T) {
	var f struct {
		ParseCases []struct {
			Name   string
			Input  string
			Output []v2Message
		} `json:"parse_cases"`
		StrictCases []struct {
			Name     string
			Template string
			InputQ   string `json:"input_q"`
			Output   []v2Message
			Error    string
		} `json:"strict_cases"`
	}
	readJSON(t, filepath.Join(sharedDir(t), "derived/python_v2_parser_behaviour.json"), &f)
	pass := 0
	for _, c := range f.ParseCases {
		t.Run(c.Name, func(t *testing.T) {
			res, err := ParseSegments(lit(c.Input), ParseOptions{Dialect: DialectV2})
			if err != nil {
				t.Fatal(err)
			}
			compareV2(t, res.Messages, c.Output)
			if !t.Failed() {
				pass++
			}
		})
	}
	// Strict cases: the template text is literal, {{q}} a strict interp. v2 detects the forged
	// marker with a nonce; Weft rejects it as a StrictViolation.
	for _, c := range f.StrictCases {
		t.Run("strict/"+c.Name, func(t *testing.T) {
			before, after, _ := strings.Cut(c.Template, "{{q}}")
			res, err := ParseSegments(segs(before, piece{src: "q", text: c.InputQ, strict: true}, after), ParseOptions{Dialect: DialectV2})
			if c.Error != "" {
				if err == nil || !errors.Is(err, tmpl.ErrStrictViolation) || !strings.Contains(err.Error(), "StrictViolation") {
					t.Fatalf("want StrictViolation, got %v", err)
				}
				pass++
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// v2 drops the attribute of user[name="Seth"] in its nonce output; Weft keeps it in metadata.
			for i := range res.Messages {
				res.Messages[i].Metadata = nil
			}
			compareV2(t, res.Messages, c.Output)
			if !t.Failed() {
				pass++
			}
		})
	}
	t.Logf("python_v2_parser_behaviour: %d/%d pass", pass, len(f.ParseCases)+len(f.StrictCases))
}

// TestPythonV2GeneratedMD runs derived/python_v2_generated_md_parsed.json (v2, all literal).
func TestPythonV2GeneratedMD(t *testing.T) {
	root := sharedDir(t)
	var f struct {
		Cases []struct {
			InputFile string `json:"input_file"`
			Messages  []v2Message
		}
	}
	readJSON(t, filepath.Join(root, "derived/python_v2_generated_md_parsed.json"), &f)
	pass := 0
	for _, c := range f.Cases {
		t.Run(filepath.Base(c.InputFile), func(t *testing.T) {
			data := readV1File(t, root, c.InputFile)
			res, err := ParseSegments(lit(string(data)), ParseOptions{Dialect: DialectV2})
			if err != nil {
				t.Fatal(err)
			}
			compareV2(t, res.Messages, c.Messages)
			if !t.Failed() {
				pass++
			}
		})
	}
	t.Logf("python_v2_generated_md_parsed: %d/%d pass", pass, len(f.Cases))
}

func readV1File(t *testing.T, root, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "microsoft-prompty@v1", rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
