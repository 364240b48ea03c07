package budget

import (
	"errors"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// TestExceeded: a budget is reached by cost, by tokens, or — when it blocks them — by calls of
// unknown price; below its caps, or with unknown prices allowed, it is not.
func TestExceeded(t *testing.T) {
	for _, c := range []struct {
		name string
		b    weft.Budget
		sp   Spend
		why  string // "" = not reached
	}{
		{"below", weft.Budget{MaxCostUSD: 1, MaxTokens: 100}, Spend{CostUSD: 0.5, Tokens: 50}, ""},
		{"cost", weft.Budget{MaxCostUSD: 1}, Spend{CostUSD: 1}, "spent $1.0000 of its $1.0000"},
		{"tokens", weft.Budget{MaxTokens: 100}, Spend{Tokens: 120}, "used 120 of its 100 tokens"},
		{"unknown blocked", weft.Budget{MaxCostUSD: 1, UnknownCost: "block"}, Spend{UnknownCostCalls: 2}, "2 model calls have no known price"},
		{"unknown allowed", weft.Budget{MaxCostUSD: 1}, Spend{UnknownCostCalls: 2}, ""},
	} {
		over, why := exceeded(&c.b, c.sp)
		if over != (c.why != "") || !strings.Contains(why, c.why) {
			t.Errorf("%s: exceeded = %v, %q; want %q", c.name, over, why, c.why)
		}
	}
	if err := error(&Error{"x"}); !errors.Is(err, ErrExceeded) {
		t.Errorf("an *Error is not ErrExceeded")
	}
}

// TestOf: a thread's own budget (its property, as stored or decoded from JSON) replaces its
// agent's; without either there is none.
func TestOf(t *testing.T) {
	agent := &weft.Agent{Budget: &weft.Budget{MaxTokens: 10}}
	own := &weft.Thread{Properties: map[string]any{Property: map[string]any{"maxTokens": 5}}}
	if b := Of(own, agent); b == nil || b.MaxTokens != 5 {
		t.Errorf("Of a thread with its own budget = %+v, want maxTokens 5", b)
	}
	if b := Of(&weft.Thread{}, agent); b != agent.Budget {
		t.Errorf("Of a thread without its own = %+v, want the agent's", b)
	}
	if b := Of(&weft.Thread{}, nil); b != nil {
		t.Errorf("Of without any = %+v, want nil", b)
	}
}

// TestAdd: model calls' rows add up; a tool's row is not a model call; a call without a price
// that used tokens is counted as of unknown cost.
func TestAdd(t *testing.T) {
	price := 0.25
	var sp Spend
	add(&sp, &weft.LogEntry{Kind: "llm", InputTokens: 10, OutputTokens: 5, CostTotal: &price})
	add(&sp, &weft.LogEntry{InputTokens: 3, OutputTokens: 1})
	add(&sp, &weft.LogEntry{Kind: "tool", InputTokens: 100})
	if sp != (Spend{CostUSD: 0.25, Tokens: 19, Calls: 2, UnknownCostCalls: 1}) {
		t.Errorf("spend = %+v", sp)
	}
}
