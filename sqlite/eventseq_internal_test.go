package sqlite

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
)

// TestEventSeqKept: a run's Txs number the events they append from the seq the writer keeps with
// the thread's row, read once; the seqs run from 1 without gaps across the Txs, across runs, across
// a Tx that failed (its events rolled back) and after another process appended events to the
// thread (whose commit the kept rows go with).
func TestEventSeqKept(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "weft.db")
	key := envcrypt.NewKey()
	s, err := Open(ctx, path, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	reads := func() int {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		return s.w.rows.eventSeqReads
	}
	ev := func(typ string) weft.EventRecord { return weft.EventRecord{Type: typ, Data: json.RawMessage(`{}`)} }
	appendIn := func(st *Store, f *weft.Fence, fail bool, types ...string) {
		t.Helper()
		err := st.Tx(ctx, th.ID, f, func(tx weft.Tx) error {
			evs := make([]weft.EventRecord, len(types))
			for i, typ := range types {
				evs[i] = ev(typ)
			}
			if err := tx.AppendEvents(evs); err != nil {
				return err
			}
			if fail {
				return weft.Errorf(weft.EInvalid, "failed on purpose")
			}
			return nil
		})
		if (err != nil) != fail {
			t.Fatalf("Tx: %v, want failure %v", err, fail)
		}
	}
	run := func(st *Store) weft.Fence {
		t.Helper()
		f, _, err := st.BeginRun(ctx, th.ID, "n", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	f := run(s)
	before := reads()
	appendIn(s, &f, false, "a", "b")
	appendIn(s, &f, false, "c")
	appendIn(s, &f, true, "lost")
	appendIn(s, &f, false, "d")
	appendIn(s, &f, false, "e")
	if got := reads() - before; got != 2 {
		t.Errorf("%d reads of the event seq for four Txs and a failed one, want 2 (the first, and the one after the failure)", got)
	}
	if err := s.ReleaseLease(ctx, f); err != nil {
		t.Fatal(err)
	}
	// Another process appends to the thread; this one's next run numbers after it.
	other, err := Open(ctx, path, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	f2 := run(other)
	appendIn(other, &f2, false, "f")
	if err := other.ReleaseLease(ctx, f2); err != nil {
		t.Fatal(err)
	}
	other.Close()
	f = run(s)
	appendIn(s, &f, false, "g")
	appendIn(s, &f, false, "h")
	got, err := s.Events(ctx, th.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := "abcdefgh"
	var types string
	for i, e := range got {
		types += e.Type
		if e.Seq != int64(i+1) {
			t.Errorf("event %q has seq %d, want %d", e.Type, e.Seq, i+1)
		}
	}
	if types != want {
		t.Errorf("events %q, want %q", types, want)
	}
}
