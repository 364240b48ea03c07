package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/declared"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/hooks"
	"github.com/weft-agents/weft/engine/observe"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/engine/runstate"
	"github.com/weft-agents/weft/engine/threadstate"
)

// The run's tool calls are run by engine/dispatch's Dispatcher (run.tools); toolRun is the run as
// the Dispatcher sees it (dispatch.Run), and a scope is its dispatch.Scope. What stays here is
// what only the run knows: the tools a scope offers and how each kind of target is called.

// callResult is the outcome of one executed call.
type callResult = dispatch.Result

// toolRun is a run as its tool dispatcher sees it (dispatch.Run): a conversion of *run.
type toolRun run

// asScope returns the run's scope a dispatch.Scope is.
func asScope(s dispatch.Scope) *scope { return s.(*scope) }

func (s *scope) Depth() int       { return s.depth }
func (s *scope) Side() weft.Side  { return s.side }
func (s *scope) ParentID() string { return s.parentID }

// Nest keeps a row of a sub-prompt's nested run.
func (s *scope) Nest(m *weft.Message) { s.nested = append(s.nested, *m) }

// NeedsApproval tells whether calls of the named offered tool wait for a decision: the prompt's
// entry decides, else the tool's own setting.
func (s *scope) NeedsApproval(name string) bool {
	o, ok := s.offered[name]
	if !ok {
		return false
	}
	if o.entry.Approval != "" {
		return o.entry.Approval == weft.ApprovalRequired
	}
	return o.target.Tool != nil && o.target.Tool.Approval == weft.ApprovalRequired
}

// Idempotent tells whether calls of the named offered tool may run again after a crash: the tool's
// or the MCP server's declaration says so.
func (s *scope) Idempotent(name string) bool {
	if o, ok := s.offered[name]; ok && o.target.Tool != nil {
		return o.target.Tool.Idempotent
	} else if ok && o.target.MCP != nil {
		return o.target.MCP.Idempotent
	}
	return false
}

func (t *toolRun) Now() time.Time             { return (*run)(t).now() }
func (t *toolRun) RunID() string              { return t.id }
func (t *toolRun) ThreadID() string           { return t.thread.ID }
func (t *toolRun) Redactor() *redact.Redactor { return t.red }
func (t *toolRun) Stopping() bool             { return t.ar.stop.Load() || t.ctx.Err() != nil }
func (t *toolRun) Interrupting() bool         { return (*run)(t).interrupting() }
func (t *toolRun) Sync()                      { (*run)(t).sync() }
func (t *toolRun) Observed() bool             { return t.e.commit.Observed() }

func (t *toolRun) Suspended() error {
	if (*run)(t).suspending() {
		return errShutdown
	}
	return nil
}

func (t *toolRun) CanStartAtOnce(ds dispatch.Scope) bool {
	r, s := (*run)(t), asScope(ds)
	return r.e.opt.RecordEvents && r.e.commit.Observed() && s.depth == 0 && len(hooks.Applying(s.prompt.Hooks, r.agent.Hooks)) == 0 && len(r.agent.Hooks) == 0 &&
		!r.stopRequested() && !r.interrupting() && !r.suspending()
}

func (t *toolRun) CanAwait() bool { return dispatch.CanAwait(t.thread) }

func (t *toolRun) Prepare(s dispatch.Scope, c weft.ToolCall, rawOK bool) (dispatch.Prepared, string) {
	return t.prepareCall(asScope(s), c, rawOK)
}

