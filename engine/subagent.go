package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
	"github.com/weft-agents/weft/engine/vars"
)

// callSubagent answers a call of a dual_ai agent listed as a tool: the agent runs
// in its own child thread and, with blocking (the default), the call waits for the child's run to
// stop and returns the child's result; the child is then terminated.
func (r *run) callSubagent(s *scope, o *offered, c weft.ToolCall, msg *weft.Message, args map[string]any) weft.ToolResult {
	target, e := o.target.Agent, o.entry
	if e.Resumable != nil && e.Resumable.Enabled {
		return weft.Failure(fmt.Sprintf("%q must be started with subagent_create.", target.Name))
	}
	ref := weft.NewID("thr_")
	blocking := weft.Flag(e.Blocking, true)
	if blocking && msg != nil && msg.ID != "" {
		// The reference is recorded on the call before the child exists: after a crash the parent
		// re-attaches to that child instead of creating another.
		meta, _ := json.Marshal(subagentMeta{Ref: ref})
		now := r.now()
		rec := r.tools.recordOf(c, msg.ID)
		rec.Status, rec.Meta, rec.StartedAt = weft.CallRunning, meta, &now
		err := r.tx(func(tx weft.Tx) error {
			if err := tx.PutToolCall(rec); err != nil {
				return err
			}
			r.tools.noteCall(rec)
			return nil
		})
		if err != nil {
			return weft.Failure("Subagent could not be created: " + r.red.Error(err))
		}
	}
	child, fail := r.createChild(s, o, args, ref, nil)
	if fail != nil {
		return *fail
	}
	if !blocking {
		// The outcome is reported to the parent when the child stops.
		r.e.children.startChild(child, target, s.side, childMode{})
		return weft.Success("The subagent was initiated successfully. Reference: " + child.ID)
	}
	return r.awaitChild(child, target, false)
}

// subagentMeta is the metadata of a blocking subagent call.
type subagentMeta struct {
	Ref string `json:"subagent_ref"`
}

// awaitChild runs a child until it stops and returns its result; the child is then terminated.
func (r *run) awaitChild(child *weft.Thread, target *weft.Agent, resume bool) weft.ToolResult {
	ctx := r.ctx
	if r.tools.toolCtx != nil {
		ctx = r.tools.toolCtx // the child's run nests under the call in traces
	}
	info, err := r.e.children.runChild(ctx, child, resume)
	if err != nil {
		return weft.Failure(fmt.Sprintf("Subagent (reference: %s) could not run: %s", child.ID, r.red.Error(err)))
	}
	if info.Reason == weft.StopAwaitingApproval {
		// The child waits for a person: so does this call (it stays running, with the child's
		// reference), and the run stops until the child's calls are decided.
		r.tools.childParked = child.ID
		return weft.ToolResult{}
	}
	out := r.e.children.childResult(context.WithoutCancel(ctx), child, target, info)
	out.Result, out.Error = r.red.String(out.Result), r.red.String(out.Error)
	r.e.finishChild(context.WithoutCancel(ctx), child, out)
	return out
}

// resultProperty is the child thread property keeping its outcome once it is terminated, so a
// parent that dies before storing the result still finds it.
const resultProperty = "weft.subagent_result"

// childStopped tells the parent's stream that a run of a resumable child stopped: a subagent
// event with the child's status after it and its outcome's preview, as finishChild's for a child
// that ends. The child stays alive for later messages.
func (e *Engine) childStopped(ctx context.Context, child *weft.Thread, out weft.ToolResult) {
	if !e.observed() {
		return
	}
	status := weft.ThreadIdle.SubagentStatus()
	if t, err := e.store.Thread(ctx, child.ID); err == nil {
		status = t.Status.SubagentStatus()
	}
	e.emitSubagent(ctx, child, child.Agent, status, preview(outcomeText(out)))
}

// emitSubagent sends child's parent a subagent event: the child's status and status text.
func (e *Engine) emitSubagent(ctx context.Context, child *weft.Thread, agent, status, text string) {
	e.emitOutside(ctx, Event{Type: "subagent", ThreadID: child.ParentID, RootID: rootOf(child),
		Data: Fields{"reference": child.ID, "agent": agent, "status": status, "status_text": text}})
}

// outcomeText is a child's outcome as text: its result, or its error when it failed.
func outcomeText(out weft.ToolResult) string {
	if out.Status != weft.ToolSuccess {
		return out.Error
	}
	return out.Result
}

// finishChild records a non-resumable child's outcome on it and terminates it.
func (e *Engine) finishChild(ctx context.Context, child *weft.Thread, out weft.ToolResult) {
	defer e.emitSubagent(ctx, child, child.Agent, "terminated", preview(outcomeText(out)))
	props := map[string]any{}
	if t, err := e.store.Thread(ctx, child.ID); err == nil {
		for k, v := range t.Properties {
			props[k] = v
		}
	}
	props[resultProperty] = map[string]any{"status": string(out.Status), "result": out.Result, "error": out.Error}
	if err := e.tx(ctx, child.ID, nil, keep, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Properties: props}) }); err != nil {
		e.log.Warn("recording a subagent's result failed", "thread", child.ID, "error", err)
	}
	if err := e.Terminate(ctx, child.ID); err != nil {
		e.log.Warn("terminating a finished subagent failed", "thread", child.ID, "error", err)
	}
}

