package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/declared"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/hooks"
	"github.com/weft-agents/weft/engine/runstate"
	"github.com/weft-agents/weft/engine/threadstate"
)

// dispatcher runs a run's tool calls: strictly one at a time in the order the model returned them,
// each result stored before the next call starts, then the tools queued with QueueTool.
type dispatcher struct {
	r *run
	// calls are the tool-call records the run stored, as stored.
	calls dispatch.Calls
	// queuedTools are the tools QueueTool queued, run after the step's calls.
	queuedTools []queuedTool
	// startedID is the call whose tool_started the reply's transaction, or the previous call's
	// result's, recorded (startsAtOnce): runCall does not emit it again.
	startedID string
}

// startsAtOnce reports whether the reply's transaction records c's tool_started (and the reply's
// message event before it) in a run that records its events: c is the reply's one call, and
// nothing that runCall does before it emits tool_started can write, emit or refuse the call — no
// hook applies, the call needs no approval, its arguments are valid, and the run is not being
// stopped. The tool then starts with nothing waiting to be recorded: no commit of its own
// (Journal.Flush) before it runs. A stop or shutdown that comes between the commit and the call
// leaves tool_started recorded for a call that then ends without running, as a crash between
// that commit and the tool does.
func (d *dispatcher) startsAtOnce(s *scope, msg *weft.Message, c weft.ToolCall) bool {
	r := d.r
	if !r.e.opt.RecordEvents || !r.e.commit.Observed() || s.depth != 0 || len(r.scopeHookIDs(s)) > 0 || len(r.agent.Hooks) > 0 ||
		s.needsApproval(c.Name) || r.stopRequested() || r.interrupting() || r.suspending() {
		return false
	}
	if i := slices.IndexFunc(msg.ToolCalls, func(mc weft.ToolCall) bool { return mc.ID == c.ID }); i < 0 || i >= weft.MaxToolCallsPerReply {
		return false // (runCall answers a call past the limit without running it)
	}
	_, _, _, errText := d.prepareCall(s, c, true)
	return errText == ""
}

type queuedTool struct {
	name string
	args json.RawMessage
}

// callResult is the outcome of one executed call.
type callResult struct {
	call   weft.ToolCall
	args   map[string]any
	raw    json.RawMessage // the arguments as the model wrote them, when a Go tool takes them so (args nil)
	result weft.ToolResult
	// removed: an after_tool_call hook returned nil; the call left the assistant message.
	removed bool
	msg     *weft.Message
}

// arg returns the call's validated argument of that name (nil when absent).
func (c *callResult) arg(name string) any {
	if c.args == nil && c.raw != nil {
		_ = json.Unmarshal(c.raw, &c.args) // accepted by AcceptsJSON: it decodes
	}
	return c.args[name]
}

// executeCalls runs a reply's calls strictly sequentially in returned order, each
// persisted as a tool message before the next starts.
func (d *dispatcher) executeCalls(s *scope, msg *weft.Message, calls []weft.ToolCall) ([]callResult, error) {
	results := make([]callResult, 0, len(calls))
	for i, c := range calls {
		var next *weft.ToolCall
		if i+1 < len(calls) {
			next = &calls[i+1]
		}
		if _, _, waiting := d.decided(s, msg, &c); waiting {
			return results, d.awaitApproval(s, msg, calls[i:])
		}
		res, err := d.executeCall(s, msg, c, next)
		if err != nil {
			return results, err
		}
		results = append(results, res)
	}
	return results, nil
}

// executeCall runs one call and stores its result. The call was marked running
// by the last transaction before it (the reply's, or the previous call's result); its own result
// transaction marks next running.
func (d *dispatcher) executeCall(s *scope, msg *weft.Message, c weft.ToolCall, next *weft.ToolCall) (callResult, error) {
	if d.r.obs == nil {
		return d.runCall(d.r.ctx, s, msg, c, next)
	}
	tc := ToolCall{Call: c, Depth: s.depth, Resumed: s.resumed}
	if o, ok := s.offered[c.Name]; ok {
		tc.Description = o.spec.Description
		if o.target.MCP != nil {
			tc.MCPServer = o.target.MCP.Name
		}
	}
	// The call's context carries its trace: a blocking subagent's run nests under it.
	ctx := d.r.obs.StartTool(d.r.ctx, tc)
	res, err := d.runCall(ctx, s, msg, c, next)
	end := ToolEnd{Committed: err == nil && (res.msg != nil || res.removed), Status: res.result.Status}
	if res.msg != nil {
		end.Status, end.Result = res.msg.ToolStatus, res.msg.Content
	}
	d.r.obs.EndTool(end)
	return res, err
}

