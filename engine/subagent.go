package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/weft-agents/weft"
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
		r.e.startChild(child, target, s.side, childMode{})
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
	info, err := r.e.runChild(ctx, child, resume)
	if err != nil {
		return weft.Failure(fmt.Sprintf("Subagent (reference: %s) could not run: %s", child.ID, r.red.Error(err)))
	}
	if info.Reason == weft.StopAwaitingApproval {
		// The child waits for a person: so does this call (it stays running, with the child's
		// reference), and the run stops until the child's calls are decided.
		r.tools.childParked = child.ID
		return weft.ToolResult{}
	}
	out := r.e.childResult(context.WithoutCancel(ctx), child, target, info)
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
		v, ok := r.env.lookup(name)
		return ok && flagOn(v.value)
	}
	decls := newGraph(r.e.reg, target, flag).declared()
	inherited, err := ancestorEnv(ctx, r.e.store, r.thread.ID, decls)
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
	view := &envView{thread: own, inherited: inherited, agent: target.Env, user: r.env.user, instance: r.env.instance, declared: r.e.declaredOf(target)}
	if missing := missingVariables(decls, view); len(missing) > 0 {
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
	hooks := r.e.hooksFor(r.agent.Hooks, weft.HookAfterSubagentCreated)
	if len(hooks) == 0 {
		return
	}
	ctx := context.WithoutCancel(r.ctx)
	parent := &threadState{e: r.e, thread: r.thread, r: r, ctx: ctx}
	cs := &threadState{e: r.e, thread: child, ctx: ctx}
	for _, h := range hooks {
		f, _ := weft.HookFunc[weft.SubagentCreatedFunc](*h)
		if err := call(func() error { return f(ctx, parent, cs) }); err != nil {
			r.hookFailed(h, err)
		}
	}
}

// runChild runs a child until it stops and returns the stop: its queued messages, else (resume:
// re-attaching after a crash) the run the crash interrupted, else — it had already stopped — the
// stored stop reason.
func (e *Engine) runChild(ctx context.Context, child *weft.Thread, resume bool) (weft.StopInfo, error) {
	// A run of the child in this process (a background driver's) ends first: it drains our
	// message, or leaves it queued for us.
	held, release, err := e.acquire(ctx, child.ID)
	if err != nil {
		return weft.StopInfo{}, err
	}
	defer release()
	q, err := e.store.Queued(held, child.ID)
	if err != nil {
		return weft.StopInfo{}, err
	}
	t, err := e.store.Thread(held, child.ID)
	if err != nil {
		return weft.StopInfo{}, err
	}
	var res *RunResult
	switch {
	case len(q) > 0:
		res, err = e.runHeld(held, child.ID, "message", "", nil)
	case resume && (t.Status == weft.ThreadRunning || t.Status == weft.ThreadAwaitingApproval):
		res, err = e.runHeld(held, child.ID, "continue", "", nil)
	}
	if err != nil {
		return weft.StopInfo{}, err
	}
	if res != nil && len(res.Stops) > 0 {
		return res.Last(), nil
	}
	// Drained by the run that ended before our turn: its stop is ours.
	if t, err = e.store.Thread(held, child.ID); err != nil {
		return weft.StopInfo{}, err
	}
	st, err := loadExecState(held, e.store, child.ID)
	if err != nil {
		return weft.StopInfo{}, err
	}
	return weft.StopInfo{Reason: t.StopReason, Seq: st.Stops}, nil
}

// childResult is a stopped child's outcome (childOutcome) with the child's secrets redacted: it
// leaves the child's thread for its parent's, whose redaction knows only the parent's layers, and
// a secret given to the child alone (the variables API) would reach the parent's rows and model.
// When the child's secrets cannot be read, the outcome is withheld rather than passed on.
func (e *Engine) childResult(ctx context.Context, child *weft.Thread, a *weft.Agent, info weft.StopInfo) weft.ToolResult {
	out := e.childOutcome(ctx, child, a, info)
	red, err := e.Redactor(ctx, child.ID)
	if err != nil {
		return weft.Failure("Subagent result could not be redacted: " + err.Error())
	}
	out.Result, out.Error = red(out.Result), red(out.Error)
	return out
}