func (t *toolRun) Invoke(ctx context.Context, ds dispatch.Scope, p dispatch.Prepared, c weft.ToolCall, msg *weft.Message, resultID string, started bool) (res weft.ToolResult, parked, removed bool, err error) {
	r, s, tool := (*run)(t), asScope(ds), p.Tool.(*offered)
	exec := &execution{r: r, s: s, call: &c, entry: tool.entry, resultID: resultID}
	st := exec.state()
	if r.e.commit.Observed() && !started {
		r.journal.Emit("tool_started", ToolStarted{CallID: c.ID, Name: c.Name, Depth: s.depth})
	}
	r.hooks.ToolCallStarted(hooks.Set{Hooks: exec.hooksAt(weft.HookToolCallStarted), State: st}, c)
	if err := r.journal.Flush(); err != nil {
		return res, false, false, err
	}
	res, parkedBy := t.invoke(ctx, s, st, tool, c, p.Args, p.Raw, msg)
	r.sync() // what the tool's State changed, before its result is redacted and stored
	if parkedBy != "" {
		return res, true, false, nil
	}
	r.hooks.ToolCallDone(hooks.Set{Hooks: exec.hooksAt(weft.HookToolCallDone), State: st}, c, res)
	replaced, keep := r.hooks.AfterToolCall(hooks.Set{Hooks: exec.hooksAt(hooks.AfterToolCallPoint(res)), State: st}, c, res)
	if !keep {
		return res, false, true, nil
	}
	return r.hooks.BeforeStore(hooks.Set{Hooks: exec.hooksAt(weft.HookBeforeStoreToolResult), State: st}, c, replaced), false, false, nil
}

func (t *toolRun) StartTool(ds dispatch.Scope, c weft.ToolCall, running bool) context.Context {
	if t.obs == nil {
		return t.ctx
	}
	s := asScope(ds)
	tc := observe.ToolCall{Call: c, Depth: s.depth, Resumed: s.resumed || running}
	if o, ok := s.offered[c.Name]; ok && !running {
		tc.Description = o.spec.Description
		if o.target.MCP != nil {
			tc.MCPServer = o.target.MCP.Name
		}
	}
	return t.obs.StartTool(t.ctx, tc)
}

func (t *toolRun) EndTool(committed bool, status weft.ToolStatus, result string) {
	if t.obs != nil {
		t.obs.EndTool(observe.ToolEnd{Committed: committed, Status: status, Result: result})
	}
}

// SessionTool returns the session binding (sessionStop, sessionFail or sessionStatus) of a tool on
// the acting side at top level, or nil; status: it is the side's sessionStatus in a subagent.
func (t *toolRun) SessionTool(ds dispatch.Scope, name string) (*weft.SessionTool, bool) {
	s := asScope(ds)
	if s.depth != 0 {
		return nil, false
	}
	def := t.agent.Side(s.side)
	for _, b := range []*weft.SessionTool{def.SessionStop, def.SessionFail, def.SessionStatus} {
		if b != nil && b.Name == name {
			return b, b == def.SessionStatus && t.thread.ParentID != ""
		}
	}
	return nil, false
}

func (t *toolRun) ReportStatus(text string) {
	st := runState((*run)(t), nil)
	if err := st.SetStatus(context.WithoutCancel(t.ctx), text); err != nil {
		t.e.log.Warn("subagent status not recorded", "thread", t.thread.ID, "error", err)
	}
}

// QueuedCall runs a queued tool: a registry tool, offered alone in a top-level scope of s's side.
func (t *toolRun) QueuedCall(ds dispatch.Scope, name string, argsJSON json.RawMessage) (weft.ToolCall, weft.ToolResult) {
	r, s := (*run)(t), asScope(ds)
	r.state.QueuedTools++
	c := weft.ToolCall{ID: fmt.Sprintf("queued_%d", r.state.QueuedTools), Name: name, Arguments: string(argsJSON)}
	ctx := r.ctx
	if r.obs != nil {
		ctx = r.obs.StartTool(ctx, observe.ToolCall{Call: c})
	}
	tool, ok := r.e.reg.Tool(name)
	if !ok {
		return c, weft.Failure(fmt.Sprintf("Tool %q is not defined", name))
	}
	qs := &scope{prompt: s.prompt, depth: 0, side: s.side, offered: map[string]*offered{}, env: s.env, fx: s.fx}
	o := &offered{entry: weft.ToolEntry{Name: name}, target: weft.Target{Kind: weft.EntryTool, Name: name, Tool: tool},
		spec: weft.ToolSpec{Name: name, Description: tool.Description, Parameters: argsSchema(tool.Args)}}
	qs.offered[name] = o
	qs.specs = []weft.ToolSpec{o.spec}
	p, errText := t.prepareCall(qs, c, true)
	if errText != "" {
		return c, weft.Failure(errText)
	}
	exec := &execution{r: r, s: qs, call: &c, entry: o.entry, resultID: weft.NewID("msg_")}
	res, _ := t.invoke(ctx, qs, exec.state(), o, c, p.Args, p.Raw, &weft.Message{}) // (a registry tool: nothing parks)
	return c, res
}

