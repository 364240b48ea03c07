package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// decodeMessage reads a message doc; the row's thread and seq are authoritative.
func decodeMessage(doc []byte, threadID string, seq int64) (weft.Message, error) {
	var m weft.Message
	if err := decodeMessageJSON(doc, &m); err != nil {
		return m, fmt.Errorf("postgres: thread %s: message %d: %w", threadID, seq, err)
	}
	m.ThreadID, m.Seq = threadID, seq
	m.CreatedAt = m.CreatedAt.UTC()
	return m, nil
}

// encodeMessage is a message's doc: every field, with empty lists and maps left out (they come
// back nil, as from every store).
func encodeMessage(m *weft.Message) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, weft.Errorf(weft.EInvalid, "thread %s: message %s: %v", m.ThreadID, m.ID, err)
	}
	return b, nil
}

// Messages lists a thread's messages ordered by seq (see weft.MessageQuery; Limit 0 means 100 and a
// negative Limit no limit). An unknown thread has no messages.
func (s *Store) Messages(ctx context.Context, threadID string, q weft.MessageQuery) ([]weft.Message, error) {
	where, args := messagesWhere(threadID, q)
	sql := "SELECT doc, seq" + where
	if q.Desc {
		sql += " ORDER BY seq DESC"
	} else {
		sql += " ORDER BY seq"
	}
	if limit := storecontract.MessageLimit(q.Limit); limit > 0 {
		sql += " LIMIT " + strconv.Itoa(limit)
	}
	if q.Offset > 0 {
		sql += " OFFSET " + strconv.Itoa(q.Offset)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, pgErr("thread "+threadID+": messages", err)
	}
	out, err := collect(rows, "thread "+threadID+": messages", func(doc []byte, seq int64) (weft.Message, error) {
		return decodeMessage(doc, threadID, seq)
	})
	if out == nil && err == nil {
		out = []weft.Message{}
	}
	return out, err
}

// messagesWhere is the FROM and WHERE clauses of a message query, with their arguments.
func messagesWhere(threadID string, q weft.MessageQuery) (string, []any) {
	args := []any{threadID, q.AfterSeq, q.MaxDepth}
	sql := " FROM messages WHERE thread_id = $1 AND seq > $2 AND depth <= $3"
	if q.ExcludeSilent {
		sql += " AND NOT silent"
	}
	if len(q.Roles) > 0 {
		roles := make([]string, len(q.Roles))
		for i, r := range q.Roles {
			roles[i] = string(r)
		}
		args = append(args, roles)
		sql += " AND role = ANY ($4)"
	}
	return sql, args
}

// CountMessages counts the messages Messages lists for q without its Limit and Offset.
func (s *Store) CountMessages(ctx context.Context, threadID string, q weft.MessageQuery) (int, error) {
	where, args := messagesWhere(threadID, q)
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*)"+where, args...).Scan(&n); err != nil {
		return 0, pgErr("thread "+threadID+": count messages", err)
	}
	return n, nil
}

// Message returns one message or ErrNotFound.
func (s *Store) Message(ctx context.Context, threadID, id string) (weft.Message, error) {
	var doc []byte
	var seq int64
	err := s.pool.QueryRow(ctx, "SELECT doc, seq FROM messages WHERE thread_id = $1 AND id = $2", threadID, id).Scan(&doc, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return weft.Message{}, fmt.Errorf("thread %s: message %s: %w", threadID, id, weft.ErrNotFound)
	}
	if err != nil {
		return weft.Message{}, pgErr("thread "+threadID+": message "+id, err)
	}
	return decodeMessage(doc, threadID, seq)
}

func decodeCall(doc []byte, threadID string, seq int64) (weft.ToolCallRecord, error) {
	var c weft.ToolCallRecord
	if err := json.Unmarshal(doc, &c); err != nil {
		return c, fmt.Errorf("postgres: thread %s: tool call %d: %w", threadID, seq, err)
	}
	c.ThreadID, c.Seq = threadID, seq
	if c.StartedAt != nil {
		*c.StartedAt = c.StartedAt.UTC()
	}
	if c.FinishedAt != nil {
		*c.FinishedAt = c.FinishedAt.UTC()
	}
	return c, nil
}

