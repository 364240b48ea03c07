package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

var (
	errClosed        = errors.New("sqlite: store is closed")
	errNoFileControl = errors.New("sqlite: the driver's connection has no file control")
)

// writer is the write connection with its prepared statements, cached by SQL text. It is used only
// while Store.wmu is held.
type writer struct {
	conn  *sql.Conn
	cache map[string]*sql.Stmt // statements that return rows
	// execs are the statements that return none, prepared on the driver's connection and run
	// through sql.Conn.Raw (exec): database/sql's conversion of arguments and its wrappers of
	// statement and result cost 1,500 instructions and two allocations a statement, and a turn
	// runs twenty.
	execs map[string]driver.StmtExecContext
	// byRowid holds the rowid forms of the thread row's writes (updateThread), by their id form.
	byRowid map[string]string
	call    rawExec         // the exec under way
	runFn   func(any) error // w.call.run, bound once
	rows    rowCache        // thread rows as runs left them (rowcache.go)
}

// rawExec is one statement run on the driver's connection.
type rawExec struct {
	st   driver.StmtExecContext
	args []driver.NamedValue
	res  driver.Result
	err  error
}

func (c *rawExec) run(any) error {
	c.res, c.err = c.st.ExecContext(context.Background(), c.args)
	return nil // the statement's error is c.err: Raw would take driver.ErrBadConn as its own
}

func (s *Store) prepareWriter(ctx context.Context, histBytes int) error {
	s.w = &writer{conn: s.wconn, cache: map[string]*sql.Stmt{}, execs: map[string]driver.StmtExecContext{}, byRowid: map[string]string{}}
	s.w.runFn = s.w.call.run
	switch {
	case histBytes == 0:
		s.w.rows.hist.lru.Limit = defaultHistoryCache
	case histBytes > 0:
		s.w.rows.hist.lru.Limit = histBytes
	}
	for _, q := range hotWrites() {
		var err error
		if returnsRows(q) {
			_, err = s.w.stmt(ctx, q)
		} else {
			_, err = s.w.execStmt(ctx, q)
		}
		if err != nil {
			return fmt.Errorf("sqlite: prepare: %w", err)
		}
	}
	return nil
}

// returnsRows reports whether a statement of hotWrites is run as a query (row, rowOf, query), not
// by exec.
func returnsRows(q string) bool {
	q = strings.TrimSpace(q)
	return len(q) >= 6 && strings.EqualFold(q[:6], "SELECT") || strings.Contains(q, "RETURNING")
}

