package children

import (
	"context"
	"fmt"

	"github.com/weft-agents/weft"
)

// Caller is a Parent calling a dual_ai agent listed as a tool, whose call may wait for the child.
type Caller interface {
	Parent
	// Reserve records the child's reference on the call before the child exists: after a crash
	// the parent re-attaches to that child instead of creating another. (A call that is not
	// stored, an immediate start's, records nothing.)
	Reserve(ref string) error
	// Park leaves the call running with the child's reference: the child waits for a person, and
	// the parent's run stops until the child's calls are decided.
	Park(childID string)
}

// Call answers a call of a dual_ai agent listed as a tool: the agent runs in its own child thread
// and, with blocking (the default), the call waits for the child's run to stop and returns the
// child's result; the child is then terminated. A non-blocking child runs in the background and
// reports its outcome to the parent when it stops.
func (c *Room) Call(p Caller, e Entry, args map[string]any) weft.ToolResult {
	if e.Entry.Resumable != nil && e.Entry.Resumable.Enabled {
		return weft.Failure(fmt.Sprintf("%q must be started with subagent_create.", e.Agent.Name))
	}
	ref := weft.NewID("thr_")
	blocking := weft.Flag(e.Entry.Blocking, true)
	if blocking {
		if err := p.Reserve(ref); err != nil {
			return weft.Failure("Subagent could not be created: " + p.RedactError(err))
		}
	}
	child, fail := p.Create(e, args, ref)
	if fail != nil {
		return *fail
	}
	if !blocking {
		c.Start(child, e.Agent, p.Side(), Mode{})
		return weft.Success("The subagent was initiated successfully. Reference: " + child.ID)
	}
	return c.Await(p, child, e.Agent, false)
}

// Await runs a blocking call's child until it stops and returns its result; the child is then
// terminated. resume: the call is re-attached after a crash (RunChild).
func (c *Room) Await(p Caller, child *weft.Thread, target *weft.Agent, resume bool) weft.ToolResult {
	ctx := p.Context()
	info, err := c.RunChild(ctx, child, resume)
	if err != nil {
		return weft.Failure(fmt.Sprintf("Subagent (reference: %s) could not run: %s", child.ID, p.RedactError(err)))
	}
	if info.Reason == weft.StopAwaitingApproval {
		// The child waits for a person: so does this call.
		p.Park(child.ID)
		return weft.ToolResult{}
	}
	out := c.Result(context.WithoutCancel(ctx), child, target, info)
	out.Result, out.Error = p.Redact(out.Result), p.Redact(out.Error)
	c.Finish(context.WithoutCancel(ctx), child, out)
	return out
}
