package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/runstate"
)

// children runs child threads (subagents) for their parents: a blocking call's child in the
// caller's goroutine, a non-blocking or resumable child's runs in the background, each driven
// holding the child's turn, and the outcome each run hands back. What a child reports to its
// parent goes through reports (childreport.go).
type children struct{ e *Engine }

// runChild runs a child until it stops and returns the stop: its queued messages, else (resume:
// re-attaching after a crash) the run the crash interrupted, else — it had already stopped — the
// stored stop reason.
func (c children) runChild(ctx context.Context, child *weft.Thread, resume bool) (weft.StopInfo, error) {
	// A run of the child in this process (a background driver's) ends first: it drains our
	// message, or leaves it queued for us.
	held, release, err := c.e.sched.Acquire(ctx, child.ID)
	if err != nil {
		return weft.StopInfo{}, err
	}
	defer release()
	q, err := c.e.store.Queued(held, child.ID)
	if err != nil {
		return weft.StopInfo{}, err
	}
	t, err := c.e.store.Thread(held, child.ID)
	if err != nil {
		return weft.StopInfo{}, err
	}
	var res *RunResult
	switch {
	case len(q) > 0:
		res, err = c.e.runHeld(held, child.ID, "message", "", nil)
	case resume && (t.Status == weft.ThreadRunning || t.Status == weft.ThreadAwaitingApproval):
		res, err = c.e.runHeld(held, child.ID, "continue", "", nil)
	}
	if err != nil {
		return weft.StopInfo{}, err
	}
	if res != nil && len(res.Stops) > 0 {
		return res.Last(), nil
	}
	// Drained by the run that ended before our turn: its stop is ours.
	if t, err = c.e.store.Thread(held, child.ID); err != nil {
		return weft.StopInfo{}, err
	}
	st, err := runstate.Load(held, c.e.store, child.ID)
	if err != nil {
		return weft.StopInfo{}, err
	}
	return weft.StopInfo{Reason: t.StopReason, Seq: st.Stops}, nil
}

// childResult is a stopped child's outcome (childOutcome) with the child's secrets redacted: it
// leaves the child's thread for its parent's, whose redaction knows only the parent's layers, and
// a secret given to the child alone (the variables API) would reach the parent's rows and model.
// When the child's secrets cannot be read, the outcome is withheld rather than passed on.
func (c children) childResult(ctx context.Context, child *weft.Thread, a *weft.Agent, info weft.StopInfo) weft.ToolResult {
	out := c.childOutcome(ctx, child, a, info)
	red, err := c.e.Redactor(ctx, child.ID)
	if err != nil {
		return weft.Failure("Subagent result could not be redacted: " + err.Error())
	}
	out.Result, out.Error = red(out.Result), red(out.Error)
	return out
}

// childOutcome is a stopped child's outcome, first match: a session stop's
// text; with session tools bound, their latest call (never called is a failure); a failing stop's
// error; else the content of the latest top-level non-tool row.
func (c children) childOutcome(ctx context.Context, child *weft.Thread, a *weft.Agent, info weft.StopInfo) weft.ToolResult {
	if info.Reason == weft.StopSession && info.Error == "" && info.RunID == "" {
		// Known from the store only (the stop happened before a crash): the session tool call's text.
		if out, ok := c.sessionCallResult(ctx, child, a); ok {
			return out
		}
	}
	switch info.Reason {
	case weft.StopSession, weft.StopStateSession:
		return weft.Success(info.Error)
	case weft.StopSessionFail:
		if info.Error == "" && info.RunID == "" {
			if out, ok := c.sessionCallResult(ctx, child, a); ok {
				return out
			}
		}
		return weft.Failure(info.Error)
	}
	if b := a.Side(weft.SideB); a.SideA.SessionStop != nil || a.SideA.SessionFail != nil || b.SessionStop != nil || b.SessionFail != nil {
		return weft.Failure("Subagent ended without calling a session tool.")
	}
	if !info.Reason.OK() {
		return weft.Failure(orDefault(info.Error, "Subagent failed: "+string(info.Reason)))
	}
	rows, err := c.e.store.Messages(ctx, child.ID, weft.MessageQuery{Limit: 20, Desc: true, Roles: []weft.Role{weft.RoleAssistant, weft.RoleUser}})
	if err != nil {
		return weft.Failure("Subagent result could not be read: " + err.Error())
	}
	for _, m := range rows {
		if strings.TrimSpace(m.Content) != "" {
			return weft.Success(m.Content)
		}
	}
	return weft.Success("")
}

// startChild runs a non-blocking child in the background; when it stops its outcome is queued to
// the parent as a silent report and the child is terminated.
// childMode says how a background child ends: a resumable one stays alive after reporting, and
// with explicit parent communication it reports nothing on its own.
type childMode struct{ resumable, explicit bool }

func (c children) startChild(child *weft.Thread, a *weft.Agent, owner weft.Side, mode childMode) {
	c.goDrive(context.Background(), child, a, owner, mode, false)
}

// goDrive starts driveChild in the background, registered as the child's driver until it returns:
// Recover leaves a child that this process drives to its driver, which reports what it runs.
func (c children) goDrive(ctx context.Context, child *weft.Thread, a *weft.Agent, owner weft.Side, mode childMode, resume bool) {
	c.e.sched.Drive(child.ID, orDefault(child.RootID, child.ID), func() {
		c.driveChild(ctx, child, a, owner, mode, resume)
	})
}

