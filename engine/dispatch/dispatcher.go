package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/redact"
)

// Scope is the prompt whose calls a Dispatcher runs, as the run resolved it: its offered tools
// and where its rows go. The run's own scope implements it; the Dispatcher hands it back to the
// run (Run) untouched.
type Scope interface {
	// Depth is 0 at top level, the nesting of a sub-prompt's run below.
	Depth() int
	// Side is the side whose prompt it is.
	Side() weft.Side
	// ParentID is the caller's tool message id that a sub-prompt's rows name as their parent.
	ParentID() string
	// NeedsApproval tells whether calls of the named offered tool wait for a decision.
	NeedsApproval(name string) bool
	// Idempotent tells whether calls of the named offered tool may run again after a crash.
	Idempotent(name string) bool
	// Nest keeps a row a sub-prompt's run stored (depth > 0) with the scope's nested rows.
	Nest(m *weft.Message)
}

// Prepared is a call resolved, parsed and validated (Run.Prepare): the run's offered tool, and
// the arguments, as a map, or as the model wrote them (Raw, with a nil Args) when the Go tool
// takes them so.
type Prepared struct {
	// Tool is the run's offered tool, handed back to Run.Invoke.
	Tool any
	// Args are the validated arguments (nil when Raw holds them).
	Args map[string]any
	// Raw are the arguments as the model wrote them, when the Go tool takes them so.
	Raw json.RawMessage
}

// Run is the run whose calls a Dispatcher runs: what the Dispatcher asks of the run loop — its
// state, its transactions and rows, its events and hooks, and the tools it offers.
type Run interface {
	// Now is the run's clock; RunID and ThreadID name it.
	Now() time.Time
	RunID() string
	ThreadID() string
	// Redactor redacts the thread's secrets.
	Redactor() *redact.Redactor
	// Stopping: a stop was requested, or the run's context ended. Interrupting: a new message
	// interrupts the run. Suspended is the shutdown's error while the engine shuts down (the
	// call is then not stored: the resumed run treats it as a crash would have left it).
	Stopping() bool
	Interrupting() bool
	Suspended() error
	// CanStartAtOnce tells whether a call of s can start with its tool_started recorded by the
	// transaction before it: the run records its events, s is top level, no hook applies in s,
	// and the run is not being stopped.
	CanStartAtOnce(s Scope) bool
	// CanAwait tells whether the run's thread can wait for a person's decision.
	CanAwait() bool
	// Sync applies what the run's mailbox holds (queued tools among it).
	Sync()

	// Prepare resolves, parses and validates a call of s; a non-empty errText is its error result.
	// With rawOK, arguments a Go tool takes as written come back raw.
	Prepare(s Scope, c weft.ToolCall, rawOK bool) (p Prepared, errText string)
	// Invoke runs a prepared call with its hooks: its tool_started (unless started), the hooks
	// around it, and the commit of what waits before the tool runs. parked: the call parks the
	// run (a child or a nested run awaits decisions); removed: an after_tool_call hook removed
	// the call.
	Invoke(ctx context.Context, s Scope, p Prepared, c weft.ToolCall, msg *weft.Message, resultID string, started bool) (res weft.ToolResult, parked, removed bool, err error)
	// StartTool tells the run's observer a call of s begins and returns the context it runs with
	// (the run's when nothing observes it); running: a call a crash left running.
	StartTool(s Scope, c weft.ToolCall, running bool) context.Context
	// EndTool tells the observer the call that began last ends (a no-op when nothing observes).
	EndTool(committed bool, status weft.ToolStatus, result string)
	// SessionTool returns the session binding of a tool of s (nil when none); status: the binding
	// is the side's sessionStatus.
	SessionTool(s Scope, name string) (b *weft.SessionTool, status bool)
	// ReportStatus makes a subagent's sessionStatus result its status in its parent's registry.
	ReportStatus(text string)
	// QueuedCall runs a tool QueueTool queued (the registry's tool of that name) in s's side and
	// env, and returns the id of its message's call and its result.
	QueuedCall(s Scope, name string, args json.RawMessage) (c weft.ToolCall, res weft.ToolResult)

	// Tx commits fn in a transaction of the run; StoreQueued commits a queued tool's message with
	// the run's state.
	Tx(fn func(weft.Tx) error) error
	StoreQueued(m *weft.Message) error
	// Insert stores a row in tx, with its message event when the run records its events;
	// StageMessage records m's message event in the transaction, and Stage another event (both
	// only in a run that records its events).
	Insert(tx weft.Tx, m *weft.Message) error
	StageMessage(m *weft.Message)
	Stage(kind string, data payload.Payload)
	// BeforeInsert and AfterInsert run the message hooks of s around storing m.
	BeforeInsert(s Scope, m *weft.Message)
	AfterInsert(s Scope, m *weft.Message)
	// StatFile reads the thread's file at path (a result's attachment).
	StatFile(path string) (weft.FileInfo, error)
	// AddRow, ReplaceRow and DeleteRow change the run's cached rows once stored.
	AddRow(m *weft.Message)
	ReplaceRow(m *weft.Message)
	DeleteRow(id string)

	// Observed tells whether anyone wants the run's events; EmitUnrecorded emits a stored row's
	// message event when its transaction did not record it; Emit emits another event.
	Observed() bool
	EmitUnrecorded(m *weft.Message)
	Emit(kind string, data payload.Payload)

	// Kept keeps, for the run that resumes the thread in this process, what a lost connection
	// would lose of a call.
	Kept() Kept
	// Reattach answers a call that was running with its re-attached child's result;
	// ResumeSubPrompt with its sub-prompt's nested run (ok false: neither applies). parked: what
	// the call waits for still waits for decisions.
	Reattach(ctx context.Context, s Scope, rec weft.ToolCallRecord, c weft.ToolCall) (res weft.ToolResult, parked string, ok bool)
	ResumeSubPrompt(s Scope, m *weft.Message, rec weft.ToolCallRecord, c weft.ToolCall) (res weft.ToolResult, resultID, parked string, ok bool)
	// ParkedCallers are the records of the sub-prompt calls that run s's nested run, marked
	// waiting with it.
	ParkedCallers(s Scope) []*weft.ToolCallRecord
	// StoredCalls reads the thread's call records; Rows returns the run's top-level rows.
	StoredCalls() ([]weft.ToolCallRecord, error)
	Rows() []*weft.Message
}

