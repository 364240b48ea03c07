package sched

import (
	"context"

	"github.com/weft-agents/weft"
)

// Recovered says what a Recovery found and started.
type Recovered struct {
	// Continued are the threads whose interrupted run was resumed (status running, no live lease).
	Continued []string
	// Started are the idle threads whose queued messages now run.
	Started []string
	// Trees are the roots whose subagent trees were recovered (Recovery.Tree).
	Trees []string
}

// Recovery is the restart recovery of a long-lived process (a server, a worker) at its start:
// the work a stopped process left in the store resumes on this process's workers.
type Recovery struct {
	// Scheduler resumes the interrupted runs and wakes the queued threads.
	Scheduler *Scheduler
	// Tree recovers the children of a root's tree that report on their own (engine/children's
	// Room.Recover).
	Tree func(ctx context.Context, root string) error
}

// All resumes the work a stopped process left: every interrupted run — a thread whose status says
// running without a live lease — is resumed, every idle thread with queued messages is woken, and
// the children of each such thread's root are recovered (Tree). Threads that another live process
// is running are left to it. Runs start in the background (Scheduler.Wait waits for them).
//
// Only roots are resumed directly: an interrupted blocking child is re-attached by its parent's
// resumed call, and a background one is driven by the recovery of its root's tree.
func (rc Recovery) All(ctx context.Context) (*Recovered, error) {
	s, st := rc.Scheduler, rc.Scheduler.cfg.Store
	out := &Recovered{}
	running, _, err := st.Threads(ctx, weft.ThreadQuery{Status: weft.ThreadRunning, Sort: "oldest"})
	if err != nil {
		return nil, err
	}
	queued, _, err := st.Threads(ctx, weft.ThreadQuery{Queued: true, Sort: "oldest"})
	if err != nil {
		return nil, err
	}
	roots := map[string]bool{}
	var order []string
	addRoot := func(t *weft.Thread) {
		root := rootOf(t)
		if !roots[root] {
			roots[root] = true
			order = append(order, root)
		}
	}
	resumed := map[string]bool{}
	for _, t := range running {
		addRoot(t)
		if t.ParentID == "" {
			resumed[t.ID] = true
			out.Continued = append(out.Continued, t.ID)
			s.Resume(ctx, t.ID, rootOf(t))
		}
	}
	for _, t := range queued {
		addRoot(t)
		if t.ParentID == "" && !resumed[t.ID] && t.Status != weft.ThreadTerminated {
			out.Started = append(out.Started, t.ID)
			s.Wake(ctx, t.ID, rootOf(t))
		}
	}
	for _, root := range order {
		if err := rc.Tree(ctx, root); err != nil {
			return out, err
		}
		out.Trees = append(out.Trees, root)
	}
	return out, nil
}
