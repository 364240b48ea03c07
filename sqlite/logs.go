package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weft-agents/weft"
)

// Log and event write statements. hotWrites lists those prepared at Open.
const (
	// A replaced log row keeps its n (its place in the listing).
	qPutLog = `INSERT INTO logs (thread_id, id, n, depth, doc, request_body, response_body) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (thread_id, id) DO UPDATE SET depth = excluded.depth, doc = excluded.doc,
		request_body = excluded.request_body, response_body = excluded.response_body`
	qEventSeq   = `SELECT COALESCE(MAX(seq), 0) FROM events WHERE thread_id = ?`
	qAddEvent   = `INSERT INTO events (thread_id, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?)`
	qPruneEvent = `DELETE FROM events WHERE thread_id = ? AND seq <= ?`
)

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
	if err := t.readSeqs(); err != nil {
		return err
	}
	// A replaced row keeps its n; the number proposed is then unused, a harmless gap.
	n := t.logSeq + 1
	_, err := t.w.exec(t.ctx, qPutLog, t.id, l.ID, n, l.Depth, logDoc(l, created), string(l.RequestBody), string(l.ResponseBody))
	if err != nil {
		return t.fail("put log "+l.ID, err)
	}
	t.logSeq, t.seqsDirty = n, true
	l.ThreadID, l.CreatedAt = t.id, created.UTC()
	return nil
}

// AppendEvents numbers and inserts events after the thread's last one; every 1,024th event prunes
// those beyond weft.EventWindow.
func (t *tx) AppendEvents(evs []weft.EventRecord) error {
	if len(evs) == 0 {
		return nil
	}
	if t.eventSeq < 0 {
		if err := t.w.row(t.ctx, qEventSeq, []any{&t.eventSeq}, t.id); err != nil {
			return t.fail("event seq", err)
		}
	}
	for i := range evs {
		e := &evs[i]
		t.eventSeq++
		e.ThreadID, e.Seq = t.id, t.eventSeq
		if e.CreatedAt.IsZero() {
			e.CreatedAt = t.clock()
		}
		data := e.Data
		if data == nil {
			data = json.RawMessage("null")
		}
		if _, err := t.w.exec(t.ctx, qAddEvent, t.id, e.Seq, e.Type, []byte(data), nanos(e.CreatedAt)); err != nil {
			return t.fail("event", err)
		}
		if e.Seq%1024 == 0 && e.Seq > weft.EventWindow {
			if _, err := t.w.exec(t.ctx, qPruneEvent, t.id, e.Seq-weft.EventWindow); err != nil {
				return t.fail("prune events", err)
			}
		}
	}
	return nil
}
