package sqlite

import (
	"errors"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// TestMessageIDChecks: with no index of message ids (migration 0011), an id the caller gives is
// refused when the thread has it and taken otherwise. It is looked for only when it is not above
// the thread's greatest: among the kept history when that holds every message, else among the
// stored rows — also when another process inserted it.
func TestMessageIDChecks(t *testing.T) {
	a, b, _, _ := twoStores(t)
	ctx := t.Context()
	th := &weft.Thread{Agent: "a"}
	if err := a.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	insert := func(s *Store, f *weft.Fence, id string) error {
		return s.Tx(ctx, th.ID, f, func(tx weft.Tx) error {
			return tx.InsertMessage(&weft.Message{ID: id, Role: weft.RoleUser, Content: id})
		})
	}
	// How an id was checked: not at all (above the greatest), in the kept history, or in the rows.
	const none, kept, stored = "none", "kept", "stored"
	checks := func(s *Store) (int, int) {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		return s.w.rows.idKeptChecks, s.w.rows.idLookups
	}
	var fence weft.Fence // a's run, once begun
	first, second := weft.NewID("msg_"), weft.NewID("msg_")
	for _, c := range []struct {
		name     string
		s        *Store
		run      bool // in a's run
		id       string
		conflict bool
		how      string
	}{
		// The thread was made here: it has no message yet, which its kept row knows, and its
		// history is kept.
		{"new thread, an id", a, false, second, false, none},
		{"above the greatest", a, false, "new", false, none},
		{"below the greatest, not stored", a, false, first, false, kept},
		{"above the greatest again", a, false, "new", false, none},
		{"made by the store, not looked for", a, false, "", false, none},
		{"a stored id", a, false, second, true, kept},
		// The failed Tx dropped the kept row and history; the run's start reads the history
		// again, and its first Tx takes the greatest id from it.
		{"a run's first Tx", a, true, "new", false, kept},
		{"the run's next Tx", a, true, "new", false, none},
		{"a stored id in the run", a, true, first, true, kept},
		// b has never seen the thread: it searches the rows.
		{"another process: a stored id", b, false, second, true, stored},
		{"another process: a new id", b, false, "msg_zzz", false, stored},
		// a's kept rows are stale after b's commit: the rows are searched.
		{"back here: the other process's id", a, false, "msg_zzz", true, stored},
	} {
		var f *weft.Fence
		if c.run {
			if fence.Token == 0 {
				var err error
				if fence, _, err = a.BeginRun(ctx, th.ID, "node", time.Minute, nil); err != nil {
					t.Fatal(err)
				}
			}
			f = &fence
		}
		id := c.id
		if id == "new" { // made now, after every id before
			id = weft.NewID("msg_")
		}
		k0, s0 := checks(c.s)
		err := insert(c.s, f, id)
		if got := weft.ErrorCode(err) == weft.EConflict; got != c.conflict || (err != nil && !got) {
			t.Errorf("%s: insert %q: %v, want conflict %v", c.name, id, err, c.conflict)
		}
		k1, s1 := checks(c.s)
		how := none
		switch {
		case s1 > s0:
			how = stored
		case k1 > k0:
			how = kept
		}
		if how != c.how {
			t.Errorf("%s: the id was checked %s, want %s", c.name, how, c.how)
		}
	}
	// A deleted message's id may be used again.
	if err := a.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.DeleteMessage(first) }); err != nil {
		t.Fatal(err)
	}
	if err := insert(a, nil, first); err != nil {
		t.Errorf("the id of a deleted message: %v", err)
	}
	msgs, err := a.Messages(ctx, th.ID, weft.MessageQuery{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		if seen[m.ID] {
			t.Errorf("message id %s stored twice", m.ID)
		}
		seen[m.ID] = true
		got, err := a.Message(ctx, th.ID, m.ID)
		if err != nil || got.Seq != m.Seq {
			t.Errorf("Message(%s): seq %d, %v; want seq %d", m.ID, got.Seq, err, m.Seq)
		}
	}
	if len(msgs) != 8 {
		t.Errorf("%d messages stored, want 8", len(msgs))
	}
	if _, err := a.Message(ctx, th.ID, "msg_none"); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("Message(unknown): %v", err)
	}
}
