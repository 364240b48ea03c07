package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// Message, tool-call and queue write statements. hotWrites lists those prepared at Open.
const (
	qQueueSeq  = `SELECT queue_seq FROM threads WHERE id = ?`
	qInsertMsg = `INSERT INTO messages (thread_num, seq, id, role, silent, depth, doc) VALUES (?, ?, ?, ?, ?, ?, ?)`
	qGetMsgDoc = `SELECT doc FROM messages WHERE thread_num = ? AND id = ?`
	// qMessageIDs reads the thread's greatest message id and whether ?2 is one of its ids, reading
	// every row of the thread (no index holds ids: migration 0011).
	qMessageIDs = `SELECT COALESCE(MAX(id), ''), COALESCE(MAX(id = ?2), 0) FROM messages WHERE thread_num = ?1`
	qUpdateMsg  = `UPDATE messages SET silent = ?, doc = ? WHERE thread_num = ? AND seq = ?`
	qDeleteMsg  = `DELETE FROM messages WHERE thread_num = ? AND id = ?`
	// PutToolCall updates a call in place (it keeps the seq of its first insert), or inserts it.
	// Not an upsert with RETURNING: SQLite collects RETURNING rows in a temporary table, which costs
	// more than a second statement.
	qUpdateToolCall    = `UPDATE tool_calls SET status = ?, doc = ? WHERE thread_num = ? AND call_id = ?`
	qUpdateToolCallSeq = `UPDATE tool_calls SET status = ?, doc = ? WHERE thread_num = ? AND call_id = ? AND seq = ?`
	qToolCallSeq       = `SELECT seq FROM tool_calls WHERE thread_num = ? AND call_id = ?`
	qInsertToolCall    = `INSERT INTO tool_calls (thread_num, call_id, seq, status, doc) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (thread_num, call_id) DO NOTHING`
	// The message waiting in the thread row (migration 0007) comes before every queue row.
	qQueued = `SELECT doc FROM (SELECT inbox AS doc, 0 AS seq FROM threads WHERE id = ?1 AND inbox IS NOT NULL
		UNION ALL SELECT doc, seq FROM queue WHERE thread_id = ?1) ORDER BY seq`
	qDrainQueue = `SELECT doc FROM queue WHERE thread_id = ?1 AND (?2 <= 0 OR seq <= ?2) ORDER BY seq`
	qDelQueue   = `DELETE FROM queue WHERE thread_id = ? AND seq <= ?`
)

// numOf1 is the number of the thread whose id is the statement's first argument (NULL for an
// unknown thread, which then has no rows): messages, tool_calls and logs name their thread by its
// number (migration 0012).
const numOf1 = `(SELECT num FROM threads WHERE id = ?1)`

const msgWhere = ` FROM messages WHERE thread_num = ` + numOf1 + ` AND seq > ?2 AND depth <= ?3 AND (?4 = 0 OR silent = 0)
	AND (?5 = '' OR instr(?5, ',' || role || ',') > 0)`

const (
	qMessagesAsc   = `SELECT doc` + msgWhere + ` ORDER BY seq LIMIT ?6 OFFSET ?7`
	qMessagesDesc  = `SELECT doc` + msgWhere + ` ORDER BY seq DESC LIMIT ?6 OFFSET ?7`
	qCountMessages = `SELECT count(*)` + msgWhere
	qMessage       = `SELECT doc FROM messages WHERE thread_num = ` + numOf1 + ` AND id = ?2`
)

// scanMessage scans a row of one doc column.
func scanMessage(sc scanner, threadID string) (weft.Message, error) {
	m := weft.Message{ThreadID: threadID}
	var doc string
	if err := sc.Scan(&doc); err != nil {
		return m, err
	}
	if err := decodeMessage(doc, &m); err != nil {
		return m, fmt.Errorf("message %d: %w", m.Seq, err)
	}
	return m, nil
}

