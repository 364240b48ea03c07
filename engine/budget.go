package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/journal"
)

// budgetProperty is the thread property holding the thread's own budget.
const budgetProperty = "weft.budget"

// errBudgetExceeded stops a run before a model call once the thread's spend reached its budget.
var errBudgetExceeded = errors.New("budget exceeded")

// budgetError is errBudgetExceeded with what was reached.
type budgetError struct{ why string }

func (e *budgetError) Error() string        { return "budget exceeded: " + e.why }
func (e *budgetError) Is(target error) bool { return target == errBudgetExceeded }

// Spend is what a thread and its descendants spent on model calls.
type Spend struct {
	// CostUSD adds the cost of every call whose price is known.
	CostUSD float64 `json:"cost_usd"`
	// Tokens adds input and output tokens of every call.
	Tokens int64 `json:"tokens"`
	// Calls counts model calls; UnknownCostCalls those whose price is unknown.
	Calls            int `json:"calls"`
	UnknownCostCalls int `json:"unknown_cost_calls"`
}

// Spend adds up the model calls of a thread and of its descendants, from their log rows.
func (e *Engine) Spend(ctx context.Context, threadID string) (Spend, error) {
	var sp Spend
	ids := []string{threadID}
	for len(ids) > 0 {
		id := ids[0]
		ids = ids[1:]
		own, err := e.spent.Of(ctx, e.store, id)
		if err != nil {
			return sp, err
		}
		sp.CostUSD += own.CostUSD
		sp.Tokens += own.Tokens
		sp.Calls += own.Calls
		sp.UnknownCostCalls += own.UnknownCostCalls
		kids, _, err := e.store.Threads(ctx, weft.ThreadQuery{ParentID: id, Limit: -1})
		if err != nil {
			return sp, err
		}
		for _, k := range kids {
			ids = append(ids, k.ID)
		}
	}
	return sp, nil
}

// BudgetOf returns a thread's budget: its own, else its agent's (nil = none).
func BudgetOf(t *weft.Thread, a *weft.Agent) *weft.Budget {
	if raw, ok := t.Properties[budgetProperty]; ok {
		b, _ := json.Marshal(raw)
		var own weft.Budget
		if json.Unmarshal(b, &own) == nil {
			return &own
		}
	}
	if a != nil {
		return a.Budget
	}
	return nil
}

// exceeded tells whether spend reached budget, and says how.
func exceeded(b *weft.Budget, sp Spend) (bool, string) {
	switch {
	case b.MaxCostUSD > 0 && sp.CostUSD >= b.MaxCostUSD:
		return true, fmt.Sprintf("the thread spent $%.4f of its $%.4f budget", sp.CostUSD, b.MaxCostUSD)
	case b.MaxCostUSD > 0 && b.UnknownCost == "block" && sp.UnknownCostCalls > 0:
		return true, fmt.Sprintf("%d model calls have no known price and the budget blocks unknown costs", sp.UnknownCostCalls)
	case b.MaxTokens > 0 && sp.Tokens >= b.MaxTokens:
		return true, fmt.Sprintf("the thread used %d of its %d tokens", sp.Tokens, b.MaxTokens)
	}
	return false, ""
}

// checkBudget stops the run before a model call when the thread's spend reached its budget.
func (r *run) checkBudget() error {
	b := BudgetOf(r.thread, r.agent)
	if b == nil {
		return nil
	}
	sp, err := r.e.Spend(r.ctx, r.thread.ID)
	if err != nil {
		return err
	}
	if over, why := exceeded(b, sp); over {
		return &budgetError{why}
	}
	return nil
}

// SetBudget sets a thread's own budget, replacing its agent's. A paused thread goes on when it is
// continued (at once while the engine serves, if the new budget allows).
func (e *Engine) SetBudget(ctx context.Context, threadID string, b weft.Budget) error {
	if field, problem := b.Check(); problem != "" {
		return weft.Errorf(weft.EInvalid, "budget.%s: %s", field, problem)
	}
	var t *weft.Thread
	err := e.commit.Tx(ctx, threadID, nil, journal.NoText, func(tx weft.Tx) error {
		cur, err := e.store.Thread(ctx, threadID)
		if err != nil {
			return err
		}
		t = cur
		props := maps.Clone(cur.Properties)
		if props == nil {
			props = map[string]any{}
		}
		props[budgetProperty] = b
		return tx.UpdateThread(weft.ThreadPatch{Properties: props})
	})
	if err != nil {
		return err
	}
	if t.Status == weft.ThreadPaused && t.StopReason == weft.StopBudgetExceeded && e.sched.Serving() {
		e.sched.Continue(ctx, threadID, rootOf(t), "")
	}
	return nil
}

// addSpend folds a log row into a thread's spend.
func addSpend(sp *Spend, l *weft.LogEntry) {
	if l.Kind != "" && l.Kind != "llm" {
		return
	}
	sp.Calls++
	sp.Tokens += int64(l.InputTokens + l.OutputTokens)
	if l.CostTotal != nil {
		sp.CostUSD += *l.CostTotal
	} else if l.InputTokens+l.OutputTokens > 0 {
		sp.UnknownCostCalls++
	}
}
