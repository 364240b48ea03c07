package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// Effects: claimed in due-time order, each by exactly one of several claimers, re-claimable once a
// claim expires, cancellable while pending. The stores run on the real clock, so due times are set
// well in the past or the future of it.

func schedule(t *testing.T, s weft.Store, e *weft.EffectRecord) *weft.EffectRecord {
	t.Helper()
	if err := s.ScheduleEffect(t.Context(), e); err != nil {
		t.Fatalf("ScheduleEffect(%s): %v", e.Name, err)
	}
	return e
}

func effectIDs(es []weft.EffectRecord) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func effectByID(t *testing.T, s weft.Store, threadID, id string) weft.EffectRecord {
	t.Helper()
	es, err := s.Effects(t.Context(), threadID)
	if err != nil {
		t.Fatalf("Effects: %v", err)
	}
	for _, e := range es {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("effect %s not listed in thread %s", id, threadID)
	return weft.EffectRecord{}
}

func claim(t *testing.T, s weft.Store, node string, limit int, ttl time.Duration) []weft.EffectRecord {
	t.Helper()
	es, err := s.ClaimEffects(t.Context(), node, limit, ttl)
	if err != nil {
		t.Fatalf("ClaimEffects(%s): %v", node, err)
	}
	return es
}

func wantNext(t *testing.T, s weft.Store, want time.Time) {
	t.Helper()
	got, err := s.NextEffectAt(t.Context())
	if err != nil || !got.Equal(want) {
		t.Errorf("NextEffectAt = %v, %v; want %v", got, err, want)
	}
}

func testEffects(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	other := newThread(t, s, nil)
	child := newThread(t, s, func(c *weft.Thread) { c.ParentID = other.ID })
	now := time.Now().UTC().Truncate(time.Microsecond)
	wantNext(t, s, time.Time{})

	// Scheduling fills the defaults and keeps the fields.
	early := schedule(t, s, &weft.EffectRecord{ThreadID: th.ID, Name: "early", RunAt: now.Add(-time.Hour),
		Args: []byte(`{"a":1}`), MaxAttempts: 3})
	if !strings.HasPrefix(early.ID, "eff_") || early.Status != weft.EffectPending || early.CreatedAt.IsZero() {
		t.Errorf("scheduled effect defaults: %+v", early)
	}
	mid := schedule(t, s, &weft.EffectRecord{ThreadID: th.ID, Name: "mid", RunAt: now.Add(-3 * time.Minute)})
	late := schedule(t, s, &weft.EffectRecord{ThreadID: th.ID, Name: "late", RunAt: now.Add(-2 * time.Minute)})
	future := schedule(t, s, &weft.EffectRecord{ThreadID: th.ID, Name: "future", RunAt: now.Add(time.Hour)})
	otherE := schedule(t, s, &weft.EffectRecord{ThreadID: other.ID, Name: "other", RunAt: now.Add(2 * time.Hour)})
	childE := schedule(t, s, &weft.EffectRecord{ThreadID: child.ID, Name: "child", RunAt: now.Add(3 * time.Hour)})

	err := s.ScheduleEffect(ctx, &weft.EffectRecord{ThreadID: "thr_missing", Name: "x"})
	wantErr(t, "ScheduleEffect(unknown thread)", err, weft.ErrNotFound)
	err = s.ScheduleEffect(ctx, &weft.EffectRecord{ThreadID: th.ID, Name: "x", Args: []byte(`{bad`)})
	wantCode(t, "ScheduleEffect(bad args)", err, weft.EInvalid)

	es, err := s.Effects(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := effectIDs(es), []string{early.ID, mid.ID, late.ID, future.ID}; !slices.Equal(got, want) {
		t.Fatalf("Effects order = %v, want %v", got, want)
	}
	if e := es[0]; e.ThreadID != th.ID || e.Name != "early" || !jsonEqual(e.Args, []byte(`{"a":1}`)) || e.MaxAttempts != 3 ||
		!e.RunAt.Equal(early.RunAt) || !e.CreatedAt.Equal(early.CreatedAt) || e.Status != weft.EffectPending ||
		e.Attempts != 0 || e.ClaimedBy != "" || e.ClaimExpiresAt != nil || e.FinishedAt != nil {
		t.Errorf("stored effect = %+v, want %+v", e, early)
	}
	if es[1].Args != nil {
		t.Errorf("effect without args lists args %q", es[1].Args)
	}
	if es, err := s.Effects(ctx, "thr_missing"); err != nil || len(es) != 0 {
		t.Errorf("Effects(unknown thread) = %v, %v", es, err)
	}
	wantNext(t, s, early.RunAt)

	// Claims take due effects by RunAt, up to the limit; not-yet-due ones stay.
	_, err = s.ClaimEffects(ctx, "", 1, time.Hour)
	wantCode(t, "ClaimEffects(no node)", err, weft.EInvalid)
	before := time.Now()
	got := claim(t, s, "node-a", 2, time.Hour)
	if ids := effectIDs(got); !slices.Equal(ids, []string{early.ID, mid.ID}) {
		t.Fatalf("first claim = %v, want [early mid] %v", ids, []string{early.ID, mid.ID})
	}
	for _, e := range got {
		if e.Status != weft.EffectProcessing || e.ClaimedBy != "node-a" || e.Attempts != 1 || e.ClaimExpiresAt == nil ||
			e.ClaimExpiresAt.Before(before.Add(time.Hour-time.Second)) || e.ClaimExpiresAt.After(time.Now().Add(time.Hour+time.Second)) {
			t.Errorf("claimed effect = %+v", e)
		}
	}
	if e := effectByID(t, s, th.ID, early.ID); e.Status != weft.EffectProcessing || e.ClaimedBy != "node-a" || e.Attempts != 1 {
		t.Errorf("claimed effect as listed = %+v", e)
	}
	if got := claim(t, s, "node-b", 10, time.Hour); !slices.Equal(effectIDs(got), []string{late.ID}) {
		t.Errorf("second claim = %v, want [late]", effectIDs(got))
	}
	if got := claim(t, s, "node-b", 10, time.Hour); len(got) != 0 {
		t.Errorf("claim with nothing due = %v", effectIDs(got))
	}
	wantNext(t, s, future.RunAt)

	// Cancel: only pending effects, only in their own thread.
	wantCode(t, "CancelEffect(processing)", s.CancelEffect(ctx, th.ID, early.ID), weft.EConflict)
	if err := s.CancelEffect(ctx, th.ID, future.ID); err != nil {
		t.Fatalf("CancelEffect(pending): %v", err)
	}
	if e := effectByID(t, s, th.ID, future.ID); e.Status != weft.EffectCanceled || e.FinishedAt == nil {
		t.Errorf("canceled effect = %+v", e)
	}
	err = s.CancelEffect(ctx, th.ID, future.ID)
	wantCode(t, "CancelEffect(canceled)", err, weft.EConflict)
	if err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("CancelEffect(canceled) error %v does not name the status", err)
	}
	wantErr(t, "CancelEffect(other thread's effect)", s.CancelEffect(ctx, th.ID, otherE.ID), weft.ErrNotFound)
	wantErr(t, "CancelEffect(unknown)", s.CancelEffect(ctx, th.ID, "eff_missing"), weft.ErrNotFound)
	wantNext(t, s, otherE.RunAt)

	// Finish: completed and failed end the effect; pending is a retry at retryAt.
	if err := s.FinishEffect(ctx, early.ID, weft.EffectCompleted, "", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if e := effectByID(t, s, th.ID, early.ID); e.Status != weft.EffectCompleted || e.FinishedAt == nil || e.ClaimedBy != "" ||
		e.ClaimExpiresAt != nil || e.Error != "" || e.Attempts != 1 {
		t.Errorf("completed effect = %+v", e)
	}
	if err := s.FinishEffect(ctx, mid.ID, weft.EffectFailed, "boom", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if e := effectByID(t, s, th.ID, mid.ID); e.Status != weft.EffectFailed || e.FinishedAt == nil || e.Error != "boom" ||
		e.ClaimedBy != "" || e.ClaimExpiresAt != nil {
		t.Errorf("failed effect = %+v", e)
	}
	wantCode(t, "CancelEffect(completed)", s.CancelEffect(ctx, th.ID, early.ID), weft.EConflict)
	wantCode(t, "CancelEffect(failed)", s.CancelEffect(ctx, th.ID, mid.ID), weft.EConflict)
	retryAt := now.Add(-time.Second)
	if err := s.FinishEffect(ctx, late.ID, weft.EffectPending, "transient", retryAt); err != nil {
		t.Fatal(err)
	}
	if e := effectByID(t, s, th.ID, late.ID); e.Status != weft.EffectPending || !e.RunAt.Equal(retryAt) || e.Error != "transient" ||
		e.ClaimedBy != "" || e.ClaimExpiresAt != nil || e.FinishedAt != nil || e.Attempts != 1 {
		t.Errorf("retried effect = %+v", e)
	}
	wantNext(t, s, retryAt)
	got = claim(t, s, "node-c", 0, time.Hour)
	if len(got) != 1 || got[0].ID != late.ID || got[0].Attempts != 2 || got[0].ClaimedBy != "node-c" || got[0].Error != "transient" {
		t.Errorf("claim of the retry = %+v", got)
	}
	wantErr(t, "FinishEffect(unknown)", s.FinishEffect(ctx, "eff_missing", weft.EffectCompleted, "", time.Time{}), weft.ErrNotFound)

	// Deleting a thread deletes its effects and its descendants'.
	wantNext(t, s, otherE.RunAt)
	if err := s.DeleteThread(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{other.ID, child.ID} {
		if es, err := s.Effects(ctx, id); err != nil || len(es) != 0 {
			t.Errorf("Effects of deleted thread %s = %v, %v", id, effectIDs(es), err)
		}
	}
	wantErr(t, "CancelEffect(deleted thread's effect)", s.CancelEffect(ctx, child.ID, childE.ID), weft.ErrNotFound)
	wantNext(t, s, time.Time{})
	if es, _ := s.Effects(ctx, th.ID); len(es) != 4 {
		t.Errorf("unrelated thread has %d effects after delete, want 4", len(es))
	}
}

func testEffectClaimConcurrent(t *testing.T, s weft.Store) {
	const n, workers = 60, 8
	th := newThread(t, s, nil)
	past := time.Now().Add(-time.Minute)
	want := map[string]bool{}
	for i := range n {
		e := schedule(t, s, &weft.EffectRecord{ThreadID: th.ID, Name: fmt.Sprintf("e%d", i), RunAt: past.Add(time.Duration(i) * time.Millisecond)})
		want[e.ID] = true
	}
	var mu sync.Mutex
	claimed := map[string]string{} // effect id → node
	var wg sync.WaitGroup
	for w := range workers {
		node := fmt.Sprintf("node-%d", w)
		wg.Go(func() {
			for {
				es, err := s.ClaimEffects(t.Context(), node, 3, time.Hour)
				if err != nil {
					t.Errorf("ClaimEffects(%s): %v", node, err)
					return
				}
				if len(es) == 0 {
					return
				}
				mu.Lock()
				for _, e := range es {
					if prev, dup := claimed[e.ID]; dup {
						t.Errorf("effect %s claimed by %s and %s", e.ID, prev, node)
					}
					claimed[e.ID] = node
					if e.ClaimedBy != node || e.Attempts != 1 {
						t.Errorf("claim of %s by %s = %+v", e.ID, node, e)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimed) != n {
		t.Errorf("%d effects claimed, want %d", len(claimed), n)
	}
	for id := range want {
		if _, ok := claimed[id]; !ok {
			t.Errorf("effect %s never claimed", id)
		}
	}
}

func testEffectClaimExpiry(t *testing.T, s weft.Store) {
	th := newThread(t, s, nil)
	e := schedule(t, s, &weft.EffectRecord{ThreadID: th.ID, Name: "crashy", RunAt: time.Now().Add(-time.Second)})
	first := claim(t, s, "node-a", 1, 200*time.Millisecond)
	if len(first) != 1 || first[0].ID != e.ID || first[0].Attempts != 1 || first[0].ClaimExpiresAt == nil {
		t.Fatalf("first claim = %+v", first)
	}
	exp := *first[0].ClaimExpiresAt
	// A live claim is not taken (checked only when the claim surely started before the expiry).
	start := time.Now()
	if got := claim(t, s, "node-b", 1, time.Hour); len(got) != 0 && start.Before(exp) {
		t.Fatalf("claim during a live claim = %v", effectIDs(got))
	} else if len(got) != 0 {
		t.Skip("machine too slow: the claim expired before it could be checked")
	}
	time.Sleep(time.Until(exp) + 20*time.Millisecond)
	got := claim(t, s, "node-b", 1, time.Hour)
	if len(got) != 1 || got[0].ID != e.ID || got[0].Attempts != 2 || got[0].ClaimedBy != "node-b" || got[0].Status != weft.EffectProcessing {
		t.Fatalf("claim after expiry = %+v", got)
	}
	if got := claim(t, s, "node-a", 1, time.Hour); len(got) != 0 {
		t.Errorf("re-claimed effect claimed again = %v", effectIDs(got))
	}
	if r := effectByID(t, s, th.ID, e.ID); r.ClaimedBy != "node-b" || r.Attempts != 2 {
		t.Errorf("effect after re-claim = %+v", r)
	}
	wantNext(t, s, time.Time{})
}
