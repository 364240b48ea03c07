package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
	"github.com/weft-agents/weft/engine/journal"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/engine/runstate"
	"github.com/weft-agents/weft/engine/threadstate"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/schema"
)

// execution is the Execution of a tool or hook inside a run.
type execution struct {
	r        *run
	s        *scope
	call     *weft.ToolCall
	entry    weft.ToolEntry
	resultID string
}

func (x *execution) RunID() string   { return x.r.id }
func (x *execution) Side() weft.Side { return x.s.side }
func (x *execution) StepCount() int  { return x.r.steps }
func (x *execution) SideStepCount(s weft.Side) int {
	return x.r.sideSteps[runstate.SideIndex(s)]
}
func (x *execution) TurnCount(s weft.Side) int   { return x.r.state.Of(s).Turns }
func (x *execution) Depth() int                  { return x.s.depth }
func (x *execution) PromptName() string          { return x.s.prompt.Name }
func (x *execution) ToolCall() *weft.ToolCall    { return x.call }
func (x *execution) ToolOptions() map[string]any { return x.entry.Options }
func (x *execution) Memory() weft.Memory         { return runMemory{x.r} }
func (x *execution) ForceTurn(s weft.Side)       { x.s.fx.forced = s }
func (x *execution) Stop()                       { x.r.ar.stop.Store(true) }
func (x *execution) Stopped() bool               { return x.r.stopRequested() }

// OfferedTool is the called tool's definition, when its scope offers the call.
func (x *execution) OfferedTool() (*weft.Tool, bool) {
	o := x.s.offered[x.call.Name]
	if o == nil {
		return nil, false
	}
	return o.target.Tool, true
}

// EnvLayers are the env of the executing prompt and tool entry.
func (x *execution) EnvLayers() (prompt, entry map[string]string) { return x.s.prompt.Env, x.entry.Env }

// StopSession ends the session after the current step (the step's effects).
func (x *execution) StopSession(o *weft.StopSessionOptions) { x.s.fx.stopSession = o }

// TerminateThread stops the thread after the current tool (the step's effects).
func (x *execution) TerminateThread() { x.s.fx.terminate = true }

// state returns the State the tool or hook x runs sees.
func (x *execution) state() *threadstate.State { return runState(x.r, x) }

// runState returns the State of r's thread in r, serving x (nil: no execution).
func runState(r *run, x *execution) *threadstate.State {
	c := threadstate.Core{Engine: stateHost{r.e}, Thread: r.thread, Run: stateRun{r}}
	if x != nil {
		c.Exec = x
	}
	return threadstate.New(c)
}

// outsideState returns the State of thread t outside any run.
func outsideState(e *Engine, t *weft.Thread) *threadstate.State {
	return threadstate.New(threadstate.Core{Engine: stateHost{e}, Thread: t})
}

// execOf returns the execution a State serves, nil when none.
func execOf(st *threadstate.State) *execution {
	x, _ := st.Execution().(*execution)
	return x
}

// State returns the State of a thread outside any run (for effects, endpoints and library users).
func (e *Engine) State(ctx context.Context, threadID string) (weft.State, error) {
	t, err := e.store.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	return outsideState(e, t), nil
}

// stateHost is the engine as a State sees it (threadstate.Engine). Registry, Store, Redactor,
// Send and Terminate are the Engine's own.
type stateHost struct{ *Engine }

func (h stateHost) Now() time.Time    { return h.clock.Now() }
func (h stateHost) Log() *slog.Logger { return h.log }
func (h stateHost) Tx(ctx context.Context, threadID string, fence *weft.Fence, red *redact.Redactor, fn func(weft.Tx) error) error {
	return h.commit.Tx(ctx, threadID, fence, red, fn)
}
func (h stateHost) EmitOutside(ctx context.Context, ev Event) { h.commit.Outside(ctx, ev) }
func (h stateHost) Observed() bool                            { return h.commit.Observed() }
func (h stateHost) DeliverToParent(ctx context.Context, child *weft.Thread, owner weft.Side, text, kind string, atts []weft.ToolAttachment) error {
	return h.subagents.Deliver(ctx, child, owner, text, kind, atts)
}
func (h stateHost) EmitSubagent(ctx context.Context, child *weft.Thread, agent, status, text string) {
	childHost{h.Engine}.EmitSubagent(ctx, child, agent, status, text)
}
func (h stateHost) Validator(s *schema.Schema) (*schema.Validator, error) { return h.validator(s) }
func (h stateHost) EffectScheduled()                                      { h.sched.EffectScheduled() }

// stateRun is a run as a State sees it (threadstate.Run): what the State changes reaches the
// run's caches through the run's mailbox only.
type stateRun struct{ r *run }

func (s stateRun) ID() string                         { return s.r.id }
func (s stateRun) ThreadID() string                   { return s.r.thread.ID }
func (s stateRun) Fence() *weft.Fence                 { return s.r.journal.Fence() }
func (s stateRun) Redactor() *redact.Redactor         { return s.r.redactorNow() }
func (s stateRun) Emit(typ string, data Payload)      { s.r.journal.Emit(typ, data) }
func (s stateRun) EmitMessage(m weft.Message)         { s.r.journal.EmitMessage(m) }
func (s stateRun) Records() bool                      { return s.r.journal.Records() }
func (s stateRun) PostRow(m weft.Message)             { s.r.ar.post(rowStored(m)) }
func (s stateRun) PostReplace(m weft.Message)         { s.r.ar.post(rowReplaced(m)) }
func (s stateRun) PostDelete(id string)               { s.r.ar.post(rowDeleted(id)) }
func (s stateRun) PostEnv(v weft.EnvValue)            { s.r.ar.post(envSet(v)) }
func (s stateRun) HookFailed(h *weft.Hook, err error) { (*hookHost)(s.r).Failed(h, err) }

func (s stateRun) Env() vars.View {
	var c vars.View
	s.r.ar.shared(func() { c = *s.r.env })
	return c
}

func (s stateRun) PostTool(name string, args json.RawMessage) {
	s.r.ar.post(toolQueued(name, args))
}

func (s stateRun) RecordInsert(ctx context.Context, fn func(weft.Tx) error, m *weft.Message) error {
	return s.r.journal.StateTx(ctx, fn, func() Event { return s.r.journal.MessageEvent(*m) })
}

func (s stateRun) RecordChange(ctx context.Context, fn func(weft.Tx) error, cur weft.Message, c weft.MessageChange) error {
	row := journal.ChangedRow(cur, c, s.r.redactorNow())
	return s.r.journal.StateTx(ctx, fn, func() Event { return s.r.journal.MessageEvent(row) })
}

func (s stateRun) RecordDelete(ctx context.Context, fn func(weft.Tx) error, id string) error {
	return s.r.journal.StateTx(ctx, fn, func() Event { return s.r.journal.Event("message_deleted", Fields{"message_id": id}) })
}

func (s stateRun) Hooks(x threadstate.Exec, point weft.HookPoint) []*weft.Hook {
	if ex, _ := x.(*execution); ex != nil {
		return ex.hooksAt(point)
	}
	return hooks.Select(s.r.e.reg, s.r.agent.Hooks, point)
}
