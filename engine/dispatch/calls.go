package dispatch

import (
	"time"

	"github.com/weft-agents/weft"
)

// Calls are the tool-call records a run stored, as stored: a call's later writes start from its
// record (Of), so that its seq, start time and meta stay. The zero value is empty and ready.
type Calls struct {
	// recs are the records, one per call, in the order they were first noted.
	recs []*weft.ToolCallRecord
}

// Note keeps the record of a call as the run's transaction stores it.
func (cs *Calls) Note(rec *weft.ToolCallRecord) {
	for i, c := range cs.recs {
		if c.CallID == rec.CallID {
			cs.recs[i] = rec
			return
		}
	}
	cs.recs = append(cs.recs, rec)
}

// All returns the records noted, in the order first noted (not to be changed).
func (cs *Calls) All() []*weft.ToolCallRecord { return cs.recs }

// Of returns a record of call c (of message msgID) to write: a copy of the one noted for it, or a
// new one.
func (cs *Calls) Of(c weft.ToolCall, msgID string) *weft.ToolCallRecord {
	for _, rec := range cs.recs {
		if rec.CallID == c.ID {
			cp := *rec
			return &cp
		}
	}
	return &weft.ToolCallRecord{CallID: c.ID, MessageID: msgID, Name: c.Name, Arguments: c.Arguments}
}

// Done returns the record of call c (of message msgID) finished at now.
func (cs *Calls) Done(c weft.ToolCall, msgID string, now time.Time) *weft.ToolCallRecord {
	done := cs.Of(c, msgID)
	done.Status, done.FinishedAt = weft.CallDone, &now
	return done
}

// MarksRunning reports whether a call's record is marked running before the call runs: after a
// crash such a call is not run again but answered as interrupted. An idempotent call stays pending
// (it is run again either way), and so does a call that needs approval (needsApproval) and is not
// approved: it runs only once approved, and a denied call never runs.
func MarksRunning(rec *weft.ToolCallRecord, needsApproval bool) bool {
	if rec.Idempotent {
		return false
	}
	return !needsApproval || ApprovalOf(rec).Status == Approved
}

// OpenReplies returns the completed replies among a thread's rows with calls no tool message
// answers — the calls a crashed or parked run left open — and the ids of the calls answered.
func OpenReplies(rows []*weft.Message) (open []*weft.Message, answered map[string]bool) {
	answered = map[string]bool{}
	for _, m := range rows {
		if m.Role == weft.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	for _, m := range rows {
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
	return open, answered
}
