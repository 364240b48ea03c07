package sqlite

import (
	"encoding/json"
	"maps"
	"testing"
)

// readBack is a run-state column as ExecState and runStartRows read it, values as strings.
func readBack(framed string) (map[string]string, error) {
	docs, err := decodeRunState(framed)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range docs {
		out[k] = string(v)
	}
	return out, nil
}

// FuzzRunState: whatever the stored column holds, reading it never panics, and a run state that
// reads back is changed by set exactly as a map would be and written so that it reads back so.
func FuzzRunState(f *testing.F) {
	f.Add("3:run13:{\"side\":\"a\"}", "run", `{"side":"b"}`, false)
	f.Add("", "handoff", "null", false)
	f.Add("3:run2:{}7:handoff4:null", "handoff", "", true)
	f.Add("9:x", "k", "1", false)
	f.Add("-1:", "k", "1", false)
	f.Add("2:a:1:x", "a:", `"v"`, false)
	f.Add("1:a1:x1:a1:y", "b", "1", false) // a repeated key: the last one is the value
	f.Fuzz(func(t *testing.T, framed, key, value string, del bool) {
		want, err := readBack(framed)
		var r runState
		r.framed, r.read = framed, true
		var v json.RawMessage
		if !del {
			v = json.RawMessage(value)
		}
		changed, setErr := r.set(key, v)
		if err != nil {
			if setErr == nil {
				t.Fatalf("set accepted a corrupt column %q", framed)
			}
			return
		}
		if setErr != nil {
			t.Fatalf("set failed on a column that reads back: %v", setErr)
		}
		before := maps.Clone(want)
		if del {
			delete(want, key)
		} else {
			want[key] = value
		}
		if changed != !maps.Equal(before, want) {
			t.Errorf("set(%q) reported changed=%v; before %v after %v", key, changed, before, want)
		}
		got, err := readBack(r.encode())
		if err != nil || !maps.Equal(got, want) {
			t.Fatalf("encoded run state reads back %v (%v), want %v", got, err, want)
		}
	})
}
