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
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
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

// What a Tx's one write of the thread row sets, at its end (tx.flush): a mask of these picks its
// statement. Setting last_activity_at rewrites its two indexes (two more pages), so only when it
// changes.
const (
	setFields   = 1 << iota // the fields UpdateThread changed
	setActivity             // last_activity_at, whose two indexes cost two pages
	setSeqs                 // the counters the Tx advanced
	setRunState             // the run-state documents
	setRelease              // the lease freed (ReleaseLease of the Tx's own thread)
)

// qUpdateThread holds the statement of each mask. All take the same 12 arguments (see flush), the
// thread id last: a statement's parameter count is its highest parameter number.
var qUpdateThread = func() (q [32]string) {
	for mask := 1; mask < len(q); mask++ {
		var set []string
		if mask&setFields != 0 {
			set = append(set, "agent = ?1, label = ?2, tags = COALESCE(?3, tags), status = ?4, preview = ?5, doc = ?7")
		}
		if mask&setActivity != 0 {
			set = append(set, "last_activity_at = ?6")
		}
		if mask&setSeqs != 0 {
			set = append(set, "msg_seq = max(msg_seq, ?8), call_seq = ?9, log_seq = ?10")
		}
		if mask&setRunState != 0 {
			set = append(set, "run_state = ?11")
		}
		if mask&setRelease != 0 {
			set = append(set, "lease_owner = '', lease_expires_at = 0")
		}
		q[mask] = "UPDATE threads SET " + strings.Join(set, ", ") + " WHERE id = ?12"
	}
	return q
}()