// execStmt returns the driver's statement of q, preparing it on first use.
func (w *writer) execStmt(ctx context.Context, q string) (driver.StmtExecContext, error) {
	if st, ok := w.execs[q]; ok {
		return st, nil
	}
	var st driver.Stmt
	err := w.conn.Raw(func(dc any) error {
		pc, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return errors.New("sqlite: the driver's connection does not prepare with a context")
		}
		var err error
		st, err = pc.PrepareContext(ctx, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	ex, ok := st.(driver.StmtExecContext)
	if !ok {
		st.Close()
		return nil, errors.New("sqlite: the driver's statement does not execute with a context")
	}
	w.execs[q] = ex
	return ex, nil
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

func (w *writer) exec(ctx context.Context, q string, args ...any) (driver.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := w.execStmt(ctx, q)
	if err != nil {
		return nil, err
	}
	nv := w.call.args[:0]
	for i, a := range args {
		v, err := driverValue(a)
		if err != nil {
			clear(nv)
			return nil, fmt.Errorf("sqlite: argument %d: %w", i+1, err)
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	w.call.st, w.call.args = st, nv
	err = w.conn.Raw(w.runFn)
	res, err := w.call.res, cmp.Or(err, w.call.err)
	clear(nv) // the arguments are the caller's; keep none of them
	w.call = rawExec{args: nv[:0]}
	return res, err
}

// updateThread runs q, a write of one thread's row ending "WHERE id = ?" whose last argument is
// the id, finding the row by its number (threads.num, its rowid) when that is known (rowid not
// 0): as "WHERE rowid = ? AND id = ?", one seek where the id's index takes several thousand
// instructions more (bench/cmd/layouts). A number that finds no row with the id is not expected
// (the kept rows go when another connection writes or a thread is deleted): q then runs by the id,
// and when that finds the row, the number was another thread's, which the Tx's messages, calls and
// logs may have been written under (migration 0012): an error, so that the Tx rolls back.
func (w *writer) updateThread(ctx context.Context, q string, rowid int64, args ...any) (driver.Result, error) {
	if rowid == 0 {
		return w.exec(ctx, q, args...)
	}
	byRowid, ok := w.byRowid[q]
	if !ok {
		head, found := strings.CutSuffix(q, "WHERE id = ?")
		if !found {
			return nil, fmt.Errorf("sqlite: %q does not end with WHERE id = ?", q)
		}
		byRowid = head + "WHERE rowid = ? AND id = ?"
		w.byRowid[q] = byRowid
	}
	var buf [16]any
	n := len(args) - 1
	res, err := w.exec(ctx, byRowid, append(append(append(buf[:0], args[:n]...), rowid), args[n])...)
	if err != nil {
		return nil, err
	}
	if changed, err := res.RowsAffected(); err == nil && changed == 1 {
		return res, nil
	}
	w.rows.rowidMisses++
	if res, err = w.exec(ctx, q, args...); err != nil {
		return nil, err
	}
	if changed, err := res.RowsAffected(); err != nil || changed != 0 {
		return nil, fmt.Errorf("sqlite: thread %v: the writer kept number %d for it, which is not its row's", args[n], rowid)
	}
	return res, nil // no such thread (deleted)
}

// driverValue converts an argument as database/sql would for a driver that converts none itself.
func driverValue(a any) (driver.Value, error) {
	switch v := a.(type) {
	case string, int64, []byte, nil, bool, float64, time.Time:
		return v, nil
	case int:
		return int64(v), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(a)
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
	w.conn.Raw(func(any) error {
		for _, st := range w.execs {
			st.(driver.Stmt).Close()
		}
		return nil
	})
}

// write runs fn as one transaction on the write connection: committed when fn returns nil, rolled
// back when it fails or panics (the panic is raised again in the caller).
//
// Writes that arrive while another is committing are committed together (group commit): the
// first waiting writer leads, running every pending fn in one BEGIN IMMEDIATE transaction, then one
// COMMIT for all. A caller returns only after the commit that carries its writes, so durability
// and atomicity per write are those of a transaction of its own; many concurrent runs share the
// commit's fixed cost and the pages they all touch. The fns of a group run one after another with
// nothing between them; when one fails, the whole transaction is rolled back and the group runs
// again with each fn inside a savepoint that is rolled back alone when it fails. So fn may run more
// than once, and must leave nothing behind in Go state from a run that was rolled back.
func (s *Store) write(ctx context.Context, fn func(w *writer) error) error {
	return s.writeReq(&writeReq{ctx: ctx, fn: fn})
}

// writeOwn is write for a write that keeps the writer's row cache true itself: it writes the rows
// of one thread only, and drops or renews that thread's entry.
func (s *Store) writeOwn(ctx context.Context, fn func(w *writer) error) error {
	return s.writeReq(&writeReq{ctx: ctx, fn: fn, keepsRows: true})
}

func (s *Store) writeReq(req *writeReq) error {
	if err := req.ctx.Err(); err != nil {
		return err
	}
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

// maxGroup bounds the writes of one group commit, and so the wait of its last writer. 256, as the
// bench's group-commit floor batches: with 1,000 threads' turns at once, 256 instead of 64 gave
// 18 % more turns a second (one commit's pages, the b-trees' right edges above all, are shared by
// more writes) and 3.5 % fewer instructions a turn (bench/README.md).
const maxGroup = 256

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
	// keepsRows: fn keeps the row cache true itself (writeOwn); for any other write the cache is
	// cleared before fn runs.
	keepsRows bool
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

// commitGroup commits a batch of writes in one transaction: first with nothing between the
// writes, and when one of several fails, again with each in its own savepoint.
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
	if !s.commitBatch(w, batch, false) {
		s.commitBatch(w, batch, true)
	}
}

// commitBatch runs the batch's unfinished writes one after another in one BEGIN IMMEDIATE
// transaction and commits those that succeeded. Without savepoints (two statements less per write,
// and no page copied into a sub-journal) a write that fails or panics rolls everything back: a
// lone write's failure is its outcome, and of several it reports false, leaving them unfinished to
// run again with savepoints, where a failing write is rolled back alone. Writes whose context
// ended are finished either way.
func (s *Store) commitBatch(w *writer, batch []*writeReq, savepoints bool) bool {
	bg := context.Background()
	if _, err := w.exec(bg, "BEGIN IMMEDIATE"); err != nil {
		for _, r := range batch {
			if !r.finished {
				r.finish(fmt.Errorf("sqlite: begin: %w", err))
			}
		}
		return true
	}
	w.rows.begun(w.conn)
	kept := make([]*writeReq, 0, len(batch))
	for _, r := range batch {
		if r.finished {
			continue
		}
		if err := r.ctx.Err(); err != nil {
			r.finish(err)
			continue
		}
		if savepoints {
			if _, err := w.exec(bg, "SAVEPOINT weft_write"); err != nil {
				s.abortGroup(w, batch, fmt.Errorf("sqlite: savepoint: %w", err))
				return true
			}
		}
		if !r.keepsRows {
			w.rows.clear()
		}
		p, err := r.run(w)
		if err == nil && p == nil {
			if savepoints {
				if _, err := w.exec(bg, "RELEASE weft_write"); err != nil {
					s.abortGroup(w, batch, fmt.Errorf("sqlite: release: %w", err))
					return true
				}
			}
			kept = append(kept, r)
			continue
		}
		if !savepoints {
			w.exec(bg, "ROLLBACK")
			w.rows.clear()
			if len(batch) > 1 {
				return false
			}
			r.err, r.panicked = err, p
			r.finish(nil)
			return true
		}
		r.err, r.panicked = err, p
		w.rows.clear() // what the failed write did to the cache is undone with the rest
		if _, err := w.exec(bg, "ROLLBACK TO weft_write"); err != nil {
			s.abortGroup(w, batch, fmt.Errorf("sqlite: rollback to savepoint: %w", err))
			return true
		}
		if _, err := w.exec(bg, "RELEASE weft_write"); err != nil {
			s.abortGroup(w, batch, fmt.Errorf("sqlite: release: %w", err))
			return true
		}
		r.finish(nil)
	}
	if _, err := w.exec(bg, "COMMIT"); err != nil {
		s.abortGroup(w, kept, fmt.Errorf("sqlite: commit: %w", err))
		return true
	}
	w.rows.committed(w.conn)
	s.ckpt.committed()
	for _, r := range kept {
		r.finish(nil)
	}
	return true
}

// abortGroup rolls the whole transaction back and fails every write of it not yet finished.
func (s *Store) abortGroup(w *writer, batch []*writeReq, err error) {
	w.exec(context.Background(), "ROLLBACK")
	w.rows.clear()
	for _, r := range batch {
		if !r.finished {
			r.err, r.panicked = nil, nil
			r.finish(err)
		}
	}
}

// hotWrites lists the statements prepared at Open.
func hotWrites() []string {
	out := []string{"BEGIN IMMEDIATE", "COMMIT", "ROLLBACK",
		qThreadExists, qTxThread, qTxFence, qTxStart, qSeqs, qQueueSeq, qInsertMsg, qMessageIDs, qUpdateMsg, qUpdateToolCall, qUpdateToolCallSeq, qToolCallSeq, qInsertToolCall,
		qPutLog, qThreadDoc, qRunState, qSetKV, qDrainQueue, qDelQueue, qEventSeq, qAddEvent,
		qRunStart, qRunStartKnown, qRunStartIdle, qLeaseState, qTakeLease, qTakeLeaseQueued, qTakeLeaseInbox, qInbox, qSetQueueSeq, qRenewLease, qReleaseLease, qEndActivity, qQueued, qPushSeq, qPushSeqLast, qPushInsert, qCalls, qStoredCalls}
	// The thread row's writes that change its agent, label or tags (setNames) are rare, and those
	// of its open calls (setCalls) are of few masks: they are prepared when first used.
	for mask, q := range qUpdateThread {
		if q != "" && mask&(setNames|setCalls) == 0 {
			out = append(out, q)
		}
	}
	return out
}

func marshal(v any) ([]byte, error) { return json.Marshal(v) }
