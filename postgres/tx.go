package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// threadRow is what a write transaction reads of its thread when it locks the row.
type threadRow struct {
	status                     string
	doc                        []byte
	msgSeq, queueSeq, eventSeq int64
	leaseOwner                 string
	leaseToken, leaseExpires   int64
}

const qLockThread = `SELECT status, doc, msg_seq, queue_seq, event_seq, lease_owner, lease_token, lease_expires_at
	FROM threads WHERE id = $1 FOR UPDATE`

func (r *threadRow) scan(row pgx.Row) error {
	return row.Scan(&r.status, &r.doc, &r.msgSeq, &r.queueSeq, &r.eventSeq, &r.leaseOwner, &r.leaseToken, &r.leaseExpires)
}

// held reports whether the row's lease is live and held with f at now.
func (r *threadRow) held(f *weft.Fence, now time.Time) bool {
	return r.leaseOwner == f.Node && r.leaseToken == f.Token && now.UnixNano() < r.leaseExpires
}

func leaseLost(f *weft.Fence) error {
	return fmt.Errorf("thread %s: lease token %d of %s: %w", f.ThreadID, f.Token, f.Node, weft.ErrLeaseLost)
}

// Tx runs fn as one PostgreSQL transaction on the thread. It first locks the thread's row (and,
// for a fence on another thread, that thread's row FOR SHARE, before it): transactions on one
// thread run one at a time across nodes, and no node can take the fence's lease until this one
// ends. With a fence, the lease must be live and held with fence's node and token both before fn
// and at commit, else ErrLeaseLost and nothing is written. fn may read the store (it sees committed
// data). An unknown thread is ErrNotFound.
//
// A transaction costs two round trips to the database: one that begins it and locks the row, and
// one that sends fn's writes, the thread's counters and COMMIT together. Writes whose outcome fn
// needs at once (a read-modify-write of a committed message, draining the queue, file operations)
// add one each.
func (s *Store) Tx(ctx context.Context, threadID string, fence *weft.Fence, fn func(weft.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock := s.locks.lock(threadID)
	defer unlock()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return pgErr("thread "+threadID, err)
	}
	defer conn.Release()
	t := &tx{s: s, ctx: ctx, c: conn, id: threadID, fence: fence}
	if fence != nil && fence.ThreadID == "" {
		f := *fence
		f.ThreadID = threadID
		t.fence = &f
	}
	done := false
	defer func() {
		if !done {
			t.rollback()
		}
	}()
	if err := t.begin(); err != nil {
		return err
	}
	if err := fn(t); err != nil {
		return err
	}
	done = true
	return t.commit()
}

// tx is the write side of one transaction. Writes whose outcome fn does not need at once are
// queued as ops and sent with the next statement that must run now, or with COMMIT.
type tx struct {
	s     *Store
	ctx   context.Context
	c     *pgxpool.Conn
	id    string
	fence *weft.Fence
	row   threadRow
	now   time.Time

	ops []op

	queued []weft.QueuedMessage // the queue as of the lock, less what DrainQueue took

	meta     *weft.Thread // the thread record once UpdateThread changed it
	pushed   bool
	events   int64 // events appended
	release  bool
	rowDirty bool // counters changed
	began    bool
}

// op is a queued statement. row, when set, scans the statement's one RETURNING row; fail maps the
// statement's error. msgID names the message a queued insert or update writes, so that a later
// change within the same transaction edits it in place.
type op struct {
	sql   string
	args  []any
	row   func(pgx.Row) error
	fail  func(error) error
	msgID string
}

