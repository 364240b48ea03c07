package modelcall

import (
	"context"
	"fmt"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/engine/window"
	"github.com/weft-agents/weft/tokens"
)

// Under context.strategy summarize the oldest rows that do not fit are folded into a summary row
// before a top-level step; what to fold, and which prompt writes the summary, are decided here
// (summarize.go calls the summarizer; the run stores the row).

// Summarizer returns the prompt that writes the summaries of s's prompt, and its system text
// rendered with env: the prompt's context.summarizer, else the declared prompt named
// weft.SummarizerPrompt, else the built-in summarizer on the prompt's model.
func (ms *Models) Summarizer(ctx context.Context, s Scope, env *vars.View) (*weft.Prompt, string, error) {
	name := weft.SummarizerPrompt
	if c := s.Prompt.Context; c != nil && c.Summarizer != "" {
		name = c.Summarizer
	}
	sp, ok := ms.Registry.Prompt(name)
	if !ok {
		if name != weft.SummarizerPrompt {
			return nil, "", fmt.Errorf("prompt %q: context.summarizer names no prompt %q", s.Prompt.Name, name)
		}
		return &weft.Prompt{Name: weft.SummarizerPrompt, Model: s.Prompt.Model, ToolChoice: weft.ToolChoiceNone,
			Prompt: weft.Text(window.BuiltinSummarizer)}, window.BuiltinSummarizer, nil
	}
	sys, err := ms.Registry.RenderSystem(ctx, sp.Name, nil, envLookup(env))
	if err != nil {
		return nil, "", fmt.Errorf("rendering summarizer %q: %w", sp.Name, err)
	}
	return sp, sys, nil
}

// FoldPlan is what to fold into a summary before a step under context.strategy summarize.
type FoldPlan struct {
	// N is the number of the oldest rows to fold; 0 when the request fits as it is.
	N int
	// Keep is the index of the row folded but kept in the request (the turn's question), -1
	// when none is.
	Keep int
	// Cost are the rows' tokens.
	Cost []int
	// Target is the tokens the summary may take.
	Target int
}

// PlanFold decides how many of the oldest of rows (from which req was built) to fold into the
// summary so that req fits the model of s's prompt, whose window must be known; summary is the
// summary req carries now (nil when none).
func (ms *Models) PlanFold(s Scope, summary *weft.Message, req *weft.Request, rows []*weft.Message) FoldPlan {
	m, ok := ms.Registry.Model(s.Prompt.Model)
	if !ok || s.Depth != 0 || len(rows) == 0 {
		return FoldPlan{}
	}
	budget := window.Budget(s.Prompt, m)
	if budget == 0 {
		// No window declared: what a refusal taught, else nothing is folded ahead of time (the
		// request is cut as under window once the provider refuses it).
		if budget = ms.Learned(m.Name); budget == 0 {
			return FoldPlan{}
		}
	}
	tc := ms.Tokens
	budget -= tc.Tools(req.Tools)
	bound := 0
	for _, msg := range req.Messages {
		bound += tokens.Bound(msg)
	}
	if bound <= budget {
		return FoldPlan{}
	}
	// Fixed: the request's messages that are not rows (system text, template messages).
	cost := make([]int, len(rows))
	rowsTotal, total := 0, 0
	for i, row := range rows {
		cost[i] = window.RowTokens(tc, row)
		rowsTotal += cost[i]
	}
	for _, msg := range req.Messages {
		total += tc.Message(msg)
	}
	if total <= budget {
		return FoldPlan{}
	}
	fixed := max(0, total-rowsTotal)
	target := window.SummaryTarget(budget)
	reserve := target
	if summary != nil {
		// The summary in the request now is replaced by the new one.
		cur := tc.Message(window.SummaryMessage(summary))
		fixed -= cur
		reserve = max(reserve, cur)
	}
	n, keep := window.FoldPoint(cost, rows, s.Side, budget-fixed-reserve)
	return FoldPlan{N: n, Keep: keep, Cost: cost, Target: target}
}
