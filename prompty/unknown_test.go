package prompty

import (
	"reflect"
	"testing"
)

func TestClosestKey(t *testing.T) {
	for k, want := range map[string]string{
		"modle":           "model",
		"Model":           "model",
		"inptus":          "inputs",
		"descripton":      "description",
		"includechat":     "includeChat",
		"toolChoise":      "toolChoice",
		"tmplate":         "template",
		"zzz":             "",
		"owner":           "",
		"completely_else": "",
	} {
		if got := ClosestKey(k); got != want {
			t.Errorf("ClosestKey(%q) = %q, want %q", k, got, want)
		}
	}
}

// TestUnknownKeys: top-level keys neither Prompty nor Weft defines are listed (and still kept in
// Metadata); v1's descriptive keys are not.
func TestUnknownKeys(t *testing.T) {
	src := "---\nname: p\nmodle: fast\nauthors: [a]\nversion: 1\nowner: x\nmetadata: {team: y}\n---\nsystem:\nHi\n"
	f, err := LoadBytes("p.prompty", []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"modle", "owner"}; !reflect.DeepEqual(f.UnknownKeys, want) {
		t.Errorf("UnknownKeys %q, want %q", f.UnknownKeys, want)
	}
	if f.Metadata["modle"] != "fast" || f.Metadata["team"] != "y" {
		t.Errorf("Metadata %v", f.Metadata)
	}
}