// ToolCalls lists a thread's tool calls with one of the given statuses (all when none), by seq.
func (s *Store) ToolCalls(ctx context.Context, threadID string, status ...weft.CallStatus) ([]weft.ToolCallRecord, error) {
	sql := "SELECT doc, seq FROM tool_calls WHERE thread_id = $1"
	args := []any{threadID}
	if len(status) > 0 {
		st := make([]string, len(status))
		for i, v := range status {
			st[i] = string(v)
		}
		sql += " AND status = ANY ($2)"
		args = append(args, st)
	}
	rows, err := s.pool.Query(ctx, sql+" ORDER BY seq", args...)
	if err != nil {
		return nil, pgErr("thread "+threadID+": tool calls", err)
	}
	return collect(rows, "thread "+threadID+": tool calls", func(doc []byte, seq int64) (weft.ToolCallRecord, error) {
		return decodeCall(doc, threadID, seq)
	})
}

func decodeQueued(doc []byte, threadID string, seq int64) (weft.QueuedMessage, error) {
	var q weft.QueuedMessage
	if err := json.Unmarshal(doc, &q); err != nil {
		return q, fmt.Errorf("postgres: thread %s: queued message %d: %w", threadID, seq, err)
	}
	q.ThreadID, q.Seq = threadID, seq
	q.CreatedAt = q.CreatedAt.UTC()
	return q, nil
}

// Queued lists the thread's queued messages in order without draining them.
func (s *Store) Queued(ctx context.Context, threadID string) ([]weft.QueuedMessage, error) {
	rows, err := s.pool.Query(ctx, "SELECT doc, seq FROM queue WHERE thread_id = $1 ORDER BY seq", threadID)
	if err != nil {
		return nil, pgErr("thread "+threadID+": queue", err)
	}
	return collect(rows, "thread "+threadID+": queue", func(doc []byte, seq int64) (weft.QueuedMessage, error) {
		return decodeQueued(doc, threadID, seq)
	})
}

// encodeQueued is a queued message's doc.
func encodeQueued(q *weft.QueuedMessage) ([]byte, error) {
	c := *q
	if len(c.Attachments) == 0 {
		c.Attachments = nil
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, weft.Errorf(weft.EInvalid, "thread %s: queued message metadata: %v", q.ThreadID, err)
	}
	return b, nil
}

// qPushQueue numbers and stores a queued message in one statement: the thread row's counter is
// taken under its row lock, and a terminated (or missing) thread, or one whose newest message has
// seq $3 or more ($3 > 0: QueuedMessage.MaxMessages), inserts nothing. The insert notifies the
// processes that serve the store, which may take the thread.
const qPushQueue = `WITH t AS (
	UPDATE threads SET queue_seq = queue_seq + 1 WHERE id = $1 AND status <> 'terminated'
		AND ($3 <= 0 OR ` + qLastSeq + ` < $3) RETURNING queue_seq),
	i AS (INSERT INTO queue (thread_id, seq, doc) SELECT $1, queue_seq, $2 FROM t RETURNING seq)
	SELECT seq FROM i, LATERAL (SELECT pg_notify('` + channelQueue + `', $1)) n`

// qPushQueueIdle is qPushQueue for a message with weft.IfBusyReject: a thread with a run in
// progress (status running, or a lease live at $4) inserts nothing either, decided under the
// row lock that the run's own transactions take.
const qPushQueueIdle = `WITH t AS (
	UPDATE threads SET queue_seq = queue_seq + 1 WHERE id = $1 AND status NOT IN ('terminated', 'running')
		AND NOT (lease_owner <> '' AND lease_expires_at > $4)
		AND ($3 <= 0 OR ` + qLastSeq + ` < $3) RETURNING queue_seq),
	i AS (INSERT INTO queue (thread_id, seq, doc) SELECT $1, queue_seq, $2 FROM t RETURNING seq)
	SELECT seq FROM i, LATERAL (SELECT pg_notify('` + channelQueue + `', $1)) n`

// PushQueue queues a message, assigning ID (when empty), ThreadID, Seq and CreatedAt (when zero);
// Role defaults to user. A terminated thread refuses it (ErrTerminated), and a message with
// weft.IfBusyReject a thread with a run in progress (a *weft.BusyError).
func (s *Store) PushQueue(ctx context.Context, q *weft.QueuedMessage) error {
	storecontract.PrepareQueued(q, s.nowUTC)
	doc, err := encodeQueued(q)
	if err != nil {
		return err
	}
	s.known.drop(q.ThreadID)
	if q.IfBusy == weft.IfBusyReject {
		err = s.pool.QueryRow(ctx, qPushQueueIdle, q.ThreadID, doc, q.MaxMessages, s.now().UnixNano()).Scan(&q.Seq)
	} else {
		err = s.pool.QueryRow(ctx, qPushQueue, q.ThreadID, doc, q.MaxMessages).Scan(&q.Seq)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return s.pushRefused(ctx, q)
	}
	return pgErr("thread "+q.ThreadID+": queue", err)
}

