package weft_test

import (
	"encoding/json"
	"testing"

	"github.com/weft-agents/weft"
)

func TestMetadataJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want string
		ok   bool
	}{
		{"absent", nil, "", false},
		{"raw", json.RawMessage(` [{"a":1}] `), `[{"a":1}]`, true},
		{"bytes", []byte(`{"a":1}`), `{"a":1}`, true},
		{"string_json", `[1,2]`, `[1,2]`, true},
		{"string_not_json", `not json`, "", false},
		{"decoded", []any{map[string]any{"type": "thinking"}}, `[{"type":"thinking"}]`, true},
		{"empty", json.RawMessage(`  `), "", false},
		{"unmarshalable", func() {}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := weft.MetadataJSON(tc.in)
			if ok != tc.ok || string(got) != tc.want {
				t.Errorf("got %q %v, want %q %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
