package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/modelcall"
	"github.com/weft-agents/weft/engine/window"
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
			Prompt: weft.Text(window.BuiltinSummarizer)}, window.BuiltinSummarizer, nil
	}
	sys, err := r.e.reg.RenderSystem(r.ctx, sp.Name, nil, envLookup(s.env))
	if err != nil {
		return nil, "", fmt.Errorf("rendering summarizer %q: %w", sp.Name, err)
	}
	return sp, sys, nil
}

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
	budget := window.Budget(s.prompt, m)
	if budget == 0 {
		// No window declared: what a refusal taught, else nothing is folded ahead of time (the
		// request is cut as under window once the provider refuses it).
		if budget = r.e.models.Learned(m.Name); budget == 0 {
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
		cost[i] = window.RowTokens(tc, row)
		rowsTotal += cost[i]
	}
	for _, msg := range req.Messages {
		total += tc.Message(msg)
	}
	if total <= budget {
		return foldPlan{}
	}
	fixed := max(0, total-rowsTotal)
	target := window.SummaryTarget(budget)
	reserve := target
	if s.summary != nil {
		// The summary in the request now is replaced by the new one.
		cur := tc.Message(window.SummaryMessage(s.summary))
		fixed -= cur
		reserve = max(reserve, cur)
	}
	n, keep := window.FoldPoint(cost, rows, s.side, budget-fixed-reserve)
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
		b := window.Budget(sp, sm)
		if b == 0 {
			b = r.e.models.Learned(sm.Name)
		}
		if b > 0 {
			// Its window holds its system text, the summary so far (up to target) and the
			// instructions besides the rows; its reply is reserved by window.Budget.
			chunk = b - tc.Text(sys) - target - 100
		}
	}
	chunk = max(chunk, 256)
	wrote := false
	for start := 0; start < n; {
		end, used := start, 0
		units := window.RowUnits(rows[start:n])
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
		through := window.MetaInt(prev, window.MetaSummaryThrough)
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
		window.WriteTranscript(&in, m, s.side, limit)
	}
	fmt.Fprintf(&in, "\nReply with the updated summary, at most %d words.", max(50, target*3/4))
	id := weft.NewID("msg_")
	req := &weft.Request{Messages: []weft.LLMMessage{{Role: weft.RoleSystem, Content: sys}, {Role: weft.RoleUser, Content: in.String()}},
		ToolChoice: weft.ToolChoiceNone, Prompt: sp.Name, Agent: r.thread.Agent, Side: s.side, Depth: s.depth}
	ss := &scope{prompt: sp, depth: s.depth, side: s.side, env: s.env}
	ss.fx = &ss.effects
	res := &modelcall.Result{}
	err := r.checkBudget()
	if err == nil {
		res, err = r.model.Call(ss.call(), req, id)
	}
	text := ""
	if err == nil {
		text = strings.TrimSpace(r.red.String(res.Resp.Text))
		if text == "" {
			err = errors.New("the summarizer replied with no text")
			res.Logs[len(res.Logs)-1].Error = "reply discarded: " + err.Error()
		}
	}
	if err != nil {
		if len(res.Logs) > 0 {
			if terr := r.tx(func(tx weft.Tx) error { return putLogs(tx, res.Logs) }); terr != nil {
				return false, terr
			}
			if r.obs != nil {
				r.obs.ModelCall(r.model.Record(ss.call(), req, res.Logs, nil, err))
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
		covered += window.MetaInt(prev, window.MetaSummaryMessages)
	}
	row := &weft.Message{ID: id, Role: weft.RoleSystem, Side: s.side, Content: text, Status: weft.MessageCompleted, Silent: true,
		Prompt: sp.Name, LogID: res.Log.ID, RunID: r.id, Metadata: map[string]any{window.MetaSummary: true, window.MetaSummaryPrompt: s.prompt.Name,
			window.MetaSummaryThrough: last.Seq, window.MetaSummaryThroughID: last.ID, window.MetaSummaryMessages: covered}}
	if keep != nil && keep.Seq <= last.Seq {
		row.Metadata[window.MetaSummaryKept] = keep.ID
	}
	if err := r.tx(func(tx weft.Tx) error {
		if err := r.insertRecorded(tx, row); err != nil {
			return err
		}
		return putLogs(tx, res.Logs)
	}); err != nil {
		return false, err
	}
	if r.obs != nil {
		r.obs.ModelCall(r.model.Record(ss.call(), req, res.Logs, row, nil))
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
