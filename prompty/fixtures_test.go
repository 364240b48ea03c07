package prompty

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	weft "github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/sharedtest"
	"github.com/weft-agents/weft/prompty/tmpl"
)

// sharedDir returns the shared prompty-fixtures folder (see internal/sharedtest).
func sharedDir(t testing.TB) string {
	t.Helper()
	return sharedtest.Path(t, "prompty-fixtures")
}

// readJSON decodes a fixture file.
func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// jsonNorm round-trips v through JSON so that values of different Go types compare equal.
func jsonNorm(t testing.TB, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonEqual(t testing.TB, a, b any) bool {
	return reflect.DeepEqual(jsonNorm(t, a), jsonNorm(t, b))
}

func jsonString(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// lit is an all-literal segment list (already-rendered text).
func lit(s string) []tmpl.Segment { return []tmpl.Segment{{Kind: tmpl.Literal, Text: s}} }

// seg builds segments from alternating pieces: literal text, then interp {src, text}, …
type piece struct {
	src, text string
	strict    bool
}

func segs(parts ...any) []tmpl.Segment {
	var out []tmpl.Segment
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			out = append(out, tmpl.Segment{Kind: tmpl.Literal, Text: v})
		case piece:
			out = append(out, tmpl.Segment{Kind: tmpl.Interp, Text: v.text, Source: v.src, Strict: v.strict})
		case threadPiece:
			out = append(out, tmpl.Segment{Kind: tmpl.Placeholder, Source: string(v)})
		}
	}
	return out
}

type threadPiece string

// v2Message is a message of the v2 fixtures: role, text parts, metadata.
type v2Message struct {
	Role    string `json:"role"`
	Content []struct {
		Kind  string `json:"kind"`
		Value string `json:"value"`
	} `json:"content"`
	Metadata map[string]any `json:"metadata"`
}

func (m v2Message) text() string {
	s := ""
	for _, c := range m.Content {
		s += c.Value
	}
	return s
}

// compareV2 compares parsed messages with v2 expectations (role, text, metadata).
func compareV2(t *testing.T, got []weft.LLMMessage, want []v2Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d:\n got %s\nwant %s", len(got), len(want), jsonString(got), jsonString(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if string(g.Role) != w.Role || g.Text() != w.text() || len(g.Parts) > 0 {
			t.Errorf("message %d: got %s, want %s", i, jsonString(g), jsonString(w))
		}
		if len(g.Metadata) != len(w.Metadata) || (len(w.Metadata) > 0 && !jsonEqual(t, g.Metadata, w.Metadata)) {
			t.Errorf("message %d metadata: got %v, want %v", i, g.Metadata, w.Metadata)
		}
	}
}