// Messages lists a thread's messages ordered by seq (see weft.MessageQuery; Limit 0 means 100 and a
// negative Limit no limit). An unknown thread has no messages.
func (s *Store) Messages(ctx context.Context, threadID string, q weft.MessageQuery) ([]weft.Message, error) {
	limit := storecontract.MessageLimit(q.Limit)
	if limit < 0 {
		limit = -1 // SQLite's LIMIT for none
	}
	roles := rolesArg(q.Roles)
	query := qMessagesAsc
	if q.Desc {
		query = qMessagesDesc
	}
	rows, err := s.query(ctx, query, threadID, q.AfterSeq, q.MaxDepth, boolInt(q.ExcludeSilent), roles, limit, max(q.Offset, 0))
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: messages: %w", threadID, err)
	}
	defer rows.Close()
	out := make([]weft.Message, 0, min(uint(limit), 32)) // limit -1 is huge as uint
	for rows.Next() {
		m, err := scanMessage(rows, threadID)
		if err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: %w", threadID, err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// CountMessages counts the messages Messages lists for q without its Limit and Offset.
func (s *Store) CountMessages(ctx context.Context, threadID string, q weft.MessageQuery) (int, error) {
	row, err := s.rowOf(ctx, qCountMessages, threadID, q.AfterSeq, q.MaxDepth, boolInt(q.ExcludeSilent), rolesArg(q.Roles))
	var n int
	if err == nil {
		err = row.Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: thread %s: count messages: %w", threadID, err)
	}
	return n, nil
}

// rolesArg is a role filter as msgWhere takes it: ",user,assistant," ("" for all).
func rolesArg(roles []weft.Role) string {
	if len(roles) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte(',')
	for _, r := range roles {
		b.WriteString(string(r))
		b.WriteByte(',')
	}
	return b.String()
}

// Message returns one message or ErrNotFound.
func (s *Store) Message(ctx context.Context, threadID, id string) (weft.Message, error) {
	row, err := s.rowOf(ctx, qMessage, threadID, id)
	if err != nil {
		return weft.Message{}, err
	}
	m, err := scanMessage(row, threadID)
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("thread %s: message %s: %w", threadID, id, weft.ErrNotFound)
	}
	if err != nil {
		return m, fmt.Errorf("sqlite: thread %s: message %s: %w", threadID, id, err)
	}
	return m, nil
}

// ToolCalls lists a thread's tool calls with one of the given statuses (all when none), by seq:
// its tool_calls rows and its row's open calls (opencalls.go), a stale entry left out.
func (s *Store) ToolCalls(ctx context.Context, threadID string, status ...weft.CallStatus) ([]weft.ToolCallRecord, error) {
	sts := ""
	if len(status) > 0 {
		var b strings.Builder
		b.WriteByte(',')
		for _, st := range status {
			b.WriteString(string(st))
			b.WriteByte(',')
		}
		sts = b.String()
	}
	rows, err := s.query(ctx, qToolCallsAll, threadID, sts)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: tool calls: %w", threadID, err)
	}
	defer rows.Close()
	var out []weft.ToolCallRecord
	stored := map[string]bool{}
	var open []openCall
	for rows.Next() {
		c := weft.ToolCallRecord{ThreadID: threadID}
		var id, doc sql.NullString
		err := rows.Scan(&id, &c.Seq, &c.Status, &doc)
		switch {
		case err != nil:
		case !id.Valid: // the row's open calls
			open, err = decodeOpenCalls(doc.String)
		default:
			c.CallID, stored[id.String] = id.String, true
			if doc.Valid {
				err = decodeCall(doc.String, &c)
				out = append(out, c)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: tool calls: %w", threadID, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: tool calls: %w", threadID, err)
	}
	for _, oc := range open {
		if stored[oc.id] || sts != "" && !strings.Contains(sts, ","+oc.status+",") {
			continue
		}
		c := weft.ToolCallRecord{ThreadID: threadID, CallID: oc.id, Seq: oc.seq, Status: weft.CallStatus(oc.status)}
		if err := decodeCall(oc.doc, &c); err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: tool calls: open call %s: %w", threadID, oc.id, err)
		}
		out = append(out, c)
	}
	if len(open) > 0 {
		slices.SortStableFunc(out, func(a, b weft.ToolCallRecord) int { return cmp.Compare(a.Seq, b.Seq) })
	}
	return out, nil
}