// recordedResult is the outcome finishChild stored on a child, if any.
func recordedResult(t *weft.Thread) (weft.ToolResult, bool) {
	m, ok := t.Properties[resultProperty].(map[string]any)
	if !ok {
		return weft.ToolResult{}, false
	}
	str := func(k string) string { v, _ := m[k].(string); return v }
	return weft.ToolResult{Status: weft.ToolStatus(str("status")), Result: str("result"), Error: str("error")}, true
}

// reattach answers, after a crash, a blocking subagent call whose child was recorded: the child (if
// it was created) resumes and its result answers the call; a child never created is created now.
func (r *run) reattach(s *scope, rec weft.ToolCallRecord, c weft.ToolCall) (weft.ToolResult, bool) {
	var meta subagentMeta
	if len(rec.Meta) == 0 || json.Unmarshal(rec.Meta, &meta) != nil || meta.Ref == "" {
		return weft.ToolResult{}, false
	}
	o, ok := s.offered[c.Name]
	if !ok || o.target.Agent == nil {
		return weft.ToolResult{}, false
	}
	child, err := r.e.store.Thread(r.ctx, meta.Ref)
	if err != nil {
		if weft.ErrorCode(err) != weft.ENotFound {
			return weft.Failure("Subagent could not be resumed: " + r.red.Error(err)), true
		}
		_, args, _, errText := r.tools.prepareCall(s, c, false)
		if errText != "" {
			return weft.Failure(errText), true
		}
		var fail *weft.ToolResult
		if child, fail = r.createChild(s, o, args, meta.Ref, nil); fail != nil {
			return *fail, true
		}
	}
	if child.Status == weft.ThreadTerminated {
		// The child finished, but the parent died before storing its result.
		if out, ok := recordedResult(child); ok {
			return out, true
		}
		return weft.Failure(fmt.Sprintf("Subagent (reference: %s) was terminated before it reported a result.", child.ID)), true
	}
	return r.awaitChild(child, o.target.Agent, true), true
}

// createChild creates a subagent's thread and queues its initial rows: arguments
// validated by the caller, required variables resolved through the child's layers (inherited
// values included), then the thread with parent and root, the init rows and the
// after_subagent_created hooks. A non-empty string is the error result; nothing is created then.
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
	view := &vars.View{Thread: own, Inherited: inherited, Agent: target.Env, User: r.env.User, Instance: r.env.Instance, Declared: r.e.declaredOf(target)}
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
		return nil, r.requestEnv(s, o, args, decls, missing)
	}
	msgProp, attProp := e.InitUserMessageProperty, e.InitAttachmentsProperty
	sideA, _ := r.e.reg.Prompt(target.SideA.Prompt)
	if sideA == nil || sideA.RequiredSchema == nil {
		msgProp, attProp = orDefault(msgProp, "message"), orDefault(attProp, "attachments")
	}
	label := target.Name
	if v, ok := args[e.InitAgentNameProperty].(string); ok && e.InitAgentNameProperty != "" && v != "" {
		label = v
	} else if v, ok := args["name"].(string); ok && v != "" {
		label = v
	}
	// Attachments are copied into the child's own /attachments/.
	var atts []weft.ToolAttachment
	for _, p := range attachmentPaths(args[attProp]) {
		a, errText := r.readAttachment(ctx, p)
		if errText != "" {
			return nil, failure(errText)
		}
		atts = append(atts, a)
	}
	now := r.now()
	child := &weft.Thread{ID: id, ParentID: r.thread.ID, RootID: orDefault(r.thread.RootID, r.thread.ID),
		Agent: target.Name, OriginAgent: target.Name, UserID: r.thread.UserID, Label: label,
		Tags: []string{"name:" + label}, Properties: map[string]any{subagentProperty: childRow(target, e, label, s.side)}, Arguments: args, Status: weft.ThreadIdle,
		CreatedAt: now, UpdatedAt: now, LastActivityAt: now}
	if child.Arguments == nil {
		child.Arguments = map[string]any{}
	}
	envRows := make([]weft.EnvValue, 0, len(own))
	for _, v := range own {
		envRows = append(envRows, v)
	}
	if err := r.e.store.CreateThread(ctx, child, envRows); err != nil {
		return nil, failure("Subagent could not be created: " + r.red.Error(err))
	}
	r.spawned.Store(true)
	r.e.roots.put(child)
	r.e.emitOutside(ctx, Event{Type: "thread_created", ThreadID: child.ID, RootID: child.RootID, Data: Fields{"parent_id": r.thread.ID}})
	r.e.emitSubagent(ctx, child, target.Name, "running", "created")
	r.runSubagentCreatedHooks(child)
	// A non-templated side-A prompt sees arguments beyond the init properties as a silent row.
	extra := map[string]any{}
	for k, v := range args {
		if k != msgProp && k != attProp && k != e.InitAgentNameProperty {
			extra[k] = v
		}
	}
	if len(extra) > 0 && sideA != nil && sideA.Template == nil {
		b, _ := json.MarshalIndent(args, "", "  ")
		if _, err := r.e.enqueue(ctx, child.ID, weft.NewMessage{Role: weft.RoleSystem, Content: "Subagent arguments:\n" + string(b), Silent: true}); err != nil {
			return nil, failure("Subagent could not be created: " + r.red.Error(err))
		}
	}
	init := weft.NewMessage{Role: weft.RoleUser, Content: initText(args[msgProp]), Metadata: map[string]any{"subagent_of": r.thread.ID}}
	if e.Resumable != nil && e.Resumable.Enabled && e.Resumable.ReceivesMessages == "side_b" {
		init.Role = weft.RoleAssistant
	}
	init.Attachments = atts
	if init.Content == "" && len(atts) == 0 {
		init.Content = "Begin your task."
	}
	if _, err := r.e.enqueue(ctx, child.ID, init); err != nil {
		return nil, failure("Subagent could not be created: " + r.red.Error(err))
	}
	return child, nil
}

