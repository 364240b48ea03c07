package modelcall

import (
	"errors"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/budget"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/engine/window"
)

// Under context.strategy summarize, what falls out of the window is not just left out: before a
// top-level step whose request would not fit, the oldest rows are folded into a summary row of the
// thread, written by the summarizer prompt from the previous summary and the rows newly folded.
// Every later request carries the system text, the newest summary and the rows after it that fit.
//
// The summary is a stored row (role system, silent), written by the run with the summarizer's log
// rows in the same transaction: it survives a restart, is redacted, shows in the inspector and the
// API, and its model calls count in the thread's spend. Older summary rows stay as they were (the
// history of the summary); only the newest of a prompt and side is sent.

// Folder is what folding needs of the run besides its model calls.
type Folder interface {
	// CheckBudget refuses a summarizer call that the thread's budget does not allow.
	CheckBudget() error
	// Store stores a summarizer call's log rows in one transaction, with the summary row unless
	// row is nil (the call failed); a stored summary then reaches the run's rows and streams.
	Store(row *weft.Message, logs []*weft.LogEntry) error
	// Report tells the run's observer, if any, of a summarizer call whose outcome is stored.
	Report(s Scope, req *weft.Request, logs []*weft.LogEntry, row *weft.Message, err error)
}

// Fold folds, under context.strategy summarize, the oldest of a top-level step's rows into the
// summary of s's prompt and side (summary, the newest so far) when req (built from rows) would not
// fit the prompt's model. It returns the newest summary and whether it wrote one, after which the
// request is built again. A summarizer that fails (other than by the budget or the run's end)
// folds nothing: the request is cut as under window.
func (c *Caller) Fold(f Folder, s Scope, agent string, summary *weft.Message, env *vars.View, req *weft.Request, rows []*weft.Message) (*weft.Message, bool, error) {
	plan := c.m.PlanFold(s, summary, req, rows)
	n, cost, target := plan.N, plan.Cost, plan.Target
	if n == 0 {
		return summary, false, nil
	}
	var keep *weft.Message
	if plan.Keep >= 0 {
		keep = rows[plan.Keep]
	}
	sp, sys, err := c.m.Summarizer(c.ctx, s, env)
	if err != nil {
		return summary, false, err
	}
	chunk := 1 << 30
	if sm, ok := c.m.Registry.Model(sp.Model); ok {
		b := window.Budget(sp, sm)
		if b == 0 {
			b = c.m.Learned(sm.Name)
		}
		if b > 0 {
			// Its window holds its system text, the summary so far (up to target) and the
			// instructions besides the rows; its reply is reserved by window.Budget.
			chunk = b - c.m.Tokens.Text(sys) - target - 100
		}
	}
	chunk = max(chunk, 256)
	fold := folding{c: c, f: f, s: s, agent: agent, sp: sp, sys: sys, keep: keep, target: target, chunk: chunk}
	wrote := false
	for start := 0; start < n; {
		end := window.ChunkEnd(rows, cost, start, n, chunk)
		row, ok, err := fold.summarize(summary, rows[start:end])
		if err != nil || !ok {
			return summary, wrote, err
		}
		summary, wrote = row, true
		start = end
	}
	return summary, wrote, nil
}

// folding is a Fold's calls of the summarizer sp (its system text sys) for the prompt and side
// of s; keep, once folded, is the row the requests still carry (the turn's question).
type folding struct {
	c             *Caller
	f             Folder
	s             Scope
	agent         string
	sp            *weft.Prompt
	sys           string
	keep          *weft.Message
	target, chunk int
}

// summarize folds rows into prev, the newest summary, with one call of the summarizer, and stores
// the new summary row with the call's log rows; it returns the newest summary (prev when rows
// held nothing to fold). false: the summarizer failed and nothing was stored but its log rows.
func (fd *folding) summarize(prev *weft.Message, rows []*weft.Message) (*weft.Message, bool, error) {
	c, s, sp := fd.c, fd.s, fd.sp
	input, rows := window.FoldInput(prev, rows, s.Side, fd.target, fd.chunk)
	if len(rows) == 0 {
		return prev, true, nil
	}
	id := weft.NewID("msg_")
	req := &weft.Request{Messages: []weft.LLMMessage{{Role: weft.RoleSystem, Content: fd.sys}, {Role: weft.RoleUser, Content: input}},
		ToolChoice: weft.ToolChoiceNone, Prompt: sp.Name, Agent: fd.agent, Side: s.Side, Depth: s.Depth}
	ss := Scope{Prompt: sp, Side: s.Side, Depth: s.Depth}
	res := &Result{}
	err := fd.f.CheckBudget()
	if err == nil {
		res, err = c.Call(ss, req, id)
	}
	red := *c.red
	text := ""
	if err == nil {
		text = strings.TrimSpace(red.String(res.Resp.Text))
		if text == "" {
			err = errors.New("the summarizer replied with no text")
			res.Logs[len(res.Logs)-1].Error = "reply discarded: " + err.Error()
		}
	}
	if err != nil {
		if len(res.Logs) > 0 {
			if serr := fd.f.Store(nil, res.Logs); serr != nil {
				return nil, false, serr
			}
			fd.f.Report(ss, req, res.Logs, nil, err)
		}
		if errors.Is(err, budget.ErrExceeded) || c.ctx.Err() != nil {
			return nil, false, err
		}
		c.m.Logger.Warn("the summarizer failed: older messages are left out of the request instead", "thread", c.threadID,
			"prompt", s.Prompt.Name, "summarizer", sp.Name, "error", red.Error(err))
		if c.run.Observed() {
			c.run.Emit("context_summary_failed", payload.Fields{"prompt": s.Prompt.Name, "summarizer": sp.Name, "error": red.Error(err)})
		}
		return nil, false, nil
	}
	row := window.NewSummary(id, text, s.Side, s.Prompt.Name, sp.Name, prev, rows, fd.keep)
	row.LogID, row.RunID = res.Log.ID, c.runID
	if err := fd.f.Store(row, res.Logs); err != nil {
		return nil, false, err
	}
	fd.f.Report(ss, req, res.Logs, row, nil)
	if c.run.Observed() {
		c.run.Emit("context_summarized", payload.Fields{"prompt": s.Prompt.Name, "summarizer": sp.Name, "summary_id": row.ID,
			"folded_messages": len(rows), "through_seq": row.Metadata[window.MetaSummaryThrough],
			"summary_messages": int(window.MetaInt(row, window.MetaSummaryMessages))})
	}
	return row, true, nil
}