// begin starts the transaction, locks the fence's thread (when it is another) and the thread, and
// checks the fence, in one round trip.
func (t *tx) begin() error {
	ctx, f := t.ctx, t.fence
	now := t.s.now()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	var lr threadRow
	other := f != nil && f.ThreadID != t.id
	if other {
		b.Queue(`SELECT lease_owner, lease_token, lease_expires_at FROM threads WHERE id = $1 FOR SHARE`, f.ThreadID)
	}
	b.Queue(qLockThread, t.id)
	// The queue as of the lock: pushes lock the row too, so it cannot change before commit, and
	// DrainQueue needs no round trip of its own.
	b.Queue("SELECT doc, seq FROM queue WHERE thread_id = $1 ORDER BY seq", t.id)
	br := t.c.SendBatch(ctx, b)
	_, err := br.Exec()
	t.began = err == nil
	var otherErr error
	if err == nil && other {
		otherErr = br.QueryRow().Scan(&lr.leaseOwner, &lr.leaseToken, &lr.leaseExpires)
		if errors.Is(otherErr, pgx.ErrNoRows) || (otherErr == nil && !lr.held(f, now)) {
			otherErr = leaseLost(f)
		}
	}
	var ownErr error
	if err == nil {
		ownErr = t.row.scan(br.QueryRow())
	}
	if err == nil && ownErr == nil {
		rows, qerr := br.Query()
		if qerr == nil {
			t.queued, qerr = collect(rows, "thread "+t.id+": queue", func(doc []byte, seq int64) (weft.QueuedMessage, error) {
				return decodeQueued(doc, t.id, seq)
			})
		}
		ownErr = qerr
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	switch {
	case otherErr != nil && !errors.Is(otherErr, weft.ErrLeaseLost):
		return pgErr("thread "+f.ThreadID+": lease", otherErr)
	case otherErr != nil:
		return otherErr
	case errors.Is(ownErr, pgx.ErrNoRows):
		return threadNotFound(t.id)
	case ownErr != nil:
		return pgErr("thread "+t.id, ownErr)
	case err != nil:
		return pgErr("thread "+t.id+": begin", err)
	case f != nil && !other && !t.row.held(f, now):
		return leaseLost(f)
	}
	return nil
}

func (t *tx) rollback() {
	if !t.began {
		return
	}
	// A connection whose rollback fails (lost, or cancelled mid-statement) is closed, not reused.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
	defer cancel()
	if _, err := t.c.Exec(ctx, "ROLLBACK"); err != nil {
		_ = t.c.Conn().Close(ctx)
	}
	t.began = false
}

func (t *tx) clock() time.Time {
	if t.now.IsZero() {
		t.now = t.s.nowUTC()
	}
	return t.now
}

// queue adds a statement to send later.
func (t *tx) queue(o op) { t.ops = append(t.ops, o) }

// send sends the queued ops followed by tail in one round trip.
func (t *tx) send(tail ...op) error {
	ops := append(t.ops, tail...)
	t.ops = t.ops[:0]
	if len(ops) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, o := range ops {
		b.Queue(o.sql, o.args...)
	}
	br := t.c.SendBatch(t.ctx, b)
	var first error
	for _, o := range ops {
		var err error
		if o.row != nil {
			err = o.row(br.QueryRow())
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			if o.fail != nil {
				err = o.fail(err)
			}
			first = err
			break
		}
	}
	if err := br.Close(); first == nil {
		first = err
	}
	return pgErr("thread "+t.id, first)
}

// exec runs a statement now, after the queued ones.
func (t *tx) exec(what, sql string, args ...any) (int64, error) {
	if err := t.send(); err != nil {
		return 0, err
	}
	ct, err := t.c.Exec(t.ctx, sql, args...)
	if err != nil {
		return 0, pgErr("thread "+t.id+": "+what, err)
	}
	return ct.RowsAffected(), nil
}

// queryRow runs a query now, after the queued statements.
func (t *tx) queryRow(sql string, args ...any) pgx.Row {
	if err := t.send(); err != nil {
		return errRow{err}
	}
	return t.c.QueryRow(t.ctx, sql, args...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// commit checks the fence once more and sends the queued writes, the thread row and COMMIT in one
// round trip; the notifications it queues are delivered by PostgreSQL when (and only if) it commits.
func (t *tx) commit() error {
	now := t.s.now()
	if f := t.fence; f != nil && f.ThreadID == t.id && !t.row.held(f, now) {
		t.rollback()
		return leaseLost(f)
	}
	status := t.row.status
	if t.meta != nil {
		status = string(t.meta.Status)
	}
	if t.pushed && status == string(weft.ThreadTerminated) {
		t.rollback()
		return fmt.Errorf("thread %s: %w", t.id, weft.ErrTerminated)
	}
	var tail []op
	if f := t.fence; f != nil && f.ThreadID != t.id {
		// The fence's row is locked FOR SHARE: only the clock can have moved, checked by the
		// database (an error aborts the transaction).
		tail = append(tail, op{sql: `SELECT 1 / (lease_expires_at > $2)::int FROM threads WHERE id = $1`,
			args: []any{f.ThreadID, now.UnixNano()}, fail: func(error) error { return leaseLost(f) }})
	}
	if t.rowDirty || t.meta != nil {
		sql := "UPDATE threads SET msg_seq = $2, queue_seq = $3, event_seq = $4"
		args := []any{t.id, t.row.msgSeq, t.row.queueSeq, t.row.eventSeq}
		if t.meta != nil {
			doc, err := encodeThread(t.meta)
			if err != nil {
				t.rollback()
				return err
			}
			sql += ", user_id = $5, agent = $6, label = $7, preview = $8, tags = $9, status = $10, created_at = $11, last_activity_at = $12, doc = $13"
			args = append(append(args, threadCols(t.meta)...), doc)
		}
		tail = append(tail, op{sql: sql + " WHERE id = $1", args: args})
	}
	if t.release {
		tail = append(tail, op{sql: "UPDATE threads SET lease_owner = '', lease_expires_at = 0 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3",
			args: []any{t.fence.ThreadID, t.fence.Node, t.fence.Token}})
	}
	if t.events > 0 {
		seq := t.row.eventSeq
		if seq > weft.EventWindow && (seq-t.events)/(weft.EventWindow/8) != seq/(weft.EventWindow/8) {
			tail = append(tail, op{sql: "DELETE FROM events WHERE thread_id = $1 AND seq <= $2", args: []any{t.id, seq - weft.EventWindow}})
		}
		tail = append(tail, op{sql: "SELECT pg_notify($1, $2)", args: []any{channelEvents, t.id + " " + strconv.FormatInt(seq, 10)}})
	}
	if t.pushed {
		tail = append(tail, op{sql: "SELECT pg_notify($1, $2)", args: []any{channelQueue, t.id}})
	}
	tail = append(tail, op{sql: "COMMIT"})
	if err := t.send(tail...); err != nil {
		t.rollback()
		return err
	}
	t.began = false
	return nil
}

// thread returns the thread record this transaction writes back, decoding it on first use.
func (t *tx) thread() (*weft.Thread, error) {
	if t.meta == nil {
		m, err := decodeThread(t.row.doc)
		if err != nil {
			return nil, err
		}
		t.meta = m
	}
	return t.meta, nil
}

// UpdateThread changes thread fields; UpdatedAt becomes now.
func (t *tx) UpdateThread(p weft.ThreadPatch) error {
	m, err := t.thread()
	if err != nil {
		return err
	}
	if p.Tags != nil {
		m.Tags = slices.Clone(p.Tags)
	}
	if p.Properties != nil {
		if _, err := json.Marshal(p.Properties); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: properties: %v", t.id, err)
		}
		m.Properties = p.Properties
	}
	if p.Arguments != nil {
		if _, err := json.Marshal(p.Arguments); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: arguments: %v", t.id, err)
		}
		m.Arguments = p.Arguments
	}
	storecontract.ApplyThreadPatch(m, p, t.clock())
	return nil
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

// qPutToolCall inserts or replaces a call record. A new call takes the thread's next call number
// (the counter lives in the thread row, advanced by this statement); a replaced one keeps its own.
const qPutToolCall = `WITH old AS (SELECT seq FROM tool_calls WHERE thread_id = $1 AND call_id = $2),
	next AS (UPDATE threads SET call_seq = call_seq + 1 WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM old) RETURNING call_seq)
	INSERT INTO tool_calls (thread_id, call_id, seq, status, doc)
	VALUES ($1, $2, COALESCE((SELECT seq FROM old), (SELECT call_seq FROM next)), $3, $4)
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
	return out, nil
}

// QueueSeq returns the seq of the newest message ever queued on the thread, as of this transaction
// (pushes from outside wait for the row lock this transaction holds).
func (t *tx) QueueSeq() (int64, error) { return t.row.queueSeq, nil }

// SetExecState stores a run-state document (nil deletes it).
func (t *tx) SetExecState(key string, value json.RawMessage) error {
	if err := storecontract.CheckExecState(t.id, key, value); err != nil {
		return err
	}
	if value == nil {
		t.queue(op{sql: "DELETE FROM exec_state WHERE thread_id = $1 AND key = $2", args: []any{t.id, key}})
		return nil
	}
	t.queue(op{sql: `INSERT INTO exec_state (thread_id, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (thread_id, key) DO UPDATE SET value = excluded.value`, args: []any{t.id, key, []byte(slices.Clone(value))}})
	return nil
}

// qPutLog inserts or replaces a log row; a new one takes the thread's next log number (its
// creation order), a replaced one keeps its place.
const qPutLog = `WITH old AS (SELECT n FROM logs WHERE thread_id = $1 AND id = $2),
	next AS (UPDATE threads SET log_seq = log_seq + 1 WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM old) RETURNING log_seq)
	INSERT INTO logs (thread_id, id, n, depth, doc, request_body, response_body)
	VALUES ($1, $2, COALESCE((SELECT n FROM old), (SELECT log_seq FROM next)), $3, $4, $5, $6)
	ON CONFLICT (thread_id, id) DO UPDATE SET depth = excluded.depth, doc = excluded.doc,
	request_body = excluded.request_body, response_body = excluded.response_body`

// PutLog inserts or replaces a log row (keyed by id; a replaced row keeps its place), assigning ID
// (when empty), ThreadID and CreatedAt (when zero). Bodies are stored verbatim.
func (t *tx) PutLog(l *weft.LogEntry) error {
	if l.ID == "" {
		l.ID = weft.NewID("log_")
	}
	l.ThreadID = t.id
	if l.CreatedAt.IsZero() {
		l.CreatedAt = t.clock()
	} else {
		l.CreatedAt = l.CreatedAt.UTC()
	}
	c := *l
	c.RequestBody, c.ResponseBody = nil, nil
	doc, err := json.Marshal(&c)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: log %s: %v", t.id, l.ID, err)
	}
	t.queue(op{sql: qPutLog, args: []any{t.id, l.ID, l.Depth, doc, nilIfEmpty(slices.Clone(l.RequestBody)), nilIfEmpty(slices.Clone(l.ResponseBody))}})
	return nil
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// SetKV stores a JSON value (nil deletes it).
func (t *tx) SetKV(key string, value json.RawMessage) error {
	if err := storecontract.CheckKV(t.id, key, value); err != nil {
		return err
	}
	if value == nil {
		t.queue(op{sql: "DELETE FROM kv WHERE thread_id = $1 AND key = $2", args: []any{t.id, key}})
		return nil
	}
	t.queue(op{sql: `INSERT INTO kv (thread_id, key, value, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (thread_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		args: []any{t.id, key, []byte(slices.Clone(value)), nanos(t.clock())}})
	return nil
}

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
	return nil
}

// AppendEvents adds events to the thread's log, numbering them from the thread's count.
func (t *tx) AppendEvents(evs []weft.EventRecord) error {
	for i := range evs {
		evs[i].ThreadID, evs[i].Seq = t.id, t.row.eventSeq+int64(i)+1
		if evs[i].CreatedAt.IsZero() {
			evs[i].CreatedAt = t.clock()
		}
		data := []byte(slices.Clone(evs[i].Data))
		if data == nil {
			data = []byte("null")
		}
		t.queue(op{sql: "INSERT INTO events (thread_id, seq, type, data, created_at) VALUES ($1, $2, $3, $4, $5)",
			args: []any{t.id, evs[i].Seq, text(evs[i].Type), data, nanos(evs[i].CreatedAt)}})
	}
	t.row.eventSeq += int64(len(evs))
	t.events += int64(len(evs))
	t.rowDirty = t.rowDirty || len(evs) > 0
	return nil
}

// ReleaseLease frees the fence's lease when the transaction commits (a no-op without a fence).
func (t *tx) ReleaseLease() error {
	t.release = t.fence != nil
	return nil
}
