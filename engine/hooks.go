package engine

import (
	"errors"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
)

// Which hooks apply where (engine/hooks runs them): in a scope, its prompt's `hooks` when set (even
// empty), else the agent's; after a run, a thread's creation or a subagent's, the agent's.

// hooksAt returns the hooks of a point that apply to what x runs (hooks.Applying), in listed order.
func (x *execution) hooksAt(point weft.HookPoint) []*weft.Hook {
	ids := x.r.agent.Hooks
	if x.s != nil {
		ids = hooks.Applying(x.s.prompt.Hooks, ids)
	}
	return hooks.Select(x.r.e.reg, ids, point)
}

// scopeHooks returns the hooks of a point that apply in s, with the State they get (none, and no
// State, when no hook applies).
func (r *run) scopeHooks(s *scope, point weft.HookPoint) hooks.Set {
	if len(hooks.Applying(s.prompt.Hooks, r.agent.Hooks)) == 0 {
		return hooks.Set{}
	}
	x := &execution{r: r, s: s}
	return hooks.Set{Hooks: x.hooksAt(point), State: x.state()}
}

// hookHost is a run as its hooks see it (hooks.Host): a conversion of *run.
type hookHost run

// Failed logs a hook's error or panic; the hook is skipped.
func (h *hookHost) Failed(hk *weft.Hook, err error) {
	r := (*run)(h)
	r.e.log.Warn("hook failed", "hook", hk.ID, "point", hk.Point, "thread", r.thread.ID, "error", r.red.Error(err))
	l := &weft.LogEntry{ID: weft.NewID("log_"), ThreadID: r.thread.ID, RunID: r.id, Kind: "hook_error",
		Error: r.red.Error(err), ErrorOrigin: "hook:" + hk.ID, CreatedAt: r.now()}
	_ = r.tx(func(tx weft.Tx) error { return tx.PutLog(l) })
}

func asBlocked(err error, be **weft.BlockedError) bool { return errors.As(err, be) }
