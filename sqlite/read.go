package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// readStmts caches prepared statements of the read pool by SQL text (database/sql prepares each
// on every pooled connection as needed).
type readStmts struct {
	db    *sql.DB
	mu    sync.Mutex
	cache map[string]*sql.Stmt
}

func (r *readStmts) prepare(ctx context.Context, db *sql.DB) error {
	r.db, r.cache = db, map[string]*sql.Stmt{}
	for _, q := range []string{qThread, qMessagesAsc, qMessagesDesc, qMessage} {
		if _, err := r.stmt(ctx, q); err != nil {
			return fmt.Errorf("sqlite: prepare: %w", err)
		}
	}
	return nil
}

func (r *readStmts) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache == nil {
		return nil, errClosed
	}
	if st, ok := r.cache[q]; ok {
		return st, nil
	}
	st, err := r.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	r.cache[q] = st
	return st, nil
}

func (r *readStmts) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.cache {
		st.Close()
	}
	r.cache = nil
}

// Reads, like writes, check ctx before a statement and run it with a context that is never
// cancelled (see writer.exec): the statements are short, and long reads (chunked files) check ctx
// between chunks.

func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := s.rq.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(context.Background(), args...)
}

// rowOf runs a single-row query and returns the row to scan.
func (s *Store) rowOf(ctx context.Context, q string, args ...any) (*sql.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := s.rq.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(context.Background(), args...), nil
}

func (s *Store) row(ctx context.Context, q string, dest []any, args ...any) error {
	r, err := s.rowOf(ctx, q, args...)
	if err != nil {
		return err
	}
	return r.Scan(dest...)
}

type scanner interface{ Scan(dest ...any) error }

// --- threads ---

const qThread = `SELECT doc FROM threads WHERE id = ?`

// scanThread scans a row of a thread doc, followed by the extra columns into extra.
func scanThread(sc scanner, extra ...any) (*weft.Thread, error) {
	var doc string
	if err := sc.Scan(append([]any{&doc}, extra...)...); err != nil {
		return nil, err
	}
	return decodeThread(doc)
}

