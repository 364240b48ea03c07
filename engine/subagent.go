package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/hooks"
	"github.com/weft-agents/weft/engine/vars"
)

// callSubagent answers a call of a dual_ai agent listed as a tool (children.Room.Call). ctx is the
// tool call's (carrying its trace: the child's run nests under the call); parked is the child's id
// when it stopped awaiting approval: no result then, the call stays running.
func (r *run) callSubagent(ctx context.Context, s *scope, o *offered, c weft.ToolCall, msg *weft.Message, args map[string]any) (res weft.ToolResult, parked string) {
	p := subagentCall{lifecycleCall{r, s}, ctx, o, c, msg, &parked}
	res = r.e.subagents.Call(p, children.Entry{Entry: o.entry, Agent: o.target.Agent}, args)
	return res, parked
}

// subagentCall is a run's call of a subagent as engine/children's Caller.
type subagentCall struct {
	lifecycleCall
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
	return p.r.createChild(p.s, p.o, args, id, nil)
}

// Reserve records the reference on the call as its metadata, the call running.
func (p subagentCall) Reserve(ref string) error {
	if p.msg == nil || p.msg.ID == "" {
		return nil
	}
	r := p.r
	meta, _ := json.Marshal(subagentMeta{Ref: ref})
	now := r.now()
	rec := r.tools.calls.Of(p.c, p.msg.ID)
	rec.Status, rec.Meta, rec.StartedAt = weft.CallRunning, meta, &now
	return r.tx(func(tx weft.Tx) error {
		if err := tx.PutToolCall(rec); err != nil {
			return err
		}
		r.tools.calls.Note(rec)
		return nil
	})
}

// Park leaves the call running: the run stops with it until the child's calls are decided.
func (p subagentCall) Park(childID string) { *p.parked = childID }

// subagentMeta is the metadata of a blocking subagent call.
type subagentMeta struct {
	Ref string `json:"subagent_ref"`
}

// reattach answers, after a crash, a blocking subagent call whose child was recorded: the child (if
// it was created) resumes and its result answers the call; a child never created is created now.
// ctx is the call's; parked is callSubagent's.
func (r *run) reattach(ctx context.Context, s *scope, rec weft.ToolCallRecord, c weft.ToolCall) (res weft.ToolResult, parked string, ok bool) {
	var meta subagentMeta
	if len(rec.Meta) == 0 || json.Unmarshal(rec.Meta, &meta) != nil || meta.Ref == "" {
		return weft.ToolResult{}, "", false
	}
	o, ok := s.offered[c.Name]
	if !ok || o.target.Agent == nil {
		return weft.ToolResult{}, "", false
	}
	child, err := r.e.store.Thread(r.ctx, meta.Ref)
	if err != nil {
		if weft.ErrorCode(err) != weft.ENotFound {
			return weft.Failure("Subagent could not be resumed: " + r.red.Error(err)), "", true
		}
		_, args, _, errText := r.tools.prepareCall(s, c, false)
		if errText != "" {
			return weft.Failure(errText), "", true
		}
		var fail *weft.ToolResult
		if child, fail = r.createChild(s, o, args, meta.Ref, nil); fail != nil {
			return *fail, "", true
		}
	}
	if child.Status == weft.ThreadTerminated {
		// The child finished, but the parent died before storing its result.
		if out, ok := children.Recorded(child); ok {
			return out, "", true
		}
		return weft.Failure(fmt.Sprintf("Subagent (reference: %s) was terminated before it reported a result.", child.ID)), "", true
	}
	res = r.e.subagents.Await(subagentCall{lifecycleCall{r, s}, ctx, o, c, nil, &parked}, child, o.target.Agent, true)
	return res, parked, true
}

// createChild creates a subagent's thread and queues its initial rows: arguments
// validated by the caller, required variables resolved through the child's layers (inherited
// values included), then the thread with parent and root (children.Room.NewChild), the
// after_subagent_created hooks and the init rows (children.Room.QueueInit). A non-nil result is
// the error result; nothing is created then.
func (r *run) createChild(s *scope, o *offered, args map[string]any, id string, env map[string]string) (*weft.Thread, *weft.ToolResult) {
	target, e := o.target.Agent, o.entry
	ctx := context.WithoutCancel(r.ctx)
	flag := func(name string) bool {
		v, ok := r.env.Lookup(name)
		return ok && vars.FlagOn(v.Value)
	}
	decls := vars.NewGraph(r.e.reg, target, flag).Declared()
	inherited, err := vars.Inherited(ctx, r.e.store, r.thread.ID, decls)
	if err != nil {
		return nil, failure("Subagent could not be created: " + r.red.Error(err))
	}
	own := map[string]weft.EnvValue{}
	for k, v := range env {
		t := weft.VarSecret
		if d, ok := decls[k]; ok && d.Type != "" {
			t = d.Type
		}
		own[k] = weft.EnvValue{Name: k, Value: v, Type: t}
	}
	view := &vars.View{Thread: own, Inherited: inherited, Agent: target.Env, User: r.env.User, Instance: r.env.Instance, Declared: r.e.varTypes.Of(target)}
	if missing := vars.Missing(decls, view); len(missing) > 0 {
		if env != nil {
			// Values were provided for a request and some are still missing.
			names := make([]string, len(missing))
			for i, m := range missing {
				names[i] = m.Name
			}
			f := weft.Failure("missing required variables: " + strings.Join(names, ", "))
			f.ErrorCode = "missing_required_variables"
			return nil, &f
		}
		// Nothing is created: a pending request lets a person supply the values.
		return nil, r.tools.requestEnv(s, o, args, decls, missing)
	}
	sp, err := r.e.subagents.NewChild(ctx, r.thread, id, target, e, s.side, args, r.now())
	if err != nil {
		return nil, failure(err.Error())
	}
	child := sp.Thread
	envRows := make([]weft.EnvValue, 0, len(own))
	for _, v := range own {
		envRows = append(envRows, v)
	}
	if err := r.e.store.CreateThread(ctx, child, envRows); err != nil {
		return nil, failure("Subagent could not be created: " + r.red.Error(err))
	}
	r.spawned.Store(true)
	r.e.roots.Put(child)
	r.e.commit.Outside(ctx, Event{Type: "thread_created", ThreadID: child.ID, RootID: child.RootID, Data: Fields{"parent_id": r.thread.ID}})
	r.e.children.emitSubagent(ctx, child, target.Name, "running", "created")
	r.runSubagentCreatedHooks(child)
	if err := r.e.subagents.QueueInit(ctx, sp); err != nil {
		return nil, failure("Subagent could not be created: " + r.red.Error(err))
	}
	return child, nil
}

