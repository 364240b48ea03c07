package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"path"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
	"github.com/weft-agents/weft/engine/runstate"
	"github.com/weft-agents/weft/schema"
)

// dispatch runs a run's tool calls: strictly one at a time in the order the model returned them,
// each result stored before the next call starts, then the tools queued with QueueTool.
type dispatch struct {
	r *run
	// callRecs are the tool-call records the run stored, as stored (noteCall).
	callRecs []*weft.ToolCallRecord
	// queuedTools are the tools QueueTool queued, run after the step's calls.
	queuedTools []queuedTool
	// childParked names what stopped awaiting approval inside a call — a blocking child (its
	// thread id) or a sub-prompt's nested run (its result message id): the call parks the run too.
	childParked string
	// resuming: the run is finishing the calls a crashed run left open (resume).
	resuming bool
	// toolCtx is the context of the observed tool call in progress, carrying its trace (nil when
	// none, or unobserved): a blocking subagent's run nests under it.
	toolCtx context.Context
	// startedID is the call whose tool_started the reply's transaction, or the previous call's
	// result's, recorded (startsAtOnce): runCall does not emit it again.
	startedID string
	// completing: runCall is storing a call's result, and emits its tool_completed once stored,
	// unless the result's transaction recorded it with the next call's tool_started (startedID).
	completing bool
}

