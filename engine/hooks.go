package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/threadstate"
)

// activeHooks returns the hooks of a point active for the executing prompt: the prompt's `hooks`
// when set (even empty), else the agent's, in listed order.
func (r *run) activeHooks(x *execution, point weft.HookPoint) []*weft.Hook {
	ids := r.agent.Hooks
	if x != nil && x.s != nil && x.s.prompt.Hooks != nil {
		ids = x.s.prompt.Hooks
	}
	return r.e.hooksFor(ids, point)
}

func (e *Engine) hooksFor(ids []string, point weft.HookPoint) []*weft.Hook {
	var out []*weft.Hook
	for _, id := range ids {
		if h, ok := e.reg.Hook(id); ok && h.Point == point {
			out = append(out, h)
		}
	}
	return out
}

// scopeHookIDs are the hooks that apply in s: its prompt's when it names any, else the agent's.
func (r *run) scopeHookIDs(s *scope) []string {
	if s.prompt.Hooks != nil {
		return s.prompt.Hooks
	}
	return r.agent.Hooks
}

func (r *run) scopeHooks(s *scope, point weft.HookPoint) ([]*weft.Hook, *threadstate.State) {
	ids := r.scopeHookIDs(s)
	if len(ids) == 0 {
		return nil, nil
	}
	x := &execution{r: r, s: s}
	return r.activeHooks(x, point), x.state()
}

// hookFailed logs a hook's error or panic; the hook is skipped.
func (r *run) hookFailed(h *weft.Hook, err error) {
	r.e.log.Warn("hook failed", "hook", h.ID, "point", h.Point, "thread", r.thread.ID, "error", r.red.Error(err))
	l := &weft.LogEntry{ID: weft.NewID("log_"), ThreadID: r.thread.ID, RunID: r.id, Kind: "hook_error",
		Error: r.red.Error(err), ErrorOrigin: "hook:" + h.ID, CreatedAt: r.now()}
	_ = r.tx(func(tx weft.Tx) error { return tx.PutLog(l) })
}

// call runs fn, turning a panic into an error.
func call(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("hook panicked: %v", p)
		}
	}()
	return fn()
}

func asBlocked(err error, be **weft.BlockedError) bool { return errors.As(err, be) }

// hookToolCall runs tool_call_started (res nil) or tool_call_done; they only observe.
func (r *run) hookToolCall(s *scope, st *threadstate.State, point weft.HookPoint, c weft.ToolCall, res *weft.ToolResult) {
	for _, h := range r.activeHooks(execOf(st), point) {
		var err error
		if res == nil {
			f, _ := weft.HookFunc[weft.ToolCallFunc](*h)
			err = call(func() error { return f(r.ctx, st, c) })
		} else {
			f, _ := weft.HookFunc[weft.ToolCallDoneFunc](*h)
			err = call(func() error { return f(r.ctx, st, c, *res) })
		}
		if err != nil {
			r.hookFailed(h, err)
		}
	}
}

// hookAfterToolCall runs after_tool_call_success or _failure; keep is false when a hook returned nil
// (the call is removed and no tool message stored).
func (r *run) hookAfterToolCall(s *scope, st *threadstate.State, c weft.ToolCall, res weft.ToolResult) (weft.ToolResult, bool) {
	point := weft.HookAfterToolCallSuccess
	if res.Status == weft.ToolError {
		point = weft.HookAfterToolCallFailure
	}
	for _, h := range r.activeHooks(execOf(st), point) {
		f, _ := weft.HookFunc[weft.ToolResultFunc](*h)
		var out *weft.ToolResult
		if err := call(func() (err error) { out, err = f(r.ctx, st, c, res); return }); err != nil {
			r.hookFailed(h, err)
			continue
		}
		if out == nil {
			return res, false
		}
		res = *out
	}
	return res, true
}

func (r *run) hookBeforeStore(s *scope, st *threadstate.State, c weft.ToolCall, res weft.ToolResult) weft.ToolResult {
	for _, h := range r.activeHooks(execOf(st), weft.HookBeforeStoreToolResult) {
		f, _ := weft.HookFunc[weft.StoreToolResultFunc](*h)
		var out weft.ToolResult
		if err := call(func() (err error) { out, err = f(r.ctx, st, c, res); return }); err != nil {
			r.hookFailed(h, err)
			continue
		}
		res = out
	}
	return res
}

func (r *run) runStoppedHooks(info weft.StopInfo) {
	hooks := r.e.hooksFor(r.agent.Hooks, weft.HookAfterRunStopped)
	if len(hooks) == 0 {
		return
	}
	ctx := context.WithoutCancel(r.ctx)
	st := runState(r, nil)
	for _, h := range hooks {
		f, _ := weft.HookFunc[weft.RunStoppedFunc](*h)
		if err := call(func() error { return f(ctx, st, info) }); err != nil {
			r.hookFailed(h, err)
		}
	}
}

// runThreadCreatedHooks runs after_thread_created with a State outside any run.
func (e *Engine) runThreadCreatedHooks(ctx context.Context, t *weft.Thread, a *weft.Agent) error {
	st := outsideState(e, t)
	for _, h := range e.hooksFor(a.Hooks, weft.HookAfterThreadCreated) {
		f, _ := weft.HookFunc[weft.ThreadCreatedFunc](*h)
		if err := call(func() error { return f(ctx, st) }); err != nil {
			e.log.Warn("hook failed", "hook", h.ID, "point", h.Point, "thread", t.ID, "error", err)
		}
	}
	return nil
}

// beforeInsert runs before_create_message on a row the engine is about to store; hooks may change
// its content, silence and metadata. Their errors are logged (only inserts by tools and the API
// can be refused).
func (r *run) beforeInsert(s *scope, m *weft.Message) {
	hooks, st := r.scopeHooks(s, weft.HookBeforeCreateMessage)
	if len(hooks) == 0 {
		return
	}
	nm := weft.NewMessage{Role: m.Role, Content: m.Content, Silent: m.Silent, Metadata: m.Metadata}
	for _, h := range hooks {
		f, _ := weft.HookFunc[weft.BeforeCreateMessageFunc](*h)
		if err := call(func() error { return f(r.ctx, st, &nm) }); err != nil {
			r.hookFailed(h, err)
		}
	}
	m.Content, m.Silent, m.Metadata = r.red.String(nm.Content), nm.Silent, nm.Metadata
}

// afterInsert runs after_create_message on stored rows.
func (r *run) afterInsert(s *scope, msgs ...*weft.Message) {
	hooks, st := r.scopeHooks(s, weft.HookAfterCreateMessage)
	for _, h := range hooks {
		f, _ := weft.HookFunc[weft.MessageFunc](*h)
		for _, m := range msgs {
			if err := call(func() error { return f(r.ctx, st, *m) }); err != nil {
				r.hookFailed(h, err)
			}
		}
	}
}

// cloneJSON deep-copies a decoded JSON value (maps and lists; other values are immutable).
func cloneJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = cloneJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = cloneJSON(e)
		}
		return out
	}
	return v
}
