package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// testActivityAfterRuns: listing by activity is right once each run has ended, however it ended —
// its own Tx releasing the lease, ReleaseLease, a status other than running, another owner's run
// after the lease expired, an unfenced Tx changing the status — and a thread's doc holds its
// activity throughout. (A store may order a running thread by its activity as of its run's start
// until the run ends: SQLite leaves the activity index to the run's end, migration 0016.)
func testActivityAfterRuns(t *testing.T, s weft.Store) {
	ctx := t.Context()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	var ths []*weft.Thread
	for i := range 6 {
		ths = append(ths, newThread(t, s, func(th *weft.Thread) { th.UserID = "u1"; th.LastActivityAt = at(i) }))
	}
	// step is a run's step: the thread running, its activity n, a message stored.
	step := func(th *weft.Thread, f *weft.Fence, n int, release bool) {
		t.Helper()
		mustTxFenced(t, s, th.ID, f, func(tx weft.Tx) error {
			if err := tx.UpdateThread(weft.ThreadPatch{Status: ptrTo(weft.ThreadRunning), LastActivityAt: ptrTo(at(n))}); err != nil {
				return err
			}
			if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "hi"}); err != nil {
				return err
			}
			if release {
				return tx.ReleaseLease()
			}
			return nil
		})
		if got, err := s.Thread(ctx, th.ID); err != nil || !got.LastActivityAt.Equal(at(n)) {
			t.Fatalf("thread %s after a step: %v, %v; want activity %v", th.ID, got, err, at(n))
		}
	}
	// end is the step that ends a run: a status other than running, and the lease released.
	end := func(th *weft.Thread, f *weft.Fence, activity *time.Time) {
		t.Helper()
		mustTxFenced(t, s, th.ID, f, func(tx weft.Tx) error {
			if err := tx.UpdateThread(weft.ThreadPatch{Status: ptrTo(weft.ThreadIdle), LastActivityAt: activity}); err != nil {
				return err
			}
			return tx.ReleaseLease()
		})
	}
	lease := func(th *weft.Thread, node string, ttl time.Duration) *weft.Fence {
		t.Helper()
		f, err := s.AcquireLease(ctx, th.ID, node, ttl)
		if err != nil {
			t.Fatalf("lease of %s: %v", th.ID, err)
		}
		return &f
	}
	want := func(what string, order ...int) {
		t.Helper()
		var ids []string
		for _, i := range order {
			ids = append(ids, ths[i].ID)
		}
		for _, q := range []weft.ThreadQuery{{}, {UserID: "u1"}, {Sort: "activity", Limit: len(ids)}} {
			got, _, err := s.Threads(ctx, q)
			if err != nil || !slices.Equal(threadIDs(got), ids) {
				t.Errorf("%s: listed %v (%v) by %+v, want %v", what, threadIDs(got), err, q, ids)
			}
		}
	}
	want("created", 5, 4, 3, 2, 1, 0)

	// 0: a run of two steps, the last releasing the lease with a status other than running.
	f := lease(ths[0], "node-a", time.Hour)
	step(ths[0], f, 10, false)
	step(ths[0], f, 11, false)
	end(ths[0], f, ptrTo(at(12)))
	want("a run ended by its own Tx", 0, 5, 4, 3, 2, 1)

	// 1: a run whose last step sets no activity: the one its steps set is listed.
	f = lease(ths[1], "node-a", time.Hour)
	step(ths[1], f, 20, false)
	end(ths[1], f, nil)
	want("a run whose end sets no activity", 1, 0, 5, 4, 3, 2)

	// 2: a run released by ReleaseLease after its step.
	f = lease(ths[2], "node-a", time.Hour)
	step(ths[2], f, 30, false)
	if err := s.ReleaseLease(ctx, *f); err != nil {
		t.Fatal(err)
	}
	want("a run released outside a Tx", 2, 1, 0, 5, 4, 3)

	// 3: a run whose lease expired after its step; the next owner's run ends it, setting nothing
	// but releasing the lease in a Tx that writes a key.
	f = lease(ths[3], "node-a", 300*time.Millisecond)
	step(ths[3], f, 40, false)
	time.Sleep(400 * time.Millisecond)
	g := lease(ths[3], "node-b", time.Hour)
	mustTxFenced(t, s, ths[3].ID, g, func(tx weft.Tx) error {
		if err := tx.SetKV("k", json.RawMessage(`1`)); err != nil {
			return err
		}
		return tx.ReleaseLease()
	})
	want("a run ended by the next owner", 3, 2, 1, 0, 5, 4)

	// 4: a run stopped by an unfenced Tx (the API's) while it holds its lease.
	f = lease(ths[4], "node-a", time.Hour)
	step(ths[4], f, 50, false)
	mustTx(t, s, ths[4].ID, func(tx weft.Tx) error {
		return tx.UpdateThread(weft.ThreadPatch{Status: ptrTo(weft.ThreadStopped)})
	})
	want("a run stopped by an unfenced Tx", 4, 3, 2, 1, 0, 5)
	end(ths[4], f, nil)

	// 5: a run started by BeginRun that sets a status other than running in one step and
	// releases its lease in the next (a run recording its events ends so).
	f2, _, err := s.BeginRun(ctx, ths[5].ID, "node-a", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	step(ths[5], &f2, 60, false)
	mustTxFenced(t, s, ths[5].ID, &f2, func(tx weft.Tx) error {
		return tx.UpdateThread(weft.ThreadPatch{Status: ptrTo(weft.ThreadAwaitingHuman), LastActivityAt: ptrTo(at(61))})
	})
	mustTxFenced(t, s, ths[5].ID, &f2, func(tx weft.Tx) error { return tx.ReleaseLease() })
	want("a run ended over two Txs", 5, 4, 3, 2, 1, 0)
	for i, n := range []int{12, 20, 30, 40, 50, 61} {
		if got, err := s.Thread(ctx, ths[i].ID); err != nil || !got.LastActivityAt.Equal(at(n)) {
			t.Errorf("thread %d: %v, %v; want activity %v", i, got, err, at(n))
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