// startsAtOnce reports whether the reply's transaction records c's tool_started (and the reply's
// message event before it) in a run that records its events: c is the reply's one call, and
// nothing that runCall does before it emits tool_started can write, emit or refuse the call — no
// hook applies, the call needs no approval, its arguments are valid, and the run is not being
// stopped. The tool then starts with nothing waiting to be recorded: no commit of its own
// (flushEvents) before it runs. A stop or shutdown that comes between the commit and the call
// leaves tool_started recorded for a call that then ends without running, as a crash between
// that commit and the tool does.
func (d *dispatch) startsAtOnce(s *scope, msg *weft.Message, c weft.ToolCall) bool {
	r := d.r
	if !r.e.opt.RecordEvents || !r.e.observed() || s.depth != 0 || len(r.scopeHookIDs(s)) > 0 || len(r.agent.Hooks) > 0 ||
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
func (d *dispatch) executeCalls(s *scope, msg *weft.Message, calls []weft.ToolCall) ([]callResult, error) {
	results := make([]callResult, 0, len(calls))
	for i, c := range calls {
		var next *weft.ToolCall
		if i+1 < len(calls) {
			next = &calls[i+1]
		}
		if _, _, waiting := d.r.decided(s, msg, &c); waiting {
			return results, d.r.awaitApproval(s, msg, calls[i:])
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
func (d *dispatch) executeCall(s *scope, msg *weft.Message, c weft.ToolCall, next *weft.ToolCall) (callResult, error) {
	if d.r.obs == nil {
		return d.runCall(d.r.ctx, s, msg, c, next)
	}
	tc := ToolCall{Call: c, Depth: s.depth, Resumed: d.resuming}
	if o, ok := s.offered[c.Name]; ok {
		tc.Description = o.spec.Description
		if o.target.MCP != nil {
			tc.MCPServer = o.target.MCP.Name
		}
	}
	ctx := d.r.obs.StartTool(d.r.ctx, tc)
	prev := d.toolCtx
	d.toolCtx = ctx
	res, err := d.runCall(ctx, s, msg, c, next)
	d.toolCtx = prev
	end := ToolEnd{Committed: err == nil && (res.msg != nil || res.removed), Status: res.result.Status}
	if res.msg != nil {
		end.Status, end.Result = res.msg.ToolStatus, res.msg.Content
	}
	d.r.obs.EndTool(end)
	return res, err
}

// runCall is executeCall; the tool runs with ctx (the run's, carrying the call's trace).
func (d *dispatch) runCall(ctx context.Context, s *scope, msg *weft.Message, c weft.ToolCall, next *weft.ToolCall) (callResult, error) {
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
	denied, isDenied, _ := d.r.decided(s, msg, &c)
	res.call = c // with the arguments a person approved
	if err := d.r.startApproved(s, msg, c); err != nil {
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
		st := d.r.state_(exec)
		st.ctx = ctx
		if d.r.e.observed() && !started {
			d.r.emit("tool_started", ToolStarted{CallID: c.ID, Name: c.Name, Depth: s.depth})
		}
		d.r.hooks.ToolCallStarted(hooks.Set{Hooks: d.r.activeHooks(exec, weft.HookToolCallStarted), State: st}, c)
		if err := d.r.flushEvents(); err != nil {
			return res, err
		}
		res.result = d.invoke(s, st, tool, c, res.args, res.raw, msg)
		d.r.sync() // what the tool's State changed, before its result is redacted and stored
		if d.childParked != "" {
			d.childParked = ""
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
	d.completing = true
	m, err := d.storeResult(s, msg, c, res.result, resultID, next)
	d.completing = false
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
	if d.r.e.observed() && !completed {
		d.r.emit("tool_completed", ToolCompleted{CallID: c.ID, Name: c.Name, Depth: s.depth, Status: res.result.Status})
	}
	return res, nil
}

// prepareCall resolves, parses and validates a call; a non-empty errText is the error result.
// With rawOK, arguments a Go tool can take as the model wrote them (schema.Validator.AcceptsJSON)
// come back as raw, with a nil map: they are neither decoded nor encoded again.
func (d *dispatch) prepareCall(s *scope, c weft.ToolCall, rawOK bool) (o *offered, args map[string]any, raw json.RawMessage, errText string) {
	o, ok := s.offered[c.Name]
	if !ok && s.prompt.ToolChoice != weft.ToolChoiceNone {
		// A resumable subagent is offered through the lifecycle tools, not under its own name.
		for _, lo := range s.offered {
			for _, re := range lo.entries {
				if lo.lifecycle == toolSubagentCreate && re.agent.Name == c.Name {
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
	text := strings.TrimSpace(c.Arguments)
	if text == "" {
		text = "{}"
	}
	if len(text) > weft.MaxToolArgumentsBytes {
		return nil, nil, nil, fmt.Sprintf("Tool arguments are %s; the limit is %s. Pass large content in a file instead.",
			weft.ByteSize(int64(len(text))), weft.ByteSize(weft.MaxToolArgumentsBytes))
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
		if v, err := d.r.e.validator(params); err == nil && v.AcceptsJSON(text) {
			// What decoding, validating and encoding would give the tool, the text already says.
			if msg := d.missingVariable(s, o); msg != "" {
				return nil, nil, nil, msg
			}
			return o, nil, json.RawMessage(text), ""
		}
	}
	if d := weft.JSONDepth([]byte(text)); d > weft.MaxToolArgumentsDepth {
		return nil, nil, nil, fmt.Sprintf("Tool arguments nest %d levels deep; the limit is %d.", d, weft.MaxToolArgumentsDepth)
	}
	var decoded any
	if err := json.Unmarshal([]byte(text), &decoded); err != nil {
		return nil, nil, nil, "Tool arguments are not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
	}
	if decoded == nil {
		decoded = map[string]any{}
	}
	if obj, ok := decoded.(map[string]any); ok && bound {
		for param, arg := range o.entry.Bindings {
			if val, ok := s.args[arg]; ok {
				obj[param] = val
			}
		}
	}
	if s.strict {
		decoded = schema.DropNulls(params, decoded)
	}
	v, err := d.r.e.validator(params)
	if err != nil {
		return nil, nil, nil, fmt.Sprintf("Tool %q has an invalid argument schema: %v", c.Name, err)
	}
	out, err := v.Validate(decoded)
	if err != nil {
		return nil, nil, nil, "Tool argument validation failed: " + err.Error()
	}
	m, _ := out.(map[string]any)
	if msg := d.missingVariable(s, o); msg != "" {
		return nil, nil, nil, msg
	}
	return o, m, nil, ""
}

// missingVariable returns the error text for a required variable of the call's tool that the
// prompt's env does not set ("" when none is missing).
func (d *dispatch) missingVariable(s *scope, o *offered) string {
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

// invoke runs the call's target and turns every failure into an error result.
// A Go tool takes raw when prepareCall gave it, args encoded otherwise.
func (d *dispatch) invoke(s *scope, st *threadState, o *offered, c weft.ToolCall, args map[string]any, raw json.RawMessage, msg *weft.Message) (res weft.ToolResult) {
	defer func() {
		if p := recover(); p != nil {
			res = weft.ToolResult{Status: weft.ToolError, Error: fmt.Sprintf("tool panicked: %v", p), Stack: string(debug.Stack())}
		}
	}()
	t := o.target
	switch {
	case o.lifecycle != "":
		return d.r.callLifecycle(s, o, c, msg, args)
	case t.Prompt != nil:
		return d.r.callSubPrompt(s, o, c, msg.ID, args, st.exec.resultID)
	case t.Agent != nil && t.Agent.Kind() == weft.AIHuman:
		return d.r.startHandoff(s, o, args)
	case t.Agent != nil:
		return d.r.callSubagent(s, o, c, msg, args)
	case t.MCP != nil:
		return d.r.callMCP(s, st, o, args)
	case t.Tool != nil && t.Tool.ExecutionMode == weft.ExecProvider:
		return weft.Failure(fmt.Sprintf("Tool %q is executed by the provider %q and cannot run locally.", t.Name, t.Tool.ExecutionProvider))
	}
	if raw == nil {
		raw, _ = json.Marshal(args)
		if args == nil {
			raw = []byte("{}")
		}
	}
	ctx := st.ctx
	if t.Tool.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Tool.Timeout.D())
		defer cancel()
	}
	var out weft.ToolResult
	var err error
	switch {
	case t.Tool.Execute != nil:
		out, err = t.Tool.Execute.Call(ctx, st, raw)
	case t.Tool.Command != nil || t.Tool.HTTP != nil:
		out, err = d.r.declaredTool(t.Tool).Call(ctx, st, raw)
	default:
		err = fmt.Errorf("tool %q has no implementation", t.Name)
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded && d.r.ctx.Err() == nil {
			return weft.Failure(fmt.Sprintf("tool %s timed out after %s", t.Name, t.Tool.Timeout))
		}
		return weft.ToolResult{Status: weft.ToolError, Error: err.Error(), Attachments: out.Attachments}
	}
	if out.Status == "" {
		out.Status = weft.ToolSuccess
	}
	return out
}

// storeResult persists a call's tool message with its new attachments and marks the call done, in
// one transaction.
func (d *dispatch) storeResult(s *scope, msg *weft.Message, c weft.ToolCall, res weft.ToolResult, id string, next *weft.ToolCall) (*weft.Message, error) {
	status := res.Status // as the call ended: its tool_completed's
	if n := len(res.Result) + len(res.Error); n > weft.MaxToolResultBytes {
		// Refused, not cut: the model learns why it gets no result.
		res = weft.Failure(fmt.Sprintf("The tool's result is %s; the limit is %s. Ask for less (a page, a summary, a file).",
			weft.ByteSize(int64(n)), weft.ByteSize(weft.MaxToolResultBytes)))
	}
	res.Result = d.r.red.String(res.Result)
	res.Error = d.r.red.String(res.Error)
	tm := &weft.Message{ID: id, Role: weft.RoleTool, Side: s.side, Name: c.Name, ToolCallID: c.ID,
		ToolStatus: res.Status, Status: weft.MessageCompleted, Depth: s.depth, ParentID: msg.ParentID, RunID: d.r.id}
	if s.depth > 0 {
		tm.ParentID = s.parentID
	}
	session := d.sessionTool(s, c.Name)
	if res.Status == weft.ToolSuccess {
		tm.Content = toolContent(res.Status, res.Result)
		if session != nil && session.MessageProperty != "" {
			// A bound session tool's message is its messageProperty argument.
			var args map[string]any
			if json.Unmarshal([]byte(c.Arguments), &args) == nil {
				if v, ok := args[session.MessageProperty].(string); ok {
					tm.Content = v
					if v == "" {
						tm.Content = toolContent(res.Status, "")
					}
				}
			}
		}
	} else {
		tm.Content = toolContent(res.Status, res.Error)
	}
	meta := map[string]any{}
	if res.Stack != "" {
		meta["stack"] = d.r.red.String(res.Stack)
	}
	if res.ErrorCode != "" {
		meta["error_code"] = res.ErrorCode
		meta["error_data"] = res.ErrorData
	}
	if len(meta) > 0 {
		tm.Metadata = meta
	}
	files, refs, err := d.prepareAttachments(res.Attachments)
	if err != nil {
		tm.ToolStatus = weft.ToolError
		tm.Content = "Failed to execute tool: " + err.Error()
		files, refs = nil, nil
	}
	for _, f := range files {
		tm.Attachments = append(tm.Attachments, f.att)
		if session == nil {
			tm.Content += fmt.Sprintf("\n\nAttachment path for %q: %s", f.att.Name, f.att.Path)
		}
	}
	tm.Attachments = append(tm.Attachments, refs...)
	d.r.hooks.BeforeInsert(d.r.scopeHooks(s, weft.HookBeforeCreateMessage), tm, d.r.red)
	now := d.r.now()
	// The next call starts at once: this transaction records what runCall would emit before it
	// (this result's message, the call's tool_completed, the next one's tool_started), and the
	// next call runs with nothing left to commit first (startsAtOnce).
	startNext := d.completing && next != nil && session == nil && d.startsAtOnce(s, msg, *next)
	staged := false
	err = d.r.tx(func(tx weft.Tx) error {
		staged = false
		for _, f := range files {
			if err := tx.WriteFile(&f.info, f.data); err != nil {
				return err
			}
		}
		if err := d.r.insertRecorded(tx, tm); err != nil {
			return err
		}
		if next != nil {
			rec := d.recordOf(*next, msg.ID)
			rec.Idempotent = d.r.idempotent(s, next.Name)
			if d.markRunning(s, rec) {
				if err := tx.PutToolCall(rec); err != nil {
					return err
				}
				d.noteCall(rec)
			}
		}
		done := d.doneRecord(c, msg.ID, now)
		done.ResultMessageID, done.Idempotent = tm.ID, d.r.idempotent(s, c.Name)
		if err := tx.PutToolCall(done); err != nil {
			return err
		}
		d.noteCall(done)
		if startNext {
			d.r.journal.stage(d.r.event("tool_completed", ToolCompleted{CallID: c.ID, Name: c.Name, Depth: s.depth, Status: status}))
			d.r.journal.stage(d.r.event("tool_started", ToolStarted{CallID: next.ID, Name: next.Name, Depth: s.depth}))
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
		st := newState(stateCore{e: d.r.e, thread: d.r.thread, r: d.r, ctx: d.r.wctx})
		if err := st.SetStatus(d.r.wctx, tm.Content); err != nil {
			d.r.e.log.Warn("subagent status not recorded", "thread", d.r.thread.ID, "error", err)
		}
	}
	d.r.addRow(*tm)
	if staged {
		d.startedID = next.ID
	}
	d.r.emitUnrecorded(*tm)
	if s.depth > 0 {
		s.nested = append(s.nested, *tm)
	}
	return tm, nil
}

// toolContent is a tool message's text: the trimmed result, or "Tool executed
// successfully" when there is none; for an error, "Failed to execute tool: " and the error.
func toolContent(status weft.ToolStatus, text string) string {
	text = strings.TrimSpace(text)
	switch {
	case status != weft.ToolSuccess:
		return "Failed to execute tool: " + text
	case text == "":
		return "Tool executed successfully"
	}
	return text
}

// sessionTool returns the session binding (sessionStop, sessionFail or sessionStatus) of a tool on
// the acting side at top level, or nil.
func (d *dispatch) sessionTool(s *scope, name string) *weft.SessionTool {
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

// noteCall keeps the record of a call as the run's transaction stores it, for the call's later
// writes (recordOf).
func (d *dispatch) noteCall(rec *weft.ToolCallRecord) {
	for i, c := range d.callRecs {
		if c.CallID == rec.CallID {
			d.callRecs[i] = rec
			return
		}
	}
	d.callRecs = append(d.callRecs, rec)
}

// recordOf returns a record of call c (of message msgID) to write: a copy of the one the run
// stored for it, so that its seq, start time and meta stay, or a new one.
func (d *dispatch) recordOf(c weft.ToolCall, msgID string) *weft.ToolCallRecord {
	for _, rec := range d.callRecs {
		if rec.CallID == c.ID {
			cp := *rec
			return &cp
		}
	}
	return &weft.ToolCallRecord{CallID: c.ID, MessageID: msgID, Name: c.Name, Arguments: c.Arguments}
}

// doneRecord returns the record of call c (of message msgID) finished at now.
func (d *dispatch) doneRecord(c weft.ToolCall, msgID string, now time.Time) *weft.ToolCallRecord {
	done := d.recordOf(c, msgID)
	done.Status, done.FinishedAt = weft.CallDone, &now
	return done
}

// markRunning marks a non-idempotent call running: after a crash such a call is
// not re-run but answered as interrupted. An idempotent call stays pending (it is re-run either
// way). It reports whether the record changed.
func (d *dispatch) markRunning(s *scope, rec *weft.ToolCallRecord) bool {
	if rec.Idempotent {
		return false
	}
	if s.needsApproval(rec.Name) {
		if a := ApprovalOf(rec); a.Status != approvalApproved {
			return false // it runs only once approved (a denied call never runs)
		}
	}
	now := d.r.now()
	rec.Status, rec.StartedAt = weft.CallRunning, &now
	return true
}

// newFile is an attachment to write with the tool message.
type newFile struct {
	info weft.FileInfo
	data []byte
	att  weft.Attachment
}

// prepareAttachments turns a result's attachments into files to store under /attachments/ (new,
// byte-identical: never downsampled) and references to existing files.
func (d *dispatch) prepareAttachments(in []weft.ToolAttachment) ([]newFile, []weft.Attachment, error) {
	var files []newFile
	var refs []weft.Attachment
	for _, a := range in {
		if a.IsRef() {
			p, err := weft.CleanPath(a.Path)
			if err != nil {
				return nil, nil, fmt.Errorf("attachment %q: invalid path %q", a.Name, a.Path)
			}
			fi, err := d.r.e.store.Files().Stat(d.r.ctx, d.r.thread.ID, p)
			if err != nil || fi.IsDir {
				return nil, nil, fmt.Errorf("attachment %q: no file %s in this thread", a.Name, p)
			}
			refs = append(refs, weft.Attachment{ID: orDefault(a.ID, weft.NewID("att_")), Path: p, Name: orDefault(a.Name, fi.Name),
				MimeType: orDefault(a.MimeType, fi.MimeType), Size: fi.Size, Width: a.Width, Height: a.Height, Description: a.Description})
			continue
		}
		if a.Data == nil {
			return nil, nil, fmt.Errorf("attachment %q has neither data nor a path", a.Name)
		}
		p := attachmentPath(d.r.now(), a.Name, a.MimeType)
		files = append(files, newFile{
			info: weft.FileInfo{Path: p, Name: a.Name, MimeType: a.MimeType, Size: int64(len(a.Data)), Width: a.Width, Height: a.Height},
			data: a.Data,
			att:  weft.Attachment{ID: weft.NewID("att_"), Path: p, Name: a.Name, MimeType: a.MimeType, Size: int64(len(a.Data)), Width: a.Width, Height: a.Height},
		})
	}
	return files, refs, nil
}

// attachmentPath names a new attachment /attachments/<unix-ms>-<8 hex>.<ext>.
func attachmentPath(now time.Time, name, mimeType string) string {
	ext := strings.ToLower(path.Ext(name))
	if ext == "" || len(ext) > 10 || strings.ContainsAny(ext, "/\\") {
		ext = ""
		if exts, _ := mime.ExtensionsByType(mimeType); len(exts) > 0 {
			ext = exts[0]
		}
	}
	id := weft.NewID("")
	return fmt.Sprintf("/attachments/%d-%s%s", now.UnixMilli(), id[len(id)-8:], ext)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// removeCall drops a call from its assistant message after a hook returned nil;
// an assistant message left empty is deleted.
func (d *dispatch) removeCall(msg *weft.Message, c weft.ToolCall) error {
	calls := slices.DeleteFunc(slices.Clone(msg.ToolCalls), func(x weft.ToolCall) bool { return x.ID == c.ID })
	deleted := len(calls) == 0 && strings.TrimSpace(msg.Content) == ""
	updated := *msg
	updated.ToolCalls = calls
	now := d.r.now()
	err := d.r.tx(func(tx weft.Tx) error {
		done := d.doneRecord(c, msg.ID, now)
		if err := tx.PutToolCall(done); err != nil {
			return err
		}
		d.noteCall(done)
		if deleted {
			return tx.DeleteMessage(msg.ID)
		}
		if err := tx.UpdateMessage(msg.ID, weft.MessageChange{ToolCalls: &calls}); err != nil {
			return err
		}
		d.r.journal.stageMessage(&updated) // streamed again, without the call
		return nil
	})
	if err != nil {
		return err
	}
	*msg = updated
	d.r.replaceRow(*msg) // (after the mailbox's changes)
	if deleted {
		d.r.rows = slices.DeleteFunc(d.r.rows, func(m *weft.Message) bool { return m.ID == msg.ID })
		if d.r.e.observed() {
			d.r.emit("message_deleted", Fields{"message_id": msg.ID})
		}
		return nil
	}
	d.r.emitUnrecorded(*msg)
	return nil
}

// runQueuedTools runs tools queued with QueueTool after the current calls:
// their messages (tool_call_id queued_<n>) have no matching call and are not shown to the model.
func (d *dispatch) runQueuedTools(s *scope) error {
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
				st := d.r.state_(exec)
				st.ctx = ctx
				res = d.invoke(qs, st, o, c, args, raw, &weft.Message{})
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
			if err := d.r.insertRecorded(tx, tm); err != nil {
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
		d.r.emitUnrecorded(*tm)
	}
	return nil
}