// Tx runs fn in one BEGIN IMMEDIATE transaction on the write connection: committed when fn returns
// nil, rolled back when it returns an error or panics. Transactions of all threads run one at a time
// (SQLite has one writer); fn may read through the Store (it sees committed data) but must not
// start another Tx or other write, nor keep the Tx after returning. With a fence, the lease of
// fence.ThreadID (the Tx's thread when empty) must be live and held with fence's node and token,
// checked inside the transaction, else ErrLeaseLost and nothing is written. An unknown thread is
// ErrNotFound.
func (s *Store) Tx(ctx context.Context, threadID string, fence *weft.Fence, fn func(weft.Tx) error) error {
	return s.write(ctx, func(w *writer) error {
		t := tx{s: s, w: w, ctx: ctx, id: threadID, fence: fence, eventSeq: -1}
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
			var owner string
			var token, expires int64
			var err error
			if leaseThread == threadID {
				err = w.row(ctx, qTxStart, []any{&owner, &token, &expires, &t.msgSeq, &t.callSeq, &t.logSeq, &t.queueSeq, &t.doc, &t.runState.framed}, threadID)
				t.seqsRead, t.queueRead, t.docRead, t.runState.read = err == nil, err == nil, err == nil, err == nil
			} else {
				err = w.row(ctx, qTxFence, []any{&owner, &token, &expires}, threadID, leaseThread)
			}
			if err != nil {
				return s.noThread(threadID, err)
			}
			if owner != fence.Node || token != fence.Token || s.now().UnixNano() >= expires {
				return fmt.Errorf("thread %s: lease token %d of %s: %w", leaseThread, fence.Token, fence.Node, weft.ErrLeaseLost)
			}
		}
		if err := fn(&t); err != nil {
			return err
		}
		return t.flush()
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
//
// Sequence numbers are assigned from counters read when the Tx first numbers a row; the Tx is the
// only writer until it ends. The next message seq is one above the highest stored seq or threads.msg_seq, which
// only records the seqs of deleted messages, so that inserting a message does not write the thread
// row (one page less per commit). Calls and logs are numbered from threads.call_seq and log_seq,
// stored once, before the commit, when they advanced.
type tx struct {
	s     *Store
	w     *writer
	ctx   context.Context
	id    string
	fence *weft.Fence // nil for an unfenced Tx
	now   time.Time

	seqsRead                bool  // the counters below were read
	msgSeq, callSeq, logSeq int64 // last numbers assigned
	seqsDirty               bool  // callSeq or logSeq advanced
	queueRead               bool  // queueSeq was read (no push can land while the Tx holds the writer)
	queueSeq                int64
	docRead                 bool          // doc holds the thread row's doc
	doc                     string        // as read, or as UpdateThread last made it
	thread                  *threadUpdate // the thread's fields once UpdateThread changed them
	runState                runState
	release                 bool  // ReleaseLease: flush frees the thread's lease
	eventSeq                int64 // the last event seq, once read (-1 until then)
	deleted                 bool  // a message was deleted: msg_seq must keep msgSeq
}

// readSeqs reads the counters once per Tx.
func (t *tx) readSeqs() error {
	if t.seqsRead {
		return nil
	}
	if err := t.w.row(t.ctx, qSeqs, []any{&t.msgSeq, &t.callSeq, &t.logSeq}, t.id); err != nil {
		return t.fail("counters", err)
	}
	t.seqsRead = true
	return nil
}

// QueueSeq returns threads.queue_seq, which PushQueue advances in its own write transaction.
func (t *tx) QueueSeq() (int64, error) {
	if !t.queueRead {
		if err := t.w.row(t.ctx, qQueueSeq, []any{&t.queueSeq}, t.id); err != nil {
			return 0, t.fail("queue seq", err)
		}
		t.queueRead = true
	}
	return t.queueSeq, nil
}

// threadUpdate is the thread row as UpdateThread left it, written by flush.
type threadUpdate struct {
	th       weft.Thread
	tags     any // JSON text, or nil to keep the column
	activity bool
	doc      []byte
}

// flush writes the thread row once before the Tx commits: the fields UpdateThread changed, the
// counters the Tx advanced and the run state SetExecState changed, in one statement.
func (t *tx) flush() error {
	mask := 0
	args := make([]any, 12)
	args[11] = t.id
	if u := t.thread; u != nil {
		th := &u.th
		mask |= setFields
		args[0], args[1], args[2], args[3], args[4], args[6] = th.Agent, th.Label, u.tags, string(th.Status), th.Preview, u.doc
		if u.activity {
			mask |= setActivity
			args[5] = nanos(th.LastActivityAt)
		}
	}
	if t.seqsDirty || t.deleted {
		mask |= setSeqs
		floor := int64(0)
		if t.deleted {
			floor = t.msgSeq
		}
		args[7], args[8], args[9] = floor, t.callSeq, t.logSeq
	}
	if t.runState.dirty {
		mask |= setRunState
		args[10] = t.runState.encode()
	}
	if t.release {
		mask |= setRelease
	}
	if mask == 0 {
		return nil
	}
	if _, err := t.w.exec(t.ctx, qUpdateThread[mask], args...); err != nil {
		return t.fail("update thread", err)
	}
	return nil
}

// runState is a Tx's copy of the thread's run-state documents (threads.run_state): framed keys and
// values as read, decoded into docs when SetExecState changes one.
type runState struct {
	read, dirty bool
	framed      string
	docs        []runStateDoc // sorted by key, once decoded
	decoded     bool
}

type runStateDoc struct{ key, value string }

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
	if !t.docRead {
		if err := t.w.row(t.ctx, qThreadDoc, []any{&t.doc}, t.id); err != nil {
			return t.fail("update thread", err)
		}
		t.docRead = true
	}
	var th weft.Thread
	oldProps, oldArgs, err := decodeThreadDoc(t.doc, &th)
	if err != nil {
		return t.fail("update thread", err)
	}
	props, args := []byte(oldProps), []byte(oldArgs)
	var tags any // NULL keeps the tags column
	if p.Tags != nil {
		b, err := marshal(p.Tags)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: tags: %v", t.id, err)
		}
		th.Tags, tags = p.Tags, string(b)
	}
	if p.Properties != nil {
		if props, err = mapJSON(p.Properties); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: properties: %v", t.id, err)
		}
	}
	if p.Arguments != nil {
		if args, err = mapJSON(p.Arguments); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: arguments: %v", t.id, err)
		}
	}
	storecontract.ApplyThreadPatch(&th, p, t.clock())
	u := t.thread
	if u == nil {
		u = &threadUpdate{}
		t.thread = u
	}
	if tags != nil {
		u.tags = tags
	}
	u.th, u.activity = th, u.activity || p.LastActivityAt != nil
	u.doc = threadDoc(&th, props, args)
	t.doc = string(u.doc)
	return nil
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
	if err := t.readSeqs(); err != nil {
		return err
	}
	seq := t.msgSeq + 1
	_, err := t.w.exec(t.ctx, qInsertMsg, t.id, seq, m.ID, string(m.Role), boolInt(m.Silent), m.Depth,
		messageDoc(m, seq, created, md))
	switch {
	case isConstraint(err, "UNIQUE"):
		return weft.Errorf(weft.EConflict, "thread %s: message %s already exists", t.id, m.ID)
	case err != nil:
		return t.fail("insert message", err)
	}
	t.msgSeq = seq
	m.ThreadID, m.Seq, m.CreatedAt = t.id, seq, created.UTC()
	return nil
}

// UpdateMessage changes a message; ErrNotFound if it does not exist.
func (t *tx) UpdateMessage(id string, ch weft.MessageChange) error {
	var m weft.Message
	var doc string
	err := t.w.row(t.ctx, qGetMsgDoc, []any{&doc}, t.id, id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
	}
	if err == nil {
		err = decodeMessage(doc, &m)
	}
	if err != nil {
		return t.fail("update message "+id, err)
	}
	storecontract.ApplyMessageChange(&m, ch)
	if ch.ToolCalls != nil {
		m.ToolCalls = *ch.ToolCalls
	}
	if ch.Attachments != nil {
		m.Attachments = *ch.Attachments
	}
	if ch.Metadata != nil {
		m.Metadata = ch.Metadata
	}
	var md []byte
	if m.Metadata != nil {
		if md, err = marshal(m.Metadata); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: message %s metadata: %v", t.id, id, err)
		}
	}
	if _, err := t.w.exec(t.ctx, qUpdateMsg, boolInt(m.Silent), messageDoc(&m, m.Seq, m.CreatedAt, md), t.id, m.Seq); err != nil {
		return t.fail("update message "+id, err)
	}
	return nil
}

