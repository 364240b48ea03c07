package sqlite

import (
	"slices"
	"testing"

	"github.com/weft-agents/weft"
)

// TestThreadNamesWritten: a Tx writes the agent, label and tags columns only when it changes one
// of them (setNames); the columns a listing filters on must still follow every change, through
// Txs that change only the status, and through several patches in one Tx.
func TestThreadNamesWritten(t *testing.T) {
	s, th := storeWithThread(t)
	str := func(v string) *string { return &v }
	running, idle := weft.ThreadRunning, weft.ThreadIdle
	steps := []struct {
		name    string
		patches []weft.ThreadPatch
		agent   string
		label   string
		tags    []string
	}{
		{"status only", []weft.ThreadPatch{{Status: &running}}, "a", "", nil},
		{"label", []weft.ThreadPatch{{Label: str("first")}}, "a", "first", nil},
		{"status after a label", []weft.ThreadPatch{{Status: &idle, Preview: str("p")}}, "a", "first", nil},
		{"agent, then status in the same Tx", []weft.ThreadPatch{{Agent: str("b")}, {Status: &running}}, "b", "first", nil},
		{"status, then tags in the same Tx", []weft.ThreadPatch{{Status: &idle}, {Tags: []string{"x", "y"}}}, "b", "first", []string{"x", "y"}},
		{"the same label again", []weft.ThreadPatch{{Label: str("first")}}, "b", "first", []string{"x", "y"}},
		{"label and agent back", []weft.ThreadPatch{{Label: str(""), Agent: str("a")}}, "a", "", []string{"x", "y"}},
	}
	for _, st := range steps {
		if err := s.Tx(t.Context(), th.ID, nil, func(tx weft.Tx) error {
			for _, p := range st.patches {
				if err := tx.UpdateThread(p); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		var agent, label, tags string
		if err := s.rdb.QueryRowContext(t.Context(), `SELECT agent, label, tags FROM threads WHERE id = ?`, th.ID).Scan(&agent, &label, &tags); err != nil {
			t.Fatal(err)
		}
		got, err := s.Thread(t.Context(), th.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantTags := `[]`
		if st.tags != nil {
			b, _ := marshal(st.tags)
			wantTags = string(b)
		}
		if agent != st.agent || label != st.label || tags != wantTags {
			t.Errorf("%s: columns agent %q, label %q, tags %s; want %q, %q, %s", st.name, agent, label, tags, st.agent, st.label, wantTags)
		}
		if got.Agent != st.agent || got.Label != st.label || !slices.Equal(got.Tags, st.tags) && len(got.Tags)+len(st.tags) > 0 {
			t.Errorf("%s: thread has agent %q, label %q, tags %v; want %q, %q, %v", st.name, got.Agent, got.Label, got.Tags, st.agent, st.label, st.tags)
		}
	}
}
