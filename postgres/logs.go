package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/sqlstore"
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
	after := int64(-1) // n counts from 1
	if q.AfterID != "" {
		err := s.pool.QueryRow(ctx, "SELECT n FROM logs WHERE thread_id = $1 AND id = $2", threadID, q.AfterID).Scan(&after)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("thread %s: log %s: %w", threadID, q.AfterID, weft.ErrNotFound)
		}
		if err != nil {
			return nil, pgErr("thread "+threadID+": logs", err)
		}
	}
	sql := "SELECT doc, n FROM logs WHERE thread_id = $1 AND depth <= $2 AND n > $3 ORDER BY n"
	if q.Limit > 0 {
		sql += " LIMIT " + strconv.Itoa(q.Limit)
	}
	if q.Offset > 0 {
		sql += " OFFSET " + strconv.Itoa(q.Offset)
	}
	rows, err := s.pool.Query(ctx, sql, threadID, q.MaxDepth, after)
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
	var ref string
	err := s.pool.QueryRow(ctx, "SELECT doc, request_ref, request_body, response_body FROM logs WHERE thread_id = $1 AND id = $2",
		threadID, id).Scan(&doc, &ref, &req, &resp)
	if errors.Is(err, pgx.ErrNoRows) {
		return weft.LogEntry{}, fmt.Errorf("thread %s: log %s: %w", threadID, id, weft.ErrNotFound)
	}
	if err != nil {
		return weft.LogEntry{}, pgErr("thread "+threadID+": log "+id, err)
	}
	if ref != "" {
		// Body rows never change: a read after the log's is as good as one with it.
		body, err := s.requestBody(ctx, threadID, ref)
		if err != nil {
			return weft.LogEntry{}, pgErr("thread "+threadID+": log "+id, err)
		}
		req = []byte(body)
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

// qBodyChain reads a request body and its bases, the body first: each row the base's id ("" when
// whole), the bytes shared with it and the rest.
const qBodyChain = `WITH RECURSIVE chain(k, base, shared, rest) AS (
		SELECT 0, base, shared, rest FROM log_bodies WHERE thread_id = $1 AND id = $2
		UNION ALL
		SELECT c.k + 1, b.base, b.shared, b.rest
		FROM chain c JOIN log_bodies b ON b.thread_id = $1 AND b.id = c.base
		WHERE c.base <> '' AND c.k <= 300
	) SELECT base, shared, rest FROM chain ORDER BY k`

// requestBody rebuilds the request body stored as row ref of log_bodies.
func (s *Store) requestBody(ctx context.Context, threadID, ref string) (string, error) {
	body, _, err := readBody(ctx, s.pool, threadID, ref)
	return body, err
}

// readBody rebuilds the request body stored as row ref of log_bodies and returns how many bases
// it is stored on.
func readBody(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, threadID, ref string) (string, int, error) {
	rows, err := q.Query(ctx, qBodyChain, threadID, ref)
	if err != nil {
		return "", 0, err
	}
	links, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storecontract.BodyLink, error) {
		var k storecontract.BodyLink
		var rest []byte
		err := r.Scan(&k.Base, &k.Shared, &rest)
		k.Rest = string(rest)
		return k, err
	})
	if err != nil {
		return "", 0, err
	}
	body, err := storecontract.JoinBody(ref, links)
	return body, len(links) - 1, err
}

// bodyCache is the request bodies this process stored, per thread (sqlstore.BodyCache). An entry
// is added once its transaction committed; as body rows never change, it stays true until the
// thread is deleted, and a transaction on a deleted thread fails before it writes.
type bodyCache struct {
	mu sync.Mutex
	c  sqlstore.BodyCache
}

func (b *bodyCache) base(threadID, body string) (sqlstore.KeptBody, int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Base(threadID, body)
}

func (b *bodyCache) has(threadID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c.Has(threadID)
}

func (b *bodyCache) add(threadID string, kept []sqlstore.KeptBody) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range kept {
		b.c.Add(threadID, k)
	}
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

// LastEvents returns the thread's newest seq and the newest event of each of types among its
// within newest: the rows of other types are not read.
func (s *Store) LastEvents(ctx context.Context, threadID string, within int64, types ...string) (int64, []weft.EventRecord, error) {
	var last int64
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events WHERE thread_id = $1`, threadID).Scan(&last); err != nil {
		return 0, nil, pgErr("thread "+threadID+": last events", err)
	}
	if last == 0 {
		var one int
		err := s.pool.QueryRow(ctx, "SELECT 1 FROM threads WHERE id = $1", threadID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, nil, threadNotFound(threadID)
		}
		if err != nil {
			return 0, nil, pgErr("thread "+threadID+": last events", err)
		}
		return 0, nil, nil
	}
	if len(types) == 0 {
		return last, nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (type) seq, type, data, created_at FROM events
		WHERE thread_id = $1 AND seq > $2 AND type = ANY($3) ORDER BY type, seq DESC`, threadID, last-within, types)
	if err != nil {
		return 0, nil, pgErr("thread "+threadID+": last events", err)
	}
	defer rows.Close()
	var out []weft.EventRecord
	for rows.Next() {
		e := weft.EventRecord{ThreadID: threadID}
		var at int64
		var data []byte
		if err := rows.Scan(&e.Seq, &e.Type, &data, &at); err != nil {
			return 0, nil, pgErr("thread "+threadID+": last events", err)
		}
		e.Data, e.CreatedAt = data, fromNanos(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return 0, nil, pgErr("thread "+threadID+": last events", err)
	}
	slices.SortFunc(out, func(a, b weft.EventRecord) int { return cmp.Compare(a.Seq, b.Seq) })
	return last, out, nil
}