// DeleteMessage removes a message; its seq is not reused.
func (t *tx) DeleteMessage(id string) error {
	// The counters must be read before the delete can lower MAX(seq).
	if err := t.readSeqs(); err != nil {
		return err
	}
	n, err := t.w.execN(t.ctx, qDeleteMsg, t.id, id)
	if err != nil {
		return t.fail("delete message "+id, err)
	}
	if n == 0 {
		return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
	}
	t.deleted = true
	return nil
}

// PutToolCall inserts or replaces a tool-call record, assigning ThreadID and Seq (kept from the
// first insert); Status defaults to pending.
func (t *tx) PutToolCall(c *weft.ToolCallRecord) error {
	if err := storecontract.PrepareToolCall(t.id, c); err != nil {
		return err
	}
	doc := callDoc(c)
	seq, err := t.putToolCall(c, doc)
	if err != nil {
		return t.fail("put tool call "+c.CallID, err)
	}
	c.ThreadID, c.Seq = t.id, seq
	return nil
}

// putToolCall writes a call in one statement when it can: a record that carries the seq it is
// stored with is updated in place, a new one inserted; otherwise the stored call is updated and
// its seq read back.
func (t *tx) putToolCall(c *weft.ToolCallRecord, doc []byte) (int64, error) {
	status := string(c.Status)
	if c.Seq > 0 {
		n, err := t.w.execN(t.ctx, qUpdateToolCallSeq, status, doc, t.id, c.CallID, c.Seq)
		if err != nil || n > 0 {
			return c.Seq, err
		}
	}
	if err := t.readSeqs(); err != nil {
		return 0, err
	}
	seq := t.callSeq + 1
	n, err := t.w.execN(t.ctx, qInsertToolCall, t.id, c.CallID, seq, status, doc)
	if err != nil {
		return 0, err
	}
	if n > 0 {
		t.callSeq, t.seqsDirty = seq, true
		return seq, nil
	}
	if _, err := t.w.exec(t.ctx, qUpdateToolCall, status, doc, t.id, c.CallID); err != nil {
		return 0, err
	}
	err = t.w.row(t.ctx, qToolCallSeq, []any{&seq}, t.id, c.CallID)
	return seq, err
}

// DrainQueue removes and returns, in order, the queued messages with seq ≤ upTo (all when upTo ≤ 0).
func (t *tx) DrainQueue(upTo int64) ([]weft.QueuedMessage, error) {
	rows, err := t.w.query(t.ctx, qDrainQueue, t.id, upTo)
	if err != nil {
		return nil, t.fail("drain queue", err)
	}
	out, err := scanQueue(rows, t.id)
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
	if !t.runState.read {
		if err := t.w.row(t.ctx, qRunState, []any{&t.runState.framed}, t.id); err != nil {
			return t.fail("exec state "+key, err)
		}
		t.runState.read = true
	}
	changed, err := t.runState.set(key, value)
	if err != nil {
		return t.fail("exec state "+key, err)
	}
	t.runState.dirty = t.runState.dirty || changed
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

// ReleaseLease frees the fence's lease inside the transaction, so it takes effect exactly when the
// transaction commits (a no-op without a fence). The fence was checked when the transaction began
// and the write lock is held since, so the lease is still the fence's.
func (t *tx) ReleaseLease() error {
	if t.fence == nil {
		return nil
	}
	if t.fence.ThreadID == "" || t.fence.ThreadID == t.id {
		t.release = true // with the thread row's other changes (flush)
		return nil
	}
	if err := t.s.releaseLease(t.ctx, t.w, *t.fence, t.id); err != nil {
		return t.fail("release lease", err)
	}
	return nil
}

// PushQueue queues a message inside the transaction (a terminated thread refuses it, and the
// whole transaction with it).
func (t *tx) PushQueue(q *weft.QueuedMessage) error {
	var md []byte
	if q.Metadata != nil {
		var err error
		if md, err = marshal(q.Metadata); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: queued message metadata: %v", t.id, err)
		}
	}
	q.ThreadID = t.id
	storecontract.PrepareQueued(q, t.s.now)
	var seq int64
	var status string
	if err := t.w.row(t.ctx, `UPDATE threads SET queue_seq = queue_seq + 1 WHERE id = ? RETURNING queue_seq, status`, []any{&seq, &status}, t.id); err != nil {
		return t.fail("push queue", err)
	}
	if t.thread != nil {
		status = string(t.thread.th.Status)
	}
	if weft.ThreadStatus(status) == weft.ThreadTerminated {
		return fmt.Errorf("thread %s: %w", t.id, weft.ErrTerminated)
	}
	q.Seq = seq
	if _, err := t.w.exec(t.ctx, `INSERT INTO queue (thread_id, seq, doc) VALUES (?, ?, ?)`, t.id, seq, queueDoc(q, md)); err != nil {
		q.Seq = 0
		return t.fail("push queue", err)
	}
	if t.queueRead {
		t.queueSeq = seq
	}
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

func marshal(v any) ([]byte, error) { return json.Marshal(v) }