// childOutcome is a stopped child's outcome, first match: a session stop's
// text; with session tools bound, their latest call (never called is a failure); a failing stop's
// error; else the content of the latest top-level non-tool row.
func (e *Engine) childOutcome(ctx context.Context, child *weft.Thread, a *weft.Agent, info weft.StopInfo) weft.ToolResult {
	if info.Reason == weft.StopSession && info.Error == "" && info.RunID == "" {
		// Known from the store only (the stop happened before a crash): the session tool call's text.
		if out, ok := e.sessionCallResult(ctx, child, a); ok {
			return out
		}
	}
	switch info.Reason {
	case weft.StopSession, weft.StopStateSession:
		return weft.Success(info.Error)
	case weft.StopSessionFail:
		if info.Error == "" && info.RunID == "" {
			if out, ok := e.sessionCallResult(ctx, child, a); ok {
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
	rows, err := e.store.Messages(ctx, child.ID, weft.MessageQuery{Limit: 20, Desc: true, Roles: []weft.Role{weft.RoleAssistant, weft.RoleUser}})
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

func (e *Engine) startChild(child *weft.Thread, a *weft.Agent, owner weft.Side, mode childMode) {
	e.goDrive(context.Background(), child, a, owner, mode, false)
}

// goDrive starts driveChild in the background, registered as the child's driver until it returns:
// Recover leaves a child that this process drives to its driver, which reports what it runs.
func (e *Engine) goDrive(ctx context.Context, child *weft.Thread, a *weft.Agent, owner weft.Side, mode childMode, resume bool) {
	e.mu.Lock()
	e.ownerOf(child.ID).drivers++
	e.mu.Unlock()
	done := e.busy(orDefault(child.RootID, child.ID))
	e.bg.Go(func() {
		defer func() {
			e.mu.Lock()
			o := e.owners[child.ID]
			o.drivers--
			e.dropIfUnused(child.ID, o)
			e.mu.Unlock()
			done()
		}()
		e.driveChild(ctx, child, a, owner, mode, resume)
	})
}

// driveArgs reads from a background child's registry row what its driver needs: its agent, the
// parent side it reports to and how it reports.
func (e *Engine) driveArgs(child *weft.Thread) (*weft.Agent, weft.Side, childMode, bool) {
	row, ok := registryRow(child)
	if !ok {
		return nil, "", childMode{}, false
	}
	a, ok := e.reg.Agent(child.Agent)
	if !ok {
		return nil, "", childMode{}, false
	}
	owner, _ := row["owner_side"].(string)
	return a, weft.Side(owner), childMode{resumable: row["resumable"] == true, explicit: row["parent_communication"] == "explicit"}, true
}

// drivenHere tells whether a driver of this process is running the child.
func (e *Engine) drivenHere(childID string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	o := e.owners[childID]
	return o != nil && o.drivers > 0
}

// driveChild runs a background child run by run while it has work, reporting each run's outcome
// exactly once: whichever goroutine performs a run reports it, and a goroutine that finds the
// child's queue empty once it has the child's turn leaves it (the run before took the messages
// and reported).
//
// resume: the child's status says running because a crash interrupted its run (Recover); only
// then is a run without queued messages started, and only as the first one.
func (e *Engine) driveChild(ctx context.Context, child *weft.Thread, a *weft.Agent, owner weft.Side, mode childMode, resume bool) {
	for {
		info, ran, err := e.driveOnce(ctx, child, resume)
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
			out = e.childResult(ctx, child, a, info)
		}
		if mode.resumable {
			e.childStopped(ctx, child, out)
		} else {
			e.finishChild(ctx, child, out)
		}
		if !mode.explicit && !e.holdReport(ctx, child.ID, heldReport{Owner: owner, Out: out, Seq: info.Seq}) {
			e.report(ctx, child, owner, out, info.Seq, false)
		}
		if !mode.resumable || err != nil {
			return
		}
	}
}

// driveOnce performs one run of a background child, holding its turn; ran is false when there
// was nothing to run (or another process runs it).
func (e *Engine) driveOnce(ctx context.Context, child *weft.Thread, resume bool) (weft.StopInfo, bool, error) {
	held, release, err := e.acquire(ctx, child.ID)
	if err != nil {
		return weft.StopInfo{}, false, nil
	}
	defer release()
	q, err := e.store.Queued(held, child.ID)
	if err != nil {
		e.log.Warn("subagent queue unreadable", "thread", child.ID, "error", err)
		return weft.StopInfo{}, false, nil
	}
	t, err := e.store.Thread(held, child.ID)
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
	info, _, _, err := e.runOnce(held, child.ID, trigger, "", nil, nil)
	switch {
	case errors.Is(err, errNothingQueued), errors.Is(err, weft.ErrLeaseHeld):
		// Taken by a run of another process, which reports it.
		return weft.StopInfo{}, false, nil
	case err == nil && info.Reason == "":
		return weft.StopInfo{}, false, nil // suspended by a shutdown
	}
	return info, true, err
}

// reportedKey is the child run-state document holding how many of its stops were reported.
const reportedKey = "subagent_reported"

// report queues a child's outcome to its parent, once per child stop: reports
// are numbered by the child's stop count, a report already queued or stored in the parent is not
// sent again, and the number reported is recorded on the child — so a recovery after a crash
// re-sends exactly what was lost.
//
// recovering: the report may have been sent by a process that died before recording it, so the
// parent's queue and rows are searched too (a fresh stop needs only the recorded count).
func (e *Engine) report(ctx context.Context, child *weft.Thread, owner weft.Side, out weft.ToolResult, seq int, recovering bool) {
	if seq > 0 && loadReported(ctx, e.store, child.ID).has(seq) {
		return
	}
	if seq > 0 && recovering && e.reportedBefore(ctx, child, seq) {
		return
	}
	text := fmt.Sprintf("Subagent (reference: %s) has returned the following result:\n\n%s", child.ID, out.Result)
	if out.Status != weft.ToolSuccess {
		text = fmt.Sprintf("Subagent (reference: %s) has reported a failure:\n\n%s", child.ID, out.Error)
	}
	var atts []weft.ToolAttachment
	for _, a := range out.Attachments {
		if a.IsRef() {
			if c, err := e.readFileAttachment(ctx, child.ID, a.Path); err == nil {
				atts = append(atts, c)
			}
		}
	}
	if err := e.deliverSeq(ctx, child, owner, text, "subagent_result", atts, seq); err != nil {
		e.log.Warn("subagent report not delivered", "parent", child.ParentID, "child", child.ID, "error", err)
		return
	}
	if seq > 0 {
		e.markReported(ctx, child.ID, seq)
	}
}

// reportedBefore tells whether report seq of child is already queued or stored in the parent.
func (e *Engine) reportedBefore(ctx context.Context, child *weft.Thread, seq int) bool {
	is := func(meta map[string]any) bool {
		n, _ := meta["report_seq"].(float64)
		if i, ok := meta["report_seq"].(int); ok {
			n = float64(i)
		}
		return meta["subagent_id"] == child.ID && meta["kind"] == "subagent_result" && int(n) == seq
	}
	if q, err := e.store.Queued(ctx, child.ParentID); err == nil {
		for _, m := range q {
			if is(m.Metadata) {
				return true
			}
		}
	}
	rows, err := e.store.Messages(ctx, child.ParentID, weft.MessageQuery{Limit: 500, Desc: true, Roles: []weft.Role{weft.RoleUser, weft.RoleAssistant}})
	if err == nil {
		for _, m := range rows {
			if is(m.Metadata) {
				return true
			}
		}
	}
	return false
}

// reportedSet is a child's record of reported stops: every seq up to Upto, and More above it
// (reports of concurrent runs can finish out of order).
type reportedSet struct {
	Upto int   `json:"upto"`
	More []int `json:"more,omitempty"`
}

func (r reportedSet) has(seq int) bool { return seq <= r.Upto || slices.Contains(r.More, seq) }

func loadReported(ctx context.Context, st weft.Store, childID string) reportedSet {
	var r reportedSet
	if docs, err := st.ExecState(ctx, childID); err == nil {
		_ = json.Unmarshal(docs[reportedKey], &r)
	}
	return r
}

func (e *Engine) markReported(ctx context.Context, childID string, seq int) {
	e.reportMu.Lock()
	defer e.reportMu.Unlock()
	r := loadReported(ctx, e.store, childID)
	if r.has(seq) {
		return
	}
	r.More = append(r.More, seq)
	for slices.Contains(r.More, r.Upto+1) {
		r.Upto++
		r.More = slices.DeleteFunc(r.More, func(n int) bool { return n <= r.Upto })
	}
	doc, _ := json.Marshal(r)
	if err := e.tx(ctx, childID, nil, keep, func(tx weft.Tx) error { return tx.SetExecState(reportedKey, doc) }); err != nil {
		e.log.Warn("subagent report not recorded", "child", childID, "error", err)
	}
}

// deliver queues a silent message from a child to its parent, role by owner side (A → user,
// B → assistant), tagged with the child's reference, its files copied into the parent's
// /attachments/ and listed; a parent run starts in the background unless the parent is stopped.
func (e *Engine) deliver(ctx context.Context, child *weft.Thread, owner weft.Side, text, kind string, atts []weft.ToolAttachment) error {
	return e.deliverSeq(ctx, child, owner, text, kind, atts, 0)
}

// deliverSeq is deliver with a report number in the metadata (0 = none).
func (e *Engine) deliverSeq(ctx context.Context, child *weft.Thread, owner weft.Side, text, kind string, atts []weft.ToolAttachment, seq int) error {
	role := weft.RoleUser
	if owner == weft.SideB {
		role = weft.RoleAssistant
	}
	// The child's secrets and the parent's: the text leaves the child for the parent's thread.
	for _, id := range []string{child.ID, child.ParentID} {
		red, err := e.Redactor(ctx, id)
		if err != nil {
			return fmt.Errorf("subagent message not redacted: %w", err)
		}
		text = red(text)
	}
	parent, err := e.store.Thread(ctx, child.ParentID)
	if err != nil {
		return err
	}
	ps := &threadState{e: e, thread: parent}
	stored, err := ps.storeAttachments(ctx, atts)
	if err != nil {
		return err
	}
	if len(stored) > 0 {
		text += "\n\nAttachments:"
		for _, a := range stored {
			text += "\n- " + a.Path
		}
	}
	refs := make([]weft.ToolAttachment, len(stored))
	for i, a := range stored {
		refs[i] = weft.ToolAttachment{ID: a.ID, Path: a.Path, Name: a.Name}
	}
	meta := map[string]any{"subagent_id": child.ID, "kind": kind}
	if seq > 0 {
		meta["report_seq"] = seq
	}
	if _, err := e.Send(ctx, child.ParentID, weft.NewMessage{Role: role, Content: text, Silent: true, Attachments: refs,
		Metadata: meta}); err != nil {
		return err
	}
	e.wake(ctx, child.ParentID, orDefault(child.RootID, child.ParentID), nil)
	return nil
}

// readFileAttachment reads a file of a thread as a new attachment for another thread.
func (e *Engine) readFileAttachment(ctx context.Context, threadID, p string) (weft.ToolAttachment, error) {
	clean, err := weft.CleanPath(p)
	if err != nil {
		return weft.ToolAttachment{}, fmt.Errorf("Attachment not found: %s", p)
	}
	fi, err := e.store.Files().Stat(ctx, threadID, clean)
	if err != nil {
		return weft.ToolAttachment{}, fmt.Errorf("Attachment not found: %s", p)
	}
	data, err := e.store.Files().ReadFile(ctx, threadID, clean)
	if err != nil {
		return weft.ToolAttachment{}, fmt.Errorf("Attachment not found: %s", p)
	}
	return weft.ToolAttachment{Name: fi.Name, MimeType: fi.MimeType, Data: data, Width: fi.Width, Height: fi.Height}, nil
}

// Wait blocks until background work is done: non-blocking subagents, their reports and the parent
// runs those start (`weft run` waits for all descendants).
func (e *Engine) Wait() { e.bg.Wait() }

// sessionCallResult derives a stopped child's outcome from its latest successful sessionStop or
// sessionFail call: the call's messageProperty argument, else the tool's result.
func (e *Engine) sessionCallResult(ctx context.Context, child *weft.Thread, a *weft.Agent) (weft.ToolResult, bool) {
	rows, err := e.store.Messages(ctx, child.ID, weft.MessageQuery{Limit: 50, Desc: true, Roles: []weft.Role{weft.RoleTool, weft.RoleAssistant, weft.RoleUser}})
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

// isImmediateKey reports whether k, an entry of execState.Immediate, is side:prompt. (Compared in
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
		r.e.startChild(child, re.agent, s.side, childMode{resumable: true, explicit: eo.entry.Resumable.ParentCommunication == "explicit"})
		return weft.Success("The subagent was initiated successfully. Reference: " + child.ID)
	}
	return weft.Failure(fmt.Sprintf("Agent %q is not available for this prompt.", name))
}

func failure(text string) *weft.ToolResult {
	f := weft.Failure(text)
	return &f
}

// awaiting is a child a blocking call awaits: the calls waiting, and the outcomes of background
// runs that ended meanwhile.
type awaiting struct {
	calls int
	held  []heldReport
}

// heldReport is a background run's report held back while a blocking call awaits the child. It
// is kept in the child's run state (heldKey) until sent, so a crash meanwhile loses nothing:
// Recover sends it.
type heldReport struct {
	Owner weft.Side       `json:"owner"`
	Out   weft.ToolResult `json:"out"`
	Seq   int             `json:"seq"`
}

// heldPrefix starts the run-state keys of held reports (heldPrefix + seq).
const heldPrefix = "subagent_held/"

func heldKey(seq int) string { return heldPrefix + strconv.Itoa(seq) }

// beginAwait registers a blocking call awaiting child: until endAwait, the reports of the child's
// background runs are held back, since the run that answers the call returns its outcome as the
// call's result and is not reported as well.
func (e *Engine) beginAwait(childID string) {
	e.awaitMu.Lock()
	defer e.awaitMu.Unlock()
	if e.awaited == nil {
		e.awaited = map[string]*awaiting{}
	}
	a := e.awaited[childID]
	if a == nil {
		a = &awaiting{}
		e.awaited[childID] = a
	}
	a.calls++
}

// holdReport holds a background run's report back while a blocking call awaits the child, and
// keeps it in the child's run state until it is sent or answered.
func (e *Engine) holdReport(ctx context.Context, childID string, h heldReport) bool {
	e.awaitMu.Lock()
	defer e.awaitMu.Unlock()
	a := e.awaited[childID]
	if a == nil {
		return false
	}
	a.held = append(a.held, h)
	if doc, err := json.Marshal(h); err == nil && h.Seq > 0 {
		if err := e.tx(ctx, childID, nil, keep, func(tx weft.Tx) error { return tx.SetExecState(heldKey(h.Seq), doc) }); err != nil {
			e.log.Warn("held subagent report not recorded", "child", childID, "error", err)
		}
	}
	return true
}

// endAwait ends a blocking call that returned stop answered as its result: that stop is recorded
// as reported, and the held reports of other stops are sent now.
func (e *Engine) endAwait(ctx context.Context, child *weft.Thread, answered int) {
	e.awaitMu.Lock()
	a := e.awaited[child.ID]
	a.calls--
	held := a.held
	a.held = nil
	if a.calls == 0 {
		delete(e.awaited, child.ID)
	}
	e.awaitMu.Unlock()
	if answered > 0 {
		e.markReported(ctx, child.ID, answered)
	}
	for _, h := range held {
		if h.Seq != answered {
			e.report(ctx, child, h.Owner, h.Out, h.Seq, false)
		}
	}
	e.dropHeld(ctx, child.ID, held)
}

// dropHeld removes the run-state records of held reports that were sent or answered.
func (e *Engine) dropHeld(ctx context.Context, childID string, held []heldReport) {
	if len(held) == 0 {
		return
	}
	err := e.tx(ctx, childID, nil, keep, func(tx weft.Tx) error {
		for _, h := range held {
			if err := tx.SetExecState(heldKey(h.Seq), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		e.log.Warn("held subagent reports not cleared", "child", childID, "error", err)
	}
}

// sendHeld sends, after a restart, the reports that were held back for a blocking call when the
// process died (in stop order), and clears their records.
func (e *Engine) sendHeld(ctx context.Context, child *weft.Thread) error {
	docs, err := e.store.ExecState(ctx, child.ID)
	if err != nil {
		return err
	}
	var held []heldReport
	for k, doc := range docs {
		var h heldReport
		if strings.HasPrefix(k, heldPrefix) && json.Unmarshal(doc, &h) == nil && h.Seq > 0 {
			held = append(held, h)
		}
	}
	slices.SortFunc(held, func(a, b heldReport) int { return a.Seq - b.Seq })
	for _, h := range held {
		e.report(ctx, child, h.Owner, h.Out, h.Seq, true)
	}
	e.dropHeld(ctx, child.ID, held)
	return nil
}
