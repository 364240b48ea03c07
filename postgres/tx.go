package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// threadRow is what a write transaction reads of its thread when it locks the row.
type threadRow struct {
	status                                      string
	msgSeq, callSeq, logSeq, queueSeq, eventSeq int64
	leaseOwner                                  string
	leaseToken, leaseExpires                    int64
}

const qLockThread = `SELECT status, msg_seq, call_seq, log_seq, queue_seq, event_seq, lease_owner, lease_token,
	lease_expires_at FROM threads WHERE id = $1 FOR UPDATE`

func (r *threadRow) scan(row pgx.Row) error {
	return row.Scan(&r.status, &r.msgSeq, &r.callSeq, &r.logSeq, &r.queueSeq, &r.eventSeq, &r.leaseOwner,
		&r.leaseToken, &r.leaseExpires)
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
	t := &tx{s: s, ctx: ctx, c: conn, id: threadID, fence: fence}
	if fence != nil && fence.ThreadID == "" {
		f := *fence
		f.ThreadID = threadID
		t.fence = &f
	}
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		return pgErr("thread "+threadID+": begin", err)
	}
	done := false
	defer func() {
		if !done {
			t.rollback()
		}
	}()
	if err := t.lock(); err != nil {
		return err
	}
	if err := fn(t); err != nil {
		return err
	}
	done = true
	return t.commit()
}

// tx is the write side of one transaction: statements run on its connection as fn calls them; the
// thread's counters and record are written back, with the fence's last check, at commit.
type tx struct {
	s     *Store
	ctx   context.Context
	c     *pgxpool.Conn
	id    string
	fence *weft.Fence
	row   threadRow
	now   time.Time

	meta       *weft.Thread // the thread record once UpdateThread loaded it
	metaDirty  bool
	pushed     bool
	events     int64 // events appended
	release    bool
	touchedRow bool // counters changed
}

// lock locks the fence's thread (when it is another) and the thread, and checks the fence.
func (t *tx) lock() error {
	ctx, f := t.ctx, t.fence
	now := t.s.now()
	if f != nil && f.ThreadID != t.id {
		var lr threadRow
		err := t.c.QueryRow(ctx, `SELECT lease_owner, lease_token, lease_expires_at FROM threads WHERE id = $1 FOR SHARE`,
			f.ThreadID).Scan(&lr.leaseOwner, &lr.leaseToken, &lr.leaseExpires)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && !lr.held(f, now)) {
			return leaseLost(f)
		}
		if err != nil {
			return pgErr("thread "+f.ThreadID+": lease", err)
		}
	}
	err := t.row.scan(t.c.QueryRow(ctx, qLockThread, t.id))
	if errors.Is(err, pgx.ErrNoRows) {
		return threadNotFound(t.id)
	}
	if err != nil {
		return pgErr("thread "+t.id, err)
	}
	if f != nil && f.ThreadID == t.id && !t.row.held(f, now) {
		return leaseLost(f)
	}
	return nil
}

func (t *tx) rollback() {
	// A connection whose rollback fails (lost, or cancelled mid-statement) is closed, not reused.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
	defer cancel()
	if _, err := t.c.Exec(ctx, "ROLLBACK"); err != nil {
		_ = t.c.Conn().Close(ctx)
	}
}

func (t *tx) clock() time.Time {
	if t.now.IsZero() {
		t.now = t.s.nowUTC()
	}
	return t.now
}

func (t *tx) exec(what, sql string, args ...any) (int64, error) {
	ct, err := t.c.Exec(t.ctx, sql, args...)
	if err != nil {
		return 0, pgErr("thread "+t.id+": "+what, err)
	}
	return ct.RowsAffected(), nil
}

