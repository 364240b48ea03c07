package engine

import (
	"context"
	"errors"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
)

// Which hooks apply where (engine/hooks runs them): in a scope, its prompt's `hooks` when set (even
// empty), else the agent's; after a run, a thread's creation or a subagent's, the agent's.

// activeHooks returns the hooks of a point active for the executing prompt: the prompt's `hooks`
// when set (even empty), else the agent's, in listed order.
func (r *run) activeHooks(x *execution, point weft.HookPoint) []*weft.Hook {
	ids := r.agent.Hooks
	if x != nil && x.s != nil && x.s.prompt.Hooks != nil {
		ids = x.s.prompt.Hooks
	}
	return hooks.Select(r.e.reg, ids, point)
}

// scopeHookIDs are the hooks that apply in s: its prompt's when it names any, else the agent's.
func (r *run) scopeHookIDs(s *scope) []string {
	if s.prompt.Hooks != nil {
		return s.prompt.Hooks
	}
	return r.agent.Hooks
}

// scopeHooks returns the hooks of a point that apply in s, with the State they get (none, and no
// State, when no hook applies).
func (r *run) scopeHooks(s *scope, point weft.HookPoint) hooks.Set {
	ids := r.scopeHookIDs(s)
	if len(ids) == 0 {
		return hooks.Set{}
	}
	x := &execution{r: r, s: s}
	return hooks.Set{Hooks: r.activeHooks(x, point), State: newState(stateCore{e: r.e, thread: r.thread, r: r, exec: x, ctx: r.ctx})}
}

// hookFailed logs a hook's error or panic; the hook is skipped.
func (r *run) hookFailed(h *weft.Hook, err error) {
	r.e.log.Warn("hook failed", "hook", h.ID, "point", h.Point, "thread", r.thread.ID, "error", r.red.Error(err))
	l := &weft.LogEntry{ID: weft.NewID("log_"), ThreadID: r.thread.ID, RunID: r.id, Kind: "hook_error",
		Error: r.red.Error(err), ErrorOrigin: "hook:" + h.ID, CreatedAt: r.now()}
	_ = r.tx(func(tx weft.Tx) error { return tx.PutLog(l) })
}

// hookHost is a run as its hooks see it (hooks.Host): a conversion of *run.
type hookHost run

// Failed reports a failed hook (run.hookFailed).
func (h *hookHost) Failed(hk *weft.Hook, err error) { (*run)(h).hookFailed(hk, err) }

func asBlocked(err error, be **weft.BlockedError) bool { return errors.As(err, be) }

// runThreadCreatedHooks runs after_thread_created with a State outside any run.
func (e *Engine) runThreadCreatedHooks(ctx context.Context, t *weft.Thread, a *weft.Agent) error {
	st := newState(stateCore{e: e, thread: t, ctx: ctx})
	for _, h := range hooks.Select(e.reg, a.Hooks, weft.HookAfterThreadCreated) {
		f, _ := weft.HookFunc[weft.ThreadCreatedFunc](*h)
		if err := hooks.Call(func() error { return f(ctx, st) }); err != nil {
			e.log.Warn("hook failed", "hook", h.ID, "point", h.Point, "thread", t.ID, "error", err)
		}
	}
	return nil
}
