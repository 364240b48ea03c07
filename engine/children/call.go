package children

import (
	"context"
	"encoding/json"
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
// terminated. reattached: the call is re-attached after a crash or a decision, and the child's
// run may have stopped unfinished (RunChild).
func (c *Room) Await(p Caller, child *weft.Thread, target *weft.Agent, reattached bool) weft.ToolResult {
	ctx := p.Context()
	info, err := c.RunChild(ctx, child, reattached)
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

// CallMeta is the record metadata of a blocking call of a dual_ai agent: the child's reference,
// recorded before the child exists (Caller.Reserve).
type CallMeta struct {
	// Ref is the child's id.
	Ref string `json:"subagent_ref"`
}

// CallRef is the child's reference a call record's metadata holds ("" when none).
func CallRef(meta json.RawMessage) string {
	var m CallMeta
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil {
		return ""
	}
	return m.Ref
}

// Reattach answers, after a crash, a blocking call of target whose record names its child ref:
// the child runs on from where the crash left it (Await) and its result answers the call; a child
// never created is created now (create, with the call's arguments); a terminated child answers
// with the outcome it recorded, its parent having died before storing it.
func (c *Room) Reattach(p Caller, ref string, target *weft.Agent, create func() (*weft.Thread, *weft.ToolResult)) weft.ToolResult {
	child, err := c.store.Thread(p.Context(), ref)
	if err != nil {
		if weft.ErrorCode(err) != weft.ENotFound {
			return weft.Failure("Subagent could not be resumed: " + p.RedactError(err))
		}
		var fail *weft.ToolResult
		if child, fail = create(); fail != nil {
			return *fail
		}
	}
	if child.Status == weft.ThreadTerminated {
		if out, ok := Recorded(child); ok {
			return out
		}
		return weft.Failure(fmt.Sprintf("Subagent (reference: %s) was terminated before it reported a result.", child.ID))
	}
	return c.Await(p, child, target, true)
}