// commit checks the fence once more, writes the thread row back, and commits; the notifications it
// queues are delivered by PostgreSQL when (and only if) it commits.
func (t *tx) commit() error {
	ctx := t.ctx
	if f := t.fence; f != nil && f.ThreadID == t.id && !t.row.held(f, t.s.now()) {
		t.rollback()
		return leaseLost(f)
	}
	if f := t.fence; f != nil && f.ThreadID != t.id {
		// The row is locked FOR SHARE: only the clock can have moved.
		var exp int64
		if err := t.c.QueryRow(ctx, "SELECT lease_expires_at FROM threads WHERE id = $1", f.ThreadID).Scan(&exp); err != nil || t.s.now().UnixNano() >= exp {
			t.rollback()
			if err != nil {
				return pgErr("thread "+f.ThreadID+": lease", err)
			}
			return leaseLost(f)
		}
	}
	status := t.row.status
	if t.meta != nil {
		status = string(t.meta.Status)
	}
	if t.pushed && status == string(weft.ThreadTerminated) {
		t.rollback()
		return fmt.Errorf("thread %s: %w", t.id, weft.ErrTerminated)
	}
	b := &pgx.Batch{}
	if t.touchedRow || t.metaDirty {
		sql := "UPDATE threads SET msg_seq = $2, call_seq = $3, log_seq = $4, queue_seq = $5, event_seq = $6"
		args := []any{t.id, t.row.msgSeq, t.row.callSeq, t.row.logSeq, t.row.queueSeq, t.row.eventSeq}
		if t.metaDirty {
			doc, err := encodeThread(t.meta)
			if err != nil {
				t.rollback()
				return err
			}
			cols := threadCols(t.meta)
			sql += ", user_id = $7, agent = $8, label = $9, preview = $10, tags = $11, status = $12, created_at = $13, last_activity_at = $14, doc = $15"
			args = append(append(args, cols...), doc)
		}
		b.Queue(sql+" WHERE id = $1", args...)
	}
	if t.release {
		b.Queue("UPDATE threads SET lease_owner = '', lease_expires_at = 0 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3",
			t.fence.ThreadID, t.fence.Node, t.fence.Token)
	}
	if t.events > 0 {
		seq := t.row.eventSeq
		if seq > weft.EventWindow && (seq-t.events)/(weft.EventWindow/8) != seq/(weft.EventWindow/8) {
			b.Queue("DELETE FROM events WHERE thread_id = $1 AND seq <= $2", t.id, seq-weft.EventWindow)
		}
		b.Queue("SELECT pg_notify($1, $2)", channelEvents, t.id+" "+strconv.FormatInt(seq, 10))
	}
	b.Queue("COMMIT")
	if err := t.c.SendBatch(ctx, b).Close(); err != nil {
		t.rollback()
		return pgErr("thread "+t.id+": commit", err)
	}
	return nil
}

// loadMeta reads the thread record for UpdateThread (the row is locked: it cannot change).
func (t *tx) loadMeta() error {
	if t.meta != nil {
		return nil
	}
	var doc []byte
	if err := t.c.QueryRow(t.ctx, "SELECT doc FROM threads WHERE id = $1", t.id).Scan(&doc); err != nil {
		return pgErr("thread "+t.id, err)
	}
	m, err := decodeThread(doc)
	if err != nil {
		return err
	}
	t.meta = m
	return nil
}

// UpdateThread changes thread fields; UpdatedAt becomes now.
func (t *tx) UpdateThread(p weft.ThreadPatch) error {
	if err := t.loadMeta(); err != nil {
		return err
	}
	m := t.meta
	if p.Tags != nil {
		m.Tags = slices.Clone(p.Tags)
	}
	if p.Properties != nil {
		if _, err := json.Marshal(p.Properties); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: properties: %v", t.id, err)
		}
		m.Properties = p.Properties
	}
	if p.Arguments != nil {
		if _, err := json.Marshal(p.Arguments); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: arguments: %v", t.id, err)
		}
		m.Arguments = p.Arguments
	}
	storecontract.ApplyThreadPatch(m, p, t.clock())
	t.metaDirty = true
	return nil
}

// InsertMessage inserts m with the next seq, assigning ID (when empty), ThreadID, Seq and
// CreatedAt (when zero) on m.
func (t *tx) InsertMessage(m *weft.Message) error {
	if m.ID == "" {
		m.ID = weft.NewID("msg_")
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = t.clock()
	} else {
		m.CreatedAt = m.CreatedAt.UTC()
	}
	m.ThreadID = t.id
	seq := t.row.msgSeq + 1
	c := *m
	c.Seq = seq
	if len(c.ToolCalls) == 0 {
		c.ToolCalls = nil
	}
	if len(c.Attachments) == 0 {
		c.Attachments = nil
	}
	doc, err := encodeMessage(&c)
	if err != nil {
		return err
	}
	n, err := t.exec("insert message", `INSERT INTO messages (thread_id, seq, id, role, silent, depth, doc)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`, t.id, seq, m.ID, text(string(m.Role)), m.Silent, m.Depth, doc)
	if err != nil {
		return err
	}
	if n == 0 {
		return weft.Errorf(weft.EConflict, "thread %s: message %s already exists", t.id, m.ID)
	}
	m.Seq = seq
	t.row.msgSeq = seq
	t.touchedRow = true
	return nil
}

