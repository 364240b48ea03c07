package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/hooks"
	"github.com/weft-agents/weft/engine/journal"
	"github.com/weft-agents/weft/engine/modelcall"
	"github.com/weft-agents/weft/engine/observe"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/engine/rowcache"
	"github.com/weft-agents/weft/engine/runstate"
	"github.com/weft-agents/weft/engine/vars"
)

// activeRun is a run in progress in this process.
type activeRun struct {
	cancel context.CancelCauseFunc
	stop   atomic.Bool
	done   chan struct{}
	// interrupted is set while interruptBy names a queued message with weft.IfBusyInterrupt that
	// stops the run (ifbusy.go).
	interrupted atomic.Bool

	// mu guards the fields below, and what a State reads of the run's caches (run.shared).
	mu sync.Mutex
	// mail carries to the run's goroutine what others tell the run (mailbox.go): a State's
	// changes to its caches, and a message queued on its thread (Queued).
	mail mailbox
	// id is the run's id, once it started.
	id string
	// interruptBy is the queued message that interrupts the run ("" when none), rollback whether
	// it rolls the run back (weft.IfBusyRollback); taken lists the
	// interrupting messages the run took into its context, which interrupt nothing.
	interruptBy string
	rollback    bool
	taken       []string
	// modelCancel cancels the top-level model call in flight (nil when none is).
	modelCancel context.CancelCauseFunc
}

// Queued tells the run that a message was queued on its thread (sched.Run), through its mailbox:
// it reads the queue at its next boundary even if its last transaction saw nothing waiting, and
// once it ends.
func (ar *activeRun) Queued() { ar.post(notePushed) }

// notePushed is the mailbox's message that a message was queued on the run's thread.
func notePushed(r *run) { r.pushed = true }

// Cancel cancels the run (sched.Run).
func (ar *activeRun) Cancel(cause error) { ar.cancel(cause) }

// errStopped is the cancellation cause of a user stop.
var errStopped = errors.New("execution stopped by user")

// RunResult describes what Run did.
type RunResult struct {
	// Stops lists each run's stop, in order.
	Stops []weft.StopInfo `json:"stops"`
	// Steps is the number of steps over all runs.
	Steps int `json:"steps"`
	// LastLineRedactions counts secrets the last-line pass found in requests.
	LastLineRedactions int `json:"last_line_redactions"`
	// tree is what the runs learnt of the thread's subtree and of the store's effects.
	tree treeNote
	// Value is the structured answer of the thread's last reply when its prompt declares an
	// output schema and the last run stopped well (the reply's metadata "structured").
	Value json.RawMessage `json:"value,omitempty"`
	// Reply is the last assistant message the runs stored in the thread (nil when none did): the
	// answer, or the message of the calls a stop awaits. Its content is redacted as a message
	// event's is.
	Reply *weft.Message `json:"reply,omitempty"`
}

// treeNote is what runs of a thread learnt of the work around them: whether the thread has
// children (at a run's start, or created by a run), and when an effect of the store is next
// claimable as of the last run's start (weft.RunStart); and the last reply they stored.
type treeNote struct {
	started    bool // a run started: the fields below are known
	children   bool
	effectsDue time.Time
	// reply is the last reply a run stored, as the run holds it (shared, not redacted), and red
	// the run's redactor: finish copies and redacts it only for a caller that gets it.
	reply *weft.Message
	red   *redact.Redactor
}

// finish completes a result for its caller: its reply (redacted) when the runs left one, and
// res.Value from the thread's last reply when it carries a structured answer (read from the
// store only when some prompt declares an output schema and no run left a reply).
func (e *Engine) finish(ctx context.Context, threadID string, res *RunResult) *RunResult {
	if res != nil && res.Reply == nil && res.tree.reply != nil {
		res.Reply = redactedCopy(res.tree.reply, res.tree.red)
	}
	if !e.structured || res == nil || len(res.Stops) == 0 || !res.Last().Reason.OK() {
		return res
	}
	reply := res.Reply
	if reply == nil {
		msgs, err := e.store.Messages(ctx, threadID, weft.MessageQuery{Limit: 1, Desc: true, Roles: []weft.Role{weft.RoleAssistant}})
		if err != nil || len(msgs) == 0 {
			return res
		}
		reply = &msgs[0]
	}
	if v, ok := reply.Metadata["structured"]; ok {
		res.Value, _ = json.Marshal(v)
	}
	return res
}

