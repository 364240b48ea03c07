package engine

import (
	"errors"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/budget"
	"github.com/weft-agents/weft/engine/modelcall"
	"github.com/weft-agents/weft/engine/window"
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

// foldHistory folds, under context.strategy summarize, the oldest of a top-level step's rows
// into the summary when req (built from rows) would not fit the prompt's model: it reports
// whether it wrote a summary, after which the request is built again. A summarizer that fails
// (other than by the budget or the run's end) folds nothing: the request is cut as under window.
func (r *run) foldHistory(s *scope, req *weft.Request, rows []*weft.Message) (bool, error) {
	plan := r.e.models.PlanFold(s.call(), s.summary, req, rows)
	n, cost, target := plan.N, plan.Cost, plan.Target
	if n == 0 {
		return false, nil
	}
	var keep *weft.Message
	if plan.Keep >= 0 {
		keep = rows[plan.Keep]
	}
	tc := &r.e.tokens
	sp, sys, err := r.e.models.Summarizer(r.ctx, s.call(), s.env)
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
		end := window.ChunkEnd(rows, cost, start, n, chunk)
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
	input, rows := window.FoldInput(prev, rows, s.side, target, chunk)
	if len(rows) == 0 {
		return true, nil
	}
	id := weft.NewID("msg_")
	req := &weft.Request{Messages: []weft.LLMMessage{{Role: weft.RoleSystem, Content: sys}, {Role: weft.RoleUser, Content: input}},
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
		if errors.Is(err, budget.ErrExceeded) || r.ctx.Err() != nil {
			return false, err
		}
		r.e.log.Warn("the summarizer failed: older messages are left out of the request instead", "thread", r.thread.ID,
			"prompt", s.prompt.Name, "summarizer", sp.Name, "error", r.red.Error(err))
		if r.e.commit.Observed() {
			r.journal.Emit("context_summary_failed", Fields{"prompt": s.prompt.Name, "summarizer": sp.Name, "error": r.red.Error(err)})
		}
		return false, nil
	}
	row := window.NewSummary(id, text, s.side, s.prompt.Name, sp.Name, prev, rows, keep)
	row.LogID, row.RunID = res.Log.ID, r.id
	if err := r.tx(func(tx weft.Tx) error {
		if err := r.journal.Insert(tx, row); err != nil {
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
	r.journal.Stored(*row)
	if r.e.commit.Observed() {
		r.journal.Emit("context_summarized", Fields{"prompt": s.prompt.Name, "summarizer": sp.Name, "summary_id": row.ID,
			"folded_messages": len(rows), "through_seq": row.Metadata[window.MetaSummaryThrough],
			"summary_messages": int(window.MetaInt(row, window.MetaSummaryMessages))})
	}
	s.summary = row
	return true, nil
}
