package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/sqlstore"
	"github.com/weft-agents/weft/internal/storecontract"
)

// Log and event write statements. hotWrites lists those prepared at Open.
const (
	// A log row is inserted unless one with its id exists (tx.replaceLog replaces it, keeping its
	// n). The request body is stored as the bytes shared with request_base's and the rest
	// (bodies.go).
	qPutLog = `INSERT INTO logs (thread_num, id, n, depth, doc, request_base, request_prefix, request_body, response_body)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (thread_num, id) DO NOTHING`
	// A row of events holds one (type is its type) or several, packed (type is NULL; data is
	// eventsDoc's, seq the last one's).
	qEventSeq   = `SELECT COALESCE(MAX(seq), 0) FROM events WHERE thread_num = ?`
	qAddEvent   = `INSERT INTO events (thread_num, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?)`
	qPruneEvent = `DELETE FROM events WHERE thread_num = ? AND seq <= ?`
	// Each row holds at least one event after the seq: limit rows hold all that is asked for.
	qEvents = `SELECT seq, type, data, created_at FROM events WHERE thread_num = ` + numOf1 + ` AND seq > ?2 ORDER BY seq LIMIT ?3`
	// qLastEventSeq is a thread's newest event's seq; qLastEvents its rows after a seq, newest
	// first, with the data of packed rows and of rows of the types ?3 lists (",a,b,"), NULL for
	// the others' (a big event has a row of its own: AppendEvents).
	qLastEventSeq = `SELECT COALESCE(MAX(seq), 0) FROM events WHERE thread_num = ` + numOf1
	qLastEvents   = `SELECT seq, type, CASE WHEN type IS NULL OR instr(?3, ',' || type || ',') > 0 THEN data END, created_at
		FROM events WHERE thread_num = ` + numOf1 + ` AND seq > ?2 ORDER BY seq DESC`
)

