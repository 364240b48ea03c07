// Package budget keeps what threads spend on model calls and the budgets that cap it: a thread's
// spend is its log rows' and its descendants', read incrementally (a budget is checked before
// every model call), and a thread's budget is its own (a thread property) or its agent's.
package budget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/logtally"
)

// Property is the thread property holding the thread's own budget.
const Property = "weft.budget"

// ErrExceeded stops a run before a model call once the thread's spend reached its budget.
var ErrExceeded = errors.New("budget exceeded")

// Error is ErrExceeded with what was reached.
type Error struct {
	// Why says what was reached, in a sentence.
	Why string
}

func (e *Error) Error() string        { return "budget exceeded: " + e.Why }
func (e *Error) Is(target error) bool { return target == ErrExceeded }

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

// Ledger adds up what threads spent, from their log rows. It is safe for concurrent use.
type Ledger struct {
	// Store holds the threads and their log rows.
	Store weft.Store

	// own is what threads' own log rows spent, read incrementally: adding up every row before
	// each model call made a turn of a thread with 2,000 calls behind it take 18 ms instead of
	// 0.33 (BenchmarkBudgetedTurn).
	own logtally.Tally[Spend]
}

// NewLedger returns a ledger of the threads of st.
func NewLedger(st weft.Store) *Ledger {
	l := &Ledger{Store: st}
	l.own.Add = add
	return l
}

// Spend adds up the model calls of a thread and of its descendants, from their log rows.
func (l *Ledger) Spend(ctx context.Context, threadID string) (Spend, error) {
	var sp Spend
	ids := []string{threadID}
	for len(ids) > 0 {
		id := ids[0]
		ids = ids[1:]
		own, err := l.own.Of(ctx, l.Store, id)
		if err != nil {
			return sp, err
		}
		sp.CostUSD += own.CostUSD
		sp.Tokens += own.Tokens
		sp.Calls += own.Calls
		sp.UnknownCostCalls += own.UnknownCostCalls
		kids, _, err := l.Store.Threads(ctx, weft.ThreadQuery{ParentID: id, Limit: -1})
		if err != nil {
			return sp, err
		}
		for _, k := range kids {
			ids = append(ids, k.ID)
		}
	}
	return sp, nil
}

// Check returns an *Error when the thread's spend reached its budget (Of), nil when it has none
// or is below it.
func (l *Ledger) Check(ctx context.Context, t *weft.Thread, a *weft.Agent) error {
	b := Of(t, a)
	if b == nil {
		return nil
	}
	sp, err := l.Spend(ctx, t.ID)
	if err != nil {
		return err
	}
	if over, why := exceeded(b, sp); over {
		return &Error{why}
	}
	return nil
}

// Of returns a thread's budget: its own, else its agent's (nil = none).
func Of(t *weft.Thread, a *weft.Agent) *weft.Budget {
	if raw, ok := t.Properties[Property]; ok {
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

// add folds a log row into a thread's spend.
func add(sp *Spend, l *weft.LogEntry) {
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

// Valid refuses a budget a thread cannot be given (EInvalid, naming the field at fault).
func Valid(b weft.Budget) error {
	if field, problem := b.Check(); problem != "" {
		return weft.Errorf(weft.EInvalid, "budget.%s: %s", field, problem)
	}
	return nil
}

// Patch is the change of thread t that gives it its own budget b, replacing its agent's.
func Patch(t *weft.Thread, b weft.Budget) weft.ThreadPatch {
	props := maps.Clone(t.Properties)
	if props == nil {
		props = map[string]any{}
	}
	props[Property] = b
	return weft.ThreadPatch{Properties: props}
}