// runCall is executeCall; the tool runs with ctx (the run's, carrying the call's trace).
func (d *dispatcher) runCall(ctx context.Context, s *scope, msg *weft.Message, c weft.ToolCall, next *weft.ToolCall) (callResult, error) {
	res := callResult{call: c}
	started := d.startedID == c.ID // its tool_started is recorded already (startsAtOnce)
	d.startedID = ""
	// The tool message id is allocated first: a sub-prompt's rows name it as their parent.
	resultID := weft.NewID("msg_")
	var tool *offered
	var exec *execution
	if d.r.suspending() {
		return res, errShutdown
	}
	overLimit := false
	for i, mc := range msg.ToolCalls {
		if mc.ID == c.ID {
			overLimit = i >= weft.MaxToolCallsPerReply
		}
	}
	denied, isDenied, _ := d.decided(s, msg, &c)
	res.call = c // with the arguments a person approved
	if err := d.startApproved(s, msg, c); err != nil {
		return res, err
	}
	switch {
	case d.r.ar.stop.Load() || d.r.ctx.Err() != nil:
		res.result = weft.Failure("Execution stopped by user")
	case d.r.interrupting() && s.depth == 0:
		// A new message interrupts the run: the calls of the reply not started yet are
		// answered without running (the one that started completed).
		res.result = weft.Failure("Not run: a new message from the user interrupted the run")
	case overLimit:
		res.result = weft.Failure(fmt.Sprintf("Not run: a reply may make %d tool calls at most; call the rest in your next reply.",
			weft.MaxToolCallsPerReply))
	case isDenied:
		res.result = denied
	default:
		var errText string
		tool, res.args, res.raw, errText = d.prepareCall(s, c, true)
		if errText != "" {
			res.result = weft.Failure(errText)
			break
		}
		exec = &execution{r: d.r, s: s, call: &c, entry: tool.entry, resultID: resultID}
		st := exec.state()
		if d.r.e.commit.Observed() && !started {
			d.r.journal.Emit("tool_started", ToolStarted{CallID: c.ID, Name: c.Name, Depth: s.depth})
		}
		d.r.hooks.ToolCallStarted(hooks.Set{Hooks: d.r.activeHooks(exec, weft.HookToolCallStarted), State: st}, c)
		if err := d.r.journal.Flush(); err != nil {
			return res, err
		}
		var parked string
		res.result, parked = d.invoke(ctx, s, st, tool, c, res.args, res.raw, msg)
		d.r.sync() // what the tool's State changed, before its result is redacted and stored
		if parked != "" {
			return res, errAwaitApproval // the call stays running; its child waits for decisions
		}
		d.r.hooks.ToolCallDone(hooks.Set{Hooks: d.r.activeHooks(exec, weft.HookToolCallDone), State: st}, c, res.result)
		replaced, keep := d.r.hooks.AfterToolCall(hooks.Set{Hooks: d.r.activeHooks(exec, hooks.AfterToolCallPoint(res.result)), State: st}, c, res.result)
		if !keep {
			res.removed = true
			return res, d.removeCall(msg, c)
		}
		res.result = replaced
		res.result = d.r.hooks.BeforeStore(hooks.Set{Hooks: d.r.activeHooks(exec, weft.HookBeforeStoreToolResult), State: st}, c, res.result)
	}
	if d.r.suspending() {
		// A shutdown interrupted the call: nothing is stored, and the resumed run treats the call
		// as a crash would have left it (an idempotent tool runs again).
		return res, errShutdown
	}
	m, err := d.store(s, msg, c, res.result, resultID, next, true)
	completed := next != nil && d.startedID == next.ID // recorded with the next call's start
	if err != nil {
		if exec != nil {
			// The tool ran: its result outlives a lost connection (resume stores it).
			d.r.e.sched.KeepResult(d.r.thread.ID, c.ID, res.result)
		}
		if next != nil {
			// Marked running by the transaction that failed, perhaps: its tool has not run.
			d.r.e.sched.KeepNotRun(d.r.thread.ID, next.ID)
		}
		return res, err
	}
	res.msg = m
	if d.r.e.commit.Observed() && !completed {
		d.r.journal.Emit("tool_completed", ToolCompleted{CallID: c.ID, Name: c.Name, Depth: s.depth, Status: res.result.Status})
	}
	return res, nil
}

