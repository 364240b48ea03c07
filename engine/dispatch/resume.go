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
	res, notRun, ok := r.Kept().TakeResult(r.ThreadID(), c.ID)
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
			r.Kept().KeepResult(r.ThreadID(), c.ID, res)
		}
		return true, err
	}
	if rec.Idempotent {
		return false, nil
	}
	stored, err = d.StoreResult(s, m, c, weft.Failure(InterruptedResult), weft.NewID("msg_"), next)
	return true, err
}

// StopRows writes in tx what a stop by the user leaves: the calls of the run's replies no tool
// message answers are answered as stopped, the pending messages failed, and the stop notice
// stored. It returns the rows it changed and stored, in that order (a failed message as it now
// is), for the run to cache and emit once the transaction commits: the store may run tx's
// function more than once.
func (d *Dispatcher) StopRows(tx weft.Tx) ([]*weft.Message, error) {
	r := d.run
	r.Sync()
	all := r.Rows()
	answered := map[string]bool{}
	for _, m := range all {
		if m.Role == weft.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var rows []*weft.Message
	for _, m := range all {
		if m.Status == weft.MessagePending {
			failed := weft.MessageFailed
			if err := tx.UpdateMessage(m.ID, weft.MessageChange{Status: &failed}); err != nil {
				return nil, err
			}
			cp := *m
			cp.Status = weft.MessageFailed
			rows = append(rows, &cp)
		}
		if m.Role != weft.RoleAssistant || m.Status == weft.MessagePending {
			continue
		}
		for _, c := range m.ToolCalls {
			if answered[c.ID] {
				continue
			}
			tm := &weft.Message{Role: weft.RoleTool, Side: m.Side, Name: c.Name, ToolCallID: c.ID, ToolStatus: weft.ToolError,
				Content: "Failed to execute tool: Execution stopped by user", Status: weft.MessageCompleted, RunID: r.RunID()}
			if err := tx.InsertMessage(tm); err != nil {
				return nil, err
			}
			done := d.Calls.Done(c, m.ID, r.Now())
			done.ResultMessageID = tm.ID
			if err := tx.PutToolCall(done); err != nil {
				return nil, err
			}
			d.Calls.Note(done)
			rows = append(rows, tm)
		}
	}
	notice := &weft.Message{Role: weft.RoleSystem, Content: "Execution stopped by user.", Status: weft.MessageCompleted, RunID: r.RunID()}
	if err := tx.InsertMessage(notice); err != nil {
		return nil, err
	}
	return append(rows, notice), nil
}

// StopToolDone reports whether a stop tool completed side's turn in the last step of a run that
// died before persisting the stop: the side's last top-level reply among rows called its stopTool,
// whose committed result is a success. That turn is over; asking the model again would run the
// stop tool (and any tool of the reply) a second time.
func StopToolDone(rows []*weft.Message, side weft.Side, stopTool string) bool {
	var reply *weft.Message
	results := map[string]*weft.Message{}
	for i := len(rows) - 1; i >= 0; i-- {
		m := rows[i]
		if m.Depth > 0 {
			continue
		}
		if m.Role == weft.RoleTool {
			results[m.ToolCallID] = m
			continue
		}
		if len(m.ToolCalls) > 0 && m.Status == weft.MessageCompleted {
			reply = m
		}
		break
	}
	if reply == nil || reply.WrittenBy() != side || stopTool == "" {
		return false
	}
	for _, c := range reply.ToolCalls {
		if res := results[c.ID]; c.Name == stopTool && res != nil && res.ToolStatus == weft.ToolSuccess {
			return true
		}
	}
	return false
}
