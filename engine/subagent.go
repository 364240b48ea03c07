package engine

import (
	"context"
	"encoding/json"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/hooks"
)

// callAgent answers a call of a dual_ai agent listed as a tool (children.Room.Call). ctx is the
// tool call's (carrying its trace: the child's run nests under the call); parked is the child's id
// when it stopped awaiting approval: no result then, the call stays running.
func (p parentRun) callAgent(ctx context.Context, o *offered, c weft.ToolCall, msg *weft.Message, args map[string]any) (res weft.ToolResult, parked string) {
	call := subagentCall{p, ctx, o, c, msg, &parked}
	res = p.r.e.subagents.Call(call, children.Entry{Entry: o.entry, Agent: o.target.Agent}, args)
	return res, parked
}

// subagentCall is a run's call of a subagent as engine/children's Caller.
type subagentCall struct {
	parentRun
	ctx context.Context // the tool call's
	o   *offered
	c   weft.ToolCall
	msg *weft.Message // the reply holding the call (nil: an immediate start)
	// parked receives the child's id when it parks the call (the caller returns it).
	parked *string
}

// Context is the tool call's context when it is observed: the child's run nests under the call
// in traces.
func (p subagentCall) Context() context.Context { return p.ctx }

// Create creates the called agent's child, with the entry's init properties.
func (p subagentCall) Create(_ children.Entry, args map[string]any, id string) (*weft.Thread, *weft.ToolResult) {
	return p.createChild(p.o, args, id, nil)
}

// Reserve records the reference on the call as its metadata, the call running.
func (p subagentCall) Reserve(ref string) error {
	if p.msg == nil || p.msg.ID == "" {
		return nil
	}
	r := p.r
	meta, _ := json.Marshal(children.CallMeta{Ref: ref})
	now := r.now()
	rec := r.tools.Calls.Of(p.c, p.msg.ID)
	rec.Status, rec.Meta, rec.StartedAt = weft.CallRunning, meta, &now
	return r.tx(func(tx weft.Tx) error {
		if err := tx.PutToolCall(rec); err != nil {
			return err
		}
		r.tools.Calls.Note(rec)
		return nil
	})
}

// Park leaves the call running: the run stops with it until the child's calls are decided.
func (p subagentCall) Park(childID string) { *p.parked = childID }

// reattach answers, after a crash, a blocking subagent call whose child was recorded
// (children.Room.Reattach): the child (if it was created) resumes and its result answers the
// call; a child never created is created now. ctx is the call's; parked is callAgent's.
func (p parentRun) reattach(ctx context.Context, rec weft.ToolCallRecord, c weft.ToolCall) (res weft.ToolResult, parked string, ok bool) {
	ref := children.CallRef(rec.Meta)
	o, found := p.s.offered[c.Name]
	if ref == "" || !found || o.target.Agent == nil {
		return weft.ToolResult{}, "", false
	}
	create := func() (*weft.Thread, *weft.ToolResult) {
		prep, errText := (*toolRun)(p.r).prepareCall(p.s, c, false)
		if errText != "" {
			return nil, failure(errText)
		}
		return p.createChild(o, prep.Args, ref, nil)
	}
	res = p.r.e.subagents.Reattach(subagentCall{p, ctx, o, c, nil, &parked}, ref, o.target.Agent, create)
	return res, parked, true
}

// createChild creates a subagent's thread and queues its initial rows: arguments validated by
// the caller, required variables resolved through the child's layers (children.Room.ResolveVars:
// inherited values included; env are values given for the child), then the thread with parent
// and root (children.Room.NewChild and Open), the after_subagent_created hooks and the init rows.
// A non-nil result is the error result; nothing is created then.
func (p parentRun) createChild(o *offered, args map[string]any, id string, env map[string]string) (*weft.Thread, *weft.ToolResult) {
	r, s := p.r, p.s
	target := o.target.Agent
	ctx := context.WithoutCancel(r.ctx)
	cv, err := r.e.subagents.ResolveVars(ctx, r.thread.ID, r.env, r.e.varTypes.Of(target), target, env)
	if err != nil {
		return nil, failure("Subagent could not be created: " + r.red.Error(err))
	}
	if len(cv.Missing) > 0 {
		if env != nil {
			return nil, cv.MissingFailure() // values were provided for a request, and some are still missing
		}
		// Nothing is created: a pending request lets a person supply the values.
		return nil, r.tools.RequestEnv(o.target.Agent.Name, o.entry, s.side, args, cv.Declared, cv.Missing)
	}
	sp, err := r.e.subagents.NewChild(ctx, r.thread, id, target, o.entry, s.side, args, r.now())
	if err != nil {
		return nil, failure(err.Error())
	}
	err = r.e.subagents.Open(ctx, sp, cv.Own, func(child *weft.Thread) {
		r.spawned.Store(true)
		p.createdHooks(child)
	})
	if err != nil {
		return nil, failure("Subagent could not be created: " + r.red.Error(err))
	}
	return sp.Thread, nil
}