// prepareCall resolves, parses and validates a call; a non-empty errText is the error result.
// With rawOK, arguments a Go tool can take as the model wrote them (schema.Validator.AcceptsJSON)
// come back as raw, with a nil map: they are neither decoded nor encoded again.
func (d *dispatcher) prepareCall(s *scope, c weft.ToolCall, rawOK bool) (o *offered, args map[string]any, raw json.RawMessage, errText string) {
	o, ok := s.offered[c.Name]
	if !ok && s.prompt.ToolChoice != weft.ToolChoiceNone {
		// A resumable subagent is offered through the lifecycle tools, not under its own name.
		for _, lo := range s.offered {
			for _, re := range lo.entries {
				if lo.lifecycle == children.ToolCreate && re.Agent.Name == c.Name {
					return nil, nil, nil, fmt.Sprintf("%q must be started with subagent_create.", c.Name)
				}
			}
		}
	}
	if !ok || s.prompt.ToolChoice == weft.ToolChoiceNone {
		names := make([]string, 0, len(s.specs))
		for _, sp := range s.specs {
			names = append(names, sp.Name)
		}
		if s.prompt.ToolChoice == weft.ToolChoiceNone {
			names = nil
		}
		list := strings.Join(names, ", ")
		if list == "" {
			list = "none"
		}
		return nil, nil, nil, fmt.Sprintf("Tool %q is not available for this prompt. Available tools: %s", c.Name, list)
	}
	text, errText := dispatch.ArgumentsText(c.Arguments)
	if errText != "" {
		return nil, nil, nil, errText
	}
	params := o.spec.Parameters
	if o.check != nil {
		params = o.check
	}
	bound := len(o.entry.Bindings) > 0 && o.target.Tool != nil
	if bound {
		// Bound parameters come from the prompt's arguments; the tool's full schema validates.
		params = argsSchema(o.target.Tool.Args)
	}
	if t := o.target.Tool; rawOK && !bound && t != nil && t.Execute != nil && o.lifecycle == "" {
		if v, err := d.r.e.validators.Of(params); err == nil && v.AcceptsJSON(text) {
			// What decoding, validating and encoding would give the tool, the text already says.
			if msg := d.missingVariable(s, o); msg != "" {
				return nil, nil, nil, msg
			}
			return o, nil, json.RawMessage(text), ""
		}
	}
	var bindings map[string]string
	if bound {
		bindings = o.entry.Bindings
	}
	m, errText := dispatch.Arguments(c.Name, text, params, d.r.e.validators.Of, bindings, s.args, s.strict)
	if errText != "" {
		return nil, nil, nil, errText
	}
	if msg := d.missingVariable(s, o); msg != "" {
		return nil, nil, nil, msg
	}
	return o, m, nil, ""
}

// missingVariable returns the error text for a required variable of the call's tool that the
// prompt's env does not set ("" when none is missing).
func (d *dispatcher) missingVariable(s *scope, o *offered) string {
	t := o.target.Tool
	if t == nil {
		return ""
	}
	env := s.env.With(s.prompt.Env, o.entry.Env)
	for _, vd := range weft.ToolVariables(t) {
		if vd.Required {
			if _, ok := env.Lookup(vd.Name); !ok {
				return fmt.Sprintf("Missing required variable %s for tool %s", vd.Name, t.Name)
			}
		}
	}
	return ""
}

