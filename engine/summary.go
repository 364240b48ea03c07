package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/tokens"
)

// Under context.strategy summarize, what falls out of the window is not just left out: before a
// top-level step whose request would not fit, the oldest rows are folded into a summary row of the
// thread, written by the summarizer prompt from the previous summary and the rows newly folded.
// Every later request carries the system text, the newest summary and the rows after it that fit.
//
// The summary is a stored row (role system, silent), written through the committer like every
// row, with the summarizer's log rows in the same transaction: it survives a restart, is redacted,
// shows in the inspector and the API, and its model calls count in the thread's spend. Older
// summary rows stay as they were (the history of the summary); only the newest of a prompt and
// side is sent.

// The metadata of a summary row.
const (
	// metaSummary marks a summary row (true).
	metaSummary = "context_summary"
	// metaSummaryPrompt is the prompt whose history the row summarizes.
	metaSummaryPrompt = "summary_prompt"
	// metaSummaryThrough is the seq of the newest row the summary covers; rows up to it are not
	// sent to that prompt any more.
	metaSummaryThrough = "summary_through_seq"
	// metaSummaryThroughID is that row's id.
	metaSummaryThroughID = "summary_through_id"
	// metaSummaryMessages counts the rows the summary covers, all its predecessors' included.
	metaSummaryMessages = "summary_messages"
	// metaSummaryKept is the id of a row the summary covers that requests still carry: the
	// question of the turn whose tool calls were folded.
	metaSummaryKept = "summary_kept_id"
)

// builtinSummarizer is the system text of the built-in summarizer prompt (weft.SummarizerPrompt).
const builtinSummarizer = `You keep the running summary of a conversation whose older messages no longer fit the model's context window.
You receive the summary so far and the messages that have just left the window, oldest first.
Reply with the updated summary and nothing else. Keep every fact, name, number, date, decision, commitment, preference and open question a later turn may need, and what each tool call found; drop greetings, repetition and wording. Use short bullet points in the conversation's language. Do not address anyone.`

// summaryIntro introduces the summary in a request.
const summaryIntro = "Summary of the earlier conversation (its messages are no longer sent):\n"

// isSummary reports whether m is a summary row.
func isSummary(m *weft.Message) bool {
	if len(m.Metadata) == 0 {
		return false
	}
	b, _ := m.Metadata[metaSummary].(bool)
	return b
}

// metaInt reads an integer a row's metadata holds, as stored (int64) or decoded (float64).
func metaInt(m *weft.Message, key string) int64 {
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

// summaryOf returns the newest summary row of prompt and side among rows, nil when none is.
func summaryOf(rows []*weft.Message, prompt string, side weft.Side) *weft.Message {
	for i := len(rows) - 1; i >= 0; i-- {
		m := rows[i]
		if m.Role == weft.RoleSystem && isSummary(m) && m.Side == side && m.Metadata[metaSummaryPrompt] == prompt {
			return m
		}
	}
	return nil
}

// summaryMessage is how a summary row is sent: a system message after the system text.
func summaryMessage(m *weft.Message) weft.LLMMessage {
	return weft.LLMMessage{Role: weft.RoleSystem, Content: summaryIntro + m.Content}
}

// summarizerOf returns the prompt that writes p's summaries and its system text: p's
// context.summarizer, else the declared prompt named weft.SummarizerPrompt, else the built-in
// summarizer on p's model.
func (r *run) summarizerOf(s *scope) (*weft.Prompt, string, error) {
	name := weft.SummarizerPrompt
	if c := s.prompt.Context; c != nil && c.Summarizer != "" {
		name = c.Summarizer
	}
	sp, ok := r.e.reg.Prompt(name)
	if !ok {
		if name != weft.SummarizerPrompt {
			return nil, "", fmt.Errorf("prompt %q: context.summarizer names no prompt %q", s.prompt.Name, name)
		}
		return &weft.Prompt{Name: weft.SummarizerPrompt, Model: s.prompt.Model, ToolChoice: weft.ToolChoiceNone,
			Prompt: weft.Text(builtinSummarizer)}, builtinSummarizer, nil
	}
	sys, err := r.e.reg.RenderSystem(r.ctx, sp.Name, nil, envLookup(s.env))
	if err != nil {
		return nil, "", fmt.Errorf("rendering summarizer %q: %w", sp.Name, err)
	}
	return sp, sys, nil
}

// rowTokens estimates the tokens of a stored row as a request carries it.
func rowTokens(tc *tokens.Counter, m *weft.Message) int {
	n := tc.Message(weft.LLMMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID})
	return n + len(m.Attachments)*tokens.ImageTokens
}

// rowUnits splits rows into the ranges folded whole: a row with tool calls with the tool rows
// that follow it, every other row alone.
func rowUnits(rows []*weft.Message) [][2]int {
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
	return (m.Role == weft.RoleUser || m.Role == weft.RoleAssistant) && rowSide(m) != side
}

