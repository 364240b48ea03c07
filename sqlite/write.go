package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// rowOf runs a single-row query and returns the row to scan.
func (w *writer) rowOf(ctx context.Context, q string, args ...any) (*sql.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := w.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(context.Background(), args...), nil
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

// write runs fn as one transaction on the write connection: committed when fn returns nil, rolled
// back when it fails or panics (the panic is raised again in the caller).
//
// Writes that arrive while another is committing are committed together (group commit): the
// first waiting writer leads, running every pending fn in one BEGIN IMMEDIATE transaction, each
// inside a savepoint that is rolled back alone when its fn fails, then one COMMIT for all. A
// caller returns only after the commit that carries its writes, so durability and atomicity per
// write are those of a transaction of its own; many concurrent runs share the commit's fixed cost
// and the pages they all touch. A lone writer takes the plain path (no savepoint).
func (s *Store) write(ctx context.Context, fn func(w *writer) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &writeReq{ctx: ctx, fn: fn}
	g := &s.group
	g.mu.Lock()
	if g.leading {
		req.done, req.lead = make(chan struct{}), make(chan struct{})
		g.pending = append(g.pending, req)
		g.mu.Unlock()
		select {
		case <-req.done:
			return req.result()
		case <-req.lead: // the leader handed over with this request still pending
			g.mu.Lock()
		}
	} else {
		g.leading = true
		g.pending = append(g.pending, req)
	}
	// Leading (g.mu held): commit batches until this request's is done, then hand over.
	for !req.finished {
		n := min(len(g.pending), maxGroup)
		batch := g.pending[:n:n]
		g.pending = g.pending[n:]
		g.mu.Unlock()
		s.commitGroup(batch)
		g.mu.Lock()
	}
	if len(g.pending) > 0 {
		close(g.pending[0].lead)
	} else {
		g.leading = false
		g.pending = nil
	}
	g.mu.Unlock()
	return req.result()
}

// maxGroup bounds the writes of one group commit, and so the wait of its last writer.
const maxGroup = 64

// groupCommit queues the writes waiting for the write connection.
type groupCommit struct {
	mu      sync.Mutex
	pending []*writeReq
	leading bool // a writer is committing batches
}

// writeReq is one write waiting for, or done by, a group commit.
type writeReq struct {
	ctx context.Context
	fn  func(w *writer) error
	// err and panicked are the outcome; finished is set (by the leader) once they are.
	err      error
	panicked any
	finished bool
	// done is closed when finished; lead hands this waiting writer the leadership. Nil for a
	// writer that led from the start.
	done, lead chan struct{}
}

func (r *writeReq) result() error {
	if r.panicked != nil {
		panic(r.panicked)
	}
	return r.err
}

func (r *writeReq) finish(err error) {
	if r.err == nil && r.panicked == nil {
		r.err = err
	}
	r.finished = true
	if r.done != nil {
		close(r.done)
	}
}

// run calls the request's fn, catching a panic.
func (r *writeReq) run(w *writer) (panicked any, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicked = p
		}
	}()
	return nil, r.fn(w)
}

