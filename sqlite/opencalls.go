package sqlite

import (
	"database/sql"
	"errors"
	"strings"

	"github.com/weft-agents/weft"
)

// A thread's open calls (migration 0017): a tool-call record put by a Tx that writes its thread
// row anyway waits in the row's calls column, not in a tool_calls row, until a Tx changes it
// without writing the row (it then goes to tool_calls) or the row holds more than maxOpenCalls.
// A call id is in the row or in tool_calls: the row's entry of a call that is also in tool_calls
// is stale (it went there since) and tool_calls' record wins; the row's next write drops it.
//
// A turn's reply with its call is such a Tx (the step writes the row for its status, run state and
// counters), and the tool's result, which writes no row, moves the call: the turn writes one
// tool_calls row where it wrote and then rewrote one.

// Open-call statements, prepared at Open (hotWrites).
const (
	// qCalls reads the open calls for a Tx that did not read them with the row.
	qCalls = `SELECT COALESCE(calls, '') FROM threads WHERE num = ?`
	// qStoredCalls reads the ids of a thread's tool_calls rows, each followed by a NUL, while they
	// are at most maxKeptCallIDs (else NULL).
	qStoredCalls = `SELECT CASE WHEN count(*) <= ` + maxKeptCallIDsSQL + ` THEN COALESCE(group_concat(call_id || char(0), ''), '') END
		FROM tool_calls WHERE thread_num = ?`
	// qToolCallsAll lists a thread's tool_calls rows, each call's doc only when its status is one
	// of ?2's (",a,b,": all when ''), and its open calls (the last row, call_id NULL): one
	// statement, one snapshot.
	qToolCallsAll = `SELECT call_id, seq, status, CASE WHEN ?2 = '' OR instr(?2, ',' || status || ',') > 0 THEN doc END
		FROM tool_calls WHERE thread_num = ` + numOf1 + `
		UNION ALL SELECT NULL, 0, '', calls FROM threads WHERE id = ?1 AND calls IS NOT NULL`
)

// maxKeptCallIDs bounds the ids of a thread's tool_calls rows the writer keeps with its row
// (openCallsState.stored): a thread with more has each new call looked for in tool_calls.
const (
	maxKeptCallIDs    = 64
	maxKeptCallIDsSQL = "64"
)

// maxOpenCalls bounds a row's open calls: a row write that would leave more moves them all to
// tool_calls (a reply of many calls, or calls that never change without a row write).
const maxOpenCalls = 8

// openCall is one entry of a row's calls column.
type openCall struct {
	id, status, doc string
	seq             int64
	moved           bool // in tool_calls since: the row's entry is stale
	touched         bool // put by this Tx
}

// Tags of an open call's fields, each call nested under ocCall.
const (
	ocCall = iota + 1
	ocID
	ocSeq
	ocStatus
	ocDoc
)

// encodeOpenCalls is the calls column of the entries not moved ("" for none).
func encodeOpenCalls(cs []openCall) string {
	w := docWriter{}
	for i := range cs {
		c := &cs[i]
		if c.moved {
			continue
		}
		w.nested(ocCall, func(n *docWriter) {
			n.str(ocID, c.id)
			n.int(ocSeq, c.seq)
			n.str(ocStatus, c.status)
			n.str(ocDoc, c.doc)
		})
	}
	return string(w.b)
}

// decodeOpenCalls decodes a calls column.
func decodeOpenCalls(s string) ([]openCall, error) {
	var out []openCall
	r := docReader{s: s}
	for tag, v, ok := r.next(); ok; tag, v, ok = r.next() {
		if tag != ocCall {
			continue
		}
		var c openCall
		f := docReader{s: v}
		for tag, v, ok := f.next(); ok; tag, v, ok = f.next() {
			switch tag {
			case ocID:
				c.id = v
			case ocSeq:
				c.seq = f.int(v)
			case ocStatus:
				c.status = v
			case ocDoc:
				c.doc = v
			}
		}
		if f.err != nil {
			return nil, f.err
		}
		out = append(out, c)
	}
	return out, r.err
}

// openCallsState is what a Tx knows of its thread row's open calls, and what a kept row keeps
// (cachedRow.calls).
type openCallsState struct {
	read  bool   // col holds the row's calls column
	col   string // the column as stored
	moved string // the ids of col's entries since stored in tool_calls, each followed by "\x00"
	exact bool   // moved is known (else each entry is looked for in tool_calls when decoded)
	// stored holds the ids of the thread's tool_calls rows, each followed by a NUL, when
	// storedKnown: a new call's put knows without a read that it is not one of them (a read
	// through database/sql costs about as much as the insert the open call saves).
	stored      string
	storedKnown bool
	storedMany  bool // the thread has more than maxKeptCallIDs: each new call is looked for
}

// hasID reports whether list, ids each followed by a NUL, holds id.
func hasID(list, id string) bool {
	for len(list) > 0 {
		i := strings.IndexByte(list, 0)
		if i < 0 {
			return false
		}
		if list[:i] == id {
			return true
		}
		list = list[i+1:]
	}
	return false
}

// storedCall reports whether the thread's tool_calls has the call: from the ids kept, read once
// while the thread's rows are few, or looked for.
func (t *tx) storedCall(id string) (bool, error) {
	if !t.calls.storedKnown && !t.calls.storedMany {
		var ids sql.NullString
		if err := t.w.row(t.ctx, qStoredCalls, []any{&ids}, t.numArg); err != nil {
			return false, err
		}
		t.calls.stored, t.calls.storedKnown, t.calls.storedMany = ids.String, ids.Valid, !ids.Valid
	}
	if t.calls.storedKnown {
		return hasID(t.calls.stored, id), nil
	}
	var seq int64
	switch err := t.w.row(t.ctx, qToolCallSeq, []any{&seq}, t.numArg, id); {
	case err == nil:
		return true, nil
	case !errors.Is(err, sql.ErrNoRows):
		return false, err
	}
	return false, nil
}

