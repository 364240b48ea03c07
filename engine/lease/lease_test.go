package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/lease"
	"github.com/weft-agents/weft/memstore"
)

// TestRenewal: a held lease is renewed past its first TTL without cancelling the run; a lease
// taken over (its token stale) cancels the run with weft.ErrLeaseLost; a stopped renewal renews
// no more.
func TestRenewal(t *testing.T) {
	ctx := context.Background()
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	th := &weft.Thread{ID: "thr_lease", RootID: "thr_lease", Agent: "a"}
	if err := st.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	// Renewals come every ttl/3: a run stalled for more than ttl/2 in a row would be needed to fail.
	const ttl = 400 * time.Millisecond
	f, _, err := st.BeginRun(ctx, th.ID, "node_a", ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
	rn := &lease.Renewer{Store: st, TTL: ttl}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	l := rn.Renew(runCtx, f, cancel)
	time.Sleep(ttl * 3 / 2)
	if err := context.Cause(runCtx); err != nil {
		t.Fatalf("a held lease's run was cancelled: %v", err)
	}
	if _, _, err := st.BeginRun(ctx, th.ID, "node_b", ttl, nil); !errors.Is(err, weft.ErrLeaseHeld) {
		t.Fatalf("another node took a renewed lease: %v", err)
	}
	l.Stop()

	// Stopped, the lease runs out and another node takes it; a renewal of the old token fails.
	time.Sleep(ttl * 5 / 4)
	_, _, err = st.BeginRun(ctx, th.ID, "node_b", time.Minute, nil)
	if err != nil {
		t.Fatalf("the stopped renewal's lease was not given up to its TTL: %v", err)
	}
	lostCtx, lose := context.WithCancelCause(ctx)
	defer lose(nil)
	stale := rn.Renew(lostCtx, f, lose)
	defer stale.Stop()
	select {
	case <-lostCtx.Done():
	case <-time.After(time.Second):
		t.Fatal("a lost lease did not cancel its run")
	}
	if cause := context.Cause(lostCtx); !errors.Is(cause, weft.ErrLeaseLost) {
		t.Errorf("cancelled by %v, want ErrLeaseLost", cause)
	}
}