func (t *toolRun) Tx(fn func(weft.Tx) error) error { return (*run)(t).tx(fn) }

func (t *toolRun) StoreQueued(m *weft.Message) error {
	r := (*run)(t)
	return r.tx(func(tx weft.Tx) error {
		if err := r.journal.Insert(tx, m); err != nil {
			return err
		}
		return tx.SetExecState(runstate.Key, r.state.Encode())
	})
}

func (t *toolRun) Insert(tx weft.Tx, m *weft.Message) error { return t.journal.Insert(tx, m) }
func (t *toolRun) StageMessage(m *weft.Message)             { t.journal.StageMessage(m) }

func (t *toolRun) Stage(kind string, data payload.Payload) {
	t.journal.Stage(t.journal.Event(kind, data))
}

func (t *toolRun) BeforeInsert(s dispatch.Scope, m *weft.Message) {
	t.hooks.BeforeInsert((*run)(t).scopeHooks(asScope(s), weft.HookBeforeCreateMessage), m, t.red)
}

func (t *toolRun) AfterInsert(s dispatch.Scope, m *weft.Message) {
	t.hooks.AfterInsert((*run)(t).scopeHooks(asScope(s), weft.HookAfterCreateMessage), m)
}

func (t *toolRun) StatFile(p string) (weft.FileInfo, error) {
	return t.e.store.Files().Stat(t.ctx, t.thread.ID, p)
}

func (t *toolRun) AddRow(m *weft.Message)     { (*run)(t).addRow(*m) }
func (t *toolRun) ReplaceRow(m *weft.Message) { (*run)(t).replaceRow(*m) }

func (t *toolRun) DeleteRow(id string) { t.cache.Delete(id) }

func (t *toolRun) EmitUnrecorded(m *weft.Message)         { t.journal.Stored(*m) }
func (t *toolRun) Emit(kind string, data payload.Payload) { t.journal.Emit(kind, data) }

func (t *toolRun) Kept() dispatch.Kept { return &t.e.sched }

func (t *toolRun) Reattach(ctx context.Context, s dispatch.Scope, rec weft.ToolCallRecord, c weft.ToolCall) (weft.ToolResult, string, bool) {
	return parentRun{(*run)(t), asScope(s)}.reattach(ctx, rec, c)
}

func (t *toolRun) ResumeSubPrompt(s dispatch.Scope, m *weft.Message, rec weft.ToolCallRecord, c weft.ToolCall) (weft.ToolResult, string, string, bool) {
	return (&subCall{r: (*run)(t), scope: asScope(s), msgID: m.ID, call: c}).resume(m, rec)
}

func (t *toolRun) ParkedCallers(s dispatch.Scope) []*weft.ToolCallRecord {
	return asScope(s).via.parkedRecords()
}

func (t *toolRun) StoredCalls() ([]weft.ToolCallRecord, error) {
	return t.e.store.ToolCalls(t.ctx, t.thread.ID)
}
func (t *toolRun) Rows() []*weft.Message { return t.cache.Rows }

// resumeTools finishes the tool calls a crashed or parked run left open (dispatch.Dispatcher.Resume),
// each reply's in a new scope of its prompt. It returns whether anything was resumed, and the
// effects the resumed calls asked for, whichever reply made them.
func resumeTools(r *run) (bool, toolEffects, error) {
	var fx *toolEffects // (allocated only when a reply is open: most runs resume nothing)
	resumed, err := r.tools.Resume(func(m *weft.Message) (dispatch.Scope, bool, error) {
		p, ok := r.e.reg.Prompt(m.Prompt)
		if !ok {
			return nil, false, nil
		}
		s, err := r.newScope(p, 0, m.WrittenBy(), r.thread.Arguments)
		if err != nil {
			return nil, false, err
		}
		if fx == nil {
			fx = new(toolEffects)
		}
		s.fx, s.resumed = fx, true
		return s, true, nil
	})
	if fx == nil {
		return resumed, toolEffects{}, err
	}
	return resumed, *fx, err
}