// commitGroup commits a batch of writes in one transaction, each in its own savepoint when there
// are several.
func (s *Store) commitGroup(batch []*writeReq) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	w := s.w
	if w == nil {
		for _, r := range batch {
			r.finish(errClosed)
		}
		return
	}
	bg := context.Background()
	if _, err := w.exec(bg, "BEGIN IMMEDIATE"); err != nil {
		for _, r := range batch {
			r.finish(fmt.Errorf("sqlite: begin: %w", err))
		}
		return
	}
	single := len(batch) == 1
	var kept []*writeReq
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.finish(err)
			continue
		}
		if !single {
			if _, err := w.exec(bg, "SAVEPOINT weft_write"); err != nil {
				s.abortGroup(w, batch, fmt.Errorf("sqlite: savepoint: %w", err))
				return
			}
		}
		p, err := r.run(w)
		if err == nil && p == nil {
			if !single {
				if _, err := w.exec(bg, "RELEASE weft_write"); err != nil {
					s.abortGroup(w, batch, fmt.Errorf("sqlite: release: %w", err))
					return
				}
			}
			kept = append(kept, r)
			continue
		}
		r.err, r.panicked = err, p
		if single {
			w.exec(bg, "ROLLBACK")
			r.finish(nil)
			return
		}
		if _, err := w.exec(bg, "ROLLBACK TO weft_write"); err != nil {
			s.abortGroup(w, batch, fmt.Errorf("sqlite: rollback to savepoint: %w", err))
			return
		}
		if _, err := w.exec(bg, "RELEASE weft_write"); err != nil {
			s.abortGroup(w, batch, fmt.Errorf("sqlite: release: %w", err))
			return
		}
		r.finish(nil)
	}
	if _, err := w.exec(bg, "COMMIT"); err != nil {
		s.abortGroup(w, kept, fmt.Errorf("sqlite: commit: %w", err))
		return
	}
	s.ckpt.committed()
	for _, r := range kept {
		r.finish(nil)
	}
}

// abortGroup rolls the whole transaction back and fails every write of it not yet finished.
func (s *Store) abortGroup(w *writer, batch []*writeReq, err error) {
	w.exec(context.Background(), "ROLLBACK")
	for _, r := range batch {
		if !r.finished {
			r.err, r.panicked = nil, nil
			r.finish(err)
		}
	}
}

