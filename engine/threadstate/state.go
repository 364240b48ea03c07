// Package threadstate is the State a thread's tools, hooks, handlers and effects see
// (weft.State): the thread's identity, definitions, values, messages, files, variables, parent and
// children, and scheduled effects, which it also runs once claimed (RunEffect). A State serves one
// thread, inside a run or outside any. It does
// not import engine: it reaches the engine through the Engine interface and its thread's run
// through the Run interface, whose mailbox carries every change the State makes to the run's
// caches (a State never touches them itself, whichever goroutine it runs on).
package threadstate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/feed"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/schema"
)

// Core is what a State serves: an engine, a thread, and the run and execution it serves in.
type Core struct {
	// Engine serves the thread.
	Engine Engine
	// Thread is the State's thread.
	Thread *weft.Thread
	// Run is the run the State serves in (nil outside any run): its thread's, or a descendant's.
	Run Run
	// Exec is the execution of the tool, hook or handler the State serves (nil when none).
	Exec Exec
	// Effect is the effect this State runs for; its messages carry metadata.scheduled_effect.
	Effect *weft.EffectRecord
}

// State implements weft.State for one thread, inside a run (r set) or outside (r nil). It
// answers for the thread itself (identity, definitions, values, tools, custom events); each other
// concern is a type of its own that it embeds: messages (the rows and their attachments), env
// (variables), family (parent, children, ending the session), effects (scheduling). Build one
// with New, which wires the concerns to it.
type State struct {
	core
	messages
	env
	family
	effects
}

// core is the thread and run a State serves (Core's fields).
type core struct {
	// e serves the thread.
	e Engine
	// thread is the State's thread.
	thread *weft.Thread
	// r is the run the State serves in, nil outside any.
	r Run
	// exec is the execution the State serves, nil when none.
	exec Exec
	// effect is the effect this State runs for, nil when none.
	effect *weft.EffectRecord
}

// messages is the State's messages: listing, injecting, queueing, changing and deleting rows,
// and storing their attachments (messages.go, files.go).
type messages struct{ *State }

// env is the State's variables (env.go).
type env struct{ *State }

// family is the State's parent and children, and ending its session or thread (family.go).
type family struct{ *State }

// effects is the State's scheduled effects (effects.go).
type effects struct{ *State }

// New returns the State c describes.
func New(c Core) *State {
	s := &State{core: core{e: c.Engine, thread: c.Thread, r: c.Run, exec: c.Exec, effect: c.Effect}}
	s.messages = messages{s}
	s.env = env{s}
	s.family = family{s}
	s.effects = effects{s}
	return s
}

var _ weft.State = (*State)(nil)

// keep is the empty redactor: a write that holds no text of the model's keeps what it writes.
var keep = &redact.Redactor{}

// emit publishes an event of the State's thread: through its run (recorded with the run's next
// transaction), or on its own outside a run.
func (s *State) emit(ctx context.Context, typ string, data payload.Payload) {
	if s.inRun() {
		s.r.Emit(typ, data)
		return
	}
	s.e.EmitOutside(ctx, feed.Event{Type: typ, ThreadID: s.thread.ID, RootID: rootOf(s.thread), Data: data})
}

// rootOf returns the root of a thread's tree.
func rootOf(t *weft.Thread) string {
	if t.RootID == "" {
		return t.ID
	}
	return t.RootID
}

func (s *State) ThreadID() string          { return s.thread.ID }
func (s *State) AgentName() string         { return s.thread.Agent }
func (s *State) UserID() string            { return s.thread.UserID }
func (s *State) ParentID() string          { return s.thread.ParentID }
func (s *State) RootID() string            { return s.thread.RootID }
func (s *State) CreatedAt() time.Time      { return s.thread.CreatedAt }
func (s *State) Arguments() map[string]any { return s.thread.Arguments }
func (s *State) Root() weft.State          { return s }
func (s *State) Files() weft.FileSystem    { return &threadFS{s: s} }
func (s *State) LoadPrompt(n string) (*weft.Prompt, error) {
	return load(s.e.Registry().Prompt, "prompt", n)
}
func (s *State) LoadAgent(n string) (*weft.Agent, error) {
	return load(s.e.Registry().Agent, "agent", n)
}
func (s *State) LoadModel(n string) (*weft.Model, error) {
	return load(s.e.Registry().Model, "model", n)
}

