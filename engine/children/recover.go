package children

import (
	"context"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/runstate"
)

// Recover picks up, after a restart, the children of a thread's tree that report on their own:
// background children, and continuable instances of blocking entries (after a restart no call
// awaits them: the interrupted subagent_message call is answered as interrupted). Children whose
// runs a crash interrupted (or with queued messages) are driven again, and stops whose report was
// lost are reported now. A child a driver of this process runs is left to it (Host.Driven), and a
// blocking child that is not continuable is re-attached by its parent's resumed call.
func (c *Room) Recover(ctx context.Context, threadID string) error {
	kids, _, err := c.store.Threads(ctx, weft.ThreadQuery{ParentID: threadID, Sort: "oldest", Limit: -1})
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := c.Recover(ctx, k.ID); err != nil {
			return err
		}
		row, ok := Row(k)
		if !ok || (row["blocking"] != false && row["resumable"] != true) || c.host.Driven(k.ID) {
			continue
		}
		a, owner, mode, ok := c.DriveArgs(k)
		if !ok {
			continue
		}
		if err := c.SendHeld(ctx, k); err != nil {
			return err
		}
		q, err := c.store.Queued(ctx, k.ID)
		if err != nil {
			return err
		}
		if k.Status != weft.ThreadTerminated && (k.Status == weft.ThreadRunning || len(q) > 0) {
			c.Drive(context.WithoutCancel(ctx), k, a, owner, mode, true)
			continue
		}
		if k.Status == weft.ThreadAwaitingApproval {
			continue // waits for a person: a decision drives it on, and its driver reports
		}
		st, err := runstate.Load(ctx, c.store, k.ID)
		if err != nil {
			return err
		}
		if mode.Explicit || st.Stops == 0 || LoadReported(ctx, c.store, k.ID).Has(st.Stops) {
			continue
		}
		out, ok := Recorded(k)
		if !ok {
			out = c.Result(ctx, k, a, weft.StopInfo{Reason: k.StopReason})
		}
		if !mode.Continuable && k.Status != weft.ThreadTerminated {
			c.Finish(ctx, k, out)
		}
		c.Report(ctx, k, owner, out, st.Stops, true)
	}
	return nil
}
