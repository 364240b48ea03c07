package sqlite

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
)

// clock is a settable clock for two stores of one file.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// twoStores opens two stores of one file, as two processes would, each with its own clock.
func twoStores(t *testing.T) (a, b *Store, ca, cb *clock) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "weft.db")
	key := envcrypt.NewKey()
	start := time.Unix(1_800_000_000, 0)
	ca, cb = &clock{now: start}, &clock{now: start}
	var err error
	if a, err = Open(t.Context(), path, Options{Key: key, Now: ca.Now}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = Open(t.Context(), path, Options{Key: key, Now: cb.Now}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b, ca, cb
}

// cached reports whether s's writer holds a row for the thread.
func cached(s *Store, threadID string) bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, ok := s.w.rows.get(threadID)
	return ok
}

// TestRowCacheFollowsOtherWriters: a run's steps start from the row its last step left, and
// whatever else writes the thread row — another process, another write of this one — is seen by
// the next step: a lease taken over elsewhere fails it, a message queued elsewhere is counted, a
// message inserted by an unfenced Tx is numbered after.
func TestRowCacheFollowsOtherWriters(t *testing.T) {
	ctx := t.Context()
	step := func(s *Store, th string, f weft.Fence, fn func(weft.Tx) error) error {
		return s.Tx(ctx, th, &f, fn)
	}
	insert := func(m *weft.Message) func(weft.Tx) error {
		return func(tx weft.Tx) error { return tx.InsertMessage(m) }
	}
	begin := func(t *testing.T, s *Store) (string, weft.Fence) {
		t.Helper()
		th := &weft.Thread{Agent: "a"}
		if err := s.CreateThread(ctx, th, nil); err != nil {
			t.Fatal(err)
		}
		f, _, err := s.BeginRun(ctx, th.ID, "node-a", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !cached(s, th.ID) {
			t.Fatal("BeginRun left no row for the run's first step")
		}
		if err := step(s, th.ID, f, insert(&weft.Message{Role: weft.RoleUser, Content: "one"})); err != nil {
			t.Fatal(err)
		}
		if !cached(s, th.ID) {
			t.Fatal("a fenced Tx left no row for the next")
		}
		return th.ID, f
	}

	t.Run("lease taken by another process", func(t *testing.T) {
		a, b, _, cb := twoStores(t)
		th, f := begin(t, a)
		// The other process finds the lease expired by its clock and takes it; a's clock has not
		// reached the expiry, so only the row tells a its lease is gone.
		cb.set(cb.Now().Add(2 * time.Minute))
		if _, err := b.AcquireLease(ctx, th, "node-b", time.Minute); err != nil {
			t.Fatal(err)
		}
		err := step(a, th, f, insert(&weft.Message{Role: weft.RoleAssistant, Content: "late"}))
		if !errors.Is(err, weft.ErrLeaseLost) {
			t.Fatalf("step after the lease was taken elsewhere: %v, want ErrLeaseLost", err)
		}
		if cached(a, th) {
			t.Error("a lost lease left its row cached")
		}
	})

	t.Run("message queued by another process", func(t *testing.T) {
		a, b, _, _ := twoStores(t)
		th, f := begin(t, a)
		q := &weft.QueuedMessage{ThreadID: th, Role: weft.RoleUser, Content: "from b"}
		if err := b.PushQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		var seq int64
		var drained []weft.QueuedMessage
		err := step(a, th, f, func(tx weft.Tx) (err error) {
			if seq, err = tx.QueueSeq(); err != nil {
				return err
			}
			drained, err = tx.DrainQueue(0)
			return err
		})
		if err != nil || seq != q.Seq {
			t.Fatalf("QueueSeq after another process queued seq %d: %d, %v", q.Seq, seq, err)
		}
		if len(drained) != 1 || drained[0].ID != q.ID {
			t.Errorf("drained after another process queued %s: %+v", q.ID, drained)
		}
	})

	t.Run("queue", func(t *testing.T) {
		a, _, _, _ := twoStores(t)
		th := &weft.Thread{Agent: "a"}
		if err := a.CreateThread(ctx, th, nil); err != nil {
			t.Fatal(err)
		}
		early := &weft.QueuedMessage{ThreadID: th.ID, Role: weft.RoleUser, Content: "early"}
		if err := a.PushQueue(ctx, early); err != nil {
			t.Fatal(err)
		}
		push := &weft.QueuedMessage{ThreadID: th.ID, Role: weft.RoleUser, Content: "with the run"}
		f, _, err := a.BeginRun(ctx, th.ID, "node-a", time.Minute, push)
		if err != nil {
			t.Fatal(err)
		}
		// The first step drains up to the earlier row, leaving the one BeginRun queued; a row
		// queued inside a step is drained by the next with it.
		var first, second []weft.QueuedMessage
		inStep := &weft.QueuedMessage{Role: weft.RoleUser, Content: "in a step"}
		if err := step(a, th.ID, f, func(tx weft.Tx) (err error) {
			if first, err = tx.DrainQueue(early.Seq); err != nil {
				return err
			}
			if first2, err := tx.DrainQueue(early.Seq); err != nil || len(first2) != 0 {
				t.Errorf("drained again in the same Tx: %+v, %v", first2, err)
			}
			return tx.PushQueue(inStep)
		}); err != nil {
			t.Fatal(err)
		}
		if !cached(a, th.ID) {
			t.Fatal("the step left no row cached")
		}
		if err := step(a, th.ID, f, func(tx weft.Tx) (err error) { second, err = tx.DrainQueue(0); return err }); err != nil {
			t.Fatal(err)
		}
		ids := func(qs []weft.QueuedMessage) (out []string) {
			for _, q := range qs {
				out = append(out, q.Content)
			}
			return out
		}
		if got := ids(first); len(got) != 1 || got[0] != "early" {
			t.Errorf("first drain: %q", got)
		}
		if got := ids(second); len(got) != 2 || got[0] != "with the run" || got[1] != "in a step" {
			t.Errorf("second drain: %q", got)
		}
		if left, err := a.Queued(ctx, th.ID); err != nil || len(left) != 0 {
			t.Errorf("queue after draining it all: %+v, %v", left, err)
		}
	})

	t.Run("message inserted by another process", func(t *testing.T) {
		a, b, _, _ := twoStores(t)
		th, f := begin(t, a)
		other := &weft.Message{Role: weft.RoleUser, Content: "from b"}
		if err := b.Tx(ctx, th, nil, insert(other)); err != nil {
			t.Fatal(err)
		}
		next := &weft.Message{Role: weft.RoleAssistant, Content: "after"}
		if err := step(a, th, f, insert(next)); err != nil {
			t.Fatal(err)
		}
		if next.Seq != other.Seq+1 {
			t.Errorf("seq after another process's message %d: %d", other.Seq, next.Seq)
		}
	})

	t.Run("writes of this process", func(t *testing.T) {
		a, _, ca, _ := twoStores(t)
		th, f := begin(t, a)
		// An unfenced Tx of the thread numbers a message and renames the thread.
		other := &weft.Message{Role: weft.RoleUser, Content: "unfenced"}
		label := "renamed"
		if err := a.Tx(ctx, th, nil, func(tx weft.Tx) error {
			return errors.Join(tx.InsertMessage(other), tx.UpdateThread(weft.ThreadPatch{Label: &label}))
		}); err != nil {
			t.Fatal(err)
		}
		if cached(a, th) {
			t.Error("an unfenced Tx left the run's row cached")
		}
		// A queue push of its own.
		q := &weft.QueuedMessage{ThreadID: th, Role: weft.RoleUser, Content: "pushed"}
		if err := a.PushQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		next := &weft.Message{Role: weft.RoleAssistant, Content: "after"}
		var seq int64
		status := weft.ThreadRunning
		err := step(a, th, f, func(tx weft.Tx) (err error) {
			if err := tx.InsertMessage(next); err != nil {
				return err
			}
			if err := tx.UpdateThread(weft.ThreadPatch{Status: &status}); err != nil {
				return err
			}
			seq, err = tx.QueueSeq()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if next.Seq != other.Seq+1 || seq != q.Seq {
			t.Errorf("after this process's other writes: message seq %d (want %d), queue seq %d (want %d)", next.Seq, other.Seq+1, seq, q.Seq)
		}
		got, err := a.Thread(ctx, th)
		if err != nil || got.Label != label || got.Status != status {
			t.Errorf("thread after the step: label %q status %q (%v): the step wrote over the unfenced Tx's rename", got.Label, got.Status, err)
		}
		// A renewal moves the expiry: a step after the old one still holds the lease.
		if err := step(a, th, f, insert(&weft.Message{Role: weft.RoleAssistant, Content: "cached again"})); err != nil || !cached(a, th) {
			t.Fatalf("a step: %v, cached %v", err, cached(a, th))
		}
		if err := a.RenewLease(ctx, f, time.Hour); err != nil {
			t.Fatal(err)
		}
		ca.set(ca.Now().Add(2 * time.Minute)) // past the first expiry, before the renewed one
		if err := step(a, th, f, insert(&weft.Message{Role: weft.RoleAssistant, Content: "renewed"})); err != nil {
			t.Errorf("a step after the renewal: %v", err)
		}
		// A lease taken over in this process: the next step of the old holder fails.
		ca.set(ca.Now().Add(2 * time.Hour))
		if _, err := a.AcquireLease(ctx, th, "node-c", time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := step(a, th, f, insert(&weft.Message{Role: weft.RoleAssistant, Content: "too late"})); !errors.Is(err, weft.ErrLeaseLost) {
			t.Errorf("a step after this process took the lease over: %v, want ErrLeaseLost", err)
		}
	})

	t.Run("a failed step leaves nothing", func(t *testing.T) {
		a, _, _, _ := twoStores(t)
		th, f := begin(t, a)
		boom := errors.New("boom")
		if err := step(a, th, f, func(tx weft.Tx) error {
			if err := tx.InsertMessage(&weft.Message{Role: weft.RoleAssistant, Content: "rolled back"}); err != nil {
				return err
			}
			return boom
		}); !errors.Is(err, boom) {
			t.Fatal(err)
		}
		next := &weft.Message{Role: weft.RoleAssistant, Content: "kept"}
		if err := step(a, th, f, insert(next)); err != nil {
			t.Fatal(err)
		}
		msgs, err := a.Messages(ctx, th, weft.MessageQuery{})
		if err != nil || len(msgs) != 2 || msgs[1].Seq != next.Seq || next.Seq != msgs[0].Seq+1 {
			t.Errorf("messages after a failed step: %+v, %v (next seq %d)", msgs, err, next.Seq)
		}
	})

	t.Run("released from a child's Tx", func(t *testing.T) {
		a, _, _, _ := twoStores(t)
		th, f := begin(t, a)
		child := &weft.Thread{Agent: "a", ParentID: th}
		if err := a.CreateThread(ctx, child, nil); err != nil {
			t.Fatal(err)
		}
		if err := step(a, th, f, insert(&weft.Message{Role: weft.RoleAssistant, Content: "two"})); err != nil || !cached(a, th) {
			t.Fatalf("a step after the child's creation: %v, cached %v", err, cached(a, th))
		}
		// A Tx of the child fenced by the parent's lease releases that lease.
		if err := a.Tx(ctx, child.ID, &f, func(tx weft.Tx) error { return tx.ReleaseLease() }); err != nil {
			t.Fatal(err)
		}
		err := step(a, th, f, insert(&weft.Message{Role: weft.RoleAssistant, Content: "after the release"}))
		if !errors.Is(err, weft.ErrLeaseLost) {
			t.Fatalf("the parent's step after its lease was released: %v, want ErrLeaseLost", err)
		}
	})

	t.Run("released", func(t *testing.T) {
		a, _, _, _ := twoStores(t)
		th, f := begin(t, a)
		if err := step(a, th, f, func(tx weft.Tx) error { return tx.ReleaseLease() }); err != nil {
			t.Fatal(err)
		}
		if cached(a, th) {
			t.Error("a released lease left the run's row cached as running (it is kept as idle)")
		}
	})
}

// TestIdleRowFollowsChanges: a thread's next run starts from the row its last run's releasing Tx
// left (its first, from the row CreateThread left), an unfenced Tx keeps the row as it leaves it,
// and any other change of the row since — a message queued, a failed Tx, a lease taken and freed,
// another process's write, a write of no one thread — makes BeginRun read the row instead. The
// package's tests compare a kept row with the stored one at each use (verifyHistory), so a row
// kept wrong fails BeginRun.
func TestIdleRowFollowsChanges(t *testing.T) {
	ctx := t.Context()
	// run runs one run on th: a step that inserts a message, then a step that ends it.
	run := func(t *testing.T, s *Store, th string, push *weft.QueuedMessage) (weft.Fence, *weft.RunStart) {
		t.Helper()
		f, rs, err := s.BeginRun(ctx, th, "node-a", time.Minute, push)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Tx(ctx, th, &f, func(tx weft.Tx) error {
			if _, err := tx.DrainQueue(0); err != nil {
				return err
			}
			return tx.InsertMessage(&weft.Message{Role: weft.RoleAssistant, Content: "reply"})
		}); err != nil {
			t.Fatal(err)
		}
		idle := weft.ThreadIdle
		if err := s.Tx(ctx, th, &f, func(tx weft.Tx) error {
			if err := tx.UpdateThread(weft.ThreadPatch{Status: &idle}); err != nil {
				return err
			}
			return tx.ReleaseLease()
		}); err != nil {
			t.Fatal(err)
		}
		return f, rs
	}
	hits := func(s *Store) int { s.wmu.Lock(); defer s.wmu.Unlock(); return s.w.rows.idleHits }
	readNothing := func(s *Store) int { s.wmu.Lock(); defer s.wmu.Unlock(); return s.w.rows.aroundHits }
	label := "renamed"
	cases := []struct {
		name   string
		change func(t *testing.T, a, b *Store, th string)
		kept   bool
		check  func(t *testing.T, rs *weft.RunStart)
	}{
		{"unchanged", func(*testing.T, *Store, *Store, string) {}, true, nil},
		{"a message queued", func(t *testing.T, a, _ *Store, th string) {
			if err := a.PushQueue(ctx, &weft.QueuedMessage{ThreadID: th, Role: weft.RoleUser, Content: "queued"}); err != nil {
				t.Fatal(err)
			}
		}, false, func(t *testing.T, rs *weft.RunStart) {
			if len(rs.Queued) != 2 || rs.Queued[0].Content != "queued" {
				t.Errorf("queued: %+v", rs.Queued)
			}
		}},
		{"an unfenced Tx", func(t *testing.T, a, _ *Store, th string) {
			// It starts from the kept row and keeps it as it leaves it.
			if err := a.Tx(ctx, th, nil, func(tx weft.Tx) error {
				if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "unfenced"}); err != nil {
					return err
				}
				return tx.UpdateThread(weft.ThreadPatch{Label: &label})
			}); err != nil {
				t.Fatal(err)
			}
		}, true, func(t *testing.T, rs *weft.RunStart) {
			if rs.Thread.Label != label || len(rs.Rows) != 2 || rs.Rows[1].Content != "unfenced" {
				t.Errorf("label %q, %d messages", rs.Thread.Label, len(rs.Rows))
			}
		}},
		{"a failed unfenced Tx", func(t *testing.T, a, _ *Store, th string) {
			err := a.Tx(ctx, th, nil, func(tx weft.Tx) error {
				if err := tx.UpdateThread(weft.ThreadPatch{Label: &label}); err != nil {
					return err
				}
				return errors.New("failed")
			})
			if err == nil {
				t.Fatal("the Tx did not fail")
			}
		}, false, func(t *testing.T, rs *weft.RunStart) {
			if rs.Thread.Label == label {
				t.Errorf("label %q from a Tx that failed", rs.Thread.Label)
			}
		}},
		{"a lease taken and freed", func(t *testing.T, a, _ *Store, th string) {
			f, err := a.AcquireLease(ctx, th, "node-b", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.ReleaseLease(ctx, f); err != nil {
				t.Fatal(err)
			}
		}, false, nil},
		{"another process's write", func(t *testing.T, _, b *Store, th string) {
			if err := b.Tx(ctx, th, nil, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Label: &label}) }); err != nil {
				t.Fatal(err)
			}
		}, false, func(t *testing.T, rs *weft.RunStart) {
			if rs.Thread.Label != label {
				t.Errorf("label %q", rs.Thread.Label)
			}
		}},
		{"a child created", func(t *testing.T, a, _ *Store, th string) {
			if err := a.CreateThread(ctx, &weft.Thread{Agent: "a", ParentID: th}, nil); err != nil {
				t.Fatal(err)
			}
		}, true, func(t *testing.T, rs *weft.RunStart) {
			if !rs.Children {
				t.Error("the run start does not know the thread has a child")
			}
		}},
		{"an effect scheduled", func(t *testing.T, a, _ *Store, th string) {
			if err := a.ScheduleEffect(ctx, &weft.EffectRecord{ThreadID: th, Name: "remind", RunAt: time.Unix(1_900_000_000, 0)}); err != nil {
				t.Fatal(err)
			}
		}, false, func(t *testing.T, rs *weft.RunStart) {
			if !rs.EffectsDue.Equal(time.Unix(1_900_000_000, 0)) {
				t.Errorf("effects due %v", rs.EffectsDue)
			}
		}},
		{"a write of no one thread", func(t *testing.T, a, _ *Store, th string) {
			if err := a.SetEnv(ctx, weft.EnvThread, th, []weft.EnvValue{{Name: "K", Value: "v", Type: weft.VarText}}); err != nil {
				t.Fatal(err)
			}
		}, false, func(t *testing.T, rs *weft.RunStart) {
			if len(rs.ThreadEnv) != 1 || rs.ThreadEnv[0].Value != "v" {
				t.Errorf("thread env: %+v", rs.ThreadEnv)
			}
		}},
	}
	// A new thread's row is kept from its creation, with what is around it: an effect scheduled
	// before must still be seen by its first run.
	t.Run("a new thread after an effect", func(t *testing.T) {
		a, _, _, _ := twoStores(t)
		old := &weft.Thread{Agent: "a"}
		if err := a.CreateThread(ctx, old, nil); err != nil {
			t.Fatal(err)
		}
		run(t, a, old.ID, nil) // what is around a row is known from here
		at := time.Unix(1_900_000_000, 0)
		if err := a.ScheduleEffect(ctx, &weft.EffectRecord{ThreadID: old.ID, Name: "remind", RunAt: at}); err != nil {
			t.Fatal(err)
		}
		th := &weft.Thread{Agent: "a"}
		if err := a.CreateThread(ctx, th, nil); err != nil {
			t.Fatal(err)
		}
		_, rs, err := a.BeginRun(ctx, th.ID, "node-a", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !rs.EffectsDue.Equal(at) {
			t.Errorf("effects due %v, want %v", rs.EffectsDue, at)
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b, _, _ := twoStores(t)
			th := &weft.Thread{Agent: "a"}
			if err := a.CreateThread(ctx, th, nil); err != nil {
				t.Fatal(err)
			}
			before := hits(a)
			first, _ := run(t, a, th.ID, &weft.QueuedMessage{ThreadID: th.ID, Role: weft.RoleUser, Content: "one"})
			if hits(a) == before {
				t.Error("a new thread's first run did not start from the row CreateThread left")
			}
			tc.change(t, a, b, th.ID)
			before = hits(a)
			nothing := readNothing(a)
			f, rs, err := a.BeginRun(ctx, th.ID, "node-a", time.Minute, &weft.QueuedMessage{ThreadID: th.ID, Role: weft.RoleUser, Content: "two"})
			if err != nil {
				t.Fatal(err)
			}
			if got := hits(a) > before; got != tc.kept {
				t.Errorf("started from the kept row: %v, want %v", got, tc.kept)
			}
			// What is around the row too, once a run start read it (the first run's did).
			if got := readNothing(a) > nothing; got != tc.kept {
				t.Errorf("started reading nothing: %v, want %v", got, tc.kept)
			}
			if f.Token <= first.Token {
				t.Errorf("token %d after %d", f.Token, first.Token)
			}
			if rs.Thread.Status != weft.ThreadIdle || len(rs.Rows) == 0 || rs.Rows[0].Content != "reply" {
				t.Errorf("run start: status %s, %d messages", rs.Thread.Status, len(rs.Rows))
			}
			if tc.check != nil {
				tc.check(t, rs)
			}
		})
	}
}