// Kept is what a process keeps of its threads' calls when storing them failed (engine/sched's
// Scheduler): a result its transaction failed to store (KeepResult), that a call marked running
// has not run (KeepNotRun); the resumed run takes what was kept (TakeResult).
type Kept interface {
	KeepResult(threadID, callID string, res weft.ToolResult)
	KeepNotRun(threadID, callID string)
	TakeResult(threadID, callID string) (res weft.ToolResult, notRun, ok bool)
}

// ErrAwaitApproval stops a run before a call that waits for a decision.
var ErrAwaitApproval = errors.New("tool calls await approval")

// Dispatcher runs a run's tool calls: strictly one at a time in the order the model returned them,
// each result stored before the next call starts, then the tools queued with Queue. The zero
// value, bound to its run (Bind), is ready.
type Dispatcher struct {
	run Run
	// Calls are the tool-call records the run stored, as stored.
	Calls Calls
	// queued are the tools Queue queued, run after the step's calls.
	queued []queued
	// started is the call whose tool_started the reply's transaction, or the previous call's
	// result's, recorded (StartsAtOnce): runCall does not emit it again. (A pointer to the call,
	// not its id: the run that holds the Dispatcher fits its allocation size class.)
	started *weft.ToolCall
}

type queued struct {
	name string
	args json.RawMessage
}

// Bind binds d to its run.
func (d *Dispatcher) Bind(r Run) { d.run = r }

// Queue queues a tool to run after the current step's calls (State.QueueTool).
func (d *Dispatcher) Queue(name string, args json.RawMessage) {
	d.queued = append(d.queued, queued{name: name, args: args})
}

// Queued tells whether tools wait in the queue.
func (d *Dispatcher) Queued() bool { return len(d.queued) > 0 }

// Started records that the reply's transaction recorded the tool_started of call c.
func (d *Dispatcher) Started(c *weft.ToolCall) { d.started = c }

// Result is the outcome of one executed call.
type Result struct {
	Call weft.ToolCall
	args map[string]any
	raw  json.RawMessage // the arguments as the model wrote them, when a Go tool takes them so (args nil)
	// Result is what the call returned.
	Result weft.ToolResult
	// Removed: an after_tool_call hook returned nil; the call left the assistant message.
	Removed bool
	// Msg is the call's stored tool message.
	Msg *weft.Message
}