// readCalls reads the open calls' column, unless the Tx has it.
func (t *tx) readCalls() error {
	if t.calls.read {
		return nil
	}
	if err := t.w.row(t.ctx, qCalls, []any{&t.calls.col}, t.numArg); err != nil {
		return t.fail("open calls", err)
	}
	t.calls.read, t.calls.exact, t.calls.moved = true, false, ""
	return nil
}

// decodeCalls decodes the open calls into t.open once, marking the stale entries.
func (t *tx) decodeCalls() error {
	if t.openDecoded {
		return nil
	}
	if err := t.readCalls(); err != nil {
		return err
	}
	open, err := decodeOpenCalls(t.calls.col)
	if err != nil {
		return t.fail("open calls", err)
	}
	for i := range open {
		c := &open[i]
		if t.calls.exact {
			c.moved = strings.Contains(t.calls.moved, c.id+"\x00")
			continue
		}
		var seq int64
		switch err := t.w.row(t.ctx, qToolCallSeq, []any{&seq}, t.numArg, c.id); {
		case err == nil:
			c.moved = true
		case !errors.Is(err, sql.ErrNoRows):
			return t.fail("open call "+c.id, err)
		}
	}
	t.open, t.openDecoded = open, true
	t.syncMoved()
	return nil
}

// syncMoved sets calls.moved from t.open (exact from now on).
func (t *tx) syncMoved() {
	var b strings.Builder
	for i := range t.open {
		if t.open[i].moved {
			b.WriteString(t.open[i].id)
			b.WriteByte(0)
		}
	}
	t.calls.moved, t.calls.exact = b.String(), true
}

// openIndex is the index in t.open of the call's open (not moved) entry, or -1.
func (t *tx) openIndex(callID string) int {
	for i := range t.open {
		if t.open[i].id == callID && !t.open[i].moved {
			return i
		}
	}
	return -1
}

// putOpenCall puts a call that is not in tool_calls: an open one's entry changes, keeping its
// seq; a new one (ok false when the call is in tool_calls) opens with the next seq. flush writes
// them.
func (t *tx) putOpenCall(c *weft.ToolCallRecord, doc []byte) (seq int64, ok bool, err error) {
	if err := t.decodeCalls(); err != nil {
		return 0, false, err
	}
	if i := t.openIndex(c.CallID); i >= 0 {
		oc := &t.open[i]
		oc.status, oc.doc, oc.touched = string(c.Status), string(doc), true
		t.callsDirty = true
		return oc.seq, true, nil
	}
	if err := t.readSeqs(); err != nil {
		return 0, false, err
	}
	if stored, err := t.storedCall(c.CallID); err != nil || stored {
		return 0, false, err // in tool_calls
	}
	seq = t.callSeq + 1
	t.callSeq, t.seqsDirty = seq, true
	t.open = append(t.open, openCall{id: c.CallID, seq: seq, status: string(c.Status), doc: string(doc), touched: true})
	t.callsDirty = true
	return seq, true, nil
}

// flushCalls is flush's part for the open calls, given whether the row is written anyway: then the
// column is written when it changes or holds stale entries (all moved to tool_calls first when
// there would be more than maxOpenCalls); else the calls this Tx put are moved to tool_calls and
// the row is left as it is. It returns the column to write, and whether to.
func (t *tx) flushCalls(rowWritten bool) (col any, write bool, err error) {
	stale := t.calls.read && t.calls.col != "" && (!t.calls.exact || t.calls.moved != "")
	if !t.callsDirty && (!rowWritten || !stale) {
		return nil, false, nil
	}
	if err := t.decodeCalls(); err != nil {
		return nil, false, err
	}
	open := 0
	for i := range t.open {
		if !t.open[i].moved {
			open++
		}
	}
	for i := range t.open {
		c := &t.open[i]
		if !c.moved && (!rowWritten && c.touched || rowWritten && open > maxOpenCalls) {
			if err := t.moveCall(c); err != nil {
				return nil, false, err
			}
		}
	}
	t.syncMoved()
	if !rowWritten {
		return nil, false, nil
	}
	s := encodeOpenCalls(t.open)
	if s == t.calls.col && t.calls.moved == "" {
		return nil, false, nil
	}
	live := t.open[:0:0]
	for _, c := range t.open {
		if !c.moved {
			live = append(live, c)
		}
	}
	t.open, t.calls.col, t.calls.moved = live, s, ""
	if s == "" {
		return nil, true, nil
	}
	return s, true, nil
}

// moveCall stores an open call in tool_calls.
func (t *tx) moveCall(c *openCall) error {
	n, err := t.w.execN(t.ctx, qInsertToolCall, t.numArg, c.id, c.seq, wordArg(c.status), []byte(c.doc))
	if err == nil && n == 0 {
		_, err = t.w.exec(t.ctx, qUpdateToolCall, wordArg(c.status), []byte(c.doc), t.numArg, c.id)
	}
	if err != nil {
		return t.fail("move call "+c.id, err)
	}
	c.moved = true
	if t.calls.storedKnown && !hasID(t.calls.stored, c.id) {
		if strings.Count(t.calls.stored, "\x00") >= maxKeptCallIDs {
			t.calls.stored, t.calls.storedKnown, t.calls.storedMany = "", false, true
		} else {
			t.calls.stored += c.id + "\x00"
		}
	}
	return nil
}