// CreateThread stores t and its thread-layer env values in one transaction. Empty fields get
// defaults, written back to t: ID (thr_…), OriginAgent (Agent), RootID (own id, or the parent's
// root), Status (idle), times (now). A missing parent is ErrNotFound; an existing id a conflict.
func (s *Store) CreateThread(ctx context.Context, t *weft.Thread, env []weft.EnvValue) error {
	if err := storecontract.PrepareThread(t, env); err != nil {
		return err
	}
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	tagsJSON, err := marshal(tags)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: tags: %v", t.ID, err)
	}
	props, err := mapJSON(t.Properties)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: properties: %v", t.ID, err)
	}
	args, err := mapJSON(t.Arguments)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: arguments: %v", t.ID, err)
	}
	return s.write(ctx, func(w *writer) error {
		var parent any
		if t.ParentID != "" {
			parent = t.ParentID
			var root string
			if err := w.row(ctx, `SELECT root_id FROM threads WHERE id = ?`, []any{&root}, t.ParentID); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("thread %s: parent thread %s: %w", t.ID, t.ParentID, weft.ErrNotFound)
				}
				return err
			}
			if t.RootID == "" {
				t.RootID = root
			}
		}
		now := s.now().UTC()
		storecontract.DefaultThread(t, now)
		stored := *t
		stored.Tags = tags
		_, err := w.exec(ctx, `INSERT INTO threads (id, agent, user_id, parent_id, root_id, label, tags, status, preview,
			created_at, last_activity_at, doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.Agent, t.UserID, parent, t.RootID, t.Label, string(tagsJSON), string(t.Status), t.Preview,
			nanos(t.CreatedAt), nanos(t.LastActivityAt), threadDoc(&stored, props, args))
		if isConstraint(err, "UNIQUE") {
			return weft.Errorf(weft.EConflict, "thread %s already exists", t.ID)
		}
		if err != nil {
			return fmt.Errorf("sqlite: create thread %s: %w", t.ID, err)
		}
		return s.setEnv(ctx, w, weft.EnvThread, t.ID, env, now)
	})
}

// Thread returns a thread or ErrNotFound.
func (s *Store) Thread(ctx context.Context, id string) (*weft.Thread, error) {
	row, err := s.rowOf(ctx, qThread, id)
	if err != nil {
		return nil, err
	}
	t, err := scanThread(row)
	if err != nil {
		return nil, s.noThread(id, err)
	}
	return t, nil
}

// threadOrder is the ORDER BY clause of each thread listing order.
var threadOrder = [...]string{
	storecontract.SortByActivity: "last_activity_at DESC, id DESC",
	storecontract.SortByCreated:  "created_at DESC, id DESC",
	storecontract.SortByOldest:   "created_at ASC, id ASC",
}

// Threads lists threads matching q (see weft.ThreadQuery; Limit 0 means no limit) and the number
// matching before paging. Search matches label, preview and agent, ignoring ASCII case.
func (s *Store) Threads(ctx context.Context, q weft.ThreadQuery) ([]*weft.Thread, int, error) {
	by, err := storecontract.ParseThreadSort(q.Sort)
	if err != nil {
		return nil, 0, err
	}
	order := threadOrder[by]
	var where []string
	var args []any
	add := func(cond string, a ...any) {
		where = append(where, cond)
		args = append(args, a...)
	}
	if q.UserID != "" {
		add("user_id = ?", q.UserID)
	}
	if q.Agent != "" {
		add("agent = ?", q.Agent)
	}
	if q.ParentID != "" {
		add("parent_id = ?", q.ParentID)
	} else if q.RootsOnly {
		add("parent_id IS NULL")
	}
	if q.Status != "" {
		add("status = ?", string(q.Status))
	}
	if q.Queued {
		add("EXISTS (SELECT 1 FROM queue WHERE queue.thread_id = threads.id)")
	}
	if q.Tag != "" {
		add("EXISTS (SELECT 1 FROM json_each(threads.tags) WHERE value = ?)", q.Tag)
	}
	if q.Search != "" {
		s := storecontract.ASCIILower(q.Search)
		add("(instr(lower(label), ?) > 0 OR instr(lower(preview), ?) > 0 OR instr(lower(agent), ?) > 0)", s, s, s)
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	var total int
	if err := s.row(ctx, "SELECT COUNT(*) FROM threads"+cond, []any{&total}, args...); err != nil {
		return nil, 0, fmt.Errorf("sqlite: list threads: %w", err)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.query(ctx, "SELECT doc FROM threads"+cond+" ORDER BY "+order+" LIMIT ? OFFSET ?",
		append(args, limit, max(q.Offset, 0))...)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: list threads: %w", err)
	}
	defer rows.Close()
	var out []*weft.Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, t)
	}
	return out, total, rows.Err()
}

// DeleteThread deletes a thread, its descendants and all their rows and env values.
func (s *Store) DeleteThread(ctx context.Context, id string) error {
	return s.write(ctx, func(w *writer) error {
		_, err := w.exec(ctx, `WITH RECURSIVE sub(id) AS (
				SELECT id FROM threads WHERE id = ?1
				UNION ALL SELECT t.id FROM threads t JOIN sub ON t.parent_id = sub.id)
			DELETE FROM env WHERE scope = 'thread' AND owner IN (SELECT id FROM sub)`, id)
		if err != nil {
			return fmt.Errorf("sqlite: delete thread %s: %w", id, err)
		}
		n, err := w.execN(ctx, `DELETE FROM threads WHERE id = ?`, id) // cascades to rows and descendants
		if err != nil {
			return fmt.Errorf("sqlite: delete thread %s: %w", id, err)
		}
		if n == 0 {
			return fmt.Errorf("thread %s: %w", id, weft.ErrNotFound)
		}
		return nil
	})
}

// --- messages ---

const msgWhere = ` FROM messages WHERE thread_id = ?1 AND seq > ?2 AND depth <= ?3 AND (?4 = 0 OR silent = 0)
	AND (?5 = '' OR instr(?5, ',' || role || ',') > 0)`

const (
	qMessagesAsc  = `SELECT doc` + msgWhere + ` ORDER BY seq LIMIT ?6 OFFSET ?7`
	qMessagesDesc = `SELECT doc` + msgWhere + ` ORDER BY seq DESC LIMIT ?6 OFFSET ?7`
	qMessage      = `SELECT doc FROM messages WHERE thread_id = ? AND id = ?`
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
	roles := ""
	if len(q.Roles) > 0 {
		var b strings.Builder
		b.WriteByte(',')
		for _, r := range q.Roles {
			b.WriteString(string(r))
			b.WriteByte(',')
		}
		roles = b.String()
	}
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

// --- tool calls, exec state, queue ---

// ToolCalls lists a thread's tool calls with one of the given statuses (all when none), by seq.
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
	rows, err := s.query(ctx, `SELECT call_id, seq, status, doc FROM tool_calls
		WHERE thread_id = ?1 AND (?2 = '' OR instr(?2, ',' || status || ',') > 0) ORDER BY seq`, threadID, sts)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: tool calls: %w", threadID, err)
	}
	defer rows.Close()
	var out []weft.ToolCallRecord
	for rows.Next() {
		c := weft.ToolCallRecord{ThreadID: threadID}
		var doc string
		err := rows.Scan(&c.CallID, &c.Seq, &c.Status, &doc)
		if err == nil {
			err = decodeCall(doc, &c)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: tool calls: %w", threadID, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ExecState returns the thread's run-state documents by key.
func (s *Store) ExecState(ctx context.Context, threadID string) (map[string]json.RawMessage, error) {
	var framed string
	if err := s.row(ctx, qRunState, []any{&framed}, threadID); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: thread %s: exec state: %w", threadID, err)
	}
	out, err := decodeRunState(framed)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: exec state: %w", threadID, err)
	}
	return out, nil
}

func (s *Store) jsonMap(ctx context.Context, q, threadID, what string) (map[string]json.RawMessage, error) {
	rows, err := s.query(ctx, q, threadID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: %s: %w", threadID, what, err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: %s: %w", threadID, what, err)
		}
		out[k] = json.RawMessage(v)
	}
	return out, rows.Err()
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
	var md []byte
	if q.Metadata != nil {
		var err error
		if md, err = marshal(q.Metadata); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: queued message metadata: %v", q.ThreadID, err)
		}
	}
	storecontract.PrepareQueued(q, s.now)
	return s.write(ctx, func(w *writer) error {
		var seq int64
		var status string
		if err := w.row(ctx, `UPDATE threads SET queue_seq = queue_seq + 1 WHERE id = ? RETURNING queue_seq, status`, []any{&seq, &status}, q.ThreadID); err != nil {
			return s.noThread(q.ThreadID, err)
		}
		if weft.ThreadStatus(status) == weft.ThreadTerminated {
			return fmt.Errorf("thread %s: %w", q.ThreadID, weft.ErrTerminated) // the write rolls back
		}
		q.Seq = seq
		if _, err := w.exec(ctx, `INSERT INTO queue (thread_id, seq, doc) VALUES (?, ?, ?)`, q.ThreadID, seq, queueDoc(q, md)); err != nil {
			q.Seq = 0
			return fmt.Errorf("sqlite: thread %s: push queue: %w", q.ThreadID, err)
		}
		return nil
	})
}

// --- logs and kv ---

func scanLog(sc scanner, threadID string, bodies bool) (weft.LogEntry, error) {
	l := weft.LogEntry{ThreadID: threadID}
	var doc, req, resp string
	dest := []any{&l.ID, &doc}
	if bodies {
		dest = append(dest, &req, &resp)
	}
	if err := sc.Scan(dest...); err != nil {
		return l, err
	}
	if err := decodeLog(doc, &l); err != nil {
		return l, fmt.Errorf("log %s: %w", l.ID, err)
	}
	if req != "" {
		l.RequestBody = json.RawMessage(req)
	}
	if resp != "" {
		l.ResponseBody = json.RawMessage(resp)
	}
	return l, nil
}

// Logs lists a thread's log rows in creation order, without request and response bodies (Limit 0
// means no limit).
func (s *Store) Logs(ctx context.Context, threadID string, q weft.LogQuery) ([]weft.LogEntry, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.query(ctx, `SELECT id, doc FROM logs WHERE thread_id = ? AND depth <= ? ORDER BY n LIMIT ? OFFSET ?`,
		threadID, q.MaxDepth, limit, max(q.Offset, 0))
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: logs: %w", threadID, err)
	}
	defer rows.Close()
	var out []weft.LogEntry
	for rows.Next() {
		l, err := scanLog(rows, threadID, false)
		if err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: %w", threadID, err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// Log returns one log row with its bodies, or ErrNotFound.
func (s *Store) Log(ctx context.Context, threadID, id string) (weft.LogEntry, error) {
	row, err := s.rowOf(ctx, `SELECT id, doc, request_body, response_body FROM logs WHERE thread_id = ? AND id = ?`, threadID, id)
	if err != nil {
		return weft.LogEntry{}, err
	}
	l, err := scanLog(row, threadID, true)
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("thread %s: log %s: %w", threadID, id, weft.ErrNotFound)
	}
	if err != nil {
		return l, fmt.Errorf("sqlite: thread %s: log %s: %w", threadID, id, err)
	}
	return l, nil
}

// GetKV returns a thread's KV value; found is false when absent.
func (s *Store) GetKV(ctx context.Context, threadID, key string) (json.RawMessage, bool, error) {
	var v string
	err := s.row(ctx, `SELECT value FROM kv WHERE thread_id = ? AND key = ?`, []any{&v}, threadID, key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: thread %s: kv %s: %w", threadID, key, err)
	}
	return json.RawMessage(v), true, nil
}

// ListKV returns all of a thread's KV values by key.
func (s *Store) ListKV(ctx context.Context, threadID string) (map[string]json.RawMessage, error) {
	return s.jsonMap(ctx, `SELECT key, value FROM kv WHERE thread_id = ?`, threadID, "kv")
}

// Events returns the thread's events after a seq, in order.
func (s *Store) Events(ctx context.Context, threadID string, after int64, limit int) ([]weft.EventRecord, error) {
	if limit <= 0 {
		limit = 1000
	}
	var one int
	if err := s.row(ctx, qThreadExists, []any{&one}, threadID); err != nil {
		return nil, s.noThread(threadID, err)
	}
	rows, err := s.query(ctx, `SELECT seq, type, data, created_at FROM events WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
		threadID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: events: %w", threadID, err)
	}
	defer rows.Close()
	out := []weft.EventRecord{}
	for rows.Next() {
		e := weft.EventRecord{ThreadID: threadID}
		var data []byte
		var at int64
		if err := rows.Scan(&e.Seq, &e.Type, &data, &at); err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: events: %w", threadID, err)
		}
		e.Data, e.CreatedAt = data, fromNanos(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// --- env ---

// Env returns the decrypted values of one scope and owner, sorted by name. A value sealed with
// another key than the store's fails with an error naming both key ids.
func (s *Store) Env(ctx context.Context, scope weft.EnvScope, owner string) ([]weft.EnvValue, error) {
	rows, err := s.query(ctx, `SELECT doc FROM env WHERE scope = ? AND owner = ? ORDER BY name`, string(scope), owner)
	if err != nil {
		return nil, fmt.Errorf("sqlite: env %s %s: %w", scope, owner, err)
	}
	defer rows.Close()
	out := []weft.EnvValue{}
	for rows.Next() {
		var doc string
		if err := rows.Scan(&doc); err != nil {
			return nil, fmt.Errorf("sqlite: env %s %s: %w", scope, owner, err)
		}
		v, err := s.openEnv(scope, owner, doc)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// openEnv decodes and decrypts a stored value. A value sealed with another key than the store's
// fails with an error naming both key ids.
func (s *Store) openEnv(scope weft.EnvScope, owner, doc string) (weft.EnvValue, error) {
	e, err := decodeEnv(doc)
	if err != nil {
		return weft.EnvValue{}, fmt.Errorf("sqlite: env %s %s: variable %s: %w", scope, owner, e.name, err)
	}
	if e.keyID != s.cipher.KeyID() {
		return weft.EnvValue{}, fmt.Errorf("env %s %s: variable %s was encrypted with key %s, current key is %s", scope, owner, e.name, e.keyID, s.cipher.KeyID())
	}
	p, err := s.cipher.Open([]byte(e.sealed))
	if err != nil {
		return weft.EnvValue{}, fmt.Errorf("env %s %s: variable %s: %w", scope, owner, e.name, err)
	}
	return weft.EnvValue{Name: e.name, Value: string(p), Type: e.typ, UpdatedAt: e.updated}, nil
}

// SetEnv stores (encrypted) or, with Delete, removes env values of one scope and owner, atomically.
// An empty Type is stored as secret.
func (s *Store) SetEnv(ctx context.Context, scope weft.EnvScope, owner string, values []weft.EnvValue) error {
	for _, v := range values {
		if _, err := storecontract.CheckEnvValue(scope, owner, v); err != nil {
			return err
		}
	}
	return s.write(ctx, func(w *writer) error { return s.setEnv(ctx, w, scope, owner, values, s.now()) })
}

// setEnv writes checked values inside a write transaction.
func (s *Store) setEnv(ctx context.Context, w *writer, scope weft.EnvScope, owner string, values []weft.EnvValue, now time.Time) error {
	for _, v := range values {
		var err error
		if v.Delete {
			_, err = w.exec(ctx, `DELETE FROM env WHERE scope = ? AND owner = ? AND name = ?`, string(scope), owner, v.Name)
		} else {
			typ, _ := storecontract.CheckEnvValue(scope, owner, v)
			_, err = w.exec(ctx, `INSERT INTO env (scope, owner, name, doc) VALUES (?, ?, ?, ?)
				ON CONFLICT (scope, owner, name) DO UPDATE SET doc = excluded.doc`,
				string(scope), owner, v.Name, envDoc(v.Name, s.cipher.Seal([]byte(v.Value)), s.cipher.KeyID(), typ, now))
		}
		if err != nil {
			return fmt.Errorf("sqlite: env %s %s: variable %s: %w", scope, owner, v.Name, err)
		}
	}
	return nil
}