func initText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// readAttachment reads a file of this thread as a new attachment for another thread.
func (r *run) readAttachment(ctx context.Context, p string) (weft.ToolAttachment, string) {
	a, err := r.e.readFileAttachment(ctx, r.thread.ID, p)
	if err != nil {
		return weft.ToolAttachment{}, err.Error()
	}
	return a, ""
}

// runSubagentCreatedHooks runs the parent agent's after_subagent_created hooks.
func (r *run) runSubagentCreatedHooks(child *weft.Thread) {
	hs := hooks.Select(r.e.reg, r.agent.Hooks, weft.HookAfterSubagentCreated)
	if len(hs) == 0 {
		return
	}
	ctx := context.WithoutCancel(r.ctx)
	parent := newState(stateCore{e: r.e, thread: r.thread, r: r, ctx: ctx})
	r.hooks.SubagentCreated(ctx, hooks.Set{Hooks: hs, State: parent}, newState(stateCore{e: r.e, thread: child, ctx: ctx}))
}

// reportedKey is the child run-state document holding how many of its stops were reported.
const reportedKey = "subagent_reported"

// childRow is a child's registry row, kept on the child thread.
func childRow(a *weft.Agent, e weft.ToolEntry, label string, owner weft.Side) map[string]any {
	row := map[string]any{"agent": a.Name, "label": label, "owner_side": string(owner),
		"blocking": weft.Flag(e.Blocking, true), "resumable": e.Resumable != nil && e.Resumable.Enabled}
	if e.Resumable != nil && e.Resumable.Enabled {
		row["receives_messages"] = orDefault(e.Resumable.ReceivesMessages, "side_a")
		row["parent_communication"] = orDefault(e.Resumable.ParentCommunication, "implicit")
	}
	return row
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
			res = r.createImmediateInstance(s, st.o, st.args)
			keep = res.Status != weft.ToolSuccess
		} else {
			res = r.callSubagent(s, st.o, c, nil, st.args)
			keep = weft.Flag(st.o.entry.Blocking, true) || res.Status != weft.ToolSuccess
		}
		if !keep {
			continue
		}
		m := &weft.Message{ID: weft.NewID("msg_"), Role: weft.RoleAssistant, Side: side, Status: weft.MessageCompleted, Prompt: p.Name,
			RunID: r.id, ToolCalls: []weft.ToolCall{c}, Metadata: map[string]any{"immediate": true}}
		if err := r.tx(func(tx weft.Tx) error { return r.insertRecorded(tx, m) }); err != nil {
			return err
		}
		r.addRow(*m)
		r.emitUnrecorded(*m)
		if _, err := r.tools.storeResult(s, m, c, res, weft.NewID("msg_"), nil); err != nil {
			return err
		}
	}
	return nil
}

// createImmediateInstance starts an immediate resumable instance without waiting for it.
func (r *run) createImmediateInstance(s *scope, o *offered, args map[string]any) weft.ToolResult {
	name, _ := args["agent"].(string)
	for _, re := range o.entries {
		if re.agent.Name != name {
			continue
		}
		eo := re.offered()
		child, fail := r.createChild(s, eo, args, weft.NewID("thr_"), nil)
		if fail != nil {
			return *fail
		}
		r.e.children.startChild(child, re.agent, s.side, childMode{resumable: true, explicit: eo.entry.Resumable.ParentCommunication == "explicit"})
		return weft.Success("The subagent was initiated successfully. Reference: " + child.ID)
	}
	return weft.Failure(fmt.Sprintf("Agent %q is not available for this prompt.", name))
}

func failure(text string) *weft.ToolResult {
	f := weft.Failure(text)
	return &f
}

// heldPrefix starts the run-state keys of held reports (heldPrefix + seq).
const heldPrefix = "subagent_held/"
