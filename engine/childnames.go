package engine

// The room's names (engine/children) under the names the files that call into it from outside
// use — Recover (recover.go), Decide (approval.go), the tool set (context.go), the State
// (statefamily.go) — until they call the room directly (engine/fork names its properties itself).

import (
	"context"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
)

// registryRow is a child's registry row as stored on the child thread.
func registryRow(t *weft.Thread) (map[string]any, bool) { return children.Row(t) }

// recordedResult is the outcome stored on a terminated child, if any.
func recordedResult(t *weft.Thread) (weft.ToolResult, bool) { return children.Recorded(t) }

// reportedSet is a child's record of reported stops.
type reportedSet struct{ children.Reported }

// has tells whether stop seq was reported.
func (r reportedSet) has(seq int) bool { return r.Has(seq) }

// loadReported reads a child's record of reported stops.
func loadReported(ctx context.Context, st weft.Store, childID string) reportedSet {
	return reportedSet{children.LoadReported(ctx, st, childID)}
}

// finishChild records a non-continuable child's outcome on it and terminates it.
func (e *Engine) finishChild(ctx context.Context, child *weft.Thread, out weft.ToolResult) {
	e.subagents.Finish(ctx, child, out)
}

// drivenHere tells whether a driver of this process runs the child.
func (h childHost) drivenHere(childID string) bool {
	return h.e.sched.Driven(childID)
}

// childMode is children.Mode under the field names Recover reads.
type childMode struct {
	resumable bool // children.Mode.Continuable
	explicit  bool // children.Mode.Explicit
}

// driveArgs is children.Room.DriveArgs.
func (h childHost) driveArgs(child *weft.Thread) (*weft.Agent, weft.Side, childMode, bool) {
	a, owner, m, ok := h.e.subagents.DriveArgs(child)
	return a, owner, childMode{resumable: m.Continuable, explicit: m.Explicit}, ok
}

// goDrive is children.Room.Drive.
func (h childHost) goDrive(ctx context.Context, child *weft.Thread, a *weft.Agent, owner weft.Side, mode childMode, resume bool) {
	h.e.subagents.Drive(ctx, child, a, owner, children.Mode{Continuable: mode.resumable, Explicit: mode.explicit}, resume)
}

// childResult is children.Room.Result.
func (h childHost) childResult(ctx context.Context, child *weft.Thread, a *weft.Agent, info weft.StopInfo) weft.ToolResult {
	return h.e.subagents.Result(ctx, child, a, info)
}

// sendHeld is children.Room.SendHeld.
func (h childHost) sendHeld(ctx context.Context, child *weft.Thread) error {
	return h.e.subagents.SendHeld(ctx, child)
}

// report is children.Room.Report.
func (h childHost) report(ctx context.Context, child *weft.Thread, owner weft.Side, out weft.ToolResult, seq int, recovering bool) {
	h.e.subagents.Report(ctx, child, owner, out, seq, recovering)
}
