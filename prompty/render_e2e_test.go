package prompty

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-agents/weft/prompty/tmpl"
)

// TestVectorsRenderEndToEnd runs derived/vectors_render.json and vectors_render_segments.json
// through Load → Render → parse: the result must equal parsing the expected rendered text (the
// engines' own conformance tests live in tmpl).
func TestVectorsRenderEndToEnd(t *testing.T) {
	root := sharedDir(t)
	type vector struct {
		Name  string
		Input struct {
			Template    string
			Engine      string
			Inputs      map[string]any
			StrictProps []string `json:"strict_props"`
		}
		Expected struct {
			Rendered     *string
			NoncePattern string `json:"nonce_pattern"`
			Segments     []struct{ Kind, Text string }
			Error        string
		}
	}
	pass, total := 0, 0
	for _, file := range []string{"vectors_render.json", "vectors_render_segments.json"} {
		var f struct{ Vectors []vector }
		readJSON(t, filepath.Join(root, "derived", file), &f)
		for _, v := range f.Vectors {
			total++
			t.Run(file+"/"+v.Name, func(t *testing.T) {
				fm := map[string]any{"template": v.Input.Engine}
				inputs := map[string]any{}
				args := map[string]any{}
				for k, val := range v.Input.Inputs {
					if m, ok := val.(map[string]any); ok && m["_kind"] == "thread" {
						inputs[k] = map[string]any{"kind": "thread"}
						continue
					}
					args[k] = val
				}
				for _, s := range v.Input.StrictProps {
					inputs[s] = map[string]any{"type": "string", "strict": true}
				}
				if len(inputs) > 0 {
					fm["inputs"] = inputs
				}
				fmText, _ := json.Marshal(fm)
				file, err := loadText(t, "---\n"+string(fmText)+"\n---\n"+v.Input.Template, Options{})
				if err != nil {
					t.Fatal(err)
				}
				r, err := file.Render(RenderInput{Args: args})
				if v.Expected.Error != "" {
					if !errors.Is(err, tmpl.ErrStrictViolation) || !strings.Contains(err.Error(), v.Expected.Error) {
						t.Fatalf("want %s, got %v", v.Expected.Error, err)
					}
					pass++
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				var segs []tmpl.Segment
				switch {
				case v.Expected.Rendered != nil:
					segs = lit(*v.Expected.Rendered)
				case v.Expected.Segments != nil:
					// Expected segments keep their kinds: interp text is content.
					for _, s := range v.Expected.Segments {
						k := tmpl.Literal
						if s.Kind == "interp" {
							k = tmpl.Interp
						}
						segs = append(segs, tmpl.Segment{Kind: k, Text: s.Text})
					}
				case v.Expected.NoncePattern != "":
					// thread_nonce_injection passes when a placeholder sits at the nonce's position.
					segs = nonceSegments("system:\nYou are helpful.\n\n__PROMPTY_THREAD_0123abcd_conversation__\n\nuser:\nHi")
				}
				want, err := ParseSegments(segs, ParseOptions{})
				if err != nil {
					t.Fatal(err)
				}
				// Which input placed the thread, and which messages came only from inputs, is
				// provenance the expected text cannot carry.
				r.ThreadInput, r.QuestionSlots = "", nil
				if got := mapRendered(want); !jsonEqual(t, r, got) {
					t.Errorf("got  %s\nwant %s", jsonString(r), jsonString(got))
				}
				if !t.Failed() {
					pass++
				}
			})
		}
	}
	t.Logf("vectors_render + vectors_render_segments end to end: %d/%d pass", pass, total)
}
