package tmpl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/weft-agents/weft/internal/sharedtest"
)

// fixturesDir returns the shared prompty-fixtures folder (see internal/sharedtest).
func fixturesDir(t testing.TB) string {
	t.Helper()
	return sharedtest.Path(t, "prompty-fixtures")
}

// readFixture decodes the JSON file at rel (relative to the fixtures folder) into v.
func readFixture(t testing.TB, rel string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixturesDir(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

// fixtureInputs decodes a fixture's inputs object keeping key order (DecodeJSON); an object with
// `"_kind": "thread"` becomes a Thread value named after its key.
func fixtureInputs(t testing.TB, raw json.RawMessage) map[string]any {
	t.Helper()
	in := map[string]any{}
	if len(raw) == 0 || string(raw) == "null" {
		return in
	}
	v, err := DecodeJSON(raw)
	if err != nil {
		t.Fatalf("inputs: %v", err)
	}
	obj, ok := v.(*Object)
	if !ok {
		t.Fatalf("inputs are not an object: %s", raw)
	}
	for _, k := range obj.Keys {
		val := obj.Values[k]
		if o, ok := val.(*Object); ok && o.Values["_kind"] == "thread" {
			val = Thread{Name: k}
		}
		in[k] = val
	}
	return in
}

// strictSet turns a fixture's strict_props list into Render's strict map.
func strictSet(props []string) map[string]bool {
	if len(props) == 0 {
		return nil
	}
	m := make(map[string]bool, len(props))
	for _, p := range props {
		m[p] = true
	}
	return m
}

// goldenSegment is a segment as the fixtures spell it.
type goldenSegment struct {
	Kind   string  `json:"kind"`
	Text   string  `json:"text"`
	Source *string `json:"source"`
	Strict bool    `json:"strict"`
}

// compareSegments checks got against the golden segments: kind, text and strict of each, and the
// source of interp segments. Both sides are compared after merging adjacent literal segments (the
// renderer already merges them; the goldens never split them).
func compareSegments(t *testing.T, got []Segment, want []goldenSegment) {
	t.Helper()
	var w []goldenSegment
	for _, s := range want {
		if n := len(w); n > 0 && s.Kind == "literal" && w[n-1].Kind == "literal" {
			w[n-1].Text += s.Text
			continue
		}
		w = append(w, s)
	}
	if len(got) != len(w) {
		t.Fatalf("got %d segments %+v, want %d %+v", len(got), got, len(w), w)
	}
	for i, g := range got {
		e := w[i]
		if g.Kind.String() != e.Kind || g.Text != e.Text || g.Strict != e.Strict {
			t.Errorf("segment %d = %+v, want %+v", i, g, e)
		}
		if e.Kind == "interp" && (e.Source == nil || g.Source != *e.Source) {
			t.Errorf("segment %d source = %q, want %v", i, g.Source, e.Source)
		}
	}
}