// Arg returns the call's validated argument of that name (nil when absent).
func (c *Result) Arg(name string) any {
	if c.args == nil && c.raw != nil {
		_ = json.Unmarshal(c.raw, &c.args) // accepted by AcceptsJSON: it decodes
	}
	return c.args[name]
}

// StartsAtOnce reports whether the reply's transaction records c's tool_started (and the reply's
// message event before it) in a run that records its events: c is the reply's one call, and
// nothing that runCall does before it emits tool_started can write, emit or refuse the call — no
// hook applies, the call needs no approval, its arguments are valid, and the run is not being
// stopped. The tool then starts with nothing waiting to be recorded: no commit of its own
// before it runs. A stop or shutdown that comes between the commit and the call leaves
// tool_started recorded for a call that then ends without running, as a crash between that commit
// and the tool does.
func (d *Dispatcher) StartsAtOnce(s Scope, msg *weft.Message, c weft.ToolCall) bool {
	if !d.run.CanStartAtOnce(s) || s.NeedsApproval(c.Name) {
		return false
	}
	if i := slices.IndexFunc(msg.ToolCalls, func(mc weft.ToolCall) bool { return mc.ID == c.ID }); i < 0 || i >= weft.MaxToolCallsPerReply {
		return false // (runCall answers a call past the limit without running it)
	}
	_, errText := d.run.Prepare(s, c, true)
	return errText == ""
}

// Execute runs a reply's calls strictly sequentially in returned order, each persisted as a tool
// message before the next starts.
func (d *Dispatcher) Execute(s Scope, msg *weft.Message, calls []weft.ToolCall) ([]Result, error) {
	results := make([]Result, 0, len(calls))
	for i, c := range calls {
		var next *weft.ToolCall
		if i+1 < len(calls) {
			next = &calls[i+1]
		}
		approval := s.NeedsApproval(c.Name)
		if approval && d.waits(msg, &c) {
			return results, d.awaitApproval(s, msg, calls[i:])
		}
		res, err := d.executeCall(s, msg, c, next, approval)
		if err != nil {
			return results, err
		}
		results = append(results, res)
	}
	return results, nil
}

// executeCall runs one call and stores its result. The call was marked running by the last
// transaction before it (the reply's, or the previous call's result); its own result transaction
// marks next running.
// approval: calls of c's tool wait for a decision (Scope.NeedsApproval).
func (d *Dispatcher) executeCall(s Scope, msg *weft.Message, c weft.ToolCall, next *weft.ToolCall, approval bool) (Result, error) {
	// The call's context carries its trace: a blocking subagent's run nests under it.
	ctx := d.run.StartTool(s, c, false)
	res, err := d.runCall(ctx, s, msg, c, next, approval)
	status, result := res.Result.Status, ""
	if res.Msg != nil {
		status, result = res.Msg.ToolStatus, res.Msg.Content
	}
	d.run.EndTool(err == nil && (res.Msg != nil || res.Removed), status, result)
	return res, err
}