// qLastSeq is the seq of thread $1's newest message (0 when it has none): one index seek.
const qLastSeq = `COALESCE((SELECT MAX(seq) FROM messages WHERE thread_id = $1), 0)`

// pushRefused says why a queue push inserted nothing: the thread is terminated, full or missing.
func (s *Store) pushRefused(ctx context.Context, q *weft.QueuedMessage) error {
	q.Seq = 0
	var status, owner string
	var last, expires int64
	err := s.pool.QueryRow(ctx, "SELECT status, "+qLastSeq+", lease_owner, lease_expires_at FROM threads WHERE id = $1",
		q.ThreadID).Scan(&status, &last, &owner, &expires)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return threadNotFound(q.ThreadID)
	case err != nil:
		return pgErr("thread "+q.ThreadID+": queue", err)
	case status == string(weft.ThreadTerminated):
		return fmt.Errorf("thread %s: %w", q.ThreadID, weft.ErrTerminated)
	case q.MaxMessages > 0 && last >= q.MaxMessages:
		return &weft.ThreadFullError{ThreadID: q.ThreadID, Messages: last}
	case q.IfBusy == weft.IfBusyReject:
		// Refused as busy: the status or lease the push read may have changed since.
		return storecontract.BusyError(q.ThreadID)
	}
	return fmt.Errorf("postgres: thread %s: the message was not queued", q.ThreadID)
}

