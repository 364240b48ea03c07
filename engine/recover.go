package engine

import (
	"context"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/runstate"
)

// Recovered says what RecoverAll found and started.
type Recovered struct {
	// Continued are the threads whose interrupted run was resumed (status running, no live lease).
	Continued []string
	// Started are the idle threads whose queued messages now run.
	Started []string
	// Trees are the roots whose subagent trees were recovered (Recover).
	Trees []string
}

// RecoverAll resumes the work a stopped process left in the store, as a
// long-lived process (a server, a worker) does at start: every interrupted run — a thread whose
// status says running without a live lease — is continued, every idle thread
// with queued messages runs, and the subagent tree of each such thread's root is recovered
// (Recover: lost reports re-sent, non-blocking children driven again). Threads that another live
// process is running are left to it. Runs start in the background; Wait waits for them.
//
// Only roots are continued directly: an interrupted blocking child is re-attached by its
// parent's resumed call, and a non-blocking one is driven by Recover of its root.
func (e *Engine) RecoverAll(ctx context.Context) (*Recovered, error) {
	out := &Recovered{}
	running, _, err := e.store.Threads(ctx, weft.ThreadQuery{Status: weft.ThreadRunning, Sort: "oldest"})
	if err != nil {
		return nil, err
	}
	queued, _, err := e.store.Threads(ctx, weft.ThreadQuery{Queued: true, Sort: "oldest"})
	if err != nil {
		return nil, err
	}
	roots := map[string]bool{}
	var order []string
	addRoot := func(t *weft.Thread) {
		root := t.RootID
		if root == "" {
			root = t.ID
		}
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
			e.sched.Resume(ctx, t.ID, rootOf(t))
		}
	}
	for _, t := range queued {
		addRoot(t)
		if t.ParentID == "" && !resumed[t.ID] && t.Status != weft.ThreadTerminated {
			out.Started = append(out.Started, t.ID)
			e.sched.Wake(ctx, t.ID, rootOf(t))
		}
	}
	for _, root := range order {
		if err := e.Recover(ctx, root); err != nil {
			return out, err
		}
		out.Trees = append(out.Trees, root)
	}
	return out, nil
}

// Recover picks up, after a restart, the subagents of a thread's tree that report on their own:
// non-blocking children, and resumable instances of blocking entries (after a restart no call
// awaits them: the interrupted subagent_message call is answered as interrupted). Children whose
// runs a crash interrupted (or with queued messages) are driven again, and stops whose report was
// lost are reported now. Non-resumable blocking children are re-attached by their parent's
// resumed call.
func (e *Engine) Recover(ctx context.Context, threadID string) error {
	kids, _, err := e.store.Threads(ctx, weft.ThreadQuery{ParentID: threadID, Sort: "oldest", Limit: -1})
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := e.Recover(ctx, k.ID); err != nil {
			return err
		}
		row, ok := registryRow(k)
		if !ok || (row["blocking"] != false && row["resumable"] != true) || e.children.drivenHere(k.ID) {
			continue
		}
		a, owner, mode, ok := e.children.driveArgs(k)
		if !ok {
			continue
		}
		if err := e.reports.sendHeld(ctx, k); err != nil {
			return err
		}
		q, err := e.store.Queued(ctx, k.ID)
		if err != nil {
			return err
		}
		if k.Status != weft.ThreadTerminated && (k.Status == weft.ThreadRunning || len(q) > 0) {
			e.children.goDrive(context.WithoutCancel(ctx), k, a, owner, mode, true)
			continue
		}
		if k.Status == weft.ThreadAwaitingApproval {
			continue // waits for a person: Decide drives it on, and its driver reports
		}
		st, err := runstate.Load(ctx, e.store, k.ID)
		if err != nil {
			return err
		}
		if mode.explicit || st.Stops == 0 || loadReported(ctx, e.store, k.ID).has(st.Stops) {
			continue
		}
		out, ok := recordedResult(k)
		if !ok {
			out = e.children.childResult(ctx, k, a, weft.StopInfo{Reason: k.StopReason})
		}
		if !mode.resumable && k.Status != weft.ThreadTerminated {
			e.finishChild(ctx, k, out)
		}
		e.reports.report(ctx, k, owner, out, st.Stops, true)
	}
	return nil
}
