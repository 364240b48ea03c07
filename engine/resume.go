package engine

import (
	"github.com/weft-agents/weft"
)

// interruptedResult answers a non-idempotent call that was running when the process died: it
// is not run again, since it may have had its effect.
const interruptedResult = "Tool execution was interrupted by a restart; it may or may not have completed."

// resume finishes the tool calls a crashed run left without results: a stored
// result is never re-run; a running call is re-run only if its tool is idempotent, else it gets the
// interrupted error; pending calls run normally. It returns whether anything was resumed, and the
// effects the resumed calls asked for.
func (r *run) resume() (bool, toolEffects, error) {
	r.sync()
	answered := map[string]bool{}
	var open []*weft.Message
	for _, m := range r.rows {
		if m.Role == weft.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	for _, m := range r.rows {
		if m.Role == weft.RoleTool || len(m.ToolCalls) == 0 || m.Status != weft.MessageCompleted {
			continue
		}
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				open = append(open, m)
				break
			}
		}
	}
	if len(open) == 0 {
		return false, toolEffects{}, nil
	}
	// The effects of all the resumed calls, whichever reply made them.
	fx := new(toolEffects)
	r.tools.resuming = true
	defer func() { r.tools.resuming = false }()
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
			r.tools.noteCall(&recs[i])
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
		s.fx = fx
		var pending []weft.ToolCall
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				pending = append(pending, c)
			}
		}
		if err := r.resumeCalls(s, m, pending, status); err != nil {
			return true, *fx, err
		}
	}
	return true, *fx, nil
}

// resumeCalls finishes a reply's unanswered calls in order; status holds their records as the
// resume found them: a running call is answered by answerRunning or run again, a call waiting for
// a decision parks the run, the others run normally.
func (r *run) resumeCalls(s *scope, m *weft.Message, pending []weft.ToolCall, status map[string]weft.ToolCallRecord) error {
	for i, c := range pending {
		var next *weft.ToolCall
		if i+1 < len(pending) {
			next = &pending[i+1]
		}
		if rec, known := status[c.ID]; known && rec.Status == weft.CallRunning {
			answered, err := r.answerRunning(s, m, rec, c, next)
			if err != nil {
				return err
			}
			if answered {
				continue
			}
		}
		if _, _, waiting := r.decided(s, m, &c); waiting {
			return r.awaitApproval(s, m, pending[i:])
		}
		if _, err := r.tools.executeCall(s, m, c, next); err != nil {
			return err
		}
	}
	return nil
}

// answerRunning answers a call that was running when its run died: with its re-attached child's
// result, or with the interrupted error when its tool is not idempotent. answered false: the call
// runs again.
func (r *run) answerRunning(s *scope, m *weft.Message, rec weft.ToolCallRecord, c weft.ToolCall, next *weft.ToolCall) (answered bool, err error) {
	var stored *weft.Message
	if r.obs != nil {
		prev := r.tools.toolCtx
		r.tools.toolCtx = r.obs.StartTool(r.ctx, ToolCall{Call: c, Depth: s.depth, Resumed: true})
		defer func() {
			r.tools.toolCtx = prev
			end := ToolEnd{Committed: err == nil && stored != nil}
			if stored != nil {
				end.Status, end.Result = stored.ToolStatus, stored.Content
			}
			r.obs.EndTool(end)
		}()
	}
	if res, ok := r.reattach(s, rec, c); ok {
		if r.tools.childParked != "" {
			r.tools.childParked = ""
			return true, errAwaitApproval // the child still waits for decisions
		}
		stored, err = r.tools.storeResult(s, m, c, res, weft.NewID("msg_"), next)
		return true, err
	}
	if res, resultID, ok := r.resumeSubPrompt(s, m, rec, c); ok {
		if r.tools.childParked != "" {
			r.tools.childParked = ""
			return true, errAwaitApproval // the nested run still waits for decisions
		}
		stored, err = r.tools.storeResult(s, m, c, res, resultID, next)
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
		stored, err = r.tools.storeResult(s, m, c, res, weft.NewID("msg_"), next)
		if err != nil {
			r.e.sched.KeepResult(r.thread.ID, c.ID, res)
		}
		return true, err
	}
	if rec.Idempotent {
		return false, nil
	}
	stored, err = r.tools.storeResult(s, m, c, weft.Failure(interruptedResult), weft.NewID("msg_"), next)
	return true, err
}