func load[T any](get func(string) (*T, bool), kind, name string) (*T, error) {
	if v, ok := get(name); ok {
		c := *v
		return &c, nil
	}
	return nil, fmt.Errorf("no %s named %q: %w", kind, name, weft.ErrNotFound)
}

func (s *State) Execution() weft.Execution {
	if s.exec == nil {
		return nil
	}
	return s.exec
}

func (s *State) Terminated(ctx context.Context) (bool, error) {
	t, err := s.e.Store().Thread(ctx, s.thread.ID)
	if err != nil {
		return false, err
	}
	return t.Status == weft.ThreadTerminated, nil
}

// inRun reports that the State is its thread's run's: what it emits goes through the run.
func (s *State) inRun() bool { return s.r != nil && s.r.ThreadID() == s.thread.ID }

// fence is the fence the State's writes carry: its run's, none outside runs.
func (s *State) fence() *weft.Fence {
	if s.r != nil {
		return s.r.Fence()
	}
	return nil
}

// redactor replaces the thread's secret values (every layer, ancestors' included) and the
// provider keys: the run's, which follows SetEnv, or one read for the thread.
func (s *State) redactor(ctx context.Context) (func(string) string, error) {
	if s.inRun() {
		return s.r.Redactor().String, nil
	}
	return s.e.Redactor(ctx, s.thread.ID)
}

// writeRedactor is the redactor for the State's writes: its run's, as it stands; nil (the
// committer loads the thread's) outside its thread's run.
func (s *State) writeRedactor() *redact.Redactor {
	if s.inRun() {
		return s.r.Redactor()
	}
	return nil
}

func (s *State) GetValue(ctx context.Context, key string, dst any) (bool, error) {
	raw, found, err := s.e.Store().GetKV(ctx, s.thread.ID, key)
	if err != nil || !found {
		return false, err
	}
	return true, json.Unmarshal(raw, dst)
}

// SetValue writes a JSON value to the thread's KV store; nil deletes it.
func (s *State) SetValue(ctx context.Context, key string, v any) error {
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
	err := s.e.Tx(ctx, s.thread.ID, s.fence(), keep, func(tx weft.Tx) error { return tx.SetKV(key, raw) })
	if err == nil {
		s.emit(ctx, "kv_changed", payload.Fields{"key": key})
	}
	return err
}

// QueueTool runs a tool after the current calls of the root run.
func (s *State) QueueTool(ctx context.Context, name string, args any) error {
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
	s.r.PostTool(name, raw)
	return nil
}

func (s *State) checkUses(name string) error {
	if _, ok := s.e.Registry().Tool(name); !ok {
		return fmt.Errorf("%w: %q", weft.ErrUnknownTool, name)
	}
	if s.exec != nil {
		if t, offered := s.exec.OfferedTool(); offered && t != nil && t.Uses != nil {
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
func (s *State) InvokeTool(ctx context.Context, name string, args any) (weft.ToolResult, error) {
	if err := s.checkUses(name); err != nil {
		return weft.ToolResult{}, err
	}
	t, _ := s.e.Registry().Tool(name)
	raw, err := json.Marshal(args)
	if err != nil {
		return weft.ToolResult{}, err
	}
	var decoded any
	_ = json.Unmarshal(raw, &decoded)
	if decoded == nil {
		decoded = map[string]any{}
	}
	params := t.Args
	if params == nil {
		params = schema.NoArgs()
	}
	v, err := s.e.Validator(params)
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
func (s *State) Emit(ctx context.Context, event string, data any) error {
	// Redacted as every payload is: data holding a secret goes out as its JSON with each string
	// redacted; other data as given.
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
	s.emit(ctx, "event", payload.Fields{"name": red(event), "data": data})
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