// foldPoint returns how many of the oldest rows to fold so that the rest fits budget tokens, and
// the index of the row kept although folded (-1 when none is). It folds whole units, from the
// oldest, up to the newest row the side hears as a user message (the turn's question), leaving
// rows that start with one it hears; when that is not enough, it folds on past the question,
// which is then kept in the request as well as folded, and never folds the newest unit.
func foldPoint(cost []int, rows []*weft.Message, side weft.Side, budget int) (int, int) {
	total := 0
	for _, c := range cost {
		total += c
	}
	if total <= budget {
		return 0, -1
	}
	units := rowUnits(rows)
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

// summaryTarget is the tokens a summary may take in a request whose budget is budget.
func summaryTarget(budget int) int { return min(budget/4, 4000) }

// foldPlan is what foldHistory would fold before a step under context.strategy summarize.
type foldPlan struct {
	// n is the number of the oldest rows to fold; 0 when the request fits as it is.
	n int
	// keep is the index of the row folded but kept in the request (the turn's question), -1
	// when none is.
	keep int
	// cost are the rows' tokens; target the tokens the summary may take.
	cost   []int
	target int
}

// planFold decides how many of the oldest of rows (from which req was built) to fold into the
// summary so that req fits its prompt's model, whose window must be known.
func (r *run) planFold(s *scope, req *weft.Request, rows []*weft.Message) foldPlan {
	m, ok := r.e.reg.Model(s.prompt.Model)
	if !ok || s.depth != 0 || len(rows) == 0 {
		return foldPlan{}
	}
	budget := windowBudget(s.prompt, m)
	if budget == 0 {
		// No window declared: what a refusal taught, else nothing is folded ahead of time (the
		// request is cut as under window once the provider refuses it).
		if budget = r.e.learnedLimit(m.Name); budget == 0 {
			return foldPlan{}
		}
	}
	tc := &r.e.tokens
	budget -= tc.Tools(req.Tools)
	bound := 0
	for _, msg := range req.Messages {
		bound += tokens.Bound(msg)
	}
	if bound <= budget {
		return foldPlan{}
	}
	// Fixed: the request's messages that are not rows (system text, template messages).
	cost := make([]int, len(rows))
	rowsTotal, total := 0, 0
	for i, row := range rows {
		cost[i] = rowTokens(tc, row)
		rowsTotal += cost[i]
	}
	for _, msg := range req.Messages {
		total += tc.Message(msg)
	}
	if total <= budget {
		return foldPlan{}
	}
	fixed := max(0, total-rowsTotal)
	target := summaryTarget(budget)
	reserve := target
	if s.summary != nil {
		// The summary in the request now is replaced by the new one.
		cur := tc.Message(summaryMessage(s.summary))
		fixed -= cur
		reserve = max(reserve, cur)
	}
	n, keep := foldPoint(cost, rows, s.side, budget-fixed-reserve)
	return foldPlan{n: n, keep: keep, cost: cost, target: target}
}

// foldHistory folds, under context.strategy summarize, the oldest of a top-level step's rows
// into the summary when req (built from rows) would not fit the prompt's model: it reports
// whether it wrote a summary, after which the request is built again. A summarizer that fails
// (other than by the budget or the run's end) folds nothing: the request is cut as under window.
func (r *run) foldHistory(s *scope, req *weft.Request, rows []*weft.Message) (bool, error) {
	plan := r.planFold(s, req, rows)
	n, cost, target := plan.n, plan.cost, plan.target
	if n == 0 {
		return false, nil
	}
	var keep *weft.Message
	if plan.keep >= 0 {
		keep = rows[plan.keep]
	}
	tc := &r.e.tokens
	sp, sys, err := r.summarizerOf(s)
	if err != nil {
		return false, err
	}
	chunk := 1 << 30
	if sm, ok := r.e.reg.Model(sp.Model); ok {
		b := windowBudget(sp, sm)
		if b == 0 {
			b = r.e.learnedLimit(sm.Name)
		}
		if b > 0 {
			// Its window holds its system text, the summary so far (up to target) and the
			// instructions besides the rows; its reply is reserved by windowBudget.
			chunk = b - tc.Text(sys) - target - 100
		}
	}
	chunk = max(chunk, 256)
	wrote := false
	for start := 0; start < n; {
		end, used := start, 0
		units := rowUnits(rows[start:n])
		for _, u := range units {
			c := 0
			for k := start + u[0]; k < start+u[1]; k++ {
				c += cost[k]
			}
			if end > start && used+c > chunk {
				break
			}
			end, used = start+u[1], used+c
		}
		ok, err := r.summarize(s, sp, sys, rows[start:end], keep, target, chunk)
		if err != nil {
			return wrote, err
		}
		if !ok {
			break
		}
		wrote = true
		start = end
	}
	return wrote, nil
}

// summarize folds rows into the newest summary of s's prompt and side with one call of the
// summarizer sp, and stores the new summary row with the call's log rows; keep, once folded, is
// the row the requests still carry (the turn's question). false: the summarizer failed and
// nothing was stored but its log rows.
func (r *run) summarize(s *scope, sp *weft.Prompt, sys string, rows []*weft.Message, keep *weft.Message, target, chunk int) (bool, error) {
	prev := s.summary
	if prev != nil {
		// A kept row the summary holds already is not folded again.
		through := metaInt(prev, metaSummaryThrough)
		fresh := rows[:0:0]
		for _, m := range rows {
			if m.Seq > through {
				fresh = append(fresh, m)
			}
		}
		if len(fresh) == 0 {
			return true, nil
		}
		rows = fresh
	}
	var in strings.Builder
	in.WriteString("Summary so far:\n")
	if prev != nil {
		in.WriteString(prev.Content)
	} else {
		in.WriteString("(none yet)")
	}
	in.WriteString("\n\nMessages that left the window, oldest first:\n")
	// A row longer than the summarizer's window is cut: its head is what it can read.
	limit := max(512, chunk*2)
	for _, m := range rows {
		writeTranscript(&in, m, s.side, limit)
	}
	fmt.Fprintf(&in, "\nReply with the updated summary, at most %d words.", max(50, target*3/4))
	id := weft.NewID("msg_")
	req := &weft.Request{Messages: []weft.LLMMessage{{Role: weft.RoleSystem, Content: sys}, {Role: weft.RoleUser, Content: in.String()}},
		ToolChoice: weft.ToolChoiceNone, Prompt: sp.Name, Agent: r.thread.Agent, Side: s.side, Depth: s.depth}
	ss := &scope{prompt: sp, depth: s.depth, side: s.side, env: s.env}
	ss.fx = &ss.effects
	res, err := r.callModel(ss, req, id)
	text := ""
	if err == nil {
		text = strings.TrimSpace(r.red.String(res.resp.Text))
		if text == "" {
			err = errors.New("the summarizer replied with no text")
			res.logs[len(res.logs)-1].Error = "reply discarded: " + err.Error()
		}
	}
	if err != nil {
		if len(res.logs) > 0 {
			if terr := r.tx(func(tx weft.Tx) error { return putLogs(tx, res.logs) }); terr != nil {
				return false, terr
			}
			if r.obs != nil {
				r.observeModelCall(ss, req, res.logs, nil, err)
			}
		}
		if errors.Is(err, errBudgetExceeded) || r.ctx.Err() != nil {
			return false, err
		}
		r.e.log.Warn("the summarizer failed: older messages are left out of the request instead", "thread", r.thread.ID,
			"prompt", s.prompt.Name, "summarizer", sp.Name, "error", r.red.Error(err))
		if r.e.observed() {
			r.emit("context_summary_failed", Fields{"prompt": s.prompt.Name, "summarizer": sp.Name, "error": r.red.Error(err)})
		}
		return false, nil
	}
	last := rows[len(rows)-1]
	covered := int64(len(rows))
	if prev != nil {
		covered += metaInt(prev, metaSummaryMessages)
	}
	row := &weft.Message{ID: id, Role: weft.RoleSystem, Side: s.side, Content: text, Status: weft.MessageCompleted, Silent: true,
		Prompt: sp.Name, LogID: res.log.ID, RunID: r.id, Metadata: map[string]any{metaSummary: true, metaSummaryPrompt: s.prompt.Name,
			metaSummaryThrough: last.Seq, metaSummaryThroughID: last.ID, metaSummaryMessages: covered}}
	if keep != nil && keep.Seq <= last.Seq {
		row.Metadata[metaSummaryKept] = keep.ID
	}
	if err := r.tx(func(tx weft.Tx) error {
		if err := r.insertRecorded(tx, row); err != nil {
			return err
		}
		return putLogs(tx, res.logs)
	}); err != nil {
		return false, err
	}
	if r.obs != nil {
		r.observeModelCall(ss, req, res.logs, row, nil)
	}
	r.addRow(*row)
	r.emitUnrecorded(*row)
	if r.e.observed() {
		r.emit("context_summarized", Fields{"prompt": s.prompt.Name, "summarizer": sp.Name, "summary_id": row.ID,
			"folded_messages": len(rows), "through_seq": last.Seq, "summary_messages": int(covered)})
	}
	s.summary = row
	return true, nil
}

// writeTranscript appends row m to a summarizer's input as side hears it, its texts cut at limit
// bytes.
func writeTranscript(b *strings.Builder, m *weft.Message, side weft.Side, limit int) {
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