// InsertMessage inserts m with the next seq, assigning ID (when empty), ThreadID, Seq and
// CreatedAt (when zero) on m. An id the thread already has fails the transaction (EConflict).
func (t *tx) InsertMessage(m *weft.Message) error {
	if m.ID == "" {
		m.ID = weft.NewID("msg_")
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = t.clock()
	} else {
		m.CreatedAt = m.CreatedAt.UTC()
	}
	m.ThreadID = t.id
	seq := t.row.msgSeq + 1
	c := *m
	c.Seq = seq
	c.ToolCalls = nilIfEmptySlice(c.ToolCalls)
	c.Attachments = nilIfEmptySlice(c.Attachments)
	doc, err := encodeMessage(&c)
	if err != nil {
		return err
	}
	id := m.ID
	// The doc is encoded now (the caller may change m afterwards); the copy is kept, decoded from
	// it, only if an update within this transaction changes the message before it is sent.
	t.queue(op{sql: `INSERT INTO messages (thread_id, seq, id, role, silent, depth, doc) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		args: []any{t.id, seq, m.ID, text(string(m.Role)), m.Silent, m.Depth, doc}, msgID: m.ID,
		fail: func(err error) error {
			if isCode(err, uniqueViolation) {
				return weft.Errorf(weft.EConflict, "thread %s: message %s already exists", t.id, id)
			}
			return err
		}})
	m.Seq = seq
	t.row.msgSeq = seq
	t.rowDirty = true
	return nil
}

func nilIfEmptySlice[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// pendingInsert returns the index of the queued insert of message id, or -1 when this transaction
// has not queued one (or has sent it).
func (t *tx) pendingInsert(id string) int {
	for i := len(t.ops) - 1; i >= 0; i-- {
		if t.ops[i].msgID == id && strings.HasPrefix(t.ops[i].sql, "INSERT") {
			return i
		}
	}
	return -1
}

// UpdateMessage changes a message (inserted earlier in this Tx or committed). A message this
// transaction inserted and has not sent yet is changed in place; a committed one is read (the
// thread's lock keeps it as read until commit) and written back with the commit.
func (t *tx) UpdateMessage(id string, ch weft.MessageChange) error {
	if ch.Metadata != nil {
		if _, err := json.Marshal(ch.Metadata); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: message %s metadata: %v", t.id, id, err)
		}
	}
	var ins *op
	if i := t.pendingInsert(id); i >= 0 {
		ins = &t.ops[i]
	}
	var doc []byte
	var seq int64
	if ins != nil {
		doc, seq = ins.args[6].([]byte), ins.args[1].(int64)
	} else {
		err := t.queryRow("SELECT doc, seq FROM messages WHERE thread_id = $1 AND id = $2", t.id, id).Scan(&doc, &seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
		}
		if err != nil {
			return pgErr("thread "+t.id+": message "+id, err)
		}
	}
	dm, err := decodeMessage(doc, t.id, seq)
	if err != nil {
		return err
	}
	m := &dm
	storecontract.ApplyMessageChange(m, ch)
	if ch.ToolCalls != nil {
		m.ToolCalls = nilIfEmptySlice(slices.Clone(*ch.ToolCalls))
	}
	if ch.Attachments != nil {
		m.Attachments = nilIfEmptySlice(slices.Clone(*ch.Attachments))
	}
	if ch.Metadata != nil {
		m.Metadata = ch.Metadata
	}
	if doc, err = encodeMessage(m); err != nil {
		return err
	}
	if ins != nil {
		ins.args[4], ins.args[6] = m.Silent, doc
		return nil
	}
	t.queue(op{sql: "UPDATE messages SET silent = $3, doc = $4 WHERE thread_id = $1 AND seq = $2",
		args: []any{t.id, m.Seq, m.Silent, doc}, msgID: id})
	return nil
}

// DeleteMessage removes a message; its seq is not reused.
func (t *tx) DeleteMessage(id string) error {
	for i := range t.ops {
		if t.ops[i].msgID == id && strings.HasPrefix(t.ops[i].sql, "UPDATE") {
			t.ops = slices.Delete(t.ops, i, i+1) // the row goes: its queued update too
			break
		}
	}
	if i := t.pendingInsert(id); i >= 0 {
		t.ops = slices.Delete(t.ops, i, i+1) // inserted and deleted here: never sent
		return nil
	}
	n, err := t.exec("delete message "+id, "DELETE FROM messages WHERE thread_id = $1 AND id = $2", t.id, id)
	if err == nil && n == 0 {
		return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
	}
	return err
}

// qPutToolCall inserts or replaces a call record: a new call takes the number after the thread's
// last (one index seek; calls of a thread are written under its row lock, one transaction at a
// time), a replaced one keeps its own.
const qPutToolCall = `INSERT INTO tool_calls (thread_id, call_id, seq, status, doc)
	VALUES ($1, $2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM tool_calls WHERE thread_id = $1), $3, $4)
	ON CONFLICT (thread_id, call_id) DO UPDATE SET status = excluded.status, doc = excluded.doc
	RETURNING seq`

// PutToolCall inserts or replaces a tool-call record, assigning ThreadID and Seq (kept from the
// call's first put; Status defaults to pending). Seq is set when the transaction sends it.
func (t *tx) PutToolCall(c *weft.ToolCallRecord) error {
	if err := storecontract.PrepareToolCall(t.id, c); err != nil {
		return err
	}
	c.ThreadID = t.id
	r := *c
	if len(r.Meta) == 0 {
		r.Meta = nil
	}
	doc, err := json.Marshal(&r)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: tool call %s: %v", t.id, c.CallID, err)
	}
	t.queue(op{sql: qPutToolCall, args: []any{t.id, c.CallID, string(c.Status), doc},
		row: func(row pgx.Row) error { return row.Scan(&c.Seq) }})
	return nil
}

// DrainQueue removes and returns the queued messages with seq ≤ upTo (all when upTo ≤ 0), in order:
// the rows read with the lock (no push can come between), deleted with the commit.
func (t *tx) DrainQueue(upTo int64) ([]weft.QueuedMessage, error) {
	n := 0
	for n < len(t.queued) && (upTo <= 0 || t.queued[n].Seq <= upTo) {
		n++
	}
	if n == 0 {
		return nil, nil
	}
	out := t.queued[:n:n]
	t.queued = t.queued[n:]
	t.queue(op{sql: "DELETE FROM queue WHERE thread_id = $1 AND seq <= $2", args: []any{t.id, out[n-1].Seq}})
	// The row is written too, so that its version changes with the queue (known.go).
	t.rowDirty = true
	return out, nil
}

// QueueSeq returns the seq of the newest message ever queued on the thread, as of this transaction
// (pushes from outside wait for the row lock this transaction holds).
func (t *tx) QueueSeq() (int64, error) { return t.row.queueSeq, nil }

// PushQueue queues a message with the transaction's other writes; a terminated thread refuses it at
// commit (ErrTerminated), and nothing of the transaction is written.
func (t *tx) PushQueue(q *weft.QueuedMessage) error {
	q.ThreadID = t.id
	storecontract.PrepareQueued(q, t.s.nowUTC)
	q.Seq = t.row.queueSeq + 1
	doc, err := encodeQueued(q)
	if err != nil {
		return err
	}
	t.queue(op{sql: "INSERT INTO queue (thread_id, seq, doc) VALUES ($1, $2, $3)", args: []any{t.id, q.Seq, doc}})
	t.row.queueSeq = q.Seq
	t.pushed, t.rowDirty = true, true
	t.rejectBusy = t.rejectBusy || q.IfBusy == weft.IfBusyReject
	return nil
}
