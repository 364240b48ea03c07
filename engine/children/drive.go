package children

import (
	"context"
	"errors"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/journal"
	"github.com/weft-agents/weft/engine/runstate"
)

// RunChild runs a child until it stops and returns the stop: its queued messages, else
// (unfinished: re-attaching after a crash) the run the crash interrupted or that waited for a
// person, else — it had already stopped — the stored stop reason.
func (c *Room) RunChild(ctx context.Context, child *weft.Thread, unfinished bool) (weft.StopInfo, error) {
	// A run of the child in this process (a background driver's) ends first: it drains our
	// message, or leaves it queued for us.
	held, release, err := c.host.Acquire(ctx, child.ID)
	if err != nil {
		return weft.StopInfo{}, err
	}
	defer release()
	q, err := c.store.Queued(held, child.ID)
	if err != nil {
		return weft.StopInfo{}, err
	}
	t, err := c.store.Thread(held, child.ID)
	if err != nil {
		return weft.StopInfo{}, err
	}
	var info weft.StopInfo
	stopped := false
	switch {
	case len(q) > 0:
		info, stopped, err = c.host.RunHeld(held, child.ID, "message")
	case unfinished && (t.Status == weft.ThreadRunning || t.Status == weft.ThreadAwaitingApproval):
		info, stopped, err = c.host.RunHeld(held, child.ID, "continue")
	}
	if err != nil {
		return weft.StopInfo{}, err
	}
	if stopped {
		return info, nil
	}
	// Drained by the run that ended before our turn: its stop is ours.
	if t, err = c.store.Thread(held, child.ID); err != nil {
		return weft.StopInfo{}, err
	}
	st, err := runstate.Load(held, c.store, child.ID)
	if err != nil {
		return weft.StopInfo{}, err
	}
	return weft.StopInfo{Reason: t.StopReason, Seq: st.Stops}, nil
}

// Start runs a background child: each run's outcome is reported to the parent (unless the mode
// is explicit), and a child that is not continuable is terminated after its run.
func (c *Room) Start(child *weft.Thread, a *weft.Agent, owner weft.Side, mode Mode) {
	c.Drive(context.Background(), child, a, owner, mode, false)
}

// Drive runs a background child in a driver of the host's (Host.Drive) while it has work.
// unfinished: the child's run may have stopped unfinished — a crash interrupted it (its status
// says running), or its calls waiting for a person were decided; only then is a run without
// queued messages started (a continue), and only as the first one.
func (c *Room) Drive(ctx context.Context, child *weft.Thread, a *weft.Agent, owner weft.Side, mode Mode, unfinished bool) {
	c.host.Drive(child, func() { c.drive(ctx, child, a, owner, mode, unfinished) })
}

// drive runs a background child run by run while it has work, reporting each run's outcome
// exactly once: whichever goroutine performs a run reports it, and a goroutine that finds the
// child's queue empty once it has the child's turn leaves it (the run before took the messages
// and reported).
func (c *Room) drive(ctx context.Context, child *weft.Thread, a *weft.Agent, owner weft.Side, mode Mode, unfinished bool) {
	for {
		info, ran, err := c.driveOnce(ctx, child, unfinished)
		unfinished = false
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
			out = c.Result(ctx, child, a, info)
		}
		if mode.Continuable {
			c.Stopped(ctx, child, out)
		} else {
			c.Finish(ctx, child, out)
		}
		if !mode.Explicit && !c.hold(ctx, child, Held{Owner: owner, Out: out, Seq: info.Seq}) {
			c.Report(ctx, child, owner, out, info.Seq, false)
		}
		if !mode.Continuable || err != nil {
			return
		}
	}
}

// driveOnce performs one run of a background child, holding its turn; ran is false when there
// was nothing to run (or another process runs it).
func (c *Room) driveOnce(ctx context.Context, child *weft.Thread, unfinished bool) (weft.StopInfo, bool, error) {
	held, release, err := c.host.Acquire(ctx, child.ID)
	if err != nil {
		return weft.StopInfo{}, false, nil
	}
	defer release()
	q, err := c.store.Queued(held, child.ID)
	if err != nil {
		c.log.Warn("subagent queue unreadable", "thread", child.ID, "error", err)
		return weft.StopInfo{}, false, nil
	}
	t, err := c.store.Thread(held, child.ID)
	if err != nil || t.Status == weft.ThreadTerminated {
		return weft.StopInfo{}, false, nil
	}
	trigger := "message"
	if len(q) == 0 {
		if !unfinished || (t.Status != weft.ThreadRunning && t.Status != weft.ThreadAwaitingApproval) {
			return weft.StopInfo{}, false, nil
		}
		trigger = "continue" // a run a crash interrupted, or one whose calls were decided
	}
	info, err := c.host.RunOnce(held, child.ID, trigger)
	switch {
	case errors.Is(err, ErrNotRun):
		// Taken by a run of another process, which reports it.
		return weft.StopInfo{}, false, nil
	case err == nil && info.Reason == "":
		return weft.StopInfo{}, false, nil // suspended by a shutdown
	}
	return info, true, err
}

// Stopped tells the parent's stream that a run of a continuable child stopped: a subagent event
// with the child's status after it and its outcome's preview, as Finish's for a child that ends.
// The child stays alive for later messages.
func (c *Room) Stopped(ctx context.Context, child *weft.Thread, out weft.ToolResult) {
	c.emitOutcome(ctx, child, "", out)
}

// emitOutcome sends the child's parent a subagent event with the child's status and its
// outcome's preview; status "" is the child's status as stored (read only when events are wanted).
func (c *Room) emitOutcome(ctx context.Context, child *weft.Thread, status string, out weft.ToolResult) {
	if status == "" {
		if !c.host.Observed() {
			return
		}
		status = weft.ThreadIdle.SubagentStatus()
		if t, err := c.store.Thread(ctx, child.ID); err == nil {
			status = t.Status.SubagentStatus()
		}
	}
	text := out.Result
	if out.Status != weft.ToolSuccess {
		text = out.Error
	}
	c.host.EmitSubagent(ctx, child, child.Agent, status, journal.Preview(text))
}

// Finish records a non-continuable child's outcome on it and terminates it.
func (c *Room) Finish(ctx context.Context, child *weft.Thread, out weft.ToolResult) {
	defer c.emitOutcome(ctx, child, "terminated", out)
	props := map[string]any{}
	if t, err := c.store.Thread(ctx, child.ID); err == nil {
		for k, v := range t.Properties {
			props[k] = v
		}
	}
	props[ResultProperty] = map[string]any{"status": string(out.Status), "result": out.Result, "error": out.Error}
	if err := c.host.Tx(ctx, child.ID, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Properties: props}) }); err != nil {
		c.log.Warn("recording a subagent's result failed", "thread", child.ID, "error", err)
	}
	if err := c.host.Terminate(ctx, child.ID); err != nil {
		c.log.Warn("terminating a finished subagent failed", "thread", child.ID, "error", err)
	}
}
