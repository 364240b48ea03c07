package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// activityRuns holds the threads of testActivityAfterRuns, thread i created with activity at(i).
type activityRuns struct {
	t   *testing.T
	s   weft.Store
	ths []*weft.Thread
	t0  time.Time
}

func (a *activityRuns) at(n int) time.Time { return a.t0.Add(time.Duration(n) * time.Second) }

// step is a run's step: the thread running, its activity n, a message stored.
func (a *activityRuns) step(th *weft.Thread, f *weft.Fence, n int) {
	a.t.Helper()
	mustTxFenced(a.t, a.s, th.ID, f, func(tx weft.Tx) error {
		if err := tx.UpdateThread(weft.ThreadPatch{Status: ptrTo(weft.ThreadRunning), LastActivityAt: ptrTo(a.at(n))}); err != nil {
			return err
		}
		return tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "hi"})
	})
	if got, err := a.s.Thread(a.t.Context(), th.ID); err != nil || !got.LastActivityAt.Equal(a.at(n)) {
		a.t.Fatalf("thread %s after a step: %v, %v; want activity %v", th.ID, got, err, a.at(n))
	}
}

// end is the step that ends a run: a status other than running, and the lease released.
func (a *activityRuns) end(th *weft.Thread, f *weft.Fence, activity *time.Time) {
	a.t.Helper()
	mustTxFenced(a.t, a.s, th.ID, f, func(tx weft.Tx) error {
		if err := tx.UpdateThread(weft.ThreadPatch{Status: ptrTo(weft.ThreadIdle), LastActivityAt: activity}); err != nil {
			return err
		}
		return tx.ReleaseLease()
	})
}

func (a *activityRuns) lease(th *weft.Thread, node string, ttl time.Duration) *weft.Fence {
	a.t.Helper()
	f, err := a.s.AcquireLease(a.t.Context(), th.ID, node, ttl)
	if err != nil {
		a.t.Fatalf("lease of %s: %v", th.ID, err)
	}
	return &f
}

// want checks the listing by activity: every thread, the user's, and a page.
func (a *activityRuns) want(what string, order ...int) {
	a.t.Helper()
	var ids []string
	for _, i := range order {
		ids = append(ids, a.ths[i].ID)
	}
	for _, q := range []weft.ThreadQuery{{}, {UserID: "u1"}, {Sort: "activity", Limit: len(ids)}} {
		got, _, err := a.s.Threads(a.t.Context(), q)
		if err != nil || !slices.Equal(threadIDs(got), ids) {
			a.t.Errorf("%s: listed %v (%v) by %+v, want %v", what, threadIDs(got), err, q, ids)
		}
	}
}

// testActivityAfterRuns: listing by activity is right once each run has ended, however it ended —
// its own Tx releasing the lease, ReleaseLease, a status other than running, another owner's run
// after the lease expired, an unfenced Tx changing the status — and a thread's doc holds its
// activity throughout. (A store may order a running thread by its activity as of its run's start
// until the run ends: SQLite leaves the activity index to the run's end, migration 0016.)
func testActivityAfterRuns(t *testing.T, s weft.Store) {
	ctx := t.Context()
	a := &activityRuns{t: t, s: s, t0: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	for i := range 6 {
		a.ths = append(a.ths, newThread(t, s, func(th *weft.Thread) { th.UserID = "u1"; th.LastActivityAt = a.at(i) }))
	}
	ths := a.ths
	a.want("created", 5, 4, 3, 2, 1, 0)

	// 0: a run of two steps, the last releasing the lease with a status other than running.
	f := a.lease(ths[0], "node-a", time.Hour)
	a.step(ths[0], f, 10)
	a.step(ths[0], f, 11)
	a.end(ths[0], f, ptrTo(a.at(12)))
	a.want("a run ended by its own Tx", 0, 5, 4, 3, 2, 1)

	// 1: a run whose last step sets no activity: the one its steps set is listed.
	f = a.lease(ths[1], "node-a", time.Hour)
	a.step(ths[1], f, 20)
	a.end(ths[1], f, nil)
	a.want("a run whose end sets no activity", 1, 0, 5, 4, 3, 2)

	// 2: a run released by ReleaseLease after its step.
	f = a.lease(ths[2], "node-a", time.Hour)
	a.step(ths[2], f, 30)
	if err := s.ReleaseLease(ctx, *f); err != nil {
		t.Fatal(err)
	}
	a.want("a run released outside a Tx", 2, 1, 0, 5, 4, 3)

	// 3: a run whose lease expired after its step; the next owner's run ends it, setting nothing
	// but releasing the lease in a Tx that writes a key.
	f = a.lease(ths[3], "node-a", 300*time.Millisecond)
	a.step(ths[3], f, 40)
	time.Sleep(400 * time.Millisecond)
	g := a.lease(ths[3], "node-b", time.Hour)
	mustTxFenced(t, s, ths[3].ID, g, func(tx weft.Tx) error {
		if err := tx.SetKV("k", json.RawMessage(`1`)); err != nil {
			return err
		}
		return tx.ReleaseLease()
	})
	a.want("a run ended by the next owner", 3, 2, 1, 0, 5, 4)

	// 4: a run stopped by an unfenced Tx (the API's) while it holds its lease.
	f = a.lease(ths[4], "node-a", time.Hour)
	a.step(ths[4], f, 50)
	mustTx(t, s, ths[4].ID, func(tx weft.Tx) error {
		return tx.UpdateThread(weft.ThreadPatch{Status: ptrTo(weft.ThreadStopped)})
	})
	a.want("a run stopped by an unfenced Tx", 4, 3, 2, 1, 0, 5)
	a.end(ths[4], f, nil)

	// 5: a run started by BeginRun that sets a status other than running in one step and
	// releases its lease in the next (a run recording its events ends so).
	f2, _, err := s.BeginRun(ctx, ths[5].ID, "node-a", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.step(ths[5], &f2, 60)
	mustTxFenced(t, s, ths[5].ID, &f2, func(tx weft.Tx) error {
		return tx.UpdateThread(weft.ThreadPatch{Status: ptrTo(weft.ThreadAwaitingHuman), LastActivityAt: ptrTo(a.at(61))})
	})
	mustTxFenced(t, s, ths[5].ID, &f2, func(tx weft.Tx) error { return tx.ReleaseLease() })
	a.want("a run ended over two Txs", 5, 4, 3, 2, 1, 0)
	for i, n := range []int{12, 20, 30, 40, 50, 61} {
		if got, err := s.Thread(ctx, ths[i].ID); err != nil || !got.LastActivityAt.Equal(a.at(n)) {
			t.Errorf("thread %d: %v, %v; want activity %v", i, got, err, a.at(n))
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