// UpdateMessage changes a message (inserted earlier in this Tx or committed).
func (t *tx) UpdateMessage(id string, ch weft.MessageChange) error {
	var doc []byte
	var seq int64
	err := t.c.QueryRow(t.ctx, "SELECT doc, seq FROM messages WHERE thread_id = $1 AND id = $2", t.id, id).Scan(&doc, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
	}
	if err != nil {
		return pgErr("thread "+t.id+": message "+id, err)
	}
	m, err := decodeMessage(doc, t.id, seq)
	if err != nil {
		return err
	}
	storecontract.ApplyMessageChange(&m, ch)
	if ch.ToolCalls != nil {
		m.ToolCalls = slices.Clone(*ch.ToolCalls)
	}
	if ch.Attachments != nil {
		m.Attachments = slices.Clone(*ch.Attachments)
	}
	if ch.Metadata != nil {
		m.Metadata = ch.Metadata
	}
	if len(m.ToolCalls) == 0 {
		m.ToolCalls = nil
	}
	if len(m.Attachments) == 0 {
		m.Attachments = nil
	}
	if doc, err = encodeMessage(&m); err != nil {
		return err
	}
	_, err = t.exec("update message "+id, "UPDATE messages SET silent = $3, doc = $4 WHERE thread_id = $1 AND seq = $2",
		t.id, seq, m.Silent, doc)
	return err
}

// DeleteMessage removes a message; its seq is not reused.
func (t *tx) DeleteMessage(id string) error {
	n, err := t.exec("delete message "+id, "DELETE FROM messages WHERE thread_id = $1 AND id = $2", t.id, id)
	if err == nil && n == 0 {
		return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
	}
	return err
}

// PutToolCall inserts or replaces a tool-call record, assigning ThreadID and Seq (kept from the
// call's first put; Status defaults to pending).
func (t *tx) PutToolCall(c *weft.ToolCallRecord) error {
	if err := storecontract.PrepareToolCall(t.id, c); err != nil {
		return err
	}
	c.ThreadID = t.id
	r := *c
	if len(r.Meta) == 0 {
		r.Meta = nil
	}
	doc, err := json.Marshal(&r)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: tool call %s: %v", t.id, c.CallID, err)
	}
	var seq int64
	var inserted bool
	err = t.c.QueryRow(t.ctx, `INSERT INTO tool_calls (thread_id, call_id, seq, status, doc) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (thread_id, call_id) DO UPDATE SET status = excluded.status, doc = excluded.doc
		RETURNING seq, xmax = 0`, t.id, c.CallID, t.row.callSeq+1, string(c.Status), doc).Scan(&seq, &inserted)
	if err != nil {
		return pgErr("thread "+t.id+": tool call "+c.CallID, err)
	}
	if inserted {
		t.row.callSeq = seq
		t.touchedRow = true
	}
	c.Seq = seq
	return nil
}

// DrainQueue removes and returns the queued messages with seq ≤ upTo (all when upTo ≤ 0), in order.
func (t *tx) DrainQueue(upTo int64) ([]weft.QueuedMessage, error) {
	sql := "DELETE FROM queue WHERE thread_id = $1 RETURNING doc, seq"
	args := []any{t.id}
	if upTo > 0 {
		sql = "DELETE FROM queue WHERE thread_id = $1 AND seq <= $2 RETURNING doc, seq"
		args = append(args, upTo)
	}
	rows, err := t.c.Query(t.ctx, sql, args...)
	if err != nil {
		return nil, pgErr("thread "+t.id+": drain queue", err)
	}
	out, err := collect(rows, "thread "+t.id+": drain queue", func(doc []byte, seq int64) (weft.QueuedMessage, error) {
		return decodeQueued(doc, t.id, seq)
	})
	slices.SortFunc(out, func(a, b weft.QueuedMessage) int { return int(a.Seq - b.Seq) })
	return out, err
}

// QueueSeq returns the seq of the newest message ever queued on the thread, as of this transaction
// (pushes from outside wait for the row lock this transaction holds).
func (t *tx) QueueSeq() (int64, error) { return t.row.queueSeq, nil }

