package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// decodeMessage reads a message doc; the row's thread and seq are authoritative.
func decodeMessage(doc []byte, threadID string, seq int64) (weft.Message, error) {
	var m weft.Message
	if err := json.Unmarshal(doc, &m); err != nil {
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

// collect scans rows of one json column with a seq into values.
func collect[T any](rows pgx.Rows, what string, dec func(doc []byte, seq int64) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		var doc []byte
		var seq int64
		if err := rows.Scan(&doc, &seq); err != nil {
			return nil, pgErr(what, err)
		}
		v, err := dec(doc, seq)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, pgErr(what, rows.Err())
}

// Messages lists a thread's messages ordered by seq (see weft.MessageQuery; Limit 0 means 100 and a
// negative Limit no limit). An unknown thread has no messages.
func (s *Store) Messages(ctx context.Context, threadID string, q weft.MessageQuery) ([]weft.Message, error) {
	args := []any{threadID, q.AfterSeq, q.MaxDepth}
	sql := "SELECT doc, seq FROM messages WHERE thread_id = $1 AND seq > $2 AND depth <= $3"
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

// ExecState returns the thread's run-state documents by key.
func (s *Store) ExecState(ctx context.Context, threadID string) (map[string]json.RawMessage, error) {
	return s.jsonMap(ctx, "SELECT key, value FROM exec_state WHERE thread_id = $1", threadID, "run state")
}

// jsonMap reads key/value rows of one thread.
func (s *Store) jsonMap(ctx context.Context, sql, threadID, what string) (map[string]json.RawMessage, error) {
	rows, err := s.pool.Query(ctx, sql, threadID)
	if err != nil {
		return nil, pgErr("thread "+threadID+": "+what, err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, pgErr("thread "+threadID+": "+what, err)
		}
		out[k] = v
	}
	return out, pgErr("thread "+threadID+": "+what, rows.Err())
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
// taken under its row lock, and a terminated (or missing) thread inserts nothing. The insert
// notifies the processes that serve the store, which may take the thread.
const qPushQueue = `WITH t AS (
	UPDATE threads SET queue_seq = queue_seq + 1 WHERE id = $1 AND status <> 'terminated' RETURNING queue_seq),
	i AS (INSERT INTO queue (thread_id, seq, doc) SELECT $1, queue_seq, $2 FROM t RETURNING seq)
	SELECT seq FROM i, LATERAL (SELECT pg_notify('` + channelQueue + `', $1)) n`

// PushQueue queues a message, assigning ID (when empty), ThreadID, Seq and CreatedAt (when zero);
// Role defaults to user. A terminated thread refuses it (ErrTerminated).
func (s *Store) PushQueue(ctx context.Context, q *weft.QueuedMessage) error {
	storecontract.PrepareQueued(q, s.nowUTC)
	doc, err := encodeQueued(q)
	if err != nil {
		return err
	}
	err = s.pool.QueryRow(ctx, qPushQueue, q.ThreadID, doc).Scan(&q.Seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.pushRefused(ctx, q.ThreadID)
	}
	return pgErr("thread "+q.ThreadID+": queue", err)
}

// pushRefused says why a queue push inserted nothing: the thread is terminated or missing.
func (s *Store) pushRefused(ctx context.Context, threadID string) error {
	var status string
	err := s.pool.QueryRow(ctx, "SELECT status FROM threads WHERE id = $1", threadID).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return threadNotFound(threadID)
	}
	if err != nil {
		return pgErr("thread "+threadID+": queue", err)
	}
	return fmt.Errorf("thread %s: %w", threadID, weft.ErrTerminated)
}

// decodeLog reads a log doc; bodies come from their own columns.
func decodeLog(doc []byte, threadID string) (weft.LogEntry, error) {
	var l weft.LogEntry
	if err := json.Unmarshal(doc, &l); err != nil {
		return l, fmt.Errorf("postgres: thread %s: log: %w", threadID, err)
	}
	l.ThreadID = threadID
	l.CreatedAt = l.CreatedAt.UTC()
	return l, nil
}

// Logs lists a thread's log rows in creation order, without request and response bodies (Limit 0
// means no limit).
func (s *Store) Logs(ctx context.Context, threadID string, q weft.LogQuery) ([]weft.LogEntry, error) {
	sql := "SELECT doc, n FROM logs WHERE thread_id = $1 AND depth <= $2 ORDER BY n"
	if q.Limit > 0 {
		sql += " LIMIT " + strconv.Itoa(q.Limit)
	}
	if q.Offset > 0 {
		sql += " OFFSET " + strconv.Itoa(q.Offset)
	}
	rows, err := s.pool.Query(ctx, sql, threadID, q.MaxDepth)
	if err != nil {
		return nil, pgErr("thread "+threadID+": logs", err)
	}
	return collect(rows, "thread "+threadID+": logs", func(doc []byte, _ int64) (weft.LogEntry, error) {
		return decodeLog(doc, threadID)
	})
}

// Log returns one log row with its bodies, or ErrNotFound.
func (s *Store) Log(ctx context.Context, threadID, id string) (weft.LogEntry, error) {
	var doc, req, resp []byte
	err := s.pool.QueryRow(ctx, "SELECT doc, request_body, response_body FROM logs WHERE thread_id = $1 AND id = $2",
		threadID, id).Scan(&doc, &req, &resp)
	if errors.Is(err, pgx.ErrNoRows) {
		return weft.LogEntry{}, fmt.Errorf("thread %s: log %s: %w", threadID, id, weft.ErrNotFound)
	}
	if err != nil {
		return weft.LogEntry{}, pgErr("thread "+threadID+": log "+id, err)
	}
	l, err := decodeLog(doc, threadID)
	if len(req) > 0 {
		l.RequestBody = req
	}
	if len(resp) > 0 {
		l.ResponseBody = resp
	}
	return l, err
}

// GetKV returns a thread's KV value; found is false when absent.
func (s *Store) GetKV(ctx context.Context, threadID, key string) (json.RawMessage, bool, error) {
	var v []byte
	err := s.pool.QueryRow(ctx, "SELECT value FROM kv WHERE thread_id = $1 AND key = $2", threadID, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, pgErr("thread "+threadID+": kv", err)
	}
	return v, true, nil
}

// ListKV returns all of a thread's KV values by key.
func (s *Store) ListKV(ctx context.Context, threadID string) (map[string]json.RawMessage, error) {
	return s.jsonMap(ctx, "SELECT key, value FROM kv WHERE thread_id = $1", threadID, "kv")
}

// Events returns the thread's events after a seq, in order (at most limit, 1,000 when limit ≤ 0).
// An unknown thread is ErrNotFound.
func (s *Store) Events(ctx context.Context, threadID string, after int64, limit int) ([]weft.EventRecord, error) {
	if limit <= 0 {
		limit = 1000
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, type, data, created_at FROM events
		WHERE thread_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, threadID, after, limit)
	if err != nil {
		return nil, pgErr("thread "+threadID+": events", err)
	}
	defer rows.Close()
	out := []weft.EventRecord{}
	for rows.Next() {
		e := weft.EventRecord{ThreadID: threadID}
		var at int64
		var data []byte
		if err := rows.Scan(&e.Seq, &e.Type, &data, &at); err != nil {
			return nil, pgErr("thread "+threadID+": events", err)
		}
		e.Data, e.CreatedAt = data, fromNanos(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, pgErr("thread "+threadID+": events", err)
	}
	if len(out) == 0 {
		var one int
		err := s.pool.QueryRow(ctx, "SELECT 1 FROM threads WHERE id = $1", threadID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, threadNotFound(threadID)
		}
		if err != nil {
			return nil, pgErr("thread "+threadID+": events", err)
		}
	}
	return out, nil
}
