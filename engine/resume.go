package engine

import (
	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/dispatch"
)

// resume finishes the tool calls a crashed run left without results: a stored
// result is never re-run; a running call is re-run only if its tool is idempotent, else it gets the
// interrupted error; pending calls run normally. It returns whether anything was resumed, and the
// effects the resumed calls asked for.
func (d *dispatcher) resume() (bool, toolEffects, error) {
	r := d.r
	r.sync()
	open, answered := dispatch.OpenReplies(r.rows)
	if len(open) == 0 {
		return false, toolEffects{}, nil
	}
	// The effects of all the resumed calls, whichever reply made them.
	fx := new(toolEffects)
	recs, err := r.e.store.ToolCalls(r.ctx, r.thread.ID)
	if err != nil {
		return false, *fx, err
	}
	status := make(map[string]weft.ToolCallRecord, len(recs))
	for i, rec := range recs {
		status[rec.CallID] = rec
		if rec.Status != weft.CallDone {
			// Their results start from these records, so a start time or child reference written
			// before the restart stays.
			d.calls.Note(&recs[i])
		}
	}
	for _, m := range open {
		p, ok := r.e.reg.Prompt(m.Prompt)
		if !ok {
			continue // the pairing step answers these calls as missing
		}
		s, err := r.newScope(p, 0, m.WrittenBy(), r.thread.Arguments)
		if err != nil {
			return true, *fx, err
		}
		s.fx, s.resumed = fx, true
		var pending []weft.ToolCall
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				pending = append(pending, c)
			}
		}
		if err := d.resumeCalls(s, m, pending, status); err != nil {
			return true, *fx, err
		}
	}
	return true, *fx, nil
}

// resumeCalls finishes a reply's unanswered calls in order; status holds their records as the
// resume found them: a running call is answered by answerRunning or run again, a call waiting for
// a decision parks the run, the others run normally.
func (d *dispatcher) resumeCalls(s *scope, m *weft.Message, pending []weft.ToolCall, status map[string]weft.ToolCallRecord) error {
	for i, c := range pending {
		var next *weft.ToolCall
		if i+1 < len(pending) {
			next = &pending[i+1]
		}
		if rec, known := status[c.ID]; known && rec.Status == weft.CallRunning {
			answered, err := d.answerRunning(s, m, rec, c, next)
			if err != nil {
				return err
			}
			if answered {
				continue
			}
		}
		if _, _, waiting := d.decided(s, m, &c); waiting {
			return d.awaitApproval(s, m, pending[i:])
		}
		if _, err := d.executeCall(s, m, c, next); err != nil {
			return err
		}
	}
	return nil
}

// answerRunning answers a call that was running when its run died: with its re-attached child's
// result, or with the interrupted error when its tool is not idempotent. answered false: the call
// runs again.
func (d *dispatcher) answerRunning(s *scope, m *weft.Message, rec weft.ToolCallRecord, c weft.ToolCall, next *weft.ToolCall) (answered bool, err error) {
	r := d.r
	var stored *weft.Message
	ctx := r.ctx // the call's, carrying its trace: a re-attached child's run nests under it
	if r.obs != nil {
		ctx = r.obs.StartTool(r.ctx, ToolCall{Call: c, Depth: s.depth, Resumed: true})
		defer func() {
			end := ToolEnd{Committed: err == nil && stored != nil}
			if stored != nil {
				end.Status, end.Result = stored.ToolStatus, stored.Content
			}
			r.obs.EndTool(end)
		}()
	}
	if res, parked, ok := (parentRun{r, s}).reattach(ctx, rec, c); ok {
		if parked != "" {
			return true, errAwaitApproval // the child still waits for decisions
		}
		stored, err = d.storeResult(s, m, c, res, weft.NewID("msg_"), next)
		return true, err
	}
	if res, resultID, parked, ok := (&subCall{r: r, scope: s, msgID: m.ID, call: c}).resume(m, rec); ok {
		if parked != "" {
			return true, errAwaitApproval // the nested run still waits for decisions
		}
		stored, err = d.storeResult(s, m, c, res, resultID, next)
		return true, err
	}
	res, notRun, ok := r.e.sched.TakeResult(r.thread.ID, c.ID)
	if ok && notRun {
		// Its tool never ran: the transaction that marked it running lost its connection, and
		// this process, which would have run it, resumes under the same lease.
		return false, nil
	}
	if ok {
		// The tool finished in this process; storing its result failed (a lost connection, not a
		// lost process): it is stored now rather than run again or answered as interrupted.
		stored, err = d.storeResult(s, m, c, res, weft.NewID("msg_"), next)
		if err != nil {
			r.e.sched.KeepResult(r.thread.ID, c.ID, res)
		}
		return true, err
	}
	if rec.Idempotent {
		return false, nil
	}
	stored, err = d.storeResult(s, m, c, weft.Failure(dispatch.InterruptedResult), weft.NewID("msg_"), next)
	return true, err
}