// driveArgs reads from a background child's registry row what its driver needs: its agent, the
// parent side it reports to and how it reports.
func (c children) driveArgs(child *weft.Thread) (*weft.Agent, weft.Side, childMode, bool) {
	row, ok := registryRow(child)
	if !ok {
		return nil, "", childMode{}, false
	}
	a, ok := c.e.reg.Agent(child.Agent)
	if !ok {
		return nil, "", childMode{}, false
	}
	owner, _ := row["owner_side"].(string)
	return a, weft.Side(owner), childMode{resumable: row["resumable"] == true, explicit: row["parent_communication"] == "explicit"}, true
}

// drivenHere tells whether a driver of this process is running the child.
func (c children) drivenHere(childID string) bool {
	return c.e.sched.Driven(childID)
}

// driveChild runs a background child run by run while it has work, reporting each run's outcome
// exactly once: whichever goroutine performs a run reports it, and a goroutine that finds the
// child's queue empty once it has the child's turn leaves it (the run before took the messages
// and reported).
//
// resume: the child's status says running because a crash interrupted its run (Recover); only
// then is a run without queued messages started, and only as the first one.
func (c children) driveChild(ctx context.Context, child *weft.Thread, a *weft.Agent, owner weft.Side, mode childMode, resume bool) {
	for {
		info, ran, err := c.driveOnce(ctx, child, resume)
		resume = false
		if !ran {
			return
		}
		if err == nil && info.Reason == weft.StopAwaitingApproval {
			// The child waits for a person: nothing to report yet. Decide starts a driver again
			// once its calls are decided, and that one reports.
			return
		}
		var out weft.ToolResult
		if err != nil {
			out = weft.Failure("Subagent could not run: " + err.Error())
		} else {
			out = c.childResult(ctx, child, a, info)
		}
		if mode.resumable {
			c.e.childStopped(ctx, child, out)
		} else {
			c.e.finishChild(ctx, child, out)
		}
		if !mode.explicit && !c.e.reports.holdReport(ctx, child.ID, heldReport{Owner: owner, Out: out, Seq: info.Seq}) {
			c.e.reports.report(ctx, child, owner, out, info.Seq, false)
		}
		if !mode.resumable || err != nil {
			return
		}
	}
}

// driveOnce performs one run of a background child, holding its turn; ran is false when there
// was nothing to run (or another process runs it).
func (c children) driveOnce(ctx context.Context, child *weft.Thread, resume bool) (weft.StopInfo, bool, error) {
	held, release, err := c.e.sched.Acquire(ctx, child.ID)
	if err != nil {
		return weft.StopInfo{}, false, nil
	}
	defer release()
	q, err := c.e.store.Queued(held, child.ID)
	if err != nil {
		c.e.log.Warn("subagent queue unreadable", "thread", child.ID, "error", err)
		return weft.StopInfo{}, false, nil
	}
	t, err := c.e.store.Thread(held, child.ID)
	if err != nil || t.Status == weft.ThreadTerminated {
		return weft.StopInfo{}, false, nil
	}
	trigger := "message"
	if len(q) == 0 {
		if !resume || (t.Status != weft.ThreadRunning && t.Status != weft.ThreadAwaitingApproval) {
			return weft.StopInfo{}, false, nil
		}
		trigger = "continue" // a run a crash interrupted, or one whose calls were decided
	}
	info, _, _, err := c.e.runOnce(held, child.ID, trigger, "", nil, nil)
	switch {
	case errors.Is(err, errNothingQueued), errors.Is(err, weft.ErrLeaseHeld):
		// Taken by a run of another process, which reports it.
		return weft.StopInfo{}, false, nil
	case err == nil && info.Reason == "":
		return weft.StopInfo{}, false, nil // suspended by a shutdown
	}
	return info, true, err
}

// Wait blocks until background work is done: non-blocking subagents, their reports and the parent
// runs those start (`weft run` waits for all descendants).
func (e *Engine) Wait() { e.sched.Wait() }

// sessionCallResult derives a stopped child's outcome from its latest successful sessionStop or
// sessionFail call: the call's messageProperty argument, else the tool's result.
func (c children) sessionCallResult(ctx context.Context, child *weft.Thread, a *weft.Agent) (weft.ToolResult, bool) {
	rows, err := c.e.store.Messages(ctx, child.ID, weft.MessageQuery{Limit: 50, Desc: true, Roles: []weft.Role{weft.RoleTool, weft.RoleAssistant, weft.RoleUser}})
	if err != nil {
		return weft.ToolResult{}, false
	}
	bindings := map[string]struct {
		t    *weft.SessionTool
		fail bool
	}{}
	for _, side := range []weft.AgentSide{a.SideA, a.Side(weft.SideB)} {
		if side.SessionStop != nil {
			bindings[side.SessionStop.Name] = struct {
				t    *weft.SessionTool
				fail bool
			}{side.SessionStop, false}
		}
		if side.SessionFail != nil {
			bindings[side.SessionFail.Name] = struct {
				t    *weft.SessionTool
				fail bool
			}{side.SessionFail, true}
		}
	}
	for i, m := range rows {
		b, ok := bindings[m.Name]
		if m.Role != weft.RoleTool || !ok || m.ToolStatus != weft.ToolSuccess {
			continue
		}
		text := m.Content
		if b.t.MessageProperty != "" {
			// The call's arguments are on the assistant row before it (older rows follow in rows).
			for _, prev := range rows[i+1:] {
				for _, c := range prev.ToolCalls {
					if c.ID != m.ToolCallID {
						continue
					}
					var args map[string]any
					if json.Unmarshal([]byte(c.Arguments), &args) == nil {
						if v, ok := args[b.t.MessageProperty].(string); ok {
							text = v
						}
					}
				}
			}
		}
		if b.fail {
			return weft.Failure(text), true
		}
		return weft.Success(text), true
	}
	return weft.ToolResult{}, false
}