// runCall is executeCall; the tool runs with ctx (the run's, carrying the call's trace).
func (d *Dispatcher) runCall(ctx context.Context, s Scope, msg *weft.Message, c weft.ToolCall, next *weft.ToolCall, approval bool) (Result, error) {
	r := d.run
	res := Result{Call: c}
	started := d.started != nil && d.started.ID == c.ID // its tool_started is recorded already (StartsAtOnce)
	d.started = nil
	// The tool message id is allocated first: a sub-prompt's rows name it as their parent.
	resultID := weft.NewID("msg_")
	ran := false
	if err := r.Suspended(); err != nil {
		return res, err
	}
	overLimit := false
	for i, mc := range msg.ToolCalls {
		if mc.ID == c.ID {
			overLimit = i >= weft.MaxToolCallsPerReply
		}
	}
	var denied weft.ToolResult
	isDenied := false
	if approval {
		denied, isDenied, _ = d.applyDecision(msg, &c)
		res.Call = c // with the arguments a person approved
		if err := d.startApproved(s, msg, c); err != nil {
			return res, err
		}
	}
	switch {
	case r.Stopping():
		res.Result = weft.Failure("Execution stopped by user")
	case r.Interrupting() && s.Depth() == 0:
		// A new message interrupts the run: the calls of the reply not started yet are
		// answered without running (the one that started completed).
		res.Result = weft.Failure("Not run: a new message from the user interrupted the run")
	case overLimit:
		res.Result = weft.Failure(fmt.Sprintf("Not run: a reply may make %d tool calls at most; call the rest in your next reply.",
			weft.MaxToolCallsPerReply))
	case isDenied:
		res.Result = denied
	default:
		p, errText := r.Prepare(s, c, true)
		if errText != "" {
			res.Result = weft.Failure(errText)
			break
		}
		res.args, res.raw, ran = p.Args, p.Raw, true
		var parked, removed bool
		var err error
		res.Result, parked, removed, err = r.Invoke(ctx, s, p, c, msg, resultID, started)
		if err != nil {
			return res, err
		}
		if parked {
			return res, ErrAwaitApproval // the call stays running; its child waits for decisions
		}
		if removed {
			res.Removed = true
			return res, d.removeCall(msg, c)
		}
	}
	if err := r.Suspended(); err != nil {
		// A shutdown interrupted the call: nothing is stored, and the resumed run treats the call
		// as a crash would have left it (an idempotent tool runs again).
		return res, err
	}
	m, err := d.store(s, msg, c, res.Result, resultID, next, true)
	completed := next != nil && d.started != nil && d.started.ID == next.ID // recorded with the next call's start
	if err != nil {
		if ran {
			// The tool ran: its result outlives a lost connection (resume stores it).
			r.Kept().KeepResult(r.ThreadID(), c.ID, res.Result)
		}
		if next != nil {
			// Marked running by the transaction that failed, perhaps: its tool has not run.
			r.Kept().KeepNotRun(r.ThreadID(), next.ID)
		}
		return res, err
	}
	res.Msg = m
	if r.Observed() && !completed {
		r.Emit("tool_completed", payload.ToolCompleted{CallID: c.ID, Name: c.Name, Depth: s.Depth(), Status: res.Result.Status})
	}
	return res, nil
}

// StoreResult persists a call's tool message with its new attachments and marks the call done, in
// one transaction; next, when set, is marked running by it.
func (d *Dispatcher) StoreResult(s Scope, msg *weft.Message, c weft.ToolCall, res weft.ToolResult, id string, next *weft.ToolCall) (*weft.Message, error) {
	return d.store(s, msg, c, res, id, next, false)
}

