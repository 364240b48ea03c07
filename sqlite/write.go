package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/weft-agents/weft/internal/storecontract"
	"time"

	"github.com/weft-agents/weft"
)

var errClosed = errors.New("sqlite: store is closed")

// writer is the write connection with its prepared statements, cached by SQL text. It is used only
// while Store.wmu is held.
type writer struct {
	conn  *sql.Conn
	cache map[string]*sql.Stmt
}

func (s *Store) prepareWriter(ctx context.Context) error {
	s.w = &writer{conn: s.wconn, cache: map[string]*sql.Stmt{}}
	for _, q := range hotWrites() {
		if _, err := s.w.stmt(ctx, q); err != nil {
			return fmt.Errorf("sqlite: prepare: %w", err)
		}
	}
	return nil
}

func (w *writer) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := w.cache[q]; ok {
		return st, nil
	}
	st, err := w.conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	w.cache[q] = st
	return st, nil
}

// Statements on the write connection run with a context that is never cancelled: modernc watches
// a cancellable context with a goroutine per statement, which costs more than the short write
// statements themselves. ctx is checked before each statement instead.

func (w *writer) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := w.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(context.Background(), args...)
}

// execN runs a statement and returns the number of rows it changed.
func (w *writer) execN(ctx context.Context, q string, args ...any) (int64, error) {
	r, err := w.exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

// row runs a query and scans its first row into dest; sql.ErrNoRows when there is none.
func (w *writer) row(ctx context.Context, q string, dest []any, args ...any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st, err := w.stmt(ctx, q)
	if err != nil {
		return err
	}
	return st.QueryRowContext(context.Background(), args...).Scan(dest...)
}

func (w *writer) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := w.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(context.Background(), args...)
}

func (w *writer) close() {
	for _, st := range w.cache {
		st.Close()
	}
}

