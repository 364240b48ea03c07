package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/sqlstore"
	"github.com/weft-agents/weft/internal/storecontract"
)

// threadRow is what a write transaction reads of its thread when it locks the row.
type threadRow struct {
	status                     string
	doc                        []byte
	msgSeq, queueSeq, eventSeq int64
	leaseOwner                 string
	leaseToken, leaseExpires   int64
}

const qLockThread = `SELECT status, doc, msg_seq, queue_seq, event_seq, lease_owner, lease_token, lease_expires_at
	FROM threads WHERE id = $1 FOR UPDATE`

func (r *threadRow) scan(row pgx.Row) error {
	return row.Scan(&r.status, &r.doc, &r.msgSeq, &r.queueSeq, &r.eventSeq, &r.leaseOwner, &r.leaseToken, &r.leaseExpires)
}

// held reports whether the row's lease is live and held with f at now.
func (r *threadRow) held(f *weft.Fence, now time.Time) bool {
	return r.leaseOwner == f.Node && r.leaseToken == f.Token && now.UnixNano() < r.leaseExpires
}

func leaseLost(f *weft.Fence) error {
	return fmt.Errorf("thread %s: lease token %d of %s: %w", f.ThreadID, f.Token, f.Node, weft.ErrLeaseLost)
}

// Tx runs fn as one PostgreSQL transaction on the thread. It first locks the thread's row (and,
// for a fence on another thread, that thread's row FOR SHARE, before it): transactions on one
// thread run one at a time across nodes, and no node can take the fence's lease until this one
// ends. With a fence, the lease must be live and held with fence's node and token both before fn
// and at commit, else ErrLeaseLost and nothing is written. fn may read the store (it sees committed
// data). An unknown thread is ErrNotFound.
//
// A transaction costs two round trips to the database: one that begins it and locks the row, and
// one that sends fn's writes, the thread's counters and COMMIT together. Writes whose outcome fn
// needs at once (a read-modify-write of a committed message, draining the queue, file operations)
// add one each. A run's transaction whose thread row is as the run's last one left it costs one
// round trip (known.go): when the row turns out to have changed, nothing of it is written and fn
// runs a second time, on the row as read.
func (s *Store) Tx(ctx context.Context, threadID string, fence *weft.Fence, fn func(weft.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock := s.locks.lock(threadID)
	defer unlock()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return pgErr("thread "+threadID, err)
	}
	defer conn.Release()
	if fence != nil && fence.ThreadID == "" {
		f := *fence
		f.ThreadID = threadID
		fence = &f
	}
	if fence != nil && fence.ThreadID == threadID {
		if k := s.known.get(threadID, fence); k != nil && k.row.held(fence, s.now()) {
			t := &tx{s: s, ctx: ctx, c: conn, id: threadID, fence: fence}
			t.beginKnown(k)
			if err := t.run(fn); !t.stale {
				return err
			}
			s.known.drop(threadID)
		}
	}
	t := &tx{s: s, ctx: ctx, c: conn, id: threadID, fence: fence}
	if err := t.begin(); err != nil {
		t.rollback()
		return err
	}
	return t.run(fn)
}