// store is StoreResult. completing: runCall stores the result of the call it ran, and emits its
// tool_completed once stored, unless the result's transaction records it with next's tool_started
// (started).
func (d *Dispatcher) store(s Scope, msg *weft.Message, c weft.ToolCall, res weft.ToolResult, id string, next *weft.ToolCall, completing bool) (*weft.Message, error) {
	r := d.run
	status := res.Status // as the call ended: its tool_completed's
	red := r.Redactor()
	res = ToStore(res, red)
	tm := &weft.Message{ID: id, Role: weft.RoleTool, Side: s.Side(), Name: c.Name, ToolCallID: c.ID,
		ToolStatus: res.Status, Status: weft.MessageCompleted, Depth: s.Depth(), ParentID: msg.ParentID, RunID: r.RunID()}
	if s.Depth() > 0 {
		tm.ParentID = s.ParentID()
	}
	session, sessionStatus := r.SessionTool(s, c.Name)
	prop := ""
	if session != nil {
		prop = session.MessageProperty // a bound session tool's message is this argument
	}
	tm.Content = ResultContent(res, c.Arguments, prop)
	tm.Metadata = ResultMeta(res, red)
	files, refs, err := Attachments(res.Attachments, r.Now, r.StatFile)
	if err != nil {
		tm.ToolStatus = weft.ToolError
		tm.Content = "Failed to execute tool: " + err.Error()
		files, refs = nil, nil
	}
	AddAttachments(tm, files, refs, session == nil)
	r.BeforeInsert(s, tm)
	now := r.Now()
	// The next call starts at once: this transaction records what runCall would emit before it
	// (this result's message, the call's tool_completed, the next one's tool_started), and the
	// next call runs with nothing left to commit first (StartsAtOnce).
	startNext := completing && next != nil && session == nil && d.StartsAtOnce(s, msg, *next)
	staged := false
	err = r.Tx(func(tx weft.Tx) error {
		staged = false
		for _, f := range files {
			if err := tx.WriteFile(&f.Info, f.Data); err != nil {
				return err
			}
		}
		if err := r.Insert(tx, tm); err != nil {
			return err
		}
		if next != nil {
			rec := d.Calls.Of(*next, msg.ID)
			rec.Idempotent = s.Idempotent(next.Name)
			if d.MarkRunning(s, rec) {
				if err := tx.PutToolCall(rec); err != nil {
					return err
				}
				d.Calls.Note(rec)
			}
		}
		done := d.Calls.Done(c, msg.ID, now)
		done.ResultMessageID, done.Idempotent = tm.ID, s.Idempotent(c.Name)
		if err := tx.PutToolCall(done); err != nil {
			return err
		}
		d.Calls.Note(done)
		if startNext {
			r.Stage("tool_completed", payload.ToolCompleted{CallID: c.ID, Name: c.Name, Depth: s.Depth(), Status: status})
			r.Stage("tool_started", payload.ToolStarted{CallID: next.ID, Name: next.Name, Depth: s.Depth()})
			staged = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.AfterInsert(s, tm)
	if sessionStatus && res.Status == weft.ToolSuccess {
		// A subagent's sessionStatus call is its status text in the parent's registry.
		r.ReportStatus(tm.Content)
	}
	r.AddRow(tm)
	if staged {
		d.started = next
	}
	r.EmitUnrecorded(tm)
	if s.Depth() > 0 {
		s.Nest(tm)
	}
	return tm, nil
}

// MarkRunning marks a non-idempotent call running: after a crash such a call is not re-run but
// answered as interrupted. An idempotent call stays pending (it is re-run either way). It reports
// whether the record changed.
func (d *Dispatcher) MarkRunning(s Scope, rec *weft.ToolCallRecord) bool {
	if !MarksRunning(rec, s.NeedsApproval(rec.Name)) {
		return false
	}
	now := d.run.Now()
	rec.Status, rec.StartedAt = weft.CallRunning, &now
	return true
}

// removeCall drops a call from its assistant message after a hook returned nil; an assistant
// message left empty is deleted.
func (d *Dispatcher) removeCall(msg *weft.Message, c weft.ToolCall) error {
	r := d.run
	calls := slices.DeleteFunc(slices.Clone(msg.ToolCalls), func(x weft.ToolCall) bool { return x.ID == c.ID })
	deleted := len(calls) == 0 && strings.TrimSpace(msg.Content) == ""
	updated := *msg
	updated.ToolCalls = calls
	now := r.Now()
	err := r.Tx(func(tx weft.Tx) error {
		done := d.Calls.Done(c, msg.ID, now)
		if err := tx.PutToolCall(done); err != nil {
			return err
		}
		d.Calls.Note(done)
		if deleted {
			return tx.DeleteMessage(msg.ID)
		}
		if err := tx.UpdateMessage(msg.ID, weft.MessageChange{ToolCalls: &calls}); err != nil {
			return err
		}
		r.StageMessage(&updated) // streamed again, without the call
		return nil
	})
	if err != nil {
		return err
	}
	*msg = updated
	r.ReplaceRow(msg) // (after the mailbox's changes)
	if deleted {
		r.DeleteRow(msg.ID)
		if r.Observed() {
			r.Emit("message_deleted", payload.Fields{"message_id": msg.ID})
		}
		return nil
	}
	r.EmitUnrecorded(msg)
	return nil
}

// RunQueued runs the tools queued with Queue after the current calls: their messages (tool_call_id
// queued_<n>) have no matching call and are not shown to the model.
func (d *Dispatcher) RunQueued(s Scope) error {
	r := d.run
	r.Sync()
	for len(d.queued) > 0 {
		q := d.queued[0]
		d.queued = d.queued[1:]
		c, res := r.QueuedCall(s, q.name, q.args)
		red := r.Redactor()
		tm := &weft.Message{Role: weft.RoleTool, Side: s.Side(), Name: q.name, ToolCallID: c.ID, ToolStatus: res.Status,
			Status: weft.MessageCompleted, RunID: r.RunID(), Metadata: map[string]any{"queued": true}}
		if res.Status == weft.ToolSuccess {
			tm.Content = or(strings.TrimSpace(red.String(res.Result)), "Tool executed successfully")
		} else {
			tm.Content = "Failed to execute tool: " + red.String(res.Error)
		}
		err := r.StoreQueued(tm)
		r.EndTool(err == nil, tm.ToolStatus, tm.Content)
		if err != nil {
			return err
		}
		r.AddRow(tm)
		r.EmitUnrecorded(tm)
	}
	return nil
}
