package tmpl

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
)

const jinjaSubsetDir = "microsoft-prompty@main/runtime/python/prompty/prompty/jinja_subset/conformance/"

// TestJinjaSubsetConformance runs the Prompty Jinja Subset corpus (47 cases) against the render
// and segment goldens.
func TestJinjaSubsetConformance(t *testing.T) {
	var corpus struct {
		Cases []struct {
			Name        string          `json:"name"`
			Template    string          `json:"template"`
			Inputs      json.RawMessage `json:"inputs"`
			StrictProps []string        `json:"strict_props"`
			ExpectThrow bool            `json:"expect_throw"`
		} `json:"cases"`
	}
	var renders []struct {
		Name     string  `json:"name"`
		Rendered *string `json:"rendered"`
		Throws   string  `json:"throws"`
	}
	var segments []struct {
		Name     string          `json:"name"`
		Segments []goldenSegment `json:"segments"`
		Throws   string          `json:"throws"`
	}
	readFixture(t, jinjaSubsetDir+"corpus.json", &corpus)
	readFixture(t, jinjaSubsetDir+"render_golden.json", &renders)
	readFixture(t, jinjaSubsetDir+"segments_golden.json", &segments)
	if len(corpus.Cases) != 47 {
		t.Errorf("corpus has %d cases, want 47", len(corpus.Cases))
	}
	renderByName := map[string]int{}
	for i, r := range renders {
		renderByName[r.Name] = i
	}
	segByName := map[string]int{}
	for i, s := range segments {
		segByName[s.Name] = i
	}
	for _, c := range corpus.Cases {
		t.Run(c.Name, func(t *testing.T) {
			ri, ok := renderByName[c.Name]
			if !ok {
				t.Fatal("no render golden")
			}
			golden := renders[ri]
			tp, err := CompileJinja(c.Template)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			in := fixtureInputs(t, c.Inputs)
			segs, err := tp.Render(in, strictSet(c.StrictProps))
			if c.ExpectThrow || golden.Throws != "" {
				if err == nil {
					t.Fatalf("rendered %q, want error %s", Join(segs), golden.Throws)
				}
				if golden.Throws == "StrictViolation" && !errors.Is(err, ErrStrictViolation) {
					t.Fatalf("error %v is not a StrictViolation", err)
				}
				if !strings.Contains(err.Error(), golden.Throws) {
					t.Fatalf("error %q does not mention %q", err, golden.Throws)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if golden.Rendered == nil {
				t.Fatal("golden has neither rendered nor throws")
			}
			if got := Join(segs); got != *golden.Rendered {
				t.Errorf("rendered %q, want %q", got, *golden.Rendered)
			}
			if plain, err := Text(tp, in); err != nil || plain != *golden.Rendered {
				t.Errorf("Text = %q, %v; want %q", plain, err, *golden.Rendered)
			}
			if si, ok := segByName[c.Name]; ok {
				compareSegments(t, segs, segments[si].Segments)
			}
		})
	}
}

// renderVector is one entry of derived/vectors_render*.json.
type renderVector struct {
	Name  string `json:"name"`
	Input struct {
		Template    string          `json:"template"`
		Engine      string          `json:"engine"`
		Inputs      json.RawMessage `json:"inputs"`
		StrictProps []string        `json:"strict_props"`
	} `json:"input"`
	Expected struct {
		Rendered     *string         `json:"rendered"`
		NoncePattern string          `json:"nonce_pattern"`
		Segments     []goldenSegment `json:"segments"`
		Error        string          `json:"error"`
	} `json:"expected"`
}

func compileVector(t *testing.T, v renderVector) Template {
	t.Helper()
	var tp Template
	var err error
	switch v.Input.Engine {
	case "jinja2":
		tp, err = CompileJinja(v.Input.Template)
	case "mustache":
		tp, err = CompileMustache(v.Input.Template)
	default:
		t.Fatalf("unknown engine %q", v.Input.Engine)
	}
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return tp
}

// TestRenderVectors runs derived/vectors_render.json (23 vectors, both engines). A thread input
// expected as a text nonce (`__PROMPTY_THREAD_<hex>_<name>__`) passes when a Placeholder segment
// for that input sits at the nonce's position (Weft has no text nonce).
func TestRenderVectors(t *testing.T) {
	var file struct {
		Vectors []renderVector `json:"vectors"`
	}
	readFixture(t, "derived/vectors_render.json", &file)
	if len(file.Vectors) != 23 {
		t.Errorf("%d vectors, want 23", len(file.Vectors))
	}
	for _, v := range file.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			tp := compileVector(t, v)
			in := fixtureInputs(t, v.Input.Inputs)
			segs, err := tp.Render(in, strictSet(v.Input.StrictProps))
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			switch {
			case v.Expected.Rendered != nil:
				if got := Join(segs); got != *v.Expected.Rendered {
					t.Errorf("rendered %q, want %q", got, *v.Expected.Rendered)
				}
			case v.Expected.NoncePattern != "":
				var b strings.Builder
				placeholders := 0
				for _, s := range segs {
					if s.Kind == Placeholder {
						placeholders++
						b.WriteString("__PROMPTY_THREAD_0123abcd_" + s.Source + "__")
						continue
					}
					b.WriteString(s.Text)
				}
				if placeholders != 1 {
					t.Errorf("%d placeholder segments, want 1: %+v", placeholders, segs)
				}
				if !regexp.MustCompile(v.Expected.NoncePattern).MatchString(b.String()) {
					t.Errorf("rendered %q does not match %q", b.String(), v.Expected.NoncePattern)
				}
			default:
				t.Fatal("vector has no expectation this test knows")
			}
		})
	}
}

// TestRenderSegmentVectors runs derived/vectors_render_segments.json (5 vectors): segments, and
// StrictViolation for strict inputs that forge a role marker.
func TestRenderSegmentVectors(t *testing.T) {
	var file struct {
		Vectors []renderVector `json:"vectors"`
	}
	readFixture(t, "derived/vectors_render_segments.json", &file)
	if len(file.Vectors) != 5 {
		t.Errorf("%d vectors, want 5", len(file.Vectors))
	}
	for _, v := range file.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			tp := compileVector(t, v)
			segs, err := tp.Render(fixtureInputs(t, v.Input.Inputs), strictSet(v.Input.StrictProps))
			if v.Expected.Error != "" {
				if err == nil {
					t.Fatalf("rendered %+v, want error %q", segs, v.Expected.Error)
				}
				if !strings.Contains(err.Error(), v.Expected.Error) || !errors.Is(err, ErrStrictViolation) {
					t.Fatalf("error %q, want %q (ErrStrictViolation)", err, v.Expected.Error)
				}
				if want := `StrictViolation: input "q" forges a role marker`; err.Error() != want {
					t.Errorf("error %q, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			compareSegments(t, segs, v.Expected.Segments)
		})
	}
}