// scanQueue scans rows of one doc column into queued messages of threadID.
func scanQueue(rows *sql.Rows, threadID string) ([]weft.QueuedMessage, error) {
	defer rows.Close()
	var out []weft.QueuedMessage
	for rows.Next() {
		q := weft.QueuedMessage{ThreadID: threadID}
		var doc string
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		if err := decodeQueued(doc, &q); err != nil {
			return nil, fmt.Errorf("queued message %d: %w", q.Seq, err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// Queued lists the thread's queued messages in order without draining them.
func (s *Store) Queued(ctx context.Context, threadID string) ([]weft.QueuedMessage, error) {
	rows, err := s.query(ctx, qQueued, threadID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: queue: %w", threadID, err)
	}
	out, err := scanQueue(rows, threadID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: queue: %w", threadID, err)
	}
	return out, nil
}

// PushQueue queues a message, assigning ID (when empty), ThreadID, Seq and CreatedAt (when zero);
// Role defaults to user. An unknown thread is ErrNotFound.
func (s *Store) PushQueue(ctx context.Context, q *weft.QueuedMessage) error {
	push, err := s.pusher(q)
	if err != nil {
		return err
	}
	return s.writeOwn(ctx, push)
}

// prepareQueued fills q's defaults and returns its metadata as JSON.
func (s *Store) prepareQueued(q *weft.QueuedMessage) ([]byte, error) {
	var md []byte
	if q.Metadata != nil {
		var err error
		if md, err = marshal(q.Metadata); err != nil {
			return nil, weft.Errorf(weft.EInvalid, "thread %s: queued message metadata: %v", q.ThreadID, err)
		}
	}
	storecontract.PrepareQueued(q, s.now)
	return md, nil
}

// pusher prepares q and returns the write that queues it (PushQueue's).
func (s *Store) pusher(q *weft.QueuedMessage) (func(w *writer) error, error) {
	md, err := s.prepareQueued(q)
	if err != nil {
		return nil, err
	}
	return func(w *writer) error {
		ctx := context.Background() // the write's ctx was checked before it began
		// Only the thread's row and queue change: a run of it under way reads them again.
		w.rows.drop(q.ThreadID)
		var seq, last int64
		var status string
		var err error
		if q.MaxMessages > 0 {
			err = w.row(ctx, qPushSeqLast, []any{&seq, &status, &last}, q.ThreadID)
		} else {
			err = w.row(ctx, qPushSeq, []any{&seq, &status}, q.ThreadID)
		}
		if err != nil {
			return s.noThread(q.ThreadID, err)
		}
		if q.IfBusy == weft.IfBusyReject {
			if err := s.refuseBusy(ctx, w, q.ThreadID, weft.ThreadStatus(status)); err != nil {
				return err
			}
		}
		// A refusal rolls the write back.
		if _, err := queueRow(ctx, w, q, md, q.ThreadID, weft.ThreadStatus(status), seq, last); err != nil {
			return err
		}
		if _, err := w.exec(ctx, qSetQueueSeq, q.Seq, q.ThreadID); err != nil {
			q.Seq = 0
			return fmt.Errorf("sqlite: thread %s: push queue: %w", q.ThreadID, err)
		}
		return nil
	}, nil
}

// refuseBusy is the refusal of a push with weft.IfBusyReject (a *weft.BusyError) when the thread,
// read in the push's write, has a run in progress: status running, or a live lease.
func (s *Store) refuseBusy(ctx context.Context, w *writer, threadID string, status weft.ThreadStatus) error {
	var owner string
	var expires int64
	if err := w.row(ctx, qLeaseOf, []any{&owner, &expires}, threadID); err != nil {
		return s.noThread(threadID, err)
	}
	if storecontract.Busy(status, owner, time.Unix(0, expires), s.now()) {
		return storecontract.BusyError(threadID)
	}
	return nil
}

// qLeaseOf reads a thread's lease, for refuseBusy.
const qLeaseOf = `SELECT lease_owner, lease_expires_at FROM threads WHERE id = ?`

// queueRow queues q on the thread as read in the write (its status; for QueuedMessage.MaxMessages
// the seq of its newest message, last): a refusal is the error, else q is numbered after
// queueSeq and its row inserted, and the row's doc returned. Writing the counter is the caller's.
func queueRow(ctx context.Context, w *writer, q *weft.QueuedMessage, md []byte, threadID string, status weft.ThreadStatus, queueSeq, last int64) ([]byte, error) {
	doc, err := queueCheck(q, md, threadID, status, queueSeq, last)
	if err != nil {
		return nil, err
	}
	if err := insertQueued(ctx, w, threadID, q.Seq, doc); err != nil {
		q.Seq = 0
		return nil, err
	}
	return doc, nil
}

// queueCheck is queueRow without the insert: the refusals, q's seq, and the row's doc.
func queueCheck(q *weft.QueuedMessage, md []byte, threadID string, status weft.ThreadStatus, queueSeq, last int64) ([]byte, error) {
	if status == weft.ThreadTerminated {
		return nil, fmt.Errorf("thread %s: %w", threadID, weft.ErrTerminated)
	}
	if q.MaxMessages > 0 && last >= q.MaxMessages {
		return nil, &weft.ThreadFullError{ThreadID: threadID, Messages: last}
	}
	q.ThreadID, q.Seq = threadID, queueSeq+1
	return queueDoc(q, md), nil
}

// insertQueued writes a queue row.
func insertQueued(ctx context.Context, w *writer, threadID string, seq int64, doc []byte) error {
	if _, err := w.exec(ctx, qPushInsert, threadID, seq, doc); err != nil {
		return fmt.Errorf("sqlite: thread %s: push queue: %w", threadID, err)
	}
	return nil
}

// A queue push: the thread's last queue seq and whether it refuses messages (with qPushSeqLast
// also the seq of its newest message, for QueuedMessage.MaxMessages), then the row and the
// counter. Not an UPDATE … RETURNING: SQLite gathers RETURNING rows in a temporary table, which
// costs more than the read and the plain UPDATE.
const (
	qPushSeq     = `SELECT queue_seq, status FROM threads WHERE id = ?`
	qPushSeqLast = `SELECT queue_seq, status, max(msg_seq, COALESCE((SELECT MAX(seq) FROM messages WHERE thread_num = threads.num), 0))
		FROM threads WHERE id = ?1`
	qPushInsert = `INSERT INTO queue (thread_id, seq, doc) VALUES (?, ?, ?)`
)

// QueueSeq returns threads.queue_seq, which PushQueue advances in its own write transaction.
func (t *tx) QueueSeq() (int64, error) {
	if !t.queueRead {
		if err := t.w.row(t.ctx, qQueueSeq, []any{&t.queueSeq}, t.id); err != nil {
			return 0, t.fail("queue seq", err)
		}
		t.queueRead = true
	}
	return t.queueSeq, nil
}

// InsertMessage inserts m with the next seq, assigning ID (when empty), ThreadID, Seq and CreatedAt
// (when zero).
func (t *tx) InsertMessage(m *weft.Message) error {
	var md []byte
	if m.Metadata != nil {
		var err error
		if md, err = marshal(m.Metadata); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: message metadata: %v", t.id, err)
		}
	}
	// An id made here is new (weft.NewID); one the caller gives is checked.
	if m.ID == "" {
		m.ID = weft.NewID("msg_")
	} else if err := t.checkMessageID(m.ID); err != nil {
		return err
	}
	created := m.CreatedAt
	if created.IsZero() {
		created = t.clock()
	}
	if err := t.readSeqs(); err != nil {
		return err
	}
	seq := t.msgSeq + 1
	doc := messageDoc(m, seq, created, md)
	if _, err := t.w.exec(t.ctx, qInsertMsg, t.numArg, seq, m.ID, wordArg(string(m.Role)), boolInt(m.Silent), m.Depth, doc); err != nil {
		return t.fail("insert message", err)
	}
	t.msgSeq = seq
	if t.insertedIDs == nil {
		t.insertedIDs = t.idsBuf[:0] // a step inserts one or two: no allocation of its own
	}
	t.insertedIDs = append(t.insertedIDs, m.ID)
	if t.maxMsgKnown && m.ID > t.maxMsgID {
		t.maxMsgID = m.ID
	}
	m.ThreadID, m.Seq, m.CreatedAt = t.id, seq, created.UTC()
	if m.Depth <= 0 {
		// For the kept history, once the Tx's function succeeds.
		var k *weft.Message
		var err error
		if len(doc) >= bigDoc {
			// A large message's texts are kept where the doc has them, as a read gives them.
			k = &weft.Message{ThreadID: t.id}
			err = decodeMessage(docString(doc), k)
		} else {
			k, err = keptCopy(m, created, md, len(doc))
		}
		if err != nil {
			return t.fail("insert message", err)
		}
		t.inserted = append(t.inserted, k)
		t.insertedDocs += len(doc)
	}
	return nil
}

// checkMessageID refuses an id one of the thread's messages has (EConflict). No index holds the
// id (migration 0011): an id above the thread's greatest is new, which is every id the engine
// makes, as a process makes increasing ids; the greatest is kept with the thread's row
// (rowcache.go). An id at or below it (a queued message's, drained after newer ones; one the
// caller chose) is looked for among the kept history when that holds every message of the
// thread, else among the stored rows, which reads the thread's every message.
func (t *tx) checkMessageID(id string) error {
	if t.maxMsgKnown && id > t.maxMsgID {
		return nil
	}
	found, ok := t.keptHasID(id)
	if !ok {
		t.w.rows.idLookups++
		if err := t.w.row(t.ctx, qMessageIDs, []any{&t.maxMsgID, &found}, t.numArg, id); err != nil {
			t.maxMsgKnown = false
			return t.fail("message ids", err)
		}
		t.maxMsgKnown = true
	}
	if found {
		return weft.Errorf(weft.EConflict, "thread %s: message %s already exists", t.id, id)
	}
	return nil
}

// keptHasID looks for id among the thread's kept history and the messages this Tx inserted, and
// sets the greatest id from them; ok is false when they are not every message of the thread.
// They are when they number the thread's highest seq: seqs are unique and start at 1, so then no
// message was deleted and none is below depth 0 (the kept history holds only depth ≤ 0).
func (t *tx) keptHasID(id string) (found, ok bool) {
	rows, kept := t.w.rows.hist.peek(t.id)
	if !kept || !t.seqsRead || int64(len(rows)+len(t.insertedIDs)) != t.msgSeq {
		return false, false
	}
	t.w.rows.idKeptChecks++
	greatest := ""
	for _, m := range rows {
		found = found || m.ID == id
		greatest = max(greatest, m.ID)
	}
	for _, x := range t.insertedIDs {
		found = found || x == id
		greatest = max(greatest, x)
	}
	t.maxMsgID, t.maxMsgKnown = greatest, true
	return found, true
}

// UpdateMessage changes a message; ErrNotFound if it does not exist.
func (t *tx) UpdateMessage(id string, ch weft.MessageChange) error {
	var m weft.Message
	var doc string
	err := t.w.row(t.ctx, qGetMsgDoc, []any{&doc}, t.numArg, id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
	}
	if err == nil {
		err = decodeMessage(doc, &m)
	}
	if err != nil {
		return t.fail("update message "+id, err)
	}
	t.w.rows.hist.drop(t.id)
	storecontract.ApplyMessageChange(&m, ch)
	if ch.ToolCalls != nil {
		m.ToolCalls = *ch.ToolCalls
	}
	if ch.Attachments != nil {
		m.Attachments = *ch.Attachments
	}
	if ch.Metadata != nil {
		m.Metadata = ch.Metadata
	}
	var md []byte
	if m.Metadata != nil {
		if md, err = marshal(m.Metadata); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: message %s metadata: %v", t.id, id, err)
		}
	}
	if _, err := t.w.exec(t.ctx, qUpdateMsg, boolInt(m.Silent), messageDoc(&m, m.Seq, m.CreatedAt, md), t.numArg, m.Seq); err != nil {
		return t.fail("update message "+id, err)
	}
	return nil
}

// DeleteMessage removes a message; its seq is not reused.
func (t *tx) DeleteMessage(id string) error {
	// The counters must be read before the delete can lower MAX(seq).
	if err := t.readSeqs(); err != nil {
		return err
	}
	t.w.rows.hist.drop(t.id)
	n, err := t.w.execN(t.ctx, qDeleteMsg, t.numArg, id)
	if err != nil {
		return t.fail("delete message "+id, err)
	}
	if n == 0 {
		return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
	}
	t.deleted = true
	return nil
}

// PutToolCall inserts or replaces a tool-call record, assigning ThreadID and Seq (kept from the
// first insert); Status defaults to pending.
func (t *tx) PutToolCall(c *weft.ToolCallRecord) error {
	if err := storecontract.PrepareToolCall(t.id, c); err != nil {
		return err
	}
	doc := callDoc(c)
	seq, err := t.putToolCall(c, doc)
	if err != nil {
		return t.fail("put tool call "+c.CallID, err)
	}
	c.ThreadID, c.Seq = t.id, seq
	return nil
}

// putToolCall writes a call: an open one (opencalls.go) or a new one as an open call, which
// flush writes with the row or moves to tool_calls; a call in tool_calls is updated in place, by
// the seq it carries when it is stored with it, else by its id, its seq read back.
func (t *tx) putToolCall(c *weft.ToolCallRecord, doc []byte) (int64, error) {
	status := wordArg(string(c.Status))
	if err := t.decodeCalls(); err != nil {
		return 0, err
	}
	if c.Seq > 0 && t.openIndex(c.CallID) < 0 {
		n, err := t.w.execN(t.ctx, qUpdateToolCallSeq, status, doc, t.numArg, c.CallID, c.Seq)
		if err != nil || n > 0 {
			return c.Seq, err
		}
	}
	seq, open, err := t.putOpenCall(c, doc)
	if err != nil || open {
		return seq, err
	}
	if _, err := t.w.exec(t.ctx, qUpdateToolCall, status, doc, t.numArg, c.CallID); err != nil {
		return 0, err
	}
	err = t.w.row(t.ctx, qToolCallSeq, []any{&seq}, t.numArg, c.CallID)
	return seq, err
}

// DrainQueue removes and returns, in order, the queued messages with seq ≤ upTo (all when upTo ≤ 0):
// the message waiting in the thread row first (every queue row was pushed after it), then the
// queue table's rows.
func (t *tx) DrainQueue(upTo int64) ([]weft.QueuedMessage, error) {
	if !t.inboxRead {
		if err := t.w.row(t.ctx, qInbox, []any{&t.inbox}, t.id); err != nil {
			return nil, t.fail("drain queue", err)
		}
		t.inboxRead = true
	}
	var out []weft.QueuedMessage
	if t.inbox != "" {
		q := weft.QueuedMessage{ThreadID: t.id}
		if err := decodeQueued(t.inbox, &q); err != nil {
			return nil, t.fail("drain queue", fmt.Errorf("queued message %d: %w", q.Seq, err))
		}
		if upTo > 0 && q.Seq > upTo {
			return nil, nil
		}
		out = append(out, q)
		t.inbox, t.inboxDrained = "", true
	}
	var rows []weft.QueuedMessage
	var err error
	if t.queuedKnown {
		rows, err = t.drainKnown(upTo)
	} else {
		rows, err = t.drainRows(upTo)
	}
	if err != nil || out == nil {
		return rows, err
	}
	return append(out, rows...), nil
}

// drainRows is DrainQueue's read and delete of the queue table's rows.
func (t *tx) drainRows(upTo int64) ([]weft.QueuedMessage, error) {
	rows, err := t.w.query(t.ctx, qDrainQueue, t.id, upTo)
	if err != nil {
		return nil, t.fail("drain queue", err)
	}
	out, err := scanQueue(rows, t.id)
	if err != nil {
		return nil, t.fail("drain queue", err)
	}
	if len(out) > 0 {
		if _, err := t.w.exec(t.ctx, qDelQueue, t.id, out[len(out)-1].Seq); err != nil {
			return nil, t.fail("drain queue", err)
		}
	}
	return out, nil
}

// drainKnown is drainRows from the queue the row cache holds: the rows are deleted unread.
func (t *tx) drainKnown(upTo int64) ([]weft.QueuedMessage, error) {
	var out []weft.QueuedMessage
	var rest strings.Builder
	for docs := (docList{s: t.queued, first: qSeq}); docs.more(); {
		doc := docs.next()
		if docs.err != nil {
			return nil, t.fail("drain queue", docs.err)
		}
		q := weft.QueuedMessage{ThreadID: t.id}
		if err := decodeQueued(doc, &q); err != nil {
			return nil, t.fail("drain queue", fmt.Errorf("queued message %d: %w", q.Seq, err))
		}
		if upTo > 0 && q.Seq > upTo {
			rest.WriteString(doc)
			continue
		}
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil, nil
	}
	slices.SortFunc(out, func(a, b weft.QueuedMessage) int { return cmp.Compare(a.Seq, b.Seq) })
	if _, err := t.w.exec(t.ctx, qDelQueue, t.id, out[len(out)-1].Seq); err != nil {
		return nil, t.fail("drain queue", err)
	}
	t.queued = rest.String()
	return out, nil
}

// PushQueue queues a message inside the transaction (a terminated thread refuses it, and the
// whole transaction with it).
func (t *tx) PushQueue(q *weft.QueuedMessage) error {
	q.ThreadID = t.id
	md, err := t.s.prepareQueued(q)
	if err != nil {
		return err
	}
	var seq int64
	var status string
	if err := t.w.row(t.ctx, `UPDATE threads SET queue_seq = queue_seq + 1 WHERE id = ? RETURNING queue_seq, status`, []any{&seq, &status}, t.id); err != nil {
		return t.fail("push queue", err)
	}
	if t.thread != nil {
		status = string(t.thread.th.Status)
	}
	if q.IfBusy == weft.IfBusyReject {
		if err := t.s.refuseBusy(t.ctx, t.w, t.id, weft.ThreadStatus(status)); err != nil {
			return err
		}
	}
	doc, err := queueRow(t.ctx, t.w, q, md, t.id, weft.ThreadStatus(status), seq-1, 0)
	if err != nil {
		return err
	}
	if t.queueRead {
		t.queueSeq = q.Seq
	}
	if t.queuedKnown {
		t.queued += string(doc)
	}
	return nil
}
