package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/runstate"
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

// state_ returns the State a tool or hook of this run sees.
func (r *run) state_(x *execution) *threadState {
	return newState(stateCore{e: r.e, thread: r.thread, r: r, exec: x, ctx: r.ctx})
}

// threadState implements weft.State for one thread, inside a run (r set) or outside (r nil). It
// answers for the thread itself (identity, definitions, values, tools, custom events); each other
// concern is a type of its own that it embeds: stateMessages (the rows and their attachments),
// stateEnv (variables), stateFamily (parent, children, ending the session), stateEffects
// (scheduling). Build one with newState, which wires the concerns to it.
type threadState struct {
	stateCore
	stateMessages
	stateEnv
	stateFamily
	stateEffects
}

// stateCore is the thread and run a State serves.
type stateCore struct {
	e      *Engine
	thread *weft.Thread
	r      *run
	exec   *execution
	ctx    context.Context
	// effect is the effect this State runs for; its messages carry metadata.scheduled_effect.
	effect *weft.EffectRecord
}

// stateMessages is the State's messages: listing, injecting, queueing, changing and deleting rows,
// and storing their attachments.
type stateMessages struct{ *threadState }

// stateEnv is the State's variables (stateenv.go).
type stateEnv struct{ *threadState }

// stateFamily is the State's parent and children, and ending its session or thread
// (statefamily.go).
type stateFamily struct{ *threadState }

// stateEffects is the State's scheduled effects (effects.go).
type stateEffects struct{ *threadState }

// newState returns the State of c's thread.
func newState(c stateCore) *threadState {
	s := &threadState{stateCore: c}
	s.stateMessages = stateMessages{s}
	s.stateEnv = stateEnv{s}
	s.stateFamily = stateFamily{s}
	s.stateEffects = stateEffects{s}
	return s
}

// emit publishes an event of the State's thread: through its run (recorded with the run's next
// transaction), or on its own outside a run.
func (s *threadState) emit(ctx context.Context, typ string, data Payload) {
	if s.inRun() {
		s.r.emit(typ, data)
		return
	}
	s.e.emitOutside(ctx, Event{Type: typ, ThreadID: s.thread.ID, RootID: rootOf(s.thread), Data: data})
}

var _ weft.State = (*threadState)(nil)

// State returns the State of a thread outside any run (for effects, endpoints and library users).
func (e *Engine) State(ctx context.Context, threadID string) (weft.State, error) {
	t, err := e.store.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	return newState(stateCore{e: e, thread: t, ctx: ctx}), nil
}

func (s *threadState) ThreadID() string          { return s.thread.ID }
func (s *threadState) AgentName() string         { return s.thread.Agent }
func (s *threadState) UserID() string            { return s.thread.UserID }
func (s *threadState) ParentID() string          { return s.thread.ParentID }
func (s *threadState) RootID() string            { return s.thread.RootID }
func (s *threadState) CreatedAt() time.Time      { return s.thread.CreatedAt }
func (s *threadState) Arguments() map[string]any { return s.thread.Arguments }
func (s *threadState) Root() weft.State          { return s }
func (s *threadState) Files() weft.FileSystem    { return &threadFS{s: s} }
func (s *threadState) LoadPrompt(n string) (*weft.Prompt, error) {
	return load(s.e.reg.Prompt, "prompt", n)
}
func (s *threadState) LoadAgent(n string) (*weft.Agent, error) {
	return load(s.e.reg.Agent, "agent", n)
}
func (s *threadState) LoadModel(n string) (*weft.Model, error) {
	return load(s.e.reg.Model, "model", n)
}

func load[T any](get func(string) (*T, bool), kind, name string) (*T, error) {
	if v, ok := get(name); ok {
		c := *v
		return &c, nil
	}
	return nil, fmt.Errorf("no %s named %q: %w", kind, name, weft.ErrNotFound)
}

func (s *threadState) Execution() weft.Execution {
	if s.exec == nil {
		return nil
	}
	return s.exec
}

func (s *threadState) Terminated(ctx context.Context) (bool, error) {
	t, err := s.e.store.Thread(ctx, s.thread.ID)
	if err != nil {
		return false, err
	}
	return t.Status == weft.ThreadTerminated, nil
}

// inRun reports that the State is its thread's run's: what it emits goes through the run.
func (s *threadState) inRun() bool { return s.r != nil && s.r.thread.ID == s.thread.ID }

// redactor replaces the thread's secret values (every layer, ancestors' included) and the
// provider keys: the run's, which follows SetEnv, or one read for the thread.
func (s *threadState) redactor(ctx context.Context) (func(string) string, error) {
	if s.inRun() {
		return s.r.redactorNow().String, nil
	}
	return s.e.Redactor(ctx, s.thread.ID)
}