// SetExecState stores a run-state document (nil deletes it).
func (t *tx) SetExecState(key string, value json.RawMessage) error {
	if err := storecontract.CheckExecState(t.id, key, value); err != nil {
		return err
	}
	if value == nil {
		_, err := t.exec("run state", "DELETE FROM exec_state WHERE thread_id = $1 AND key = $2", t.id, key)
		return err
	}
	_, err := t.exec("run state", `INSERT INTO exec_state (thread_id, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (thread_id, key) DO UPDATE SET value = excluded.value`, t.id, key, []byte(value))
	return err
}

// PutLog inserts or replaces a log row (keyed by id; a replaced row keeps its place), assigning ID
// (when empty), ThreadID and CreatedAt (when zero). Bodies are stored verbatim.
func (t *tx) PutLog(l *weft.LogEntry) error {
	if l.ID == "" {
		l.ID = weft.NewID("log_")
	}
	l.ThreadID = t.id
	if l.CreatedAt.IsZero() {
		l.CreatedAt = t.clock()
	} else {
		l.CreatedAt = l.CreatedAt.UTC()
	}
	c := *l
	c.RequestBody, c.ResponseBody = nil, nil
	doc, err := json.Marshal(&c)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: log %s: %v", t.id, l.ID, err)
	}
	var inserted bool
	err = t.c.QueryRow(t.ctx, `INSERT INTO logs (thread_id, id, n, depth, doc, request_body, response_body)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (thread_id, id) DO UPDATE SET depth = excluded.depth, doc = excluded.doc,
		request_body = excluded.request_body, response_body = excluded.response_body
		RETURNING xmax = 0`, t.id, l.ID, t.row.logSeq+1, l.Depth, doc, nilIfEmpty(l.RequestBody), nilIfEmpty(l.ResponseBody)).Scan(&inserted)
	if err != nil {
		return pgErr("thread "+t.id+": log "+l.ID, err)
	}
	if inserted {
		t.row.logSeq++
		t.touchedRow = true
	}
	return nil
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// SetKV stores a JSON value (nil deletes it).
func (t *tx) SetKV(key string, value json.RawMessage) error {
	if err := storecontract.CheckKV(t.id, key, value); err != nil {
		return err
	}
	if value == nil {
		_, err := t.exec("kv", "DELETE FROM kv WHERE thread_id = $1 AND key = $2", t.id, key)
		return err
	}
	_, err := t.exec("kv", `INSERT INTO kv (thread_id, key, value, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (thread_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		t.id, key, []byte(value), nanos(t.clock()))
	return err
}

// PushQueue queues a message with the transaction's other writes; a terminated thread refuses it at
// commit (ErrTerminated), and nothing of the transaction is written.
func (t *tx) PushQueue(q *weft.QueuedMessage) error {
	q.ThreadID = t.id
	storecontract.PrepareQueued(q, t.s.nowUTC)
	q.Seq = t.row.queueSeq + 1
	doc, err := encodeQueued(q)
	if err != nil {
		return err
	}
	if _, err := t.exec("queue", "INSERT INTO queue (thread_id, seq, doc) VALUES ($1, $2, $3)", t.id, q.Seq, doc); err != nil {
		return err
	}
	t.row.queueSeq = q.Seq
	t.pushed, t.touchedRow = true, true
	return nil
}

// AppendEvents adds events to the thread's log, numbering them from the thread's count.
func (t *tx) AppendEvents(evs []weft.EventRecord) error {
	if len(evs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for i := range evs {
		evs[i].ThreadID, evs[i].Seq = t.id, t.row.eventSeq+int64(i)+1
		if evs[i].CreatedAt.IsZero() {
			evs[i].CreatedAt = t.clock()
		}
		data := []byte(evs[i].Data)
		if data == nil {
			data = []byte("null")
		}
		b.Queue("INSERT INTO events (thread_id, seq, type, data, created_at) VALUES ($1, $2, $3, $4, $5)",
			t.id, evs[i].Seq, text(evs[i].Type), data, nanos(evs[i].CreatedAt))
	}
	if err := t.c.SendBatch(t.ctx, b).Close(); err != nil {
		return pgErr("thread "+t.id+": events", err)
	}
	t.row.eventSeq += int64(len(evs))
	t.events += int64(len(evs))
	t.touchedRow = true
	return nil
}

// ReleaseLease frees the fence's lease when the transaction commits (a no-op without a fence).
func (t *tx) ReleaseLease() error {
	t.release = t.fence != nil
	return nil
}
