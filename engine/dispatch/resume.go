package dispatch

import (
	"github.com/weft-agents/weft"
)

// Resume finishes the tool calls a crashed run left without results: a stored result is never
// re-run; a running call is re-run only if its tool is idempotent, else it gets the interrupted
// error; pending calls run normally. scopeOf gives the scope a reply's calls run in (ok false: its
// prompt is gone, and the pairing step answers its calls as missing). It returns whether anything
// was resumed.
func (d *Dispatcher) Resume(scopeOf func(m *weft.Message) (s Scope, ok bool, err error)) (bool, error) {
	r := d.run
	r.Sync()
	open, answered := OpenReplies(r.Rows())
	if len(open) == 0 {
		return false, nil
	}
	recs, err := r.StoredCalls()
	if err != nil {
		return false, err
	}
	status := make(map[string]weft.ToolCallRecord, len(recs))
	for i, rec := range recs {
		status[rec.CallID] = rec
		if rec.Status != weft.CallDone {
			// Their results start from these records, so a start time or child reference written
			// before the restart stays.
			d.Calls.Note(&recs[i])
		}
	}
	for _, m := range open {
		s, ok, err := scopeOf(m)
		if err != nil {
			return true, err
		}
		if !ok {
			continue
		}
		var pending []weft.ToolCall
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				pending = append(pending, c)
			}
		}
		if err := d.ResumeCalls(s, m, pending, status); err != nil {
			return true, err
		}
	}
	return true, nil
}

// ResumeCalls finishes a reply's unanswered calls in order; status holds their records as the
// resume found them: a running call is answered by answerRunning or run again, a call waiting for
// a decision parks the run, the others run normally.
func (d *Dispatcher) ResumeCalls(s Scope, m *weft.Message, pending []weft.ToolCall, status map[string]weft.ToolCallRecord) error {
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
		approval := s.NeedsApproval(c.Name)
		if approval && d.waits(m, &c) {
			return d.awaitApproval(s, m, pending[i:])
		}
		if _, err := d.executeCall(s, m, c, next, approval); err != nil {
			return err
		}
	}
	return nil
}

// answerRunning answers a call that was running when its run died: with its re-attached child's
// result, or with the interrupted error when its tool is not idempotent. answered false: the call
// runs again.
func (d *Dispatcher) answerRunning(s Scope, m *weft.Message, rec weft.ToolCallRecord, c weft.ToolCall, next *weft.ToolCall) (answered bool, err error) {
	r := d.run
	var stored *weft.Message
	// The call's context, carrying its trace: a re-attached child's run nests under it.
	ctx := r.StartTool(s, c, true)
	defer func() {
		var status weft.ToolStatus
		var result string
		if stored != nil {
			status, result = stored.ToolStatus, stored.Content
		}
		r.EndTool(err == nil && stored != nil, status, result)
	}()
	if res, parked, ok := r.Reattach(ctx, s, rec, c); ok {
		if parked != "" {
			return true, ErrAwaitApproval // the child still waits for decisions
		}
		stored, err = d.StoreResult(s, m, c, res, weft.NewID("msg_"), next)
		return true, err
	}
	if res, resultID, parked, ok := r.ResumeSubPrompt(s, m, rec, c); ok {
		if parked != "" {
			return true, ErrAwaitApproval // the nested run still waits for decisions
		}
		stored, err = d.StoreResult(s, m, c, res, resultID, next)
		return true, err
	}
	res, notRun, ok := r.TakeResult(c.ID)
	if ok && notRun {
		// Its tool never ran: the transaction that marked it running lost its connection, and
		// this process, which would have run it, resumes under the same lease.
		return false, nil
	}
	if ok {
		// The tool finished in this process; storing its result failed (a lost connection, not a
		// lost process): it is stored now rather than run again or answered as interrupted.
		stored, err = d.StoreResult(s, m, c, res, weft.NewID("msg_"), next)
		if err != nil {
			r.KeepResult(c.ID, res)
		}
		return true, err
	}
	if rec.Idempotent {
		return false, nil
	}
	stored, err = d.StoreResult(s, m, c, weft.Failure(InterruptedResult), weft.NewID("msg_"), next)
	return true, err
}