// invoke runs the call's target with ctx (the call's, carrying its trace) and turns every failure
// into an error result. A Go tool takes raw when prepareCall gave it, args encoded otherwise.
// parked names what stopped awaiting approval inside the call — a blocking child (its thread id)
// or a sub-prompt's nested run (its result message id): the call parks the run too, and res is
// not a result.
func (d *dispatcher) invoke(ctx context.Context, s *scope, st *threadstate.State, o *offered, c weft.ToolCall, args map[string]any, raw json.RawMessage, msg *weft.Message) (res weft.ToolResult, parked string) {
	defer func() {
		if p := recover(); p != nil {
			res, parked = weft.ToolResult{Status: weft.ToolError, Error: fmt.Sprintf("tool panicked: %v", p), Stack: string(debug.Stack())}, ""
		}
	}()
	t := o.target
	switch {
	case o.lifecycle != "":
		return parentRun{d.r, s}.callLifecycle(o, args), ""
	case t.Prompt != nil:
		return (&subCall{r: d.r, scope: s, msgID: msg.ID, call: c, resultID: execOf(st).resultID}).start(o, args)
	case t.Agent != nil && t.Agent.Kind() == weft.AIHuman:
		return d.r.startHandoff(s, o, args), ""
	case t.Agent != nil:
		return parentRun{d.r, s}.callAgent(ctx, o, c, msg, args)
	case t.MCP != nil:
		mcp := dispatch.MCP{Client: d.r.e.opt.MCP, Log: d.r.e.log}
		return mcp.Call(ctx, d.r.ctx, t, args, envLookup(s.env.With(s.prompt.Env, o.entry.Env))), ""
	case t.Tool != nil && t.Tool.ExecutionMode == weft.ExecProvider:
		return weft.Failure(fmt.Sprintf("Tool %q is executed by the provider %q and cannot run locally.", t.Name, t.Tool.ExecutionProvider)), ""
	}
	if raw == nil {
		raw, _ = json.Marshal(args)
		if args == nil {
			raw = []byte("{}")
		}
	}
	h := t.Tool.Execute
	if h == nil && (t.Tool.Command != nil || t.Tool.HTTP != nil) {
		h = d.definedTool(t.Tool)
	}
	return dispatch.RunTool(ctx, d.r.ctx, st, t.Name, t.Tool, h, raw), ""
}

// definedTool is the handler of a command or http tool declared in definitions (package
// declared), given what only the run knows: the project root, its redactor and why it ended.
func (d *dispatcher) definedTool(t *weft.Tool) weft.ToolHandler {
	return dispatch.DefinedTool(t, declared.Options{Root: d.r.e.reg.Root, Redact: d.r.red.String, RunErr: d.r.ctx.Err})
}

// storeResult persists a call's tool message with its new attachments and marks the call done, in
// one transaction; next, when set, is marked running by it.
func (d *dispatcher) storeResult(s *scope, msg *weft.Message, c weft.ToolCall, res weft.ToolResult, id string, next *weft.ToolCall) (*weft.Message, error) {
	return d.store(s, msg, c, res, id, next, false)
}

