package engine

import (
	"context"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/budget"
	"github.com/weft-agents/weft/engine/journal"
)

// Spend is what a thread and its descendants spent on model calls (budget.Spend).
type Spend = budget.Spend

// Spend adds up the model calls of a thread and of its descendants, from their log rows.
func (e *Engine) Spend(ctx context.Context, threadID string) (Spend, error) {
	return e.spent.Spend(ctx, threadID)
}

// BudgetOf returns a thread's budget: its own, else its agent's (nil = none).
func BudgetOf(t *weft.Thread, a *weft.Agent) *weft.Budget { return budget.Of(t, a) }

// checkBudget stops the run before a model call when the thread's spend reached its budget
// (a *budget.Error).
func (r *run) checkBudget() error { return r.e.spent.Check(r.ctx, r.thread, r.agent) }

// SetBudget sets a thread's own budget, replacing its agent's. A paused thread goes on when it is
// continued (at once while the engine serves, if the new budget allows).
func (e *Engine) SetBudget(ctx context.Context, threadID string, b weft.Budget) error {
	if err := budget.Valid(b); err != nil {
		return err
	}
	var t *weft.Thread
	err := e.commit.Tx(ctx, threadID, nil, journal.NoText, func(tx weft.Tx) error {
		cur, err := e.store.Thread(ctx, threadID)
		if err != nil {
			return err
		}
		t = cur
		return tx.UpdateThread(budget.Patch(cur, b))
	})
	if err != nil {
		return err
	}
	if t.Status == weft.ThreadPaused && t.StopReason == weft.StopBudgetExceeded && e.sched.Serving() {
		e.sched.Continue(ctx, threadID, rootOf(t), "")
	}
	return nil
}
