package sqlite

import (
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// TestThreadRowByRowid: the writes of a thread's row in a run (the lease taken, the steps' row
// updates) find it by the number kept with the row (threads.num, its rowid), by which the Tx also
// writes the thread's messages (migration 0012). A kept number that names no row, or another
// thread's row, fails the Tx and writes nothing, to either thread; the next Tx reads the number
// again. A row kept without a number has it read.
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
	count := func(th string) (n int) {
		if err := s.row(ctx, `SELECT count(*) FROM messages WHERE thread_num = (SELECT num FROM threads WHERE id = ?)`, []any{&n}, th); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// step relabels a and inserts a message into it, in one Tx.
	step := func(label string) error {
		return s.Tx(ctx, a, &f, func(tx weft.Tx) error {
			if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: label}); err != nil {
				return err
			}
			return tx.UpdateThread(weft.ThreadPatch{Label: &label})
		})
	}
	for _, c := range []struct {
		name  string
		rowid int64
		fails bool
	}{
		{"a number of no row", rowA + rowB + 100, true},
		{"another thread's number", rowB, true},
		{"no number kept", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, inA, inB := misses(), count(a), count(b)
			_, labelA := stored(a)
			setRowid(a, c.rowid)
			err := step(c.name)
			if !c.fails {
				if err != nil {
					t.Fatal(err)
				}
				if _, label := stored(a); label != c.name || count(a) != inA+1 || misses() != before {
					t.Errorf("label %q, %d messages, %d misses; want %q, %d, %d", label, count(a), misses(), c.name, inA+1, before)
				}
				if got := keptRowid(a); got != rowA {
					t.Errorf("kept number %d, want %d (read)", got, rowA)
				}
				return
			}
			if err == nil {
				t.Fatal("a Tx under a wrong kept number succeeded")
			}
			if _, label := stored(a); label != labelA || count(a) != inA {
				t.Errorf("a: label %q, %d messages after the failed Tx; want %q, %d", label, count(a), labelA, inA)
			}
			if _, label := stored(b); label != "" || count(b) != inB {
				t.Errorf("b: label %q, %d messages; want them unchanged", label, count(b))
			}
			if misses() != before+1 {
				t.Errorf("%d misses, want %d", misses(), before+1)
			}
			// The failed Tx dropped the kept row: the next reads the number again.
			if err := step(c.name + " again"); err != nil {
				t.Fatal(err)
			}
			if _, label := stored(a); label != c.name+" again" || count(a) != inA+1 || misses() != before+1 {
				t.Errorf("label %q, %d messages, %d misses after the miss; want %q, %d, %d", label, count(a), misses(), c.name+" again", inA+1, before+1)
			}
		})
	}
	if err := s.ReleaseLease(ctx, f); err != nil {
		t.Fatal(err)
	}
}
