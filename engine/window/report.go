package window

import (
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
)

// Report says what a request left out of its thread's history under the prompt's context
// strategy, and why.
type Report struct {
	// Strategy is the prompt's context strategy.
	Strategy weft.ContextStrategy `json:"strategy"`
	// Model is the prompt's model; Window its capabilities.maxContextTokens (0: unknown).
	Model  string `json:"model,omitempty"`
	Window int    `json:"window,omitempty"`
	// Budget is the tokens the request may take; TokensBefore and TokensAfter its estimate before
	// and after messages were left out (0 when nothing needed counting).
	Budget       int `json:"budget,omitempty"`
	TokensBefore int `json:"tokens_before,omitempty"`
	TokensAfter  int `json:"tokens_after,omitempty"`
	// Omitted is the number of messages left out so that the request fits.
	Omitted int `json:"omitted_messages"`
	// SummaryID is the summary row the request carries; Summarized the rows it stands for.
	SummaryID  string `json:"summary_id,omitempty"`
	Summarized int    `json:"summarized_messages,omitempty"`
	// Pending is, under summarize, the rows the step folds into the summary (one summarizer call)
	// before it sends the request; the request shown leaves them out.
	Pending int `json:"pending_fold,omitempty"`
	// Reason says all of it in a sentence.
	Reason string `json:"reason"`
}

// Explain sets c.Reason: what the report holds, in a sentence.
func (c *Report) Explain() {
	var parts []string
	switch {
	case c.Strategy == weft.ContextNone:
		parts = append(parts, "context.strategy none: the whole history is sent; a request past the window gets the provider's error")
	case c.Window == 0:
		parts = append(parts, fmt.Sprintf("model %s declares no capabilities.maxContextTokens: nothing is left out until the provider refuses a request as too long", c.Model))
	case c.Omitted > 0:
		parts = append(parts, fmt.Sprintf("%d older messages are left out so that the request fits model %s's window (%d → %d tokens of a budget of %d)",
			c.Omitted, c.Model, c.TokensBefore, c.TokensAfter, c.Budget))
	default:
		parts = append(parts, fmt.Sprintf("nothing is left out: the request fits model %s's window (about %d tokens of a budget of %d)", c.Model, c.TokensAfter, c.Budget))
	}
	if c.SummaryID != "" {
		parts = append(parts, fmt.Sprintf("the summary %s stands for %d earlier messages, which are not sent", c.SummaryID, c.Summarized))
	}
	if c.Pending > 0 {
		parts = append(parts, fmt.Sprintf("%d more messages fell out of the window: the step folds them into the summary (one summarizer call) before it sends the request", c.Pending))
	}
	c.Reason = strings.Join(parts, "; ")
}