// qPutLog inserts or replaces a log row: a new one takes the number after the thread's last (its
// creation order; one index seek, under the thread's row lock), a replaced one keeps its place.
// The request body is in log_bodies (request_ref); request_body holds only rows older than that.
const qPutLog = `INSERT INTO logs (thread_id, id, n, depth, doc, request_ref, request_body, response_body)
	VALUES ($1, $2, (SELECT COALESCE(MAX(n), 0) + 1 FROM logs WHERE thread_id = $1), $3, $4, $5, NULL, $6)
	ON CONFLICT (thread_id, id) DO UPDATE SET depth = excluded.depth, doc = excluded.doc,
	request_ref = excluded.request_ref, request_body = NULL, response_body = excluded.response_body`

const qPutBody = `INSERT INTO log_bodies (thread_id, id, base, shared, rest) VALUES ($1, $2, $3, $4, $5)`

// PutLog inserts or replaces a log row (keyed by id; a replaced row keeps its place), assigning ID
// (when empty), ThreadID and CreatedAt (when zero). Bodies are stored unchecked; the request body
// as what it shares with one this process stored for the thread and the rest (sqlstore.BodyCache).
func (t *tx) PutLog(l *weft.LogEntry) error {
	storecontract.PrepareLog(l, t.id, t.clock)
	c := *l
	c.RequestBody, c.ResponseBody = nil, nil
	doc, err := json.Marshal(&c)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: log %s: %v", t.id, l.ID, err)
	}
	ref := ""
	if len(l.RequestBody) > 0 {
		body := bodyString(l.RequestBody)
		if len(t.bodies) == 0 && !t.s.bodies.has(t.id) {
			if err := t.keepLastBody(); err != nil {
				return err
			}
		}
		kept := sqlstore.KeptBody{ID: weft.NewID("body_"), Body: body}
		base, shared := "", 0
		if b, n, ok := t.s.bodies.base(t.id, body); ok {
			base, shared, kept.Chain = b.ID, n, b.Chain+1
		} else if i, n := storecontract.BestBase(len(t.bodies), func(i int) (string, int) { return t.bodies[i].Body, t.bodies[i].Chain }, body); i >= 0 {
			// one this transaction stored, not kept until it commits
			base, shared, kept.Chain = t.bodies[i].ID, n, t.bodies[i].Chain+1
		}
		t.queue(op{sql: qPutBody, args: []any{t.id, kept.ID, base, shared, []byte(l.RequestBody[shared:])}})
		t.bodies = append(t.bodies, kept)
		ref = kept.ID
	}
	t.queue(op{sql: qPutLog, args: []any{t.id, l.ID, l.Depth, doc, ref, nilIfEmpty(slices.Clone(l.ResponseBody))}})
	return nil
}

// bigBody is the size from which PutLog keeps a log's request body as the caller's bytes.
const bigBody = 64 << 10

// bodyString is a log's request body as a string: a large one (bigBody or more) is the caller's
// bytes, which LogTx.PutLog may keep (a copy of a 20 MiB request is 20 MiB more of the peak a large
// message costs); a short one is copied, so that a short body kept for the next request's base
// does not hold a larger buffer it lies in.
func bodyString(b []byte) string {
	if len(b) >= bigBody {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	return string(b)
}

// keepLastBody keeps the thread's newest stored request body, read back, when this process keeps
// none of the thread's (after a restart, an eviction, or the thread's last turn run on another
// node): otherwise the next body would be stored whole, as long as the conversation. Body rows
// never change and the row read is committed, so it stays a valid base. Body ids are time-ordered.
func (t *tx) keepLastBody() error {
	var id string
	err := t.queryRow(`SELECT id FROM log_bodies WHERE thread_id = $1 ORDER BY id DESC LIMIT 1`, t.id).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return pgErr("thread "+t.id+": last request body", err)
	}
	body, chain, err := readBody(t.ctx, t.c, t.id, id)
	if err != nil {
		return pgErr("thread "+t.id+": last request body", err)
	}
	if body != "" {
		t.s.bodies.add(t.id, []sqlstore.KeptBody{{ID: id, Body: body, Chain: chain}})
	}
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
