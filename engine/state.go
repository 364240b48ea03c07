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
	return &threadState{e: r.e, thread: r.thread, r: r, exec: x, ctx: r.ctx}
}

// threadState implements weft.State for one thread, inside a run (r set) or outside (r nil).
type threadState struct {
	e      *Engine
	thread *weft.Thread
	r      *run
	exec   *execution
	ctx    context.Context
	// effect is the effect this State runs for; its messages carry metadata.scheduled_effect.
	effect *weft.EffectRecord
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

// markEffect tags a message created by an effect.
func (s *threadState) markEffect(nm *weft.NewMessage) {
	if s.effect == nil {
		return
	}
	meta := map[string]any{}
	for k, v := range nm.Metadata {
		meta[k] = v
	}
	meta["scheduled_effect"] = map[string]any{"id": s.effect.ID, "name": s.effect.Name}
	nm.Metadata = meta
}

var _ weft.State = (*threadState)(nil)

// State returns the State of a thread outside any run (for effects, endpoints and library users).
func (e *Engine) State(ctx context.Context, threadID string) (weft.State, error) {
	t, err := e.store.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	return &threadState{e: e, thread: t, ctx: ctx}, nil
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

func (s *threadState) Messages(ctx context.Context, q weft.MessageQuery) ([]weft.Message, error) {
	if q.Limit == 0 {
		q.Limit = 100
	}
	return s.e.store.Messages(ctx, s.thread.ID, q)
}

func (s *threadState) Message(ctx context.Context, id string) (weft.Message, error) {
	return s.e.store.Message(ctx, s.thread.ID, id)
}

// InjectMessage persists a row now; the model sees it from the next step. It never starts a run.
func (s *threadState) InjectMessage(ctx context.Context, nm weft.NewMessage) (weft.Message, error) {
	s.markEffect(&nm)
	if err := s.beforeCreate(ctx, &nm); err != nil {
		return weft.Message{}, err
	}
	atts, err := s.storeAttachments(ctx, nm.Attachments)
	if err != nil {
		return weft.Message{}, err
	}
	m := &weft.Message{Role: nm.Role, Content: nm.Content, Attachments: atts, Silent: nm.Silent, Metadata: nm.Metadata,
		Status: weft.MessageCompleted}
	switch nm.Role {
	case weft.RoleUser:
		m.Side = weft.SideB
	case weft.RoleAssistant:
		m.Side = weft.SideA
	case weft.RoleSystem:
	default:
		return weft.Message{}, weft.Errorf(weft.EInvalid, "an injected message's role is user, assistant or system")
	}
	var fence *weft.Fence
	if s.r != nil {
		fence = &s.r.journal.fence
		m.RunID = s.r.id
	}
	insert := func(tx weft.Tx) error { return tx.InsertMessage(m) }
	if s.inRun() && s.r.journal.messageEvent != nil {
		// The row's event is recorded with it, after the run's waiting events.
		if err := s.r.journal.txState(ctx, insert, func() Event { return s.r.journal.messageEvent(*m) }); err != nil {
			return weft.Message{}, err
		}
		s.r.postRow(*m)
		return *m, nil
	}
	if err := s.e.tx(ctx, s.thread.ID, fence, s.writeRedactor(), insert); err != nil {
		return weft.Message{}, err
	}
	if s.r != nil {
		s.r.postRow(*m)
	}
	s.emitRow(ctx, *m)
	return *m, nil
}

// emitRow streams m, a row the State stored or changed: through its run (recorded by the run's
// next transaction when it records its events), or outside any run, its text redacted as a run's
// rows are.
func (s *threadState) emitRow(ctx context.Context, m weft.Message) {
	if s.inRun() {
		s.r.emitMessage(m)
		return
	}
	if !s.e.observed() {
		return
	}
	red, err := s.redactor(ctx)
	if err != nil {
		s.e.log.Warn("message event not emitted", "thread", s.thread.ID, "message", m.ID, "error", err)
		return
	}
	m.Content = red(m.Content)
	s.e.emitOutside(ctx, Event{Type: "message", ThreadID: s.thread.ID, RootID: rootOf(s.thread), Data: MessageData{Message: m}})
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

func (s *threadState) beforeCreate(ctx context.Context, nm *weft.NewMessage) error {
	if s.r == nil {
		return nil
	}
	for _, h := range s.r.activeHooks(s.exec, weft.HookBeforeCreateMessage) {
		f, _ := weft.HookFunc[weft.BeforeCreateMessageFunc](*h)
		if err := f(ctx, s, nm); err != nil {
			return fmt.Errorf("hook %s rejected the message: %w", h.ID, err)
		}
	}
	return nil
}

// QueueMessage queues a row for the next step boundary.
func (s *threadState) QueueMessage(ctx context.Context, nm weft.NewMessage) (string, error) {
	s.markEffect(&nm)
	if err := s.beforeCreate(ctx, &nm); err != nil {
		return "", err
	}
	return s.e.Send(ctx, s.thread.ID, nm)
}

func (s *threadState) UpdateMessage(ctx context.Context, id string, u weft.MessageUpdate) (weft.Message, error) {
	if s.r != nil {
		for _, h := range s.r.activeHooks(s.exec, weft.HookBeforeUpdateMessage) {
			f, _ := weft.HookFunc[weft.BeforeUpdateMessageFunc](*h)
			if err := f(ctx, s, id, &u); err != nil {
				return weft.Message{}, fmt.Errorf("hook %s rejected the update: %w", h.ID, err)
			}
		}
	}
	c := weft.MessageChange{Content: u.Content, Silent: u.Silent, Metadata: u.Metadata}
	if u.ExcludeFromContext != nil {
		cur, err := s.e.store.Message(ctx, s.thread.ID, id)
		if err != nil {
			return weft.Message{}, err
		}
		meta := map[string]any{}
		for k, v := range cur.Metadata {
			meta[k] = v
		}
		for k, v := range u.Metadata {
			meta[k] = v
		}
		meta["exclude_from_context"] = *u.ExcludeFromContext
		c.Metadata = meta
	}
	var fence *weft.Fence
	if s.r != nil {
		fence = &s.r.journal.fence
	}
	update := func(tx weft.Tx) error { return tx.UpdateMessage(id, c) }
	recorded := s.inRun() && s.r.journal.messageEvent != nil
	if recorded {
		// The changed row's event is recorded with the change.
		cur, err := s.e.store.Message(ctx, s.thread.ID, id)
		if err != nil {
			return weft.Message{}, err
		}
		row := changedRow(cur, c, s.r.redactorNow())
		if err := s.r.journal.txState(ctx, update, func() Event { return s.r.journal.messageEvent(row) }); err != nil {
			return weft.Message{}, err
		}
	} else if err := s.e.tx(ctx, s.thread.ID, fence, s.writeRedactor(), update); err != nil {
		return weft.Message{}, err
	}
	m, err := s.e.store.Message(ctx, s.thread.ID, id)
	if err != nil {
		return m, err
	}
	if s.r != nil {
		s.r.postReplace(m)
	}
	if !recorded {
		s.emitRow(ctx, m) // a message event carries a created or an updated row
	}
	if s.r != nil {
		for _, h := range s.r.activeHooks(s.exec, weft.HookAfterUpdateMessage) {
			f, _ := weft.HookFunc[weft.MessageFunc](*h)
			if herr := call(func() error { return f(ctx, s, m) }); herr != nil {
				s.r.hookFailed(h, herr)
			}
		}
	}
	return m, nil
}

func (s *threadState) DeleteMessage(ctx context.Context, id string) error {
	var fence *weft.Fence
	if s.r != nil {
		fence = &s.r.journal.fence
	}
	del := func(tx weft.Tx) error { return tx.DeleteMessage(id) }
	if s.inRun() && s.r.journal.messageEvent != nil {
		// The deletion's event is recorded with it.
		err := s.r.journal.txState(ctx, del, func() Event { return s.r.event("message_deleted", Fields{"message_id": id}) })
		if err == nil {
			s.r.postDelete(id)
		}
		return err
	}
	err := s.e.tx(ctx, s.thread.ID, fence, keep, del)
	if err == nil && s.r != nil {
		s.r.postDelete(id)
	}
	if err == nil {
		s.emit(ctx, "message_deleted", Fields{"message_id": id})
	}
	return err
}

func (s *threadState) Logs(ctx context.Context, q weft.LogQuery) ([]weft.LogEntry, error) {
	return s.e.store.Logs(ctx, s.thread.ID, q)
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

// The family and effect methods arrive with subagents and effects.

// ScheduleEffect stores a durable effect to run after delay and returns its id.
func (s *threadState) ScheduleEffect(ctx context.Context, name string, args any, delay time.Duration) (string, error) {
	return s.scheduleEffect(ctx, name, args, delay)
}

// ScheduledEffects lists the thread's effects.
func (s *threadState) ScheduledEffects(ctx context.Context) ([]weft.EffectRecord, error) {
	return s.e.store.Effects(ctx, s.thread.ID)
}

// CancelEffect cancels a pending effect of the thread.
func (s *threadState) CancelEffect(ctx context.Context, id string) error {
	// The event names the effect, as every effect_changed does.
	effects, err := s.e.store.Effects(ctx, s.thread.ID)
	if err != nil {
		return err
	}
	name := ""
	for _, e := range effects {
		if e.ID == id {
			name = e.Name
		}
	}
	if err := s.e.store.CancelEffect(ctx, s.thread.ID, id); err != nil {
		return err
	}
	s.emit(ctx, "effect_changed", Fields{"id": id, "name": name, "status": weft.EffectCanceled})
	return nil
}

// NotifyParent queues "Subagent (reference: …) sent a message" to the parent,
// silent, role by the owner side, with the files copied into the parent's /attachments/.
func (s *threadState) NotifyParent(ctx context.Context, text string, attachments ...string) error {
	if s.thread.ParentID == "" {
		return weft.ErrNoParent
	}
	var atts []weft.ToolAttachment
	for _, p := range attachments {
		a, err := s.e.readFileAttachment(ctx, s.thread.ID, p)
		if err != nil {
			return err
		}
		atts = append(atts, a)
	}
	owner := weft.SideA
	if row, ok := registryRow(s.thread); ok && row["owner_side"] == string(weft.SideB) {
		owner = weft.SideB
	}
	msg := fmt.Sprintf("Subagent (reference: %s) sent a message:\n\n%s", s.thread.ID, text)
	return s.e.reports.deliver(ctx, s.thread, owner, msg, "subagent_message", atts)
}

// SetStatus sets the status text of the thread's registry row, which the parent's listing shows.
func (s *threadState) SetStatus(ctx context.Context, text string) error {
	t, err := s.e.store.Thread(ctx, s.thread.ID)
	if err != nil {
		return err
	}
	row, ok := registryRow(t)
	if !ok {
		return weft.ErrNoParent
	}
	props := map[string]any{}
	for k, v := range t.Properties {
		props[k] = v
	}
	nr := map[string]any{}
	for k, v := range row {
		nr[k] = v
	}
	// The text leaves the child: the parent's listing, its model and its stream show it, so the
	// child's secrets are redacted before it is stored.
	red, err := s.e.Redactor(ctx, t.ID)
	if err != nil {
		return err
	}
	text = red(text)
	nr["status_text"] = text
	props[subagentProperty] = nr
	if err := s.e.tx(ctx, t.ID, nil, keep, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Properties: props}) }); err != nil {
		return err
	}
	// The parent's stream hears of it as of the child's creation and end (the inspector's tree).
	agent, _ := nr["agent"].(string)
	s.e.emitSubagent(ctx, t, agent, t.Status.SubagentStatus(), text)
	return nil
}

// StopSession ends the session after the current step (state_stop_session; session_fail with
// Failed).
func (s *threadState) StopSession(ctx context.Context, o weft.StopSessionOptions) error {
	if s.r == nil {
		return weft.ErrNotInRun
	}
	if s.exec != nil {
		s.exec.s.fx.stopSession = &o
	}
	return nil
}

// Terminate stops the thread for good: inside a run after the current tool, else at once.
func (s *threadState) Terminate(ctx context.Context) error {
	if s.r != nil && s.r.thread.ID == s.thread.ID {
		if s.exec != nil {
			s.exec.s.fx.terminate = true
		}
		effects, err := s.e.store.Effects(ctx, s.thread.ID)
		if err != nil {
			return err
		}
		for _, ef := range effects {
			if ef.Status == weft.EffectPending {
				_ = s.e.store.CancelEffect(ctx, s.thread.ID, ef.ID)
			}
		}
		return nil
	}
	return s.e.Terminate(ctx, s.thread.ID)
}

// Parent returns the parent thread's state; ErrNoParent at the root.
func (s *threadState) Parent(ctx context.Context) (weft.State, error) {
	if s.thread.ParentID == "" {
		return nil, weft.ErrNoParent
	}
	t, err := s.e.store.Thread(ctx, s.thread.ParentID)
	if err != nil {
		return nil, err
	}
	return &threadState{e: s.e, thread: t, ctx: ctx}, nil
}

// Child returns the state of one of the thread's subagents.
func (s *threadState) Child(ctx context.Context, ref string) (weft.State, error) {
	t, err := s.e.store.Thread(ctx, ref)
	if err != nil || t.ParentID != s.thread.ID {
		return nil, fmt.Errorf("subagent %s: %w", ref, weft.ErrNotFound)
	}
	return &threadState{e: s.e, thread: t, ctx: ctx}, nil
}

// Children lists the thread's subagent registry, oldest first.
func (s *threadState) Children(ctx context.Context) ([]weft.SubagentInfo, error) {
	kids, _, err := s.e.store.Threads(ctx, weft.ThreadQuery{ParentID: s.thread.ID, Sort: "oldest", Limit: -1})
	if err != nil {
		return nil, err
	}
	out := make([]weft.SubagentInfo, 0, len(kids))
	for _, k := range kids {
		row, _ := registryRow(k)
		str := func(key string) string { v, _ := row[key].(string); return v }
		flag := func(key string) bool { v, _ := row[key].(bool); return v }
		out = append(out, weft.SubagentInfo{Reference: k.ID, ParentThreadID: s.thread.ID, Agent: k.Agent, Label: str("label"),
			OwnerSide: weft.Side(str("owner_side")), Blocking: flag("blocking"), Resumable: flag("resumable"),
			ReceivesMessages: str("receives_messages"), ParentCommunication: str("parent_communication"),
			Status: k.Status.SubagentStatus(), StatusText: str("status_text"), CreatedAt: k.CreatedAt, UpdatedAt: k.UpdatedAt})
	}
	return out, nil
}
