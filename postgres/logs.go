package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

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

// qPutLog inserts or replaces a log row: a new one takes the number after the thread's last (its
// creation order; one index seek, under the thread's row lock), a replaced one keeps its place.
const qPutLog = `INSERT INTO logs (thread_id, id, n, depth, doc, request_body, response_body)
	VALUES ($1, $2, (SELECT COALESCE(MAX(n), 0) + 1 FROM logs WHERE thread_id = $1), $3, $4, $5, $6)
	ON CONFLICT (thread_id, id) DO UPDATE SET depth = excluded.depth, doc = excluded.doc,
	request_body = excluded.request_body, response_body = excluded.response_body`

// PutLog inserts or replaces a log row (keyed by id; a replaced row keeps its place), assigning ID
// (when empty), ThreadID and CreatedAt (when zero). Bodies are stored verbatim.
func (t *tx) PutLog(l *weft.LogEntry) error {
	storecontract.PrepareLog(l, t.id, t.clock)
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