// runSubagentCreatedHooks runs the parent agent's after_subagent_created hooks.
func (r *run) runSubagentCreatedHooks(child *weft.Thread) {
	hs := hooks.Select(r.e.reg, r.agent.Hooks, weft.HookAfterSubagentCreated)
	if len(hs) == 0 {
		return
	}
	ctx := context.WithoutCancel(r.ctx)
	parent := runState(r, nil)
	r.hooks.SubagentCreated(ctx, hooks.Set{Hooks: hs, State: parent}, outsideState(r.e, child))
}

// isImmediateKey reports whether k, an entry of runstate.State.Immediate, is side:prompt. (Compared in
// place: the key is built only when it is recorded, not at every step.)
func isImmediateKey(k string, side weft.Side, prompt string) bool {
	s, name, ok := strings.Cut(k, ":")
	return ok && s == string(side) && name == prompt
}

// immediateMessage is the initial message of an immediate subagent.
const immediateMessage = "You were started automatically when this thread was created. Begin your task."

// startImmediate starts, the first time a prompt becomes active for a side in this thread and
// before its first model step, each enabled immediate subagent entry as if the model had called it.
// A blocking non-resumable result and any start error are stored as a synthetic call and its
// result, so the model sees them; other outcomes are reported as usual. The start is recorded
// before it happens: at most once per thread, even across a crash.
func (r *run) startImmediate(s *scope, p *weft.Prompt, side weft.Side) error {
	if slices.ContainsFunc(r.state.Immediate, func(k string) bool { return isImmediateKey(k, side, p.Name) }) {
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
		case o.lifecycle == toolSubagentCreate:
			for _, re := range o.entries {
				if weft.Flag(re.entry.Immediate, false) {
					starts = append(starts, start{o, toolSubagentCreate, map[string]any{"agent": re.agent.Name, "message": immediateMessage}})
				}
			}
		case o.lifecycle == "" && o.target.Agent != nil && o.target.Agent.Kind() == weft.DualAI && weft.Flag(o.entry.Immediate, false):
			prop := orDefault(o.entry.InitUserMessageProperty, "message")
			starts = append(starts, start{o, sp.Name, map[string]any{prop: immediateMessage}})
		}
	}
	if len(starts) == 0 {
		return nil
	}
	r.state.Immediate = append(r.state.Immediate, string(side)+":"+p.Name)
	if err := r.saveState(); err != nil {
		return err
	}
	for _, st := range starts {
		raw, _ := json.Marshal(st.args)
		c := weft.ToolCall{ID: weft.NewID("call_"), Name: st.name, Arguments: string(raw)}
		var res weft.ToolResult
		keep := false
		if st.o.lifecycle != "" {
			// A resumable immediate instance starts in the background; its outcome is reported.
			res = r.e.subagents.StartImmediate(lifecycleCall{r, s}, st.o.continuable(), st.args)
			keep = res.Status != weft.ToolSuccess
		} else {
			// (A blocking child that parks answers with no result: it is not awaited here.)
			res, _ = r.callSubagent(r.ctx, s, st.o, c, nil, st.args)
			keep = weft.Flag(st.o.entry.Blocking, true) || res.Status != weft.ToolSuccess
		}
		if !keep {
			continue
		}
		m := &weft.Message{ID: weft.NewID("msg_"), Role: weft.RoleAssistant, Side: side, Status: weft.MessageCompleted, Prompt: p.Name,
			RunID: r.id, ToolCalls: []weft.ToolCall{c}, Metadata: map[string]any{"immediate": true}}
		if err := r.tx(func(tx weft.Tx) error { return r.journal.Insert(tx, m) }); err != nil {
			return err
		}
		r.addRow(*m)
		r.journal.Stored(*m)
		if _, err := r.tools.storeResult(s, m, c, res, weft.NewID("msg_"), nil); err != nil {
			return err
		}
	}
	return nil
}

func failure(text string) *weft.ToolResult {
	f := weft.Failure(text)
	return &f
}