func scanLog(sc scanner, threadID string) (weft.LogEntry, error) {
	l := weft.LogEntry{ThreadID: threadID}
	var doc string
	if err := sc.Scan(&l.ID, &doc); err != nil {
		return l, err
	}
	if err := decodeLog(doc, &l); err != nil {
		return l, fmt.Errorf("log %s: %w", l.ID, err)
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
	after := int64(-1) // n counts from 1
	if q.AfterID != "" {
		if err := s.row(ctx, `SELECT n FROM logs WHERE thread_num = `+numOf1+` AND id = ?2`, []any{&after}, threadID, q.AfterID); errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("thread %s: log %s: %w", threadID, q.AfterID, weft.ErrNotFound)
		} else if err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: logs: %w", threadID, err)
		}
	}
	// Nothing indexes n, so every listing sorts the thread's rows; with AfterID it sorts only the
	// rows after that one.
	rows, err := s.query(ctx, `SELECT id, doc FROM logs WHERE thread_num = `+numOf1+` AND depth <= ?2 AND n > ?3 ORDER BY n LIMIT ?4 OFFSET ?5`,
		threadID, q.MaxDepth, after, limit, max(q.Offset, 0))
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: logs: %w", threadID, err)
	}
	defer rows.Close()
	var out []weft.LogEntry
	for rows.Next() {
		l, err := scanLog(rows, threadID)
		if err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: %w", threadID, err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// Log returns one log row with its bodies, or ErrNotFound.
func (s *Store) Log(ctx context.Context, threadID, id string) (weft.LogEntry, error) {
	l := weft.LogEntry{ThreadID: threadID}
	var doc, base, req, resp string
	var num int64
	err := s.row(ctx, `SELECT thread_num, id, doc, request_base, request_body, response_body FROM logs WHERE thread_num = `+numOf1+` AND id = ?2`,
		[]any{&num, &l.ID, &doc, &base, &req, &resp}, threadID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("thread %s: log %s: %w", threadID, id, weft.ErrNotFound)
	}
	if err == nil {
		if err = decodeLog(doc, &l); err != nil {
			err = fmt.Errorf("log %s: %w", id, err)
		}
	}
	if err == nil && base != "" {
		// The body is read again with its bases, in one statement: should the row have been
		// stored whole since (its base replaced), the chain starts from what it is now.
		var rows *sql.Rows
		if rows, err = s.query(ctx, qBodyChain, num, id); err == nil {
			req, _, err = readBody(rows, id)
		}
	}
	if err != nil {
		return l, fmt.Errorf("sqlite: thread %s: %w", threadID, err)
	}
	if req != "" {
		l.RequestBody = json.RawMessage(req)
	}
	if resp != "" {
		l.ResponseBody = json.RawMessage(resp)
	}
	return l, nil
}

// readBody rebuilds a request body from qBodyChain's rows, which it closes, and returns how many
// bases it is stored on.
func readBody(rows *sql.Rows, log string) (string, int, error) {
	defer rows.Close()
	var links []storecontract.BodyLink
	for rows.Next() {
		var k storecontract.BodyLink
		if err := rows.Scan(&k.Base, &k.Shared, &k.Rest); err != nil {
			return "", 0, err
		}
		links = append(links, k)
	}
	if err := rows.Err(); err != nil {
		return "", 0, err
	}
	body, err := storecontract.JoinBody(log, links)
	return body, len(links) - 1, err
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
	rows, err := s.query(ctx, qEvents, threadID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: events: %w", threadID, err)
	}
	defer rows.Close()
	out := []weft.EventRecord{}
	for rows.Next() && len(out) < limit {
		var seq, at int64
		var typ sql.NullString
		var data []byte
		if err := rows.Scan(&seq, &typ, &data, &at); err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: events: %w", threadID, err)
		}
		if typ.Valid {
			out = append(out, weft.EventRecord{ThreadID: threadID, Seq: seq, Type: typ.String, Data: data, CreatedAt: fromNanos(at)})
			continue
		}
		from := len(out)
		if out, err = decodeEvents(string(data), seq, threadID, out); err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: events up to %d: %w", threadID, seq, err)
		}
		// The row's first events may be at or before the seq asked after.
		skip := 0
		for from+skip < len(out) && out[from+skip].Seq <= after {
			skip++
		}
		out = append(out[:from], out[from+skip:]...)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: events: %w", threadID, err)
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// LastEvents returns the thread's newest seq and the newest event of each of types among its
// within newest, reading the data of packed rows (small events) and of the rows of those types.
func (s *Store) LastEvents(ctx context.Context, threadID string, within int64, types ...string) (int64, []weft.EventRecord, error) {
	var last int64
	if err := s.row(ctx, qLastEventSeq, []any{&last}, threadID); err != nil {
		return 0, nil, fmt.Errorf("sqlite: thread %s: last events: %w", threadID, err)
	}
	if last == 0 {
		var one int
		if err := s.row(ctx, qThreadExists, []any{&one}, threadID); err != nil {
			return 0, nil, s.noThread(threadID, err)
		}
		return 0, nil, nil
	}
	if len(types) == 0 {
		return last, nil, nil
	}
	rows, err := s.query(ctx, qLastEvents, threadID, last-within, ","+strings.Join(types, ",")+",")
	if err != nil {
		return 0, nil, fmt.Errorf("sqlite: thread %s: last events: %w", threadID, err)
	}
	defer rows.Close()
	var out, packed []weft.EventRecord
	for len(out) < len(types) && rows.Next() {
		var seq, at int64
		var typ sql.NullString
		var data []byte
		if err := rows.Scan(&seq, &typ, &data, &at); err != nil {
			return 0, nil, fmt.Errorf("sqlite: thread %s: last events: %w", threadID, err)
		}
		evs := []weft.EventRecord{{ThreadID: threadID, Seq: seq, Type: typ.String, Data: data, CreatedAt: fromNanos(at)}}
		if !typ.Valid {
			if packed, err = decodeEvents(string(data), seq, threadID, packed[:0]); err != nil {
				return 0, nil, fmt.Errorf("sqlite: thread %s: events up to %d: %w", threadID, seq, err)
			}
			evs = packed
		}
		for i := len(evs) - 1; i >= 0 && evs[i].Seq > last-within; i-- {
			e := evs[i]
			if slices.Contains(types, e.Type) && !slices.ContainsFunc(out, func(o weft.EventRecord) bool { return o.Type == e.Type }) {
				out = append(out, e)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("sqlite: thread %s: last events: %w", threadID, err)
	}
	slices.Reverse(out)
	return last, out, nil
}

// PutLog inserts or replaces a log row (keyed by id; a replaced row keeps its place), assigning ID
// (when empty), ThreadID and CreatedAt (when zero). Bodies are stored unchecked; the request body
// as what it shares with one of the thread's last ones and the rest (bodies.go).
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
	body := bodyString(l.RequestBody)
	kept := sqlstore.KeptBody{ID: l.ID, Body: body}
	base, shared := "", 0
	if body != "" && !t.w.rows.bodies.Has(t.id) {
		if err := t.keepLastBody(); err != nil {
			return t.fail("last request body", err)
		}
	}
	if b, n, ok := t.w.rows.bodies.Base(t.id, body); ok && b.ID != l.ID {
		base, shared, kept.Chain = b.ID, n, b.Chain+1
		if verifyHistory {
			if err := t.checkBody(b); err != nil {
				return err
			}
		}
	}
	// A replaced row keeps its n; the number proposed is then unused, a harmless gap.
	n := t.logSeq + 1
	doc := logDoc(l, created)
	res, err := t.w.exec(t.ctx, qPutLog, t.numArg, l.ID, n, l.Depth, doc, base, shared, body[shared:], bodyString(l.ResponseBody))
	if err != nil {
		return t.fail("put log "+l.ID, err)
	}
	if added, err := res.RowsAffected(); err != nil || added == 0 {
		if err := t.replaceLog(l, doc, body); err != nil {
			return t.fail("replace log "+l.ID, err)
		}
		kept.Chain = 0
	}
	if body != "" {
		t.w.rows.bodies.Add(t.id, kept)
	}
	t.logSeq, t.seqsDirty = n, true
	l.ThreadID, l.CreatedAt = t.id, created.UTC()
	return nil
}

// bodyString is a log's request or response body as a string: a large one (bigDoc or more) is
// the caller's bytes, which LogTx.PutLog may keep (a copy of a 20 MiB request is 20 MiB more of
// the peak a large message costs); a short one is copied, so that a short body kept by the last
// bodies does not hold a larger buffer it lies in.
func bodyString(b []byte) string {
	if len(b) >= bigDoc {
		return docString(b)
	}
	return string(b)
}

// qLastLog finds the thread's newest log (reading each of the thread's rows up to n, before the
// bodies, so no overflow page).
const qLastLog = `SELECT id FROM logs WHERE thread_num = ? ORDER BY n DESC LIMIT 1`

// keepLastBody keeps the request body of the thread's newest log, read back, when the writer
// keeps none of the thread's bodies (after a restart, or evicted): otherwise a long thread's next
// body would be stored whole, as long as the conversation.
func (t *tx) keepLastBody() error {
	var id string
	if err := t.w.row(t.ctx, qLastLog, []any{&id}, t.numArg); errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	rows, err := t.w.query(t.ctx, qBodyChain, t.numArg, id)
	if err != nil {
		return err
	}
	body, bases, err := readBody(rows, id)
	if err != nil {
		return err
	}
	if body != "" {
		t.w.rows.bodies.Add(t.id, sqlstore.KeptBody{ID: id, Body: body, Chain: bases})
	}
	return nil
}

// checkBody compares a kept body with the database's (verifyHistory).
func (t *tx) checkBody(k sqlstore.KeptBody) error {
	rows, err := t.w.query(t.ctx, qBodyChain, t.numArg, k.ID)
	if err != nil {
		return t.fail("check kept body", err)
	}
	stored, bases, err := readBody(rows, k.ID)
	if err != nil {
		return t.fail("check kept body", err)
	}
	if stored != k.Body || bases > k.Chain {
		return fmt.Errorf("sqlite: thread %s: kept request body of log %s differs from the database's (%d bytes, %d bases, kept %d bytes, %d)",
			t.id, k.ID, len(stored), bases, len(k.Body), k.Chain)
	}
	return nil
}

// replaceLog replaces an existing log row, its request body stored whole. The rows whose request
// body is stored on this row's are first stored whole too, so that none of them changes.
func (t *tx) replaceLog(l *weft.LogEntry, doc []byte, body string) error {
	t.w.rows.bodies.Drop(t.id) // the kept chain lengths may change
	rows, err := t.w.query(t.ctx, `SELECT id FROM logs WHERE thread_num = ? AND request_base = ?`, t.numArg, l.ID)
	if err != nil {
		return err
	}
	var deps []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		deps = append(deps, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range deps {
		chain, err := t.w.query(t.ctx, qBodyChain, t.numArg, id)
		if err != nil {
			return err
		}
		whole, _, err := readBody(chain, id)
		if err != nil {
			return err
		}
		if _, err := t.w.exec(t.ctx, `UPDATE logs SET request_base = '', request_prefix = 0, request_body = ? WHERE thread_num = ? AND id = ?`,
			whole, t.numArg, id); err != nil {
			return err
		}
	}
	_, err = t.w.exec(t.ctx, `UPDATE logs SET depth = ?, doc = ?, request_base = '', request_prefix = 0, request_body = ?, response_body = ?
		WHERE thread_num = ? AND id = ?`, l.Depth, doc, body, string(l.ResponseBody), t.numArg, l.ID)
	return err
}

// bigEvent is the size of payload from which an event has a row of its own (a message of a few
// megabytes): packed with the others, its payload would be copied into their doc, and a reader
// looking only for their types (LastEvents) would read it.
const bigEvent = 16 << 10

// AppendEvents numbers the events after the thread's last one and inserts them in one row: a lone
// event as itself, several packed (eventsDoc), so that a transaction's events cost one insert;
// each event of bigEvent bytes or more goes in a row of its own, between the others'. An insert
// that passes a multiple of 1,024 prunes the rows beyond weft.EventWindow.
func (t *tx) AppendEvents(evs []weft.EventRecord) error {
	if len(evs) == 0 {
		return nil
	}
	if t.eventSeq < 0 {
		t.w.rows.eventSeqReads++
		if err := t.w.row(t.ctx, qEventSeq, []any{&t.eventSeq}, t.numArg); err != nil {
			return t.fail("event seq", err)
		}
	}
	first := t.eventSeq + 1
	for i := range evs {
		e := &evs[i]
		t.eventSeq++
		e.ThreadID, e.Seq = t.id, t.eventSeq
		if e.CreatedAt.IsZero() {
			e.CreatedAt = t.clock()
		}
		if len(e.Data) == 0 {
			e.Data = json.RawMessage("null")
		}
	}
	for from := 0; from < len(evs); {
		// The events up to the next big one, or the big one alone, make a row.
		to := from + 1
		if len(evs[from].Data) < bigEvent {
			for to < len(evs) && len(evs[to].Data) < bigEvent {
				to++
			}
		}
		if err := t.insertEvents(evs[from:to]); err != nil {
			return t.fail("event", err)
		}
		from = to
	}
	last := &evs[len(evs)-1]
	if last.Seq > weft.EventWindow && (first-1)/1024 != last.Seq/1024 {
		if _, err := t.w.exec(t.ctx, qPruneEvent, t.numArg, last.Seq-weft.EventWindow); err != nil {
			return t.fail("prune events", err)
		}
	}
	return nil
}

// insertEvents inserts numbered events as one row: a lone one as itself, several packed.
func (t *tx) insertEvents(evs []weft.EventRecord) error {
	last := &evs[len(evs)-1]
	if len(evs) == 1 && last.Type != "" {
		_, err := t.w.exec(t.ctx, qAddEvent, t.numArg, last.Seq, last.Type, []byte(last.Data), nanos(last.CreatedAt))
		return err
	}
	_, err := t.w.exec(t.ctx, qAddEvent, t.numArg, last.Seq, nil, eventsDoc(evs), nanos(last.CreatedAt))
	return err
}
