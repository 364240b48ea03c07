package window

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/tokens"
)

// The metadata of a summary row.
const (
	// MetaSummary marks a summary row (true).
	MetaSummary = "context_summary"
	// MetaSummaryPrompt is the prompt whose history the row summarizes.
	MetaSummaryPrompt = "summary_prompt"
	// MetaSummaryThrough is the seq of the newest row the summary covers; rows up to it are not
	// sent to that prompt any more.
	MetaSummaryThrough = "summary_through_seq"
	// MetaSummaryThroughID is that row's id.
	MetaSummaryThroughID = "summary_through_id"
	// MetaSummaryMessages counts the rows the summary covers, all its predecessors' included.
	MetaSummaryMessages = "summary_messages"
	// MetaSummaryKept is the id of a row the summary covers that requests still carry: the
	// question of the turn whose tool calls were folded.
	MetaSummaryKept = "summary_kept_id"
)

// BuiltinSummarizer is the system text of the built-in summarizer prompt (weft.SummarizerPrompt).
const BuiltinSummarizer = `You keep the running summary of a conversation whose older messages no longer fit the model's context window.
You receive the summary so far and the messages that have just left the window, oldest first.
Reply with the updated summary and nothing else. Keep every fact, name, number, date, decision, commitment, preference and open question a later turn may need, and what each tool call found; drop greetings, repetition and wording. Use short bullet points in the conversation's language. Do not address anyone.`

// summaryIntro introduces the summary in a request.
const summaryIntro = "Summary of the earlier conversation (its messages are no longer sent):\n"

// IsSummary reports whether m is a summary row.
func IsSummary(m *weft.Message) bool {
	if len(m.Metadata) == 0 {
		return false
	}
	b, _ := m.Metadata[MetaSummary].(bool)
	return b
}

// MetaInt reads an integer a row's metadata holds, as stored (int64) or decoded (float64).
func MetaInt(m *weft.Message, key string) int64 {
	switch v := m.Metadata[key].(type) {
	case int64:
		return v
	case int:
		return int64(v)
	case float64:
		return int64(v)
	case json.Number:
		n, _ := v.Int64()
		return n
	}
	return 0
}

// SummaryOf returns the newest summary row of prompt and side among rows, nil when none is.
func SummaryOf(rows []*weft.Message, prompt string, side weft.Side) *weft.Message {
	for i := len(rows) - 1; i >= 0; i-- {
		m := rows[i]
		if m.Role == weft.RoleSystem && IsSummary(m) && m.Side == side && m.Metadata[MetaSummaryPrompt] == prompt {
			return m
		}
	}
	return nil
}

// SummaryMessage is how a summary row is sent: a system message after the system text.
func SummaryMessage(m *weft.Message) weft.LLMMessage {
	return weft.LLMMessage{Role: weft.RoleSystem, Content: summaryIntro + m.Content}
}

// RowTokens estimates the tokens of a stored row as a request carries it.
func RowTokens(tc *tokens.Counter, m *weft.Message) int {
	n := tc.Message(weft.LLMMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID})
	return n + len(m.Attachments)*tokens.ImageTokens
}

// RowUnits splits rows into the ranges folded whole: a row with tool calls with the tool rows
// that follow it, every other row alone.
func RowUnits(rows []*weft.Message) [][2]int {
	var units [][2]int
	for i := 0; i < len(rows); {
		j := i + 1
		if len(rows[i].ToolCalls) > 0 || rows[i].Role == weft.RoleTool {
			for j < len(rows) && rows[j].Role == weft.RoleTool {
				j++
			}
		}
		units = append(units, [2]int{i, j})
		i = j
	}
	return units
}

// heard reports whether side hears row m as a user message (the other side's words).
func heard(m *weft.Message, side weft.Side) bool {
	return (m.Role == weft.RoleUser || m.Role == weft.RoleAssistant) && m.WrittenBy() != side
}

// FoldPoint returns how many of the oldest rows to fold so that the rest fits budget tokens, and
// the index of the row kept although folded (-1 when none is). It folds whole units, from the
// oldest, up to the newest row the side hears as a user message (the turn's question), leaving
// rows that start with one it hears; when that is not enough, it folds on past the question,
// which is then kept in the request as well as folded, and never folds the newest unit.
func FoldPoint(cost []int, rows []*weft.Message, side weft.Side, budget int) (int, int) {
	total := 0
	for _, c := range cost {
		total += c
	}
	if total <= budget {
		return 0, -1
	}
	units := RowUnits(rows)
	unitCost := func(u [2]int) int {
		n := 0
		for k := u[0]; k < u[1]; k++ {
			n += cost[k]
		}
		return n
	}
	pin := -1
	for i := len(units) - 1; i >= 0; i-- {
		if heard(rows[units[i][0]], side) {
			pin = i
			break
		}
	}
	i := 0
	for ; i < pin && total > budget; i++ {
		total -= unitCost(units[i])
	}
	for i > 0 && i < pin && !heard(rows[units[i][0]], side) {
		i++
	}
	if total <= budget || pin < 0 || i < pin {
		if i == 0 {
			return 0, -1
		}
		return units[i-1][1], -1
	}
	// Within the turn: the question stays, what follows it is folded but for the newest unit.
	i = pin + 1
	for ; i < len(units)-1 && total > budget; i++ {
		total -= unitCost(units[i])
	}
	if i == pin+1 {
		if pin == 0 {
			return 0, -1
		}
		return units[pin-1][1], -1
	}
	return units[i-1][1], units[pin][0]
}

// SummaryTarget is the tokens a summary may take in a request whose budget is budget.
func SummaryTarget(budget int) int { return min(budget/4, 4000) }

// WriteTranscript appends row m to a summarizer's input as side hears it, its texts cut at limit
// bytes.
func WriteTranscript(b *strings.Builder, m *weft.Message, side weft.Side, limit int) {
	cut := func(s string) string {
		if len(s) <= limit {
			return s
		}
		return strings.ToValidUTF8(s[:limit], "") + " […]"
	}
	switch {
	case m.Role == weft.RoleTool:
		fmt.Fprintf(b, "[tool %s result] %s\n", m.Name, cut(m.Content))
		return
	case m.Role == weft.RoleSystem:
		fmt.Fprintf(b, "[system] %s\n", cut(m.Content))
		return
	case heard(m, side):
		fmt.Fprintf(b, "[user] %s\n", cut(m.Content))
	default:
		if strings.TrimSpace(m.Content) != "" {
			fmt.Fprintf(b, "[assistant] %s\n", cut(m.Content))
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(b, "[assistant called %s] %s\n", c.Name, cut(c.Arguments))
		}
	}
	for _, a := range m.Attachments {
		fmt.Fprintf(b, "  (attached %s)\n", a.Name)
	}
}
