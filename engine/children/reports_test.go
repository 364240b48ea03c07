package children

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/memstore"
)

// fakeHost hosts a room over a memstore: Notify records what a parent was sent, Watch keeps the
// watches under a lock of its own, and beforeTx (when set) runs once before the next
// transaction of a held report's record.
type fakeHost struct {
	st *memstore.Store

	mu       sync.Mutex
	watches  map[string]*Watch
	sent     []weft.NewMessage
	beforeTx func()
}

func (h *fakeHost) Acquire(ctx context.Context, _ string) (context.Context, func(), error) {
	return ctx, func() {}, nil
}
func (h *fakeHost) RunHeld(context.Context, string, string) (weft.StopInfo, bool, error) {
	return weft.StopInfo{}, false, nil
}
func (h *fakeHost) RunOnce(context.Context, string, string) (weft.StopInfo, error) {
	return weft.StopInfo{}, ErrNotRun
}
func (h *fakeHost) Drive(_ *weft.Thread, fn func())       { fn() }
func (h *fakeHost) Driven(string) bool                    { return false }
func (h *fakeHost) Created(context.Context, *weft.Thread) {}
func (h *fakeHost) Watch(id string, fn func(*Watch)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.watches[id]
	if w == nil {
		w = &Watch{}
		h.watches[id] = w
	}
	fn(w)
	if w.Idle() {
		delete(h.watches, id)
	}
}
func (h *fakeHost) Tx(ctx context.Context, id string, fn func(weft.Tx) error) error {
	h.mu.Lock()
	before := h.beforeTx
	h.beforeTx = nil
	h.mu.Unlock()
	if before != nil {
		before()
	}
	return h.st.Tx(ctx, id, nil, fn)
}
func (h *fakeHost) Redactor(context.Context, string) (func(string) string, error) {
	return func(s string) string { return s }, nil
}
func (h *fakeHost) StoreAttachments(context.Context, *weft.Thread, []weft.ToolAttachment) ([]weft.Attachment, error) {
	return nil, nil
}
func (h *fakeHost) Notify(_ context.Context, _, _ string, m weft.NewMessage) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sent = append(h.sent, m)
	return nil
}
func (h *fakeHost) Enqueue(context.Context, string, weft.NewMessage) error             { return nil }
func (h *fakeHost) Terminate(context.Context, string) error                            { return nil }
func (h *fakeHost) Observed() bool                                                     { return false }
func (h *fakeHost) EmitSubagent(context.Context, *weft.Thread, string, string, string) {}

func newRoom(t *testing.T) (*Room, *fakeHost, *weft.Thread) {
	t.Helper()
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	now := time.Now()
	parent := &weft.Thread{ID: "thr_parent", Agent: "a", Status: weft.ThreadIdle, CreatedAt: now, UpdatedAt: now, LastActivityAt: now}
	child := &weft.Thread{ID: "thr_child", ParentID: parent.ID, RootID: parent.ID, Agent: "a", Status: weft.ThreadIdle, CreatedAt: now, UpdatedAt: now, LastActivityAt: now}
	for _, th := range []*weft.Thread{parent, child} {
		if err := st.CreateThread(ctx, th, nil); err != nil {
			t.Fatal(err)
		}
	}
	h := &fakeHost{st: st, watches: map[string]*Watch{}}
	return New(h, st, weft.NewRegistry(), slog.New(slog.DiscardHandler)), h, child
}

func (h *fakeHost) reports(seq int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.sent {
		if m.Metadata["report_seq"] == seq {
			n++
		}
	}
	return n
}

// TestHeldReportAcrossTheWaitsEnd: a background run's report whose record is still being written
// when the wait it was held for ends (which took the held reports without it) is sent by its
// holder, exactly once, unless that wait answered its stop; its record is cleared either way,
// and the child's watch is forgotten.
func TestHeldReportAcrossTheWaitsEnd(t *testing.T) {
	for _, answered := range []int{2, 1} {
		t.Run(fmt.Sprint("answered ", answered), func(t *testing.T) {
			c, h, child := newRoom(t)
			ctx := context.Background()
			c.BeginAwait(child.ID)
			h.beforeTx = func() { c.EndAwait(ctx, child, answered) }
			if !c.hold(ctx, child, Held{Owner: weft.SideA, Out: weft.Success("one"), Seq: 1}) {
				t.Fatal("not held while a call awaited the child")
			}
			want := 1
			if answered == 1 {
				want = 0
			}
			if n := h.reports(1); n != want {
				t.Errorf("stop 1 reported %d times, want %d", n, want)
			}
			docs, _ := h.st.ExecState(ctx, child.ID)
			for k := range docs {
				if strings.HasPrefix(k, HeldPrefix) {
					t.Errorf("held record %s left", k)
				}
			}
			if r := LoadReported(ctx, h.st, child.ID); !r.Has(1) || !r.Has(answered) {
				t.Errorf("reported record %+v", r)
			}
			if len(h.watches) != 0 {
				t.Errorf("watch kept: %+v", h.watches)
			}
			if c.hold(ctx, child, Held{Seq: 3}) {
				t.Error("held with no call awaiting the child")
			}
		})
	}
}

// TestHeldReportSentWhenTheWaitEnds: a report held while a call awaits the child is sent when the
// wait ends, unless it is the stop the call answered.
func TestHeldReportSentWhenTheWaitEnds(t *testing.T) {
	c, h, child := newRoom(t)
	ctx := context.Background()
	c.BeginAwait(child.ID)
	for seq := 1; seq <= 2; seq++ {
		if !c.hold(ctx, child, Held{Owner: weft.SideA, Out: weft.Success("out"), Seq: seq}) {
			t.Fatal("not held")
		}
	}
	if n := h.reports(1) + h.reports(2); n != 0 {
		t.Fatalf("%d reports sent while the call awaited the child", n)
	}
	c.EndAwait(ctx, child, 2)
	if h.reports(1) != 1 || h.reports(2) != 0 {
		t.Errorf("reports of stops 1, 2: %d, %d; want 1, 0", h.reports(1), h.reports(2))
	}
	if r := LoadReported(ctx, h.st, child.ID); r.Upto != 2 || len(r.More) != 0 {
		t.Errorf("reported record %+v", r)
	}
}

// TestConcurrentReportsAllRecorded: reports of many stops finishing at once are each recorded:
// one goroutine at a time rewrites the record, taking the marks that arrived meanwhile.
func TestConcurrentReportsAllRecorded(t *testing.T) {
	c, h, child := newRoom(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for seq := 1; seq <= 30; seq++ {
		wg.Go(func() { c.Report(ctx, child, weft.SideA, weft.Success("out"), seq, false) })
	}
	wg.Wait()
	if r := LoadReported(ctx, h.st, child.ID); r.Upto != 30 || len(r.More) != 0 {
		t.Errorf("reported record %+v, want every stop up to 30", r)
	}
	if len(h.watches) != 0 {
		t.Errorf("watch kept: %+v", h.watches)
	}
	c.Report(ctx, child, weft.SideA, weft.Success("out"), 7, false)
	if n := h.reports(7); n != 1 {
		t.Errorf("stop 7 reported %d times", n)
	}
}