func (s *threadState) GetValue(ctx context.Context, key string, dst any) (bool, error) {
	raw, found, err := s.e.store.GetKV(ctx, s.thread.ID, key)
	if err != nil || !found {
		return false, err
	}
	return true, json.Unmarshal(raw, dst)
}

// SetValue writes a JSON value to the thread's KV store; nil deletes it.
func (s *threadState) SetValue(ctx context.Context, key string, v any) error {
	if key == "" || len(key) > 256 {
		return weft.Errorf(weft.EInvalid, "KV keys are 1 to 256 bytes")
	}
	if key == "context_usage" {
		return weft.Errorf(weft.EInvalid, "KV key %q is written by the runtime", key)
	}
	var raw json.RawMessage
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("KV value for %q: %w", key, err)
		}
		if len(b) > 1<<20 {
			return weft.Errorf(weft.EInvalid, "KV values are at most 1 MiB")
		}
		raw = b
	}
	var fence *weft.Fence
	if s.r != nil {
		fence = &s.r.journal.fence
	}
	err := s.e.tx(ctx, s.thread.ID, fence, keep, func(tx weft.Tx) error { return tx.SetKV(key, raw) })
	if err == nil {
		s.emit(ctx, "kv_changed", Fields{"key": key})
	}
	return err
}

// QueueTool runs a tool after the current calls of the root run.
func (s *threadState) QueueTool(ctx context.Context, name string, args any) error {
	if s.r == nil {
		return weft.ErrNotInRun
	}
	if err := s.checkUses(name); err != nil {
		return err
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	if args == nil {
		raw = []byte("{}")
	}
	s.r.postTool(queuedTool{name: name, args: raw})
	return nil
}

func (s *threadState) checkUses(name string) error {
	if _, ok := s.e.reg.Tool(name); !ok {
		return fmt.Errorf("%w: %q", weft.ErrUnknownTool, name)
	}
	if s.exec != nil && s.exec.s.offered[s.exec.call.Name] != nil {
		if t := s.exec.s.offered[s.exec.call.Name].target.Tool; t != nil && t.Uses != nil {
			for _, u := range t.Uses {
				if u == name {
					return nil
				}
			}
			return fmt.Errorf("%w: %q is not in the uses of tool %q", weft.ErrUnknownTool, name, t.Name)
		}
	}
	return nil
}

// InvokeTool runs a tool synchronously and stores nothing.
func (s *threadState) InvokeTool(ctx context.Context, name string, args any) (weft.ToolResult, error) {
	if err := s.checkUses(name); err != nil {
		return weft.ToolResult{}, err
	}
	t, _ := s.e.reg.Tool(name)
	raw, err := json.Marshal(args)
	if err != nil {
		return weft.ToolResult{}, err
	}
	var decoded any
	_ = json.Unmarshal(raw, &decoded)
	if decoded == nil {
		decoded = map[string]any{}
	}
	v, err := s.e.validator(argsSchema(t.Args))
	if err != nil {
		return weft.ToolResult{}, err
	}
	out, err := v.Validate(decoded)
	if err != nil {
		return weft.Failure("Tool argument validation failed: " + err.Error()), nil
	}
	raw, _ = json.Marshal(out)
	if t.Execute == nil {
		return weft.ToolResult{}, fmt.Errorf("tool %q has no Go implementation to invoke", name)
	}
	return t.Execute.Call(ctx, s, raw)
}

// Emit publishes a custom event ("event", {name, data}) on the thread's stream.
func (s *threadState) Emit(ctx context.Context, event string, data any) error {
	// Redacted as every payload is (env.md §6): data holding a secret goes out as its JSON with
	// each string redacted; other data as given.
	red, err := s.redactor(ctx)
	if err != nil {
		return err
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("event %q: %w", event, err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // a number's text is checked too: a secret may be all digits
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("event %q: %w", event, err)
	}
	if redacted, changed := redactJSON(v, red); changed {
		data = redacted
	}
	s.emit(ctx, "event", Fields{"name": red(event), "data": data})
	return nil
}

// redactJSON returns v, a decoded JSON value (numbers as json.Number), with red applied to every
// string in it (object keys too) and to every number's text (a number holding a secret becomes
// the redacted string), and whether anything changed.
func redactJSON(v any, red func(string) string) (any, bool) {
	switch v := v.(type) {
	case string:
		r := red(v)
		return r, r != v
	case json.Number:
		if r := red(string(v)); r != string(v) {
			return r, true
		}
		return v, false
	case []any:
		out, changed := make([]any, len(v)), false
		for i, x := range v {
			var c bool
			out[i], c = redactJSON(x, red)
			changed = changed || c
		}
		return out, changed
	case map[string]any:
		out, changed := make(map[string]any, len(v)), false
		for k, x := range v {
			rx, c := redactJSON(x, red)
			rk := red(k)
			out[rk] = rx
			changed = changed || c || rk != k
		}
		return out, changed
	}
	return v, false
}