// write runs fn in a BEGIN IMMEDIATE transaction on the write connection: committed when fn returns
// nil, rolled back when it fails or panics.
func (s *Store) write(ctx context.Context, fn func(w *writer) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	w := s.w
	if w == nil {
		return errClosed
	}
	if _, err := w.exec(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	done := false
	defer func() {
		if !done { // fn panicked
			w.exec(context.Background(), "ROLLBACK")
		}
	}()
	err = fn(w)
	done = true
	if err == nil {
		if _, err = w.exec(context.Background(), "COMMIT"); err == nil {
			s.ckpt.committed()
			return nil
		}
		err = fmt.Errorf("sqlite: commit: %w", err)
	}
	w.exec(context.Background(), "ROLLBACK")
	return err
}

// Write statements; hotWrites are prepared at Open.
const (
	qThreadExists = `SELECT 1 FROM threads WHERE id = ?`
	qFence        = `SELECT l.owner, l.token, l.expires_at FROM threads t LEFT JOIN leases l ON l.thread_id = ?2 WHERE t.id = ?1`
	// The messages_seq trigger advances threads.msg_seq.
	qInsertMsg = `INSERT INTO messages (thread_id, seq, id, role, silent, depth, content, doc)
		VALUES (?1, (SELECT msg_seq + 1 FROM threads WHERE id = ?1), ?2, ?3, ?4, ?5, ?6, ?7) RETURNING seq`
	qGetMsgDoc = `SELECT seq, content, doc FROM messages WHERE thread_id = ? AND id = ?`
	qUpdateMsg = `UPDATE messages SET silent = ?, content = ?, doc = ? WHERE thread_id = ? AND seq = ?`
	qDeleteMsg = `DELETE FROM messages WHERE thread_id = ? AND id = ?`
	// The tool_calls_seq trigger advances threads.call_seq.
	qPutToolCal = `INSERT INTO tool_calls (thread_id, call_id, seq, status, doc)
		VALUES (?1, ?2, (SELECT call_seq + 1 FROM threads WHERE id = ?1), ?3, ?4)
		ON CONFLICT (thread_id, call_id) DO UPDATE SET status = excluded.status, doc = excluded.doc
		RETURNING seq`
	qSetExec = `INSERT INTO exec_state (thread_id, key, value) VALUES (?, ?, ?)
		ON CONFLICT (thread_id, key) DO UPDATE SET value = excluded.value`
	qDelExec = `DELETE FROM exec_state WHERE thread_id = ? AND key = ?`
	qPutLog  = `INSERT INTO logs (thread_id, id, depth, created_at, doc, request_body, response_body) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (thread_id, id) DO UPDATE SET depth = excluded.depth, created_at = excluded.created_at,
		doc = excluded.doc, request_body = excluded.request_body, response_body = excluded.response_body`
	qUpdateThread = `UPDATE threads SET agent = COALESCE(?2, agent), label = COALESCE(?3, label), tags = COALESCE(?4, tags),
		properties = COALESCE(?5, properties), arguments = COALESCE(?6, arguments), status = COALESCE(?7, status),
		stop_reason = COALESCE(?8, stop_reason), last_activity_at = COALESCE(?9, last_activity_at),
		preview = COALESCE(?10, preview), updated_at = ?11 WHERE id = ?1`
	qSetKV = `INSERT INTO kv (thread_id, key, value, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (thread_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
	qDelKV      = `DELETE FROM kv WHERE thread_id = ? AND key = ?`
	qDrainQueue = `SELECT ` + queueCols + ` FROM queue WHERE thread_id = ? ORDER BY seq`
	qDelQueue   = `DELETE FROM queue WHERE thread_id = ? AND seq <= ?`
)

// hotWrites lists the statements prepared at Open.
func hotWrites() []string {
	return []string{"BEGIN IMMEDIATE", "COMMIT", "ROLLBACK", qThreadExists, qFence, qInsertMsg,
		qUpdateMsg, qPutToolCal, qSetExec, qDelExec, qPutLog, qUpdateThread, qSetKV, qDrainQueue, qDelQueue}
}

// Tx runs fn in one BEGIN IMMEDIATE transaction on the write connection: committed when fn returns
// nil, rolled back when it returns an error or panics. Transactions of all threads run one at a time
// (SQLite has one writer); fn may read through the Store (it sees committed data) but must not
// start another Tx or other write, nor keep the Tx after returning. With a fence, the lease of
// fence.ThreadID (the Tx's thread when empty) must be live and held with fence's node and token,
// checked inside the transaction, else ErrLeaseLost and nothing is written. An unknown thread is
// ErrNotFound.
func (s *Store) Tx(ctx context.Context, threadID string, fence *weft.Fence, fn func(weft.Tx) error) error {
	return s.write(ctx, func(w *writer) error {
		if fence == nil {
			var one int
			if err := w.row(ctx, qThreadExists, []any{&one}, threadID); err != nil {
				return s.noThread(threadID, err)
			}
		} else {
			leaseThread := fence.ThreadID
			if leaseThread == "" {
				leaseThread = threadID
			}
			var owner sql.NullString
			var token, expires sql.NullInt64
			if err := w.row(ctx, qFence, []any{&owner, &token, &expires}, threadID, leaseThread); err != nil {
				return s.noThread(threadID, err)
			}
			if owner.String != fence.Node || token.Int64 != fence.Token || s.now().UnixNano() >= expires.Int64 {
				return fmt.Errorf("thread %s: lease token %d of %s: %w", leaseThread, fence.Token, fence.Node, weft.ErrLeaseLost)
			}
		}
		t := tx{s: s, w: w, ctx: ctx, id: threadID}
		return fn(&t)
	})
}

// noThread maps a missing row to ErrNotFound naming the thread.
func (s *Store) noThread(threadID string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("thread %s: %w", threadID, weft.ErrNotFound)
	}
	return fmt.Errorf("sqlite: thread %s: %w", threadID, err)
}

// tx is the weft.Tx of one Store.Tx call.
type tx struct {
	s   *Store
	w   *writer
	ctx context.Context
	id  string
	now time.Time
}

func (t *tx) clock() time.Time {
	if t.now.IsZero() {
		t.now = t.s.now().UTC()
	}
	return t.now
}

func (t *tx) fail(what string, err error) error {
	return fmt.Errorf("sqlite: thread %s: %s: %w", t.id, what, err)
}

// UpdateThread changes the thread's fields; UpdatedAt becomes now.
func (t *tx) UpdateThread(p weft.ThreadPatch) error {
	var tags, props, args, act any
	if p.Tags != nil {
		b, err := marshal(p.Tags)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: tags: %v", t.id, err)
		}
		tags = string(b)
	}
	if p.Properties != nil {
		b, err := marshal(p.Properties)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: properties: %v", t.id, err)
		}
		props = string(b)
	}
	if p.Arguments != nil {
		b, err := marshal(p.Arguments)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: arguments: %v", t.id, err)
		}
		args = string(b)
	}
	if p.LastActivityAt != nil {
		act = nanos(*p.LastActivityAt)
	}
	_, err := t.w.exec(t.ctx, qUpdateThread, t.id, strPtr(p.Agent), strPtr(p.Label), tags, props, args,
		strPtr((*string)(p.Status)), strPtr((*string)(p.StopReason)), act, strPtr(p.Preview), nanos(t.clock()))
	if err != nil {
		return t.fail("update thread", err)
	}
	return nil
}

// strPtr turns an optional string into a bind value (NULL when absent).
func strPtr(p *string) any {
	if p == nil {
		return nil
	}
	return *p
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
	if m.ID == "" {
		m.ID = weft.NewID("msg_")
	}
	created := m.CreatedAt
	if created.IsZero() {
		created = t.clock()
	}
	var seq int64
	err := t.w.row(t.ctx, qInsertMsg, []any{&seq}, t.id, m.ID, string(m.Role), boolInt(m.Silent), m.Depth, m.Content,
		messageDoc(m, created, md))
	switch {
	case isConstraint(err, "UNIQUE"):
		return weft.Errorf(weft.EConflict, "thread %s: message %s already exists", t.id, m.ID)
	case isConstraint(err, "NOT NULL"): // no thread row to take a seq from
		return fmt.Errorf("thread %s: %w", t.id, weft.ErrNotFound)
	case err != nil:
		return t.fail("insert message", err)
	}
	m.ThreadID, m.Seq, m.CreatedAt = t.id, seq, created.UTC()
	return nil
}

// UpdateMessage changes a message; ErrNotFound if it does not exist.
func (t *tx) UpdateMessage(id string, ch weft.MessageChange) error {
	var m weft.Message
	var doc string
	err := t.w.row(t.ctx, qGetMsgDoc, []any{&m.Seq, &m.Content, &doc}, t.id, id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
	}
	if err == nil {
		err = decodeMessage(doc, &m)
	}
	if err != nil {
		return t.fail("update message "+id, err)
	}
	if ch.Content != nil {
		m.Content = *ch.Content
	}
	if ch.Status != nil {
		m.Status = *ch.Status
	}
	if ch.ToolCalls != nil {
		m.ToolCalls = *ch.ToolCalls
	}
	if ch.Attachments != nil {
		m.Attachments = *ch.Attachments
	}
	if ch.Metadata != nil {
		m.Metadata = ch.Metadata
	}
	if ch.Silent != nil {
		m.Silent = *ch.Silent
	}
	if ch.Reasoning != nil {
		m.Reasoning = *ch.Reasoning
	}
	if ch.LogID != nil {
		m.LogID = *ch.LogID
	}
	var md []byte
	if m.Metadata != nil {
		if md, err = marshal(m.Metadata); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: message %s metadata: %v", t.id, id, err)
		}
	}
	if _, err := t.w.exec(t.ctx, qUpdateMsg, boolInt(m.Silent), m.Content, messageDoc(&m, m.CreatedAt, md), t.id, m.Seq); err != nil {
		return t.fail("update message "+id, err)
	}
	return nil
}

// DeleteMessage removes a message; its seq is not reused.
func (t *tx) DeleteMessage(id string) error {
	n, err := t.w.execN(t.ctx, qDeleteMsg, t.id, id)
	if err != nil {
		return t.fail("delete message "+id, err)
	}
	if n == 0 {
		return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
	}
	return nil
}

// PutToolCall inserts or replaces a tool-call record, assigning ThreadID and Seq (kept from the
// first insert); Status defaults to pending.
func (t *tx) PutToolCall(c *weft.ToolCallRecord) error {
	if c.CallID == "" {
		return weft.Errorf(weft.EInvalid, "thread %s: tool call without id", t.id)
	}
	if len(c.Meta) > 0 && !json.Valid(c.Meta) {
		return weft.Errorf(weft.EInvalid, "thread %s: tool call %s: meta is not valid JSON", t.id, c.CallID)
	}
	if c.Status == "" {
		c.Status = weft.CallPending
	}
	var seq int64
	err := t.w.row(t.ctx, qPutToolCal, []any{&seq}, t.id, c.CallID, string(c.Status), callDoc(c))
	if err != nil {
		return t.fail("put tool call "+c.CallID, err)
	}
	c.ThreadID, c.Seq = t.id, seq
	return nil
}

// DrainQueue removes and returns the queued messages in order.
func (t *tx) DrainQueue() ([]weft.QueuedMessage, error) {
	rows, err := t.w.query(t.ctx, qDrainQueue, t.id)
	if err != nil {
		return nil, t.fail("drain queue", err)
	}
	out, err := scanQueue(rows)
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

// SetExecState stores a run-state document (nil deletes it).
func (t *tx) SetExecState(key string, value json.RawMessage) error {
	if err := storecontract.CheckExecState(t.id, key, value); err != nil {
		return err
	}
	var err error
	if value == nil {
		_, err = t.w.exec(t.ctx, qDelExec, t.id, key)
	} else {
		_, err = t.w.exec(t.ctx, qSetExec, t.id, key, string(value))
	}
	if err != nil {
		return t.fail("exec state "+key, err)
	}
	return nil
}

// PutLog inserts or replaces a log row (keyed by id; a replaced row keeps its place), assigning ID
// (when empty), ThreadID and CreatedAt (when zero). Bodies are stored verbatim, unchecked.
func (t *tx) PutLog(l *weft.LogEntry) error {
	if l.ID == "" {
		l.ID = weft.NewID("log_")
	}
	created := l.CreatedAt
	if created.IsZero() {
		created = t.clock()
	}
	_, err := t.w.exec(t.ctx, qPutLog, t.id, l.ID, l.Depth, nanos(created), logDoc(l, created), string(l.RequestBody), string(l.ResponseBody))
	if err != nil {
		return t.fail("put log "+l.ID, err)
	}
	l.ThreadID, l.CreatedAt = t.id, created.UTC()
	return nil
}

// SetKV stores a JSON value (nil deletes it).
func (t *tx) SetKV(key string, value json.RawMessage) error {
	if err := storecontract.CheckKV(t.id, key, value); err != nil {
		return err
	}
	var err error
	if value == nil {
		_, err = t.w.exec(t.ctx, qDelKV, t.id, key)
	} else {
		_, err = t.w.exec(t.ctx, qSetKV, t.id, key, string(value), nanos(t.clock()))
	}
	if err != nil {
		return t.fail("kv "+key, err)
	}
	return nil
}

func marshal(v any) ([]byte, error) { return json.Marshal(v) }
