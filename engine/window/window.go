// Package window keeps a model request inside the model's context window: under the window
// strategy it leaves out the oldest messages that do not fit; under the summarize strategy it
// says which of the oldest rows to fold into a summary row, and how that row is read and sent.
// It decides only: the engine builds the requests, calls the summarizer and stores the rows.
package window

import (
	"fmt"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/tokens"
)

// How a request is kept inside the model's context window (the prompt's context strategy): a
// thread grows without bound, a model's window does not. Under the window strategy the request
// keeps its leading system messages, the newest user message and the newest exchange, then as many
// of the newest other messages as fit; an assistant message with tool calls and the results of
// those calls are kept or left out together. Nothing stored changes: only what one request sends.

// Fitted says what Fit left out of a request.
type Fitted struct {
	// Omitted is the number of messages left out; 0 when the request was sent whole.
	Omitted int
	// Before and After are the request's estimated tokens before and after.
	Before, After int
	// Budget is the tokens the messages could take.
	Budget int
}

// reserveOutput is the tokens a request keeps free for the reply (weft.ContextPolicy).
func reserveOutput(p *weft.Prompt, m *weft.Model) int {
	if p.Context != nil && p.Context.ReserveOutput > 0 {
		return p.Context.ReserveOutput
	}
	if v, ok := p.ModelOptions["maxOutputTokens"]; ok {
		switch n := v.(type) {
		case int:
			return n
		case float64:
			return int(n)
		}
	}
	if m.Capabilities.MaxOutputTokens > 0 {
		return m.Capabilities.MaxOutputTokens
	}
	return min(4096, m.Capabilities.MaxContextTokens/4)
}

// Budget is the tokens a request of prompt p to model m may take: the window less the
// reserved output and the estimate's margin; 0 when m's window is unknown.
func Budget(p *weft.Prompt, m *weft.Model) int {
	window := m.Capabilities.MaxContextTokens
	if window <= 0 {
		return 0
	}
	return max(1, int(float64(window-reserveOutput(p, m))*(1-tokens.Margin)))
}

// Fit leaves out of req's messages what does not fit model m's window under the prompt's
// strategy, or under limit tokens when limit > 0 (a provider refused the request as too long). It
// replaces req.Messages with a new slice; the old one is left as it was.
func Fit(tc *tokens.Counter, p *weft.Prompt, req *weft.Request, m *weft.Model, limit int) Fitted {
	if p.StrategyOf() == weft.ContextNone {
		return Fitted{}
	}
	budget := limit
	if b := Budget(p, m); b > 0 && (budget == 0 || b < budget) {
		budget = b
	}
	if budget == 0 {
		return Fitted{} // no window known, no refusal yet
	}
	budget -= tc.Tools(req.Tools)
	msgs := req.Messages
	bound := 0
	for _, msg := range msgs {
		bound += tokens.Bound(msg)
	}
	if bound <= budget {
		return Fitted{Before: bound, After: bound, Budget: budget} // fits without encoding a byte
	}
	cost := make([]int, len(msgs))
	total := 0
	for i, msg := range msgs {
		cost[i] = tc.Message(msg)
		total += cost[i]
	}
	out := Fitted{Before: total, After: total, Budget: budget}
	if total <= budget {
		return out
	}
	// The leading system messages stay.
	head := 0
	for head < len(msgs) && msgs[head].Role == weft.RoleSystem {
		head++
	}
	units := exchangeUnits(msgs, head)
	if len(units) == 0 {
		return out
	}
	keep := make([]bool, len(units))
	used := 0
	for i := range head {
		used += cost[i]
	}
	unitCost := func(u [2]int) int {
		n := 0
		for i := u[0]; i < u[1]; i++ {
			n += cost[i]
		}
		return n
	}
	// The newest user message and the newest unit always stay.
	keep[len(units)-1] = true
	for i := len(units) - 1; i >= 0; i-- {
		if msgs[units[i][0]].Role == weft.RoleUser {
			keep[i] = true
			break
		}
	}
	for i, k := range keep {
		if k {
			used += unitCost(units[i])
		}
	}
	// Then the newest others, while they fit: the history sent stays contiguous.
	for i := len(units) - 1; i >= 0; i-- {
		if keep[i] {
			continue
		}
		c := unitCost(units[i])
		if used+c > budget {
			break
		}
		keep[i] = true
		used += c
	}
	// The history sent starts with a user message (some providers refuse an assistant's first):
	// what the fill left before the newest user message and starts otherwise is left out too.
	for i := range units {
		if !keep[i] {
			continue
		}
		if msgs[units[i][0]].Role == weft.RoleUser || i == len(units)-1 || lastUserUnit(msgs, units) <= i {
			break
		}
		keep[i] = false
		used -= unitCost(units[i])
	}
	kept := make([]weft.LLMMessage, 0, len(msgs))
	kept = append(kept, msgs[:head]...)
	for i, u := range units {
		if keep[i] {
			kept = append(kept, msgs[u[0]:u[1]]...)
		} else {
			out.Omitted += u[1] - u[0]
		}
	}
	req.Messages = kept
	out.After = used
	return out
}

// lastUserUnit returns the index of the newest unit that is a user message, -1 when none is.
func lastUserUnit(msgs []weft.LLMMessage, units [][2]int) int {
	for i := len(units) - 1; i >= 0; i-- {
		if msgs[units[i][0]].Role == weft.RoleUser {
			return i
		}
	}
	return -1
}

// exchangeUnits splits msgs[from:] into the ranges kept or left out whole: an assistant message
// with tool calls together with the tool results that follow it, every other message alone.
func exchangeUnits(msgs []weft.LLMMessage, from int) [][2]int {
	var units [][2]int
	for i := from; i < len(msgs); {
		j := i + 1
		if msgs[i].Role == weft.RoleAssistant && len(msgs[i].ToolCalls) > 0 {
			for j < len(msgs) && msgs[j].Role == weft.RoleTool {
				j++
			}
		} else if msgs[i].Role == weft.RoleTool {
			// A result whose call is not right before it: kept or left out with what follows.
			for j < len(msgs) && msgs[j].Role == weft.RoleTool {
				j++
			}
		}
		units = append(units, [2]int{i, j})
		i = j
	}
	return units
}

// TooLong is the stop text of a request that did not fit even after the strategy.
func TooLong(p *weft.Prompt, m *weft.Model, err error) string {
	fix := "set context.strategy: window on prompt " + p.Name
	if st := p.StrategyOf(); st == weft.ContextWindow || st == weft.ContextSummarize {
		fix = "the newest messages alone do not fit: shorten them, or choose a model with a larger window"
		if m.Capabilities.MaxContextTokens == 0 {
			fix = "declare capabilities.maxContextTokens on model " + m.Name + " so requests are kept inside it, or shorten the newest messages"
		}
	}
	return fmt.Sprintf("the request does not fit model %s's context window (%s): %v", m.Name, fix, err)
}
