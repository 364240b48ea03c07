package sched

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// TestRecovery: a restart's recovery resumes the interrupted roots, wakes the idle roots with
// queued messages (a terminated one stays), leaves interrupted children to their parents, and
// recovers each such root's tree once, in order.
func TestRecovery(t *testing.T) {
	h := &fakeHost{started: make(chan string, 8)}
	s, st := newScheduler(t, h)
	ctx := context.Background()
	now := time.Now()
	mk := func(id, parent string, status weft.ThreadStatus, queued bool) {
		th := &weft.Thread{ID: id, ParentID: parent, Agent: "a", Status: status, CreatedAt: now, UpdatedAt: now, LastActivityAt: now}
		if parent != "" {
			th.RootID = parent
		}
		if err := st.CreateThread(ctx, th, nil); err != nil {
			t.Fatal(err)
		}
		if queued {
			if err := st.PushQueue(ctx, &weft.QueuedMessage{ID: weft.NewID("q_"), ThreadID: id, Role: weft.RoleUser, Content: "hi", CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("thr_running", "", weft.ThreadRunning, false)
	mk("thr_child", "thr_running", weft.ThreadRunning, false)
	mk("thr_queued", "", weft.ThreadIdle, true)
	mk("thr_quiet", "", weft.ThreadIdle, false)
	var mu sync.Mutex
	var trees []string
	rec, err := Recovery{Scheduler: s, Tree: func(_ context.Context, root string) error {
		mu.Lock()
		defer mu.Unlock()
		trees = append(trees, root)
		return nil
	}}.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Wait()
	if !slices.Equal(rec.Continued, []string{"thr_running"}) || !slices.Equal(rec.Started, []string{"thr_queued"}) ||
		!slices.Equal(rec.Trees, []string{"thr_running", "thr_queued"}) || !slices.Equal(trees, rec.Trees) {
		t.Fatalf("recovered %+v, trees %v", rec, trees)
	}
	got := []string{<-h.started, <-h.started}
	slices.Sort(got)
	if !slices.Equal(got, []string{"message", "resume"}) || len(h.started) != 0 {
		t.Errorf("runs %v (and %d more)", got, len(h.started))
	}
}
