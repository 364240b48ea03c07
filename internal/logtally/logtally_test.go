package logtally_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/logtally"
	"github.com/weft-agents/weft/memstore"
)

// TestTally: a tally folds each log row once, in creation order, whoever wrote it and whenever it
// is read; a value it returned never changes afterwards; a thread deleted and made again under its
// id is counted from nothing.
func TestTally(t *testing.T) {
	ctx := context.Background()
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The rows' Error fields in order, and how many rows of each depth (a value changed in place).
	type value struct {
		rows    []string
		byDepth map[int]int
	}
	tally := logtally.Tally[value]{
		Add: func(v *value, l *weft.LogEntry) {
			v.rows = append(v.rows, l.Error)
			if v.byDepth == nil {
				v.byDepth = map[int]int{}
			}
			v.byDepth[l.Depth]++
		},
		Clone: func(v value) value { return value{slices.Clone(v.rows), maps.Clone(v.byDepth)} },
	}
	const id = "thr_tally"
	create := func() {
		if err := st.CreateThread(ctx, &weft.Thread{ID: id, Agent: "a", Status: weft.ThreadIdle}, nil); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	put := func(k int) {
		t.Helper()
		if err := st.Tx(ctx, id, nil, func(tx weft.Tx) error {
			for range k {
				n++
				if err := tx.PutLog(&weft.LogEntry{Kind: "llm", Error: fmt.Sprint(n), Depth: n % 3}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(w ...string) value {
		t.Helper()
		got, err := tally.Of(ctx, st, id)
		sum := 0
		for _, k := range got.byDepth {
			sum += k
		}
		if err != nil || !slices.Equal(got.rows, w) || sum != len(w) {
			t.Fatalf("tally %+v (%v), want %q", got, err, w)
		}
		return got
	}
	create()
	want()
	put(2)
	first := want("1", "2")
	want("1", "2")
	put(3)
	want("1", "2", "3", "4", "5")
	if !slices.Equal(first.rows, []string{"1", "2"}) || !maps.Equal(first.byDepth, map[int]int{1: 1, 2: 1}) {
		t.Fatalf("a value returned earlier changed: %+v", first)
	}
	if err := st.DeleteThread(ctx, id); err != nil {
		t.Fatal(err)
	}
	create()
	want()
	put(1)
	want("6")
}