// Write statements; hotWrites are prepared at Open.
const (
	qThreadExists = `SELECT 1 FROM threads WHERE id = ?`
	qTxFence      = `SELECT COALESCE(l.lease_owner, ''), COALESCE(l.lease_token, 0), COALESCE(l.lease_expires_at, 0)
		FROM threads t LEFT JOIN threads l ON l.id = ?2 WHERE t.id = ?1`
	// qSeqs reads the thread's sequence counters (see tx), when the Tx first numbers a row.
	qSeqs = `SELECT max(msg_seq, COALESCE((SELECT MAX(seq) FROM messages WHERE thread_id = ?1), 0)), call_seq, log_seq
		FROM threads WHERE id = ?1`
	// qTxStart is qTxFence, qSeqs, qQueueSeq and qThreadDoc in one statement, for a fenced Tx on
	// its own thread (a run's steps): every step numbers rows and asks for the queue, most update
	// the thread, and one read of the thread row serves them all.
	qTxStart = `SELECT t.lease_owner, t.lease_token, t.lease_expires_at,
		max(t.msg_seq, COALESCE((SELECT MAX(seq) FROM messages WHERE thread_id = ?1), 0)), t.call_seq, t.log_seq, t.queue_seq, t.doc, t.run_state
		FROM threads t WHERE t.id = ?1`
	qQueueSeq  = `SELECT queue_seq FROM threads WHERE id = ?`
	qInsertMsg = `INSERT INTO messages (thread_id, seq, id, role, silent, depth, doc) VALUES (?, ?, ?, ?, ?, ?, ?)`
	qGetMsgDoc = `SELECT doc FROM messages WHERE thread_id = ? AND id = ?`
	qUpdateMsg = `UPDATE messages SET silent = ?, doc = ? WHERE thread_id = ? AND seq = ?`
	qDeleteMsg = `DELETE FROM messages WHERE thread_id = ? AND id = ?`
	// PutToolCall updates a call in place (it keeps the seq of its first insert), or inserts it.
	// Not an upsert with RETURNING: SQLite collects RETURNING rows in a temporary table, which costs
	// more than a second statement.
	qUpdateToolCall    = `UPDATE tool_calls SET status = ?, doc = ? WHERE thread_id = ? AND call_id = ?`
	qUpdateToolCallSeq = `UPDATE tool_calls SET status = ?, doc = ? WHERE thread_id = ? AND call_id = ? AND seq = ?`
	qToolCallSeq       = `SELECT seq FROM tool_calls WHERE thread_id = ? AND call_id = ?`
	qInsertToolCall    = `INSERT INTO tool_calls (thread_id, call_id, seq, status, doc) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (thread_id, call_id) DO NOTHING`
	// A replaced log row keeps its n (its place in the listing).
	qPutLog = `INSERT INTO logs (thread_id, id, n, depth, doc, request_body, response_body) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (thread_id, id) DO UPDATE SET depth = excluded.depth, doc = excluded.doc,
		request_body = excluded.request_body, response_body = excluded.response_body`
	qThreadDoc = `SELECT doc FROM threads WHERE id = ?`
	// qRunState reads the run-state documents for a Tx that did not read them with its fence.
	qRunState = `SELECT run_state FROM threads WHERE id = ?`
	qSetKV    = `INSERT INTO kv (thread_id, key, value, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (thread_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
	qDelKV      = `DELETE FROM kv WHERE thread_id = ? AND key = ?`
	qEventSeq   = `SELECT COALESCE(MAX(seq), 0) FROM events WHERE thread_id = ?`
	qAddEvent   = `INSERT INTO events (thread_id, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?)`
	qPruneEvent = `DELETE FROM events WHERE thread_id = ? AND seq <= ?`
	qQueued     = `SELECT doc FROM queue WHERE thread_id = ? ORDER BY seq`
	qDrainQueue = `SELECT doc FROM queue WHERE thread_id = ?1 AND (?2 <= 0 OR seq <= ?2) ORDER BY seq`
	qDelQueue   = `DELETE FROM queue WHERE thread_id = ? AND seq <= ?`
)

// hotWrites lists the statements prepared at Open.
func hotWrites() []string {
	out := []string{"BEGIN IMMEDIATE", "COMMIT", "ROLLBACK",
		qThreadExists, qTxFence, qTxStart, qSeqs, qQueueSeq, qInsertMsg, qUpdateMsg, qUpdateToolCall, qUpdateToolCallSeq, qToolCallSeq, qInsertToolCall,
		qPutLog, qThreadDoc, qRunState, qSetKV, qDrainQueue, qDelQueue, qEventSeq, qAddEvent,
		qRunStart, qLeaseState, qTakeLease, qRenewLease, qReleaseLease, qQueued}
	return append(out, qUpdateThread[1:]...)
}

// set stores value under key (deleting it when nil); false when that changes nothing.
func (r *runState) set(key string, value json.RawMessage) (bool, error) {
	if !r.decoded {
		docs, err := decodeRunState(r.framed)
		if err != nil {
			return false, err
		}
		for k, v := range docs {
			r.docs = append(r.docs, runStateDoc{k, string(v)})
		}
		slices.SortFunc(r.docs, func(a, b runStateDoc) int { return strings.Compare(a.key, b.key) })
		r.decoded = true
	}
	i, found := slices.BinarySearchFunc(r.docs, key, func(d runStateDoc, k string) int { return strings.Compare(d.key, k) })
	switch {
	case value == nil && !found:
		return false, nil
	case value == nil:
		r.docs = slices.Delete(r.docs, i, i+1)
	case found && r.docs[i].value == string(value):
		return false, nil
	case found:
		r.docs[i].value = string(value)
	default:
		r.docs = slices.Insert(r.docs, i, runStateDoc{key, string(value)})
	}
	return true, nil
}

// encode frames the docs as qRunStart's exec-state set is framed: length, ':', bytes.
func (r *runState) encode() string {
	var b []byte
	for _, d := range r.docs {
		b = strconv.AppendInt(b, int64(len(d.key)), 10)
		b = append(append(b, ':'), d.key...)
		b = strconv.AppendInt(b, int64(len(d.value)), 10)
		b = append(append(b, ':'), d.value...)
	}
	return string(b)
}

func marshal(v any) ([]byte, error) { return json.Marshal(v) }
