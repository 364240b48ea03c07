package engine

import (
	"fmt"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
	"github.com/weft-agents/weft/engine/runstate"
)

// handlerTurn drives a side with a Go handler: every completed top-level row
// on the side's inbound role (A reads user rows, B reads assistant rows) newer than the side's
// watermark is delivered in order; the watermark is persisted before delivery (each row at most
// once). Handler errors are logged and delivery goes on. It reports whether the handler was idle
// (nothing to deliver and nothing produced).
//
// The handler's effects (ForceTurn, …) are added to carried, the effects the loop has not applied
// yet, and returned.
func (r *run) handlerTurn(side weft.Side, def weft.AgentSide, carried toolEffects) (idle bool, fx toolEffects, err error) {
	h, ok := r.e.reg.Handler(def.Handler)
	if !ok {
		return false, carried, fmt.Errorf("handler %q is not defined", def.Handler)
	}
	inbound := weft.RoleUser
	if side == weft.SideB {
		inbound = weft.RoleAssistant
	}
	mark := r.state.Of(side).Handler
	r.sync()
	var rows []weft.Message
	for _, m := range r.cache.Rows {
		if m.Seq > mark && m.Depth == 0 && m.Status == weft.MessageCompleted && m.Role == inbound {
			rows = append(rows, *m)
		}
	}
	if len(rows) == 0 {
		return true, carried, nil
	}
	r.state.Of(side).Handler = rows[len(rows)-1].Seq
	if err := r.saveState(); err != nil {
		return false, carried, err
	}
	r.steps++
	r.sideSteps[runstate.SideIndex(side)]++
	before := r.cache.LastSeq
	s := &scope{prompt: &weft.Prompt{Name: "handler:" + h.Name}, side: side, offered: map[string]*offered{}, env: r.env,
		effects: carried}
	s.fx = &s.effects
	st := (&execution{r: r, s: s}).state()
	for _, m := range rows {
		if err := hooks.Call(func() error { return h.Fn(r.ctx, st, m) }); err != nil {
			r.e.log.Warn("handler failed", "handler", h.Name, "thread", r.thread.ID, "error", r.red.Error(err))
			l := &weft.LogEntry{ID: weft.NewID("log_"), ThreadID: r.thread.ID, RunID: r.id, Kind: "handler_error",
				Error: r.red.Error(err), ErrorOrigin: "handler:" + h.Name, Side: side, CreatedAt: r.now()}
			_ = r.tx(func(tx weft.Tx) error { return tx.PutLog(l) })
		}
	}
	// What the handler queued joins the thread at the next boundary; what it injected is there.
	q, err := r.e.store.Queued(r.ctx, r.thread.ID)
	if err != nil {
		return false, s.effects, err
	}
	r.sync()
	return r.cache.LastSeq == before && len(q) == 0, s.effects, nil
}