// store is storeResult. completing: runCall stores the result of the call it ran, and emits its
// tool_completed once stored, unless the result's transaction records it with next's tool_started
// (startedID).
func (d *dispatcher) store(s *scope, msg *weft.Message, c weft.ToolCall, res weft.ToolResult, id string, next *weft.ToolCall, completing bool) (*weft.Message, error) {
	status := res.Status // as the call ended: its tool_completed's
	res = dispatch.ToStore(res, d.r.red)
	tm := &weft.Message{ID: id, Role: weft.RoleTool, Side: s.side, Name: c.Name, ToolCallID: c.ID,
		ToolStatus: res.Status, Status: weft.MessageCompleted, Depth: s.depth, ParentID: msg.ParentID, RunID: d.r.id}
	if s.depth > 0 {
		tm.ParentID = s.parentID
	}
	session := d.sessionTool(s, c.Name)
	prop := ""
	if session != nil {
		prop = session.MessageProperty // a bound session tool's message is this argument
	}
	tm.Content = dispatch.ResultContent(res, c.Arguments, prop)
	tm.Metadata = dispatch.ResultMeta(res, d.r.red)
	files, refs, err := dispatch.Attachments(res.Attachments, d.r.now, func(p string) (weft.FileInfo, error) {
		return d.r.e.store.Files().Stat(d.r.ctx, d.r.thread.ID, p)
	})
	if err != nil {
		tm.ToolStatus = weft.ToolError
		tm.Content = "Failed to execute tool: " + err.Error()
		files, refs = nil, nil
	}
	dispatch.AddAttachments(tm, files, refs, session == nil)
	d.r.hooks.BeforeInsert(d.r.scopeHooks(s, weft.HookBeforeCreateMessage), tm, d.r.red)
	now := d.r.now()
	// The next call starts at once: this transaction records what runCall would emit before it
	// (this result's message, the call's tool_completed, the next one's tool_started), and the
	// next call runs with nothing left to commit first (startsAtOnce).
	startNext := completing && next != nil && session == nil && d.startsAtOnce(s, msg, *next)
	staged := false
	err = d.r.tx(func(tx weft.Tx) error {
		staged = false
		for _, f := range files {
			if err := tx.WriteFile(&f.Info, f.Data); err != nil {
				return err
			}
		}
		if err := d.r.journal.Insert(tx, tm); err != nil {
			return err
		}
		if next != nil {
			rec := d.calls.Of(*next, msg.ID)
			rec.Idempotent = s.idempotent(next.Name)
			if d.markRunning(s, rec) {
				if err := tx.PutToolCall(rec); err != nil {
					return err
				}
				d.calls.Note(rec)
			}
		}
		done := d.calls.Done(c, msg.ID, now)
		done.ResultMessageID, done.Idempotent = tm.ID, s.idempotent(c.Name)
		if err := tx.PutToolCall(done); err != nil {
			return err
		}
		d.calls.Note(done)
		if startNext {
			d.r.journal.Stage(d.r.journal.Event("tool_completed", ToolCompleted{CallID: c.ID, Name: c.Name, Depth: s.depth, Status: status}))
			d.r.journal.Stage(d.r.journal.Event("tool_started", ToolStarted{CallID: next.ID, Name: next.Name, Depth: s.depth}))
			staged = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.r.hooks.AfterInsert(d.r.scopeHooks(s, weft.HookAfterCreateMessage), tm)
	if def := d.r.agent.Side(s.side); session != nil && session == def.SessionStatus && res.Status == weft.ToolSuccess && d.r.thread.ParentID != "" {
		// A subagent's sessionStatus call is its status text in the parent's registry.
		st := runState(d.r, nil)
		if err := st.SetStatus(context.WithoutCancel(d.r.ctx), tm.Content); err != nil {
			d.r.e.log.Warn("subagent status not recorded", "thread", d.r.thread.ID, "error", err)
		}
	}
	d.r.addRow(*tm)
	if staged {
		d.startedID = next.ID
	}
	d.r.journal.Stored(*tm)
	if s.depth > 0 {
		s.nested = append(s.nested, *tm)
	}
	return tm, nil
}

// sessionTool returns the session binding (sessionStop, sessionFail or sessionStatus) of a tool on
// the acting side at top level, or nil.
func (d *dispatcher) sessionTool(s *scope, name string) *weft.SessionTool {
	if s.depth != 0 {
		return nil
	}
	def := d.r.agent.Side(s.side)
	for _, b := range []*weft.SessionTool{def.SessionStop, def.SessionFail, def.SessionStatus} {
		if b != nil && b.Name == name {
			return b
		}
	}
	return nil
}

// markRunning marks a non-idempotent call running: after a crash such a call is
// not re-run but answered as interrupted. An idempotent call stays pending (it is re-run either
// way). It reports whether the record changed.
func (d *dispatcher) markRunning(s *scope, rec *weft.ToolCallRecord) bool {
	if !dispatch.MarksRunning(rec, s.needsApproval(rec.Name)) {
		return false
	}
	now := d.r.now()
	rec.Status, rec.StartedAt = weft.CallRunning, &now
	return true
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// removeCall drops a call from its assistant message after a hook returned nil;
// an assistant message left empty is deleted.
func (d *dispatcher) removeCall(msg *weft.Message, c weft.ToolCall) error {
	calls := slices.DeleteFunc(slices.Clone(msg.ToolCalls), func(x weft.ToolCall) bool { return x.ID == c.ID })
	deleted := len(calls) == 0 && strings.TrimSpace(msg.Content) == ""
	updated := *msg
	updated.ToolCalls = calls
	now := d.r.now()
	err := d.r.tx(func(tx weft.Tx) error {
		done := d.calls.Done(c, msg.ID, now)
		if err := tx.PutToolCall(done); err != nil {
			return err
		}
		d.calls.Note(done)
		if deleted {
			return tx.DeleteMessage(msg.ID)
		}
		if err := tx.UpdateMessage(msg.ID, weft.MessageChange{ToolCalls: &calls}); err != nil {
			return err
		}
		d.r.journal.StageMessage(&updated) // streamed again, without the call
		return nil
	})
	if err != nil {
		return err
	}
	*msg = updated
	d.r.replaceRow(*msg) // (after the mailbox's changes)
	if deleted {
		d.r.rows = slices.DeleteFunc(d.r.rows, func(m *weft.Message) bool { return m.ID == msg.ID })
		if d.r.e.commit.Observed() {
			d.r.journal.Emit("message_deleted", Fields{"message_id": msg.ID})
		}
		return nil
	}
	d.r.journal.Stored(*msg)
	return nil
}

// runQueuedTools runs tools queued with QueueTool after the current calls:
// their messages (tool_call_id queued_<n>) have no matching call and are not shown to the model.
func (d *dispatcher) runQueuedTools(s *scope) error {
	d.r.sync()
	for len(d.queuedTools) > 0 {
		q := d.queuedTools[0]
		d.queuedTools = d.queuedTools[1:]
		d.r.state.QueuedTools++
		c := weft.ToolCall{ID: fmt.Sprintf("queued_%d", d.r.state.QueuedTools), Name: q.name, Arguments: string(q.args)}
		ctx := d.r.ctx
		if d.r.obs != nil {
			ctx = d.r.obs.StartTool(ctx, ToolCall{Call: c})
		}
		t, ok := d.r.e.reg.Tool(q.name)
		var res weft.ToolResult
		if !ok {
			res = weft.Failure(fmt.Sprintf("Tool %q is not defined", q.name))
		} else {
			qs := &scope{prompt: s.prompt, depth: 0, side: s.side, offered: map[string]*offered{}, env: s.env, fx: s.fx}
			o := &offered{entry: weft.ToolEntry{Name: q.name}, target: weft.Target{Kind: weft.EntryTool, Name: q.name, Tool: t},
				spec: weft.ToolSpec{Name: q.name, Description: t.Description, Parameters: argsSchema(t.Args)}}
			qs.offered[q.name] = o
			qs.specs = []weft.ToolSpec{o.spec}
			_, args, raw, errText := d.prepareCall(qs, c, true)
			if errText != "" {
				res = weft.Failure(errText)
			} else {
				exec := &execution{r: d.r, s: qs, call: &c, entry: o.entry, resultID: weft.NewID("msg_")}
				st := exec.state()
				res, _ = d.invoke(ctx, qs, st, o, c, args, raw, &weft.Message{}) // (a registry tool: nothing parks)
			}
		}
		tm := &weft.Message{Role: weft.RoleTool, Side: s.side, Name: q.name, ToolCallID: c.ID, ToolStatus: res.Status,
			Status: weft.MessageCompleted, RunID: d.r.id, Metadata: map[string]any{"queued": true}}
		if res.Status == weft.ToolSuccess {
			tm.Content = orDefault(strings.TrimSpace(d.r.red.String(res.Result)), "Tool executed successfully")
		} else {
			tm.Content = "Failed to execute tool: " + d.r.red.String(res.Error)
		}
		err := d.r.tx(func(tx weft.Tx) error {
			if err := d.r.journal.Insert(tx, tm); err != nil {
				return err
			}
			return tx.SetExecState(runstate.Key, d.r.state.Encode())
		})
		if d.r.obs != nil {
			d.r.obs.EndTool(ToolEnd{Committed: err == nil, Status: tm.ToolStatus, Result: tm.Content})
		}
		if err != nil {
			return err
		}
		d.r.addRow(*tm)
		d.r.journal.Stored(*tm)
	}
	return nil
}