// Last returns the last stop.
func (r *RunResult) Last() weft.StopInfo {
	if len(r.Stops) == 0 {
		return weft.StopInfo{}
	}
	return r.Stops[len(r.Stops)-1]
}

// Run runs the thread until it is quiescent: runs follow each other while messages are queued and
// the thread is not stopped. It returns when the last run stops. Only one run per thread happens
// at a time cluster-wide (the lease); a thread running elsewhere is weft.ErrLeaseHeld.
func (e *Engine) Run(ctx context.Context, threadID string) (*RunResult, error) {
	res, err := e.runPush(ctx, threadID, "message", "", nil)
	return e.finish(ctx, threadID, res), err
}

// Continue starts a run without a new message: side "" = the side due next.
func (e *Engine) Continue(ctx context.Context, threadID string, side weft.Side) (*RunResult, error) {
	t, err := e.store.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	if t.Status == weft.ThreadTerminated {
		return nil, fmt.Errorf("thread %s: %w", threadID, weft.ErrTerminated)
	}
	res, err := e.runPush(ctx, threadID, "continue", side, nil)
	return e.finish(ctx, threadID, res), err
}

// startPush is a message the transaction starting a run queues (BeginRun's push), saving the
// commit of its own it would otherwise take.
type startPush struct {
	q *weft.QueuedMessage
	// queued, when set, is told once, right after that transaction, whether the message is queued
	// (nil: also when the lease is held elsewhere) or why not.
	queued func(error)
	// serve: the run follows Serve's rule for queued messages, which leaves a stopped thread alone
	// (its lease is given back and the message stays queued).
	serve bool
}

// runPush runs the thread (Run), first queueing push when not nil. When the thread's turn is free
// the message is queued by the transaction that starts the run, saving a commit; else it is queued
// at once, for a run of the thread in this engine to take at its next boundary, and the run waits
// for the turn.
func (e *Engine) runPush(ctx context.Context, threadID, trigger string, side weft.Side, push *startPush) (*RunResult, error) {
	held, release, ok, err := e.sched.TryAcquire(ctx, threadID)
	if err != nil {
		return nil, err
	}
	if !ok {
		if push != nil {
			if err := e.intake.Push(ctx, push.q, nil); err != nil {
				return nil, err
			}
			push = nil
		}
		if held, release, err = e.sched.Acquire(ctx, threadID); err != nil {
			return nil, err
		}
	}
	defer release()
	return e.runHeld(held, threadID, trigger, side, push)
}

// runHeld is run for a caller holding the thread's turn (acquire); push, when not nil, is queued
// by the first run's BeginRun.
func (e *Engine) runHeld(ctx context.Context, threadID, trigger string, side weft.Side, push *startPush) (*RunResult, error) {
	res := &RunResult{}
	for i := 0; ; i++ {
		info, hits, more, err := e.runOnce(ctx, threadID, trigger, side, push, &res.tree)
		push = nil
		res.LastLineRedactions += hits
		if errors.Is(err, errNothingQueued) || (i > 0 && errors.Is(err, weft.ErrLeaseHeld)) {
			// A follow-up run taken by another process drains the queue there.
			return res, nil
		}
		if err != nil {
			return res, err
		}
		if info.Reason == "" {
			// Suspended by a shutdown: nothing was stopped; the next start resumes the run.
			return res, nil
		}
		res.Stops = append(res.Stops, info)
		res.Steps += info.Steps
		trigger, side = "message", ""
		if ctx.Err() != nil || info.Reason == weft.StopAbortedByUser || info.Reason == weft.StopAborted ||
			info.Reason == weft.StopAwaitingApproval || info.Reason == weft.StopBudgetExceeded {
			// (Messages queued meanwhile wait for the decisions: another run would stop again.)
			return res, nil
		}
		if !more {
			// A run that stops with a non-empty queue is followed by a new run.
			return res, nil
		}
	}
}

// Stop stops the thread's run (if any) and sets the stop flag: the pending message is failed,
// unanswered calls are answered and a notice is stored.
func (e *Engine) Stop(ctx context.Context, threadID string) error {
	if ar, _ := e.sched.Running(threadID).(*activeRun); ar != nil {
		ar.stop.Store(true)
		ar.cancel(errStopped)
		<-ar.done
		return nil
	}
	t, err := e.store.Thread(ctx, threadID)
	if err != nil {
		return err
	}
	if t.Status != weft.ThreadRunning {
		return weft.Errorf(weft.EConflict, "thread %s is not running (status %s): nothing to stop", threadID, t.Status)
	}
	// Running elsewhere (or a run that died): set the flag the next run or resume honours.
	return e.commit.Tx(ctx, threadID, nil, journal.NoText, func(tx weft.Tx) error {
		s, err := runstate.Load(ctx, e.store, threadID)
		if err != nil {
			return err
		}
		s.Stopped = true
		return tx.SetExecState(runstate.Key, s.Encode())
	})
}

