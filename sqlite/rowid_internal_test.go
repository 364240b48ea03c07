package sqlite

import (
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// TestThreadRowByRowid: the writes of a thread's row in a run (the lease taken, the steps' row
// updates) find it by the rowid kept with the row, and a kept rowid that names no row, or another
// thread's row, changes nothing but that thread's row: the write falls back to the id.
func TestThreadRowByRowid(t *testing.T) {
	ctx := t.Context()
	s := openFile(t).(*Store)
	newThread := func() string {
		th := &weft.Thread{Agent: "a"}
		if err := s.CreateThread(ctx, th, nil); err != nil {
			t.Fatal(err)
		}
		return th.ID
	}
	keptRowid := func(th string) int64 {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		if c, ok := s.w.rows.get(th); ok {
			return c.rowid
		}
		return s.w.rows.idle[th].rowid
	}
	setRowid := func(th string, rowid int64) {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		c, ok := s.w.rows.get(th)
		if !ok {
			t.Fatalf("no row kept for %s", th)
		}
		c.rowid = rowid
		s.w.rows.put(th, c)
	}
	misses := func() int {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		return s.w.rows.rowidMisses
	}
	stored := func(th string) (rowid int64, label string) {
		if err := s.row(ctx, `SELECT rowid, label FROM threads WHERE id = ?`, []any{&rowid, &label}, th); err != nil {
			t.Fatal(err)
		}
		return rowid, label
	}
	relabel := func(th string, f weft.Fence, label string) {
		t.Helper()
		if err := s.Tx(ctx, th, &f, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Label: &label}) }); err != nil {
			t.Fatal(err)
		}
	}

	a, b := newThread(), newThread()
	rowA, _ := stored(a)
	rowB, _ := stored(b)
	if got := keptRowid(a); got != rowA {
		t.Fatalf("kept rowid %d after CreateThread, stored %d", got, rowA)
	}
	f, _, err := s.BeginRun(ctx, a, "n", time.Minute, &weft.QueuedMessage{ThreadID: a, Role: weft.RoleUser, Content: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	relabel(a, f, "one")
	if _, label := stored(a); label != "one" || misses() != 0 {
		t.Fatalf("label %q, %d misses; want one, 0", label, misses())
	}
	for _, c := range []struct {
		name  string
		rowid int64
	}{
		{"a rowid of no row", rowA + rowB + 100},
		{"another thread's rowid", rowB},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := misses()
			setRowid(a, c.rowid)
			relabel(a, f, c.name)
			if _, label := stored(a); label != c.name {
				t.Errorf("label %q, want %q", label, c.name)
			}
			if _, label := stored(b); label != "" {
				t.Errorf("the other thread's label %q, want it unchanged", label)
			}
			if misses() != before+1 {
				t.Errorf("%d misses, want %d", misses(), before+1)
			}
			// The rowid that missed is forgotten: the next write goes by id, without a miss.
			if got := keptRowid(a); got != 0 {
				t.Errorf("kept rowid %d after a miss, want 0 (forgotten)", got)
			}
			relabel(a, f, c.name+" again")
			if _, label := stored(a); label != c.name+" again" || misses() != before+1 {
				t.Errorf("label %q, %d misses after the miss; want %q, %d", label, misses(), c.name+" again", before+1)
			}
		})
	}
	if err := s.ReleaseLease(ctx, f); err != nil {
		t.Fatal(err)
	}
}