// run runs fn in the begun transaction and commits it; it rolls back when fn fails (or panics).
func (t *tx) run(fn func(weft.Tx) error) error {
	done := false
	defer func() {
		if !done {
			t.rollback()
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	done = true
	return t.commit()
}

// tx is the write side of one transaction. Writes whose outcome fn does not need at once are
// queued as ops and sent with the next statement that must run now, or with COMMIT.
type tx struct {
	s     *Store
	ctx   context.Context
	c     *pgxpool.Conn
	id    string
	fence *weft.Fence
	row   threadRow
	now   time.Time

	ops []op

	bodies []sqlstore.KeptBody // request bodies stored, kept once the transaction commits

	queued []weft.QueuedMessage // the queue as of the lock, less what DrainQueue took

	meta   *weft.Thread // the thread record once UpdateThread changed it
	pushed bool
	// rejectBusy: a pushed message has weft.IfBusyReject, refused at commit while a run is in
	// progress.
	rejectBusy bool
	events     int64 // events appended
	release    bool
	rowDirty   bool // counters changed
	began      bool // BEGIN was sent: COMMIT or ROLLBACK ends the transaction

	// known: the transaction started from the known row (known.go); stale: its guard failed.
	known, stale bool
	// xmin is the row's version once the transaction committed (a fenced one of its thread).
	xmin string
}

// op is a queued statement. row, when set, scans the statement's one RETURNING row; fail maps the
// statement's error. msgID names the message a queued insert or update writes, so that a later
// change within the same transaction edits it in place.
type op struct {
	sql   string
	args  []any
	row   func(pgx.Row) error
	fail  func(error) error
	msgID string
}

// begin starts the transaction, locks the fence's thread (when it is another) and the thread, and
// checks the fence, in one round trip.
func (t *tx) begin() error {
	ctx, f := t.ctx, t.fence
	now := t.s.now()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	var lr threadRow
	other := f != nil && f.ThreadID != t.id
	if other {
		b.Queue(`SELECT lease_owner, lease_token, lease_expires_at FROM threads WHERE id = $1 FOR SHARE`, f.ThreadID)
	}
	b.Queue(qLockThread, t.id)
	// The queue as of the lock: pushes lock the row too, so it cannot change before commit, and
	// DrainQueue needs no round trip of its own.
	b.Queue("SELECT doc, seq FROM queue WHERE thread_id = $1 ORDER BY seq", t.id)
	br := t.c.SendBatch(ctx, b)
	_, err := br.Exec()
	t.began = err == nil
	var otherErr error
	if err == nil && other {
		otherErr = br.QueryRow().Scan(&lr.leaseOwner, &lr.leaseToken, &lr.leaseExpires)
		if errors.Is(otherErr, pgx.ErrNoRows) || (otherErr == nil && !lr.held(f, now)) {
			otherErr = leaseLost(f)
		}
	}
	var ownErr error
	if err == nil {
		ownErr = t.row.scan(br.QueryRow())
	}
	if err == nil && ownErr == nil {
		rows, qerr := br.Query()
		if qerr == nil {
			t.queued, qerr = collect(rows, "thread "+t.id+": queue", func(doc []byte, seq int64) (weft.QueuedMessage, error) {
				return decodeQueued(doc, t.id, seq)
			})
		}
		ownErr = qerr
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	switch {
	case otherErr != nil && !errors.Is(otherErr, weft.ErrLeaseLost):
		return pgErr("thread "+f.ThreadID+": lease", otherErr)
	case otherErr != nil:
		return otherErr
	case errors.Is(ownErr, pgx.ErrNoRows):
		return threadNotFound(t.id)
	case ownErr != nil:
		return pgErr("thread "+t.id, ownErr)
	case err != nil:
		return pgErr("thread "+t.id+": begin", err)
	case f != nil && !other && !t.row.held(f, now):
		return leaseLost(f)
	}
	return nil
}

func (t *tx) rollback() {
	if !t.began {
		return
	}
	// A connection whose rollback fails (lost, or cancelled mid-statement) is closed, not reused.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
	defer cancel()
	if _, err := t.c.Exec(ctx, "ROLLBACK"); err != nil {
		_ = t.c.Conn().Close(ctx)
	}
	t.began = false
}

func (t *tx) clock() time.Time {
	if t.now.IsZero() {
		t.now = t.s.nowUTC()
	}
	return t.now
}

// queue adds a statement to send later.
func (t *tx) queue(o op) { t.ops = append(t.ops, o) }

// sendNow sends the queued ops before a statement that must run now. A transaction begun from the
// known row begins explicitly here: its batch cannot be the one implicit transaction any more.
func (t *tx) sendNow() error {
	if t.known && !t.began && len(t.ops) > 0 {
		t.ops = append([]op{{sql: "BEGIN"}}, t.ops...)
		t.began = true
	}
	return t.send()
}

// send sends the queued ops followed by tail in one round trip.
func (t *tx) send(tail ...op) error {
	ops := append(t.ops, tail...)
	t.ops = t.ops[:0]
	if len(ops) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, o := range ops {
		b.Queue(o.sql, o.args...)
	}
	br := t.c.SendBatch(t.ctx, b)
	var first error
	for _, o := range ops {
		var err error
		if o.row != nil {
			err = o.row(br.QueryRow())
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			if o.fail != nil {
				err = o.fail(err)
			}
			first = err
			break
		}
	}
	if err := br.Close(); first == nil {
		first = err
	}
	return pgErr("thread "+t.id, first)
}

// exec runs a statement now, after the queued ones.
func (t *tx) exec(what, sql string, args ...any) (int64, error) {
	if err := t.sendNow(); err != nil {
		return 0, err
	}
	ct, err := t.c.Exec(t.ctx, sql, args...)
	if err != nil {
		return 0, pgErr("thread "+t.id+": "+what, err)
	}
	return ct.RowsAffected(), nil
}

// queryRow runs a query now, after the queued statements.
func (t *tx) queryRow(sql string, args ...any) pgx.Row {
	if err := t.sendNow(); err != nil {
		return errRow{err}
	}
	return t.c.QueryRow(t.ctx, sql, args...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// commit checks the fence once more and sends the queued writes, the thread row and COMMIT in one
// round trip; the notifications it queues are delivered by PostgreSQL when (and only if) it commits.
func (t *tx) commit() error {
	now := t.s.now()
	if f := t.fence; f != nil && f.ThreadID == t.id && !t.row.held(f, now) {
		t.rollback()
		return leaseLost(f)
	}
	status := t.row.status
	if t.meta != nil {
		status = string(t.meta.Status)
	}
	if t.pushed && status == string(weft.ThreadTerminated) {
		t.rollback()
		return fmt.Errorf("thread %s: %w", t.id, weft.ErrTerminated)
	}
	if t.rejectBusy && storecontract.Busy(weft.ThreadStatus(t.row.status), t.row.leaseOwner, time.Unix(0, t.row.leaseExpires), now) {
		t.rollback()
		return storecontract.BusyError(t.id)
	}
	var tail []op
	var doc []byte
	if f := t.fence; f != nil && f.ThreadID != t.id {
		// The fence's row is locked FOR SHARE: only the clock can have moved, checked by the
		// database (an error aborts the transaction).
		tail = append(tail, op{sql: `SELECT 1 / (lease_expires_at > $2)::int FROM threads WHERE id = $1`,
			args: []any{f.ThreadID, now.UnixNano()}, fail: func(error) error { return leaseLost(f) }})
	}
	// A run's transaction that goes on holding the lease reads back the row's version (known.go).
	version := t.fence != nil && t.fence.ThreadID == t.id && !t.release && !t.pushed
	readVersion := func(r pgx.Row) error { return r.Scan(&t.xmin) }
	// The thread row is written once: its counters, its record when UpdateThread changed it, and
	// the lease when the transaction releases it.
	if t.rowDirty || t.meta != nil || t.release {
		sql := "UPDATE threads SET msg_seq = $2, queue_seq = $3, event_seq = $4"
		args := []any{t.id, t.row.msgSeq, t.row.queueSeq, t.row.eventSeq}
		if t.meta != nil {
			var err error
			if doc, err = encodeThread(t.meta); err != nil {
				t.rollback()
				return err
			}
			sql += ", user_id = $5, agent = $6, label = $7, preview = $8, tags = $9, status = $10, created_at = $11, last_activity_at = $12, doc = $13"
			args = append(append(args, threadCols(t.meta)...), doc)
		}
		if t.release && t.fence.ThreadID == t.id {
			// The fence was checked under the row lock, so the lease is this transaction's to free.
			sql += ", lease_owner = '', lease_expires_at = 0"
		}
		o := op{sql: sql + " WHERE id = $1", args: args}
		if version {
			o.sql += " RETURNING xmin::text"
			o.row, version = readVersion, false
		}
		tail = append(tail, o)
	}
	if t.release && t.fence.ThreadID != t.id {
		tail = append(tail, op{sql: "UPDATE threads SET lease_owner = '', lease_expires_at = 0 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3",
			args: []any{t.fence.ThreadID, t.fence.Node, t.fence.Token}})
	}
	if t.events > 0 {
		seq := t.row.eventSeq
		if seq > weft.EventWindow && (seq-t.events)/(weft.EventWindow/8) != seq/(weft.EventWindow/8) {
			tail = append(tail, op{sql: "DELETE FROM events WHERE thread_id = $1 AND seq <= $2", args: []any{t.id, seq - weft.EventWindow}})
		}
		tail = append(tail, op{sql: "SELECT pg_notify($1, $2)", args: []any{channelEvents, t.id + " " + strconv.FormatInt(seq, 10)}})
	}
	if t.pushed {
		tail = append(tail, op{sql: "SELECT pg_notify($1, $2)", args: []any{channelQueue, t.id}})
	}
	if version {
		tail = append(tail, op{sql: qRowVersion, args: []any{t.id}, row: readVersion})
	}
	// Without BEGIN (a transaction from the known row that sent nothing before), the batch is one
	// implicit transaction: it commits at its end, or nothing of it does.
	if t.began || !t.known {
		tail = append(tail, op{sql: "COMMIT"})
	}
	if err := t.send(tail...); err != nil {
		t.rollback()
		return err
	}
	t.began = false
	if t.meta != nil {
		t.row.status, t.row.doc = string(t.meta.Status), doc
	}
	t.remember()
	t.s.bodies.add(t.id, t.bodies)
	return nil
}