// runOnce performs one run from a trigger to a stop reason.
//
// more reports messages queued that the run did not take: seen by its last transaction, or pushed
// by Send while the run was registered (checked once it no longer is, so that a Send either marks
// the run or finds it gone and leaves the message to its caller's Run).
//
// tree, when not nil, is told what the run learnt of the thread's subtree and of the effects.
func (e *Engine) runOnce(ctx context.Context, threadID, trigger string, forceSide weft.Side, push *startPush, tree *treeNote) (_ weft.StopInfo, _ int, more bool, _ error) {
	var pq *weft.QueuedMessage
	if push != nil {
		pq = push.q
	}
	fence, start, err := e.sched.BeginRun(ctx, threadID, pq)
	err = e.intake.Refusal(err)
	stopped := err == nil && push != nil && push.serve && start.Thread.Status == weft.ThreadStopped
	if stopped {
		// Serve leaves a stopped thread alone: the lease goes back before the sender is told.
		e.sched.GiveBackLease(context.WithoutCancel(ctx), fence)
	}
	if push != nil && push.queued != nil {
		if errors.Is(err, weft.ErrLeaseHeld) {
			push.queued(nil) // queued for the holder's run
		} else {
			push.queued(err)
		}
	}
	if err != nil {
		return weft.StopInfo{}, 0, false, err
	}
	if tree != nil {
		tree.started = true
		tree.children = tree.children || start.Children
		tree.effectsDue = start.EffectsDue
	}
	if stopped {
		return weft.StopInfo{}, 0, false, errNothingQueued
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	ar := &activeRun{cancel: cancel, done: make(chan struct{})}
	released := false
	checkInterrupts := e.sched.Register(threadID, ar)
	var r *run
	defer func() {
		cancel(nil)
		e.sched.Unregister(threadID)
		if r != nil {
			r.sync() // a message queued while the run was registered was told through its mailbox
			more = r.pushed || r.journal.Waiting()
		} else {
			more = ar.mail.has.Load()
		}
		close(ar.done)
		if !released && !e.sched.KeepLease(fence) {
			e.sched.GiveBackLease(context.WithoutCancel(ctx), fence)
		}
	}()
	renewal := e.leases.Renew(runCtx, fence, cancel)
	defer renewal.Stop()

	r, err = e.newRun(runCtx, ar, fence, start)
	if err != nil {
		return weft.StopInfo{}, 0, false, err
	}
	ar.mu.Lock()
	ar.id = r.id
	ar.mu.Unlock()
	for i := range start.Queued {
		ar.take(&start.Queued[i]) // the run answers them: they interrupt nothing
	}
	if trigger == "message" && len(start.Queued) == 0 {
		return weft.StopInfo{}, 0, false, errNothingQueued
	}
	if checkInterrupts {
		// A message queued since BeginRun's transaction, before the registration, was queued for
		// this run: one with weft.IfBusyInterrupt stops it now.
		e.intake.Interrupt(runCtx, threadID, ar)
	}
	r.trigger = trigger
	if obs := e.opt.Observer; obs != nil {
		r.obs = obs.StartRun(runCtx, observe.RunInfo{RunID: r.id, ThreadID: threadID, RootID: orDefault(r.thread.RootID, threadID),
			ParentID: r.thread.ParentID, Agent: r.agent.Name, Provider: e.models.AgentProvider(r.agent), Redact: r.red.String})
		r.model.KeepEnds()
	}
	info, err := r.loop(trigger, forceSide)
	if tree != nil {
		tree.children = tree.children || r.spawned.Load()
		if m := r.lastReply(); m != nil {
			tree.reply, tree.red = m, r.red
		}
	}
	r.journal.Finish()
	if r.obs != nil {
		r.obs.End(observe.RunEnd{Stop: info, Trigger: r.trigger, Err: err})
	}
	released = r.journal.Released()
	r.requests.Release()
	return info, r.model.Redactions(), false, err
}

// lastReply returns the last assistant message the run stored at the top level, as the run holds
// it (nil when it stored none).
func (r *run) lastReply() *weft.Message {
	r.sync()
	for i := len(r.cache.Rows) - 1; i >= 0; i-- {
		m := r.cache.Rows[i]
		if m.RunID != r.id {
			return nil // rows before the run's own
		}
		if m.Role == weft.RoleAssistant && m.Status == weft.MessageCompleted {
			return m
		}
	}
	return nil
}

// redactedCopy copies a message for a caller, its content redacted.
func redactedCopy(m *weft.Message, red *redact.Redactor) *weft.Message {
	c := *m
	c.Content = red.String(c.Content)
	return &c
}

// errNothingQueued: a message trigger found the queue already drained (by a run elsewhere).
var errNothingQueued = errors.New("nothing queued")

// run is one run of a thread.
type run struct {
	e      *Engine
	ctx    context.Context
	ar     *activeRun
	id     string
	thread *weft.Thread
	agent  *weft.Agent
	state  runstate.State

	// journal writes the run's changes: its transactions, the queue it drains, its events.
	journal journal.Journal
	// cache is the thread's top-level messages (completed and pending) in seq order.
	cache rowcache.Cache
	// pushed: a message was queued on the thread since the run last read its queue (told through
	// the mailbox, ar.mail: activeRun.Queued, activeRun.interrupt).
	pushed bool
	// spawned: the run created a child thread (a subagent).
	spawned atomic.Bool

	steps     int
	sideSteps [2]int
	ceiling   int

	env    *vars.View
	red    *redact.Redactor
	memory map[string]any // Execution.Memory, under the mailbox's lock

	// tools runs the run's tool calls.
	tools dispatch.Dispatcher
	// hooks runs the run's hooks.
	hooks hooks.Runner
	// model makes the run's model calls and counts the last-line redaction hits.
	model modelcall.Caller
	// requests builds the run's provider requests.
	requests requests
	// terminated: the loop applied a State.Terminate; the run's stop terminates the thread.
	terminated bool
	// suspend is set at a step boundary while the engine shuts down.
	suspend atomic.Bool

	// obs observes the run (Options.Observer; nil = off); trigger is what started the run.
	obs     observe.RunObserver
	trigger string
}

// newRun makes the run of a thread that starts from start: the run ar in progress, holding the
// lease fence; or, with ar nil, a run that runs nothing (a preview, a check), from what
// runstate.Read read.
func (e *Engine) newRun(ctx context.Context, ar *activeRun, fence weft.Fence, start *weft.RunStart) (*run, error) {
	if ar == nil {
		ar = &activeRun{}
	}
	t := start.Thread
	a, ok := e.reg.Agent(t.Agent)
	if !ok {
		return nil, weft.Errorf(weft.EInvalid, "thread %s: agent %q is not defined", t.ID, t.Agent)
	}
	s, err := runstate.Decode(start.ExecState[runstate.Key])
	if err != nil {
		return nil, fmt.Errorf("thread %s: corrupt run state: %w", t.ID, err)
	}
	r := &run{e: e, ctx: ctx, ar: ar, id: weft.NewID("run_"), thread: t, agent: a, state: s, cache: rowcache.New()}
	r.journal.Init(context.WithoutCancel(ctx), &e.commit, (*journalHost)(r), t, fence, start.Queued)
	r.wire()
	r.ceiling = max(250, a.SideA.MaxSteps, a.Side(weft.SideB).MaxSteps)
	if start.Rows != nil {
		r.cache.Share(start.Rows)
	} else {
		r.cache.Add(start.Messages)
	}
	if r.env, err = e.secrets.View(ctx, t, a, start.ThreadEnv, start.UserEnv, start.InstanceEnv); err != nil {
		return nil, err
	}
	r.red = e.secrets.For(r.env)
	return r, nil
}

// wire connects the run's collaborators to it and binds what its events and transactions reuse.
func (r *run) wire() {
	r.tools.Bind((*toolRun)(r))
	r.hooks = hooks.NewRunner(r.ctx, (*hookHost)(r))
	r.model.Init(&r.e.models, r.ctx, (*modelRun)(r), r.thread.ID, r.id, &r.env, &r.red)
	r.requests.Init(&r.model, r.e.store, r.thread, &r.cache.Rows, &r.state, &r.hooks)
	r.requests.r = r
}

// tx writes in one fenced transaction of this run (journal.Journal.Tx).
func (r *run) tx(fn func(weft.Tx) error) error { return r.journal.Tx(fn) }

func (r *run) now() time.Time { return r.e.clock.Now().UTC() }