// createdHooks runs the parent agent's after_subagent_created hooks.
func (p parentRun) createdHooks(child *weft.Thread) {
	r := p.r
	hs := hooks.Select(r.e.reg, r.agent.Hooks, weft.HookAfterSubagentCreated)
	if len(hs) == 0 {
		return
	}
	ctx := context.WithoutCancel(r.ctx)
	parent := runState(r, nil)
	r.hooks.SubagentCreated(ctx, hooks.Set{Hooks: hs, State: parent}, outsideState(r.e, child))
}

// startImmediate starts, the first time a prompt becomes active for a side in this thread and
// before its first model step, each enabled immediate subagent entry as if the model had called it.
// A blocking non-continuable call and any start error are stored as a synthetic reply with the call
// and its result, so the model sees them; other outcomes are reported as usual. The start is
// recorded before it happens: at most once per thread, even across a crash.
//
// A blocking call's reply is stored before its child exists, so that its call record carries the
// child's reference as a model's call does: when the child waits for a person, the call stays
// running and the run parks with it (errAwaitApproval), and the resumed run re-attaches the call
// to the child. The blocking starts after it are stored as replies with their call pending, which
// the resumed run makes; the background starts still start now.
func (pr parentRun) startImmediate(p *weft.Prompt, side weft.Side) error {
	r, s := pr.r, pr.s
	if children.ImmediateStarted(r.state.Immediate, side, p.Name) {
		return nil
	}
	type start struct {
		o    *offered
		name string
		args map[string]any
	}
	var starts []start
	for _, sp := range s.specs {
		o := s.offered[sp.Name]
		switch {
		case o.lifecycle == children.ToolCreate:
			for _, re := range o.entries {
				if weft.Flag(re.Entry.Immediate, false) {
					starts = append(starts, start{o, children.ToolCreate, map[string]any{"agent": re.Agent.Name, "message": children.ImmediateMessage}})
				}
			}
		case o.lifecycle == "" && o.target.Agent != nil && o.target.Agent.Kind() == weft.DualAI && weft.Flag(o.entry.Immediate, false):
			prop := orDefault(o.entry.InitUserMessageProperty, "message")
			starts = append(starts, start{o, sp.Name, map[string]any{prop: children.ImmediateMessage}})
		}
	}
	if len(starts) == 0 {
		return nil
	}
	r.state.Immediate = append(r.state.Immediate, children.ImmediateKey(side, p.Name))
	if err := r.saveState(); err != nil {
		return err
	}
	reply := func(c weft.ToolCall) (*weft.Message, error) {
		m := &weft.Message{ID: weft.NewID("msg_"), Role: weft.RoleAssistant, Side: side, Status: weft.MessageCompleted, Prompt: p.Name,
			RunID: r.id, ToolCalls: []weft.ToolCall{c}, Metadata: map[string]any{"immediate": true}}
		if err := r.tx(func(tx weft.Tx) error { return r.journal.Insert(tx, m) }); err != nil {
			return nil, err
		}
		r.addRow(*m)
		r.journal.Stored(*m)
		return m, nil
	}
	parked := false
	for _, st := range starts {
		raw, _ := json.Marshal(st.args)
		c := weft.ToolCall{ID: weft.NewID("call_"), Name: st.name, Arguments: string(raw)}
		var res weft.ToolResult
		var m *weft.Message
		switch {
		case st.o.lifecycle != "":
			// A continuable immediate instance starts in the background; its outcome is reported.
			if res = r.e.subagents.StartImmediate(pr, st.o.entries, st.args); res.Status == weft.ToolSuccess {
				continue
			}
		case !weft.Flag(st.o.entry.Blocking, true):
			if res, _ = pr.callAgent(r.ctx, st.o, c, nil, st.args); res.Status == weft.ToolSuccess {
				continue
			}
		default:
			var err error
			if m, err = reply(c); err != nil {
				return err
			}
			if parked {
				continue // made by the resumed run
			}
			var child string
			if res, child = pr.callAgent(r.ctx, st.o, c, m, st.args); child != "" {
				parked = true // the call stays running: its child waits for a person
				continue
			}
		}
		if m == nil {
			var err error
			if m, err = reply(c); err != nil {
				return err
			}
		}
		if _, err := r.tools.StoreResult(s, m, c, res, weft.NewID("msg_"), nil); err != nil {
			return err
		}
	}
	if parked {
		return errAwaitApproval
	}
	return nil
}

func failure(text string) *weft.ToolResult {
	f := weft.Failure(text)
	return &f
}