// prepareCall resolves, parses and validates a call; a non-empty errText is the error result.
// With rawOK, arguments a Go tool can take as the model wrote them (schema.Validator.AcceptsJSON)
// come back as raw, with a nil map: they are neither decoded nor encoded again.
func (t *toolRun) prepareCall(s *scope, c weft.ToolCall, rawOK bool) (p dispatch.Prepared, errText string) {
	o, ok := s.offered[c.Name]
	if !ok && s.prompt.ToolChoice != weft.ToolChoiceNone {
		// A resumable subagent is offered through the lifecycle tools, not under its own name.
		for _, lo := range s.offered {
			for _, re := range lo.entries {
				if lo.lifecycle == children.ToolCreate && re.Agent.Name == c.Name {
					return dispatch.Prepared{}, fmt.Sprintf("%q must be started with subagent_create.", c.Name)
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
		return dispatch.Prepared{}, fmt.Sprintf("Tool %q is not available for this prompt. Available tools: %s", c.Name, list)
	}
	text, errText := dispatch.ArgumentsText(c.Arguments)
	if errText != "" {
		return dispatch.Prepared{}, errText
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
	if tool := o.target.Tool; rawOK && !bound && tool != nil && tool.Execute != nil && o.lifecycle == "" {
		if v, err := t.e.validator(params); err == nil && v.AcceptsJSON(text) {
			// What decoding, validating and encoding would give the tool, the text already says.
			if msg := missingVariable(s, o); msg != "" {
				return dispatch.Prepared{}, msg
			}
			return dispatch.Prepared{Tool: o, Raw: json.RawMessage(text)}, ""
		}
	}
	var bindings map[string]string
	if bound {
		bindings = o.entry.Bindings
	}
	m, errText := dispatch.Arguments(c.Name, text, params, t.e.validator, bindings, s.args, s.strict)
	if errText != "" {
		return dispatch.Prepared{}, errText
	}
	if msg := missingVariable(s, o); msg != "" {
		return dispatch.Prepared{}, msg
	}
	return dispatch.Prepared{Tool: o, Args: m}, ""
}

// missingVariable returns the error text for a required variable of the call's tool that the
// prompt's env does not set ("" when none is missing).
func missingVariable(s *scope, o *offered) string {
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
func (t *toolRun) invoke(ctx context.Context, s *scope, st *threadstate.State, o *offered, c weft.ToolCall, args map[string]any, raw json.RawMessage, msg *weft.Message) (res weft.ToolResult, parked string) {
	defer func() {
		if p := recover(); p != nil {
			res, parked = weft.ToolResult{Status: weft.ToolError, Error: fmt.Sprintf("tool panicked: %v", p), Stack: string(debug.Stack())}, ""
		}
	}()
	r, tg := (*run)(t), o.target
	switch {
	case o.lifecycle != "":
		return parentRun{r, s}.callLifecycle(o, args), ""
	case tg.Prompt != nil:
		return (&subCall{r: r, scope: s, msgID: msg.ID, call: c, resultID: execOf(st).resultID}).start(o, args)
	case tg.Agent != nil && tg.Agent.Kind() == weft.AIHuman:
		return r.startHandoff(s, o, args), ""
	case tg.Agent != nil:
		return parentRun{r, s}.callAgent(ctx, o, c, msg, args)
	case tg.MCP != nil:
		mcp := dispatch.MCP{Client: r.e.opt.MCP, Log: r.e.log}
		return mcp.Call(ctx, r.ctx, tg, args, envLookup(s.env.With(s.prompt.Env, o.entry.Env))), ""
	case tg.Tool != nil && tg.Tool.ExecutionMode == weft.ExecProvider:
		return weft.Failure(fmt.Sprintf("Tool %q is executed by the provider %q and cannot run locally.", tg.Name, tg.Tool.ExecutionProvider)), ""
	}
	if raw == nil {
		raw, _ = json.Marshal(args)
		if args == nil {
			raw = []byte("{}")
		}
	}
	h := tg.Tool.Execute
	if h == nil && (tg.Tool.Command != nil || tg.Tool.HTTP != nil) {
		// A command or http tool declared in definitions (package declared), given what only the
		// run knows: the project root, its redactor and why it ended.
		h = dispatch.DefinedTool(tg.Tool, declared.Options{Root: r.e.reg.Root, Redact: r.red.String, RunErr: r.ctx.Err})
	}
	return dispatch.RunTool(ctx, r.ctx, st, tg.Name, tg.Tool, h, raw), ""
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
