package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/sqlstore"
	"github.com/weft-agents/weft/internal/storecontract"
)

// Run-state write statements. hotWrites lists those prepared at Open.
const (
	// qRunState reads the run-state documents for a Tx that did not read them with its fence.
	qRunState = `SELECT run_state FROM threads WHERE id = ?`
)

// Lease and run-start statements; all are prepared at Open (hotWrites). A thread's lease is in its
// row; the columns outlive releases, so tokens only grow; token 0 means the thread never had one.
const (
	leaseCols   = `t.lease_owner, t.lease_token, t.lease_expires_at`
	qLeaseState = `SELECT ` + leaseCols + ` FROM threads t WHERE t.id = ?`
	// qRunStart reads everything a run starts from in one statement, one row: with modernc, every
	// statement, result column and row has a fixed cost well above SQLite's own work, so the rows of
	// the other tables come concatenated, each set in one value (see runStartRows): the run state
	// as it is stored (framed), the docs of messages, queue and env rows as they are (a doc begins
	// with its seq or name field, which marks where the next one starts).
	qRunStart = `SELECT t.num, t.doc, ` + leaseCols + `,
		t.run_state, ` + runStartMessages + `,` + runStartRest
	// qRunStartKnown is qRunStart for a thread whose history the writer keeps (histcache.go).
	qRunStartKnown = `SELECT t.num, t.doc, ` + leaseCols + `,
		t.run_state, '',` + runStartRest
	runStartMessages = `(SELECT COALESCE(group_concat(doc, ''), '') FROM messages INDEXED BY messages_seq WHERE thread_num = t.num AND depth <= 0)`
	runStartRest     = `
		(SELECT COALESCE(group_concat(doc, ''), '') FROM queue WHERE thread_id = t.id),` + runStartAround + `,
		max(t.msg_seq, COALESCE((SELECT MAX(seq) FROM messages WHERE thread_num = t.num), 0)), t.call_seq, t.log_seq, t.queue_seq,
		COALESCE(t.inbox, ''), t.pending_activity_at, COALESCE(t.calls, '')
		FROM threads t WHERE t.id = ?`
	// runStartAround is what a run starts from besides its thread's row, queue and history: the
	// env of its scopes, whether it has children, and when effects are due.
	runStartAround = `
		(SELECT COALESCE(group_concat(doc, ''), '') FROM env WHERE scope = 'thread' AND owner = t.id),
		(SELECT COALESCE(group_concat(doc, ''), '') FROM env WHERE t.user_id <> '' AND scope = 'user' AND owner = t.user_id),
		(SELECT COALESCE(group_concat(doc, ''), '') FROM env WHERE scope = 'instance' AND owner = ''),
		EXISTS (SELECT 1 FROM threads c WHERE c.parent_id = t.id),
		(SELECT MIN(run_at) FROM effects WHERE status = 'pending'),
		(SELECT MIN(claim_expires_at) FROM effects WHERE status = 'processing')`
	// qRunStartIdle is qRunStart for a thread whose row and history the writer keeps (rowcache.go).
	qRunStartIdle = `SELECT ` + runStartAround + ` FROM threads t WHERE t.id = ?`
	qTakeLease    = `UPDATE threads SET pad = NULL, lease_owner = ?, lease_token = ?, lease_expires_at = ? WHERE id = ?`
	// BeginRun's, with the queue counter of the message it queued (alone when the lease is held),
	// and with the message itself when it waits in the row (migration 0007).
	qTakeLeaseQueued = `UPDATE threads SET pad = NULL, queue_seq = ?, lease_owner = ?, lease_token = ?, lease_expires_at = ? WHERE id = ?`
	qTakeLeaseInbox  = `UPDATE threads SET pad = NULL, queue_seq = ?, inbox = ?, lease_owner = ?, lease_token = ?, lease_expires_at = ? WHERE id = ?`
	qSetQueueSeq     = `UPDATE threads SET queue_seq = ? WHERE id = ?`
	qRenewLease      = `UPDATE threads SET lease_expires_at = ? WHERE id = ? AND lease_owner = ? AND lease_token = ?`
	qReleaseLease    = `UPDATE threads SET lease_owner = '', lease_expires_at = 0 WHERE id = ? AND lease_owner = ? AND lease_token = ?`
	// qEndActivity moves the activity a run left pending (migration 0016) to the index, for a
	// release outside the run's own Tx (whose flush moves it with the lease).
	qEndActivity = `UPDATE threads SET last_activity_at = pending_activity_at, pending_activity_at = 0
		WHERE id = ? AND pending_activity_at <> 0 AND lease_owner = ? AND lease_token = ?`
)

// lease is a thread's lease row as read in a write transaction (token 0: none yet).
type lease struct {
	owner          string
	token, expires int64
}

// pushed is the message BeginRun queues: its seq and its row's doc. inbox: nothing else is
// queued, so when the run starts the doc may wait in the thread row (migration 0007) instead of a
// queue row.
type pushed struct {
	seq   int64
	doc   []byte
	inbox bool
}

// take takes the lease for node, with the next token, unless another acquisition is live, and
// leaves l as it wrote it. It runs in the write transaction that read l. p, when set, is the
// message BeginRun queues: its row and the queue counter are written with the lease, or alone when
// the lease is held elsewhere; p.inbox is cleared unless the message went to the thread row.
func (l *lease) take(ctx context.Context, s *Store, w *writer, threadID string, rowid int64, node string, ttl time.Duration, p *pushed) (weft.Fence, error) {
	now := s.now()
	held := l.owner != "" && now.UnixNano() < l.expires
	if p != nil && (held || !p.inbox) {
		p.inbox = false
		if err := insertQueued(ctx, w, threadID, p.seq, p.doc); err != nil {
			return weft.Fence{}, err
		}
	}
	if held {
		if p != nil {
			if _, err := w.exec(ctx, qSetQueueSeq, p.seq, threadID); err != nil {
				return weft.Fence{}, fmt.Errorf("sqlite: thread %s: push queue: %w", threadID, err)
			}
		}
		return weft.Fence{}, fmt.Errorf("thread %s: lease held by %s: %w", threadID, l.owner, weft.ErrLeaseHeld)
	}
	f := weft.Fence{Node: node, Token: l.token + 1, ThreadID: threadID}
	expires := now.Add(ttl).UnixNano()
	var err error
	switch {
	case p != nil && p.inbox:
		_, err = w.updateThread(ctx, qTakeLeaseInbox, rowid, p.seq, p.doc, node, f.Token, expires, threadID)
	case p != nil:
		_, err = w.updateThread(ctx, qTakeLeaseQueued, rowid, p.seq, node, f.Token, expires, threadID)
	default:
		_, err = w.updateThread(ctx, qTakeLease, rowid, node, f.Token, expires, threadID)
	}
	if err != nil {
		return weft.Fence{}, fmt.Errorf("sqlite: thread %s: take lease: %w", threadID, err)
	}
	l.owner, l.token, l.expires = node, f.Token, expires
	return f, nil
}

// AcquireLease takes the thread's lease for node if it is free or expired, with a token higher than
// any before; ErrLeaseHeld while another acquisition is live (whichever node holds it).
func (s *Store) AcquireLease(ctx context.Context, threadID, node string, ttl time.Duration) (weft.Fence, error) {
	var f weft.Fence
	err := s.writeOwn(ctx, func(w *writer) error {
		w.rows.drop(threadID)
		var l lease
		if err := w.row(ctx, qLeaseState, []any{&l.owner, &l.token, &l.expires}, threadID); err != nil {
			return s.noThread(threadID, err)
		}
		var err error
		f, err = l.take(ctx, s, w, threadID, 0, node, ttl, nil) // the number not known: by id
		return err
	})
	if err != nil {
		return weft.Fence{}, err
	}
	return f, nil
}

// RenewLease extends a lease still held with f's token (even if it just expired, as long as nobody
// took it since); ErrLeaseLost otherwise.
func (s *Store) RenewLease(ctx context.Context, f weft.Fence, ttl time.Duration) error {
	return s.writeOwn(ctx, func(w *writer) error {
		expires := s.now().Add(ttl).UnixNano()
		n, err := w.execN(ctx, qRenewLease, expires, f.ThreadID, f.Node, f.Token)
		if err != nil {
			w.rows.drop(f.ThreadID)
			return fmt.Errorf("sqlite: thread %s: renew lease: %w", f.ThreadID, err)
		}
		if n == 0 {
			w.rows.drop(f.ThreadID)
			return fmt.Errorf("thread %s: lease token %d of %s: %w", f.ThreadID, f.Token, f.Node, weft.ErrLeaseLost)
		}
		w.rows.renewed(f, expires)
		return nil
	})
}

// ReleaseLease frees a lease held with f's token; no error if it was already lost. The token stays,
// so the next acquisition gets a higher one.
func (s *Store) ReleaseLease(ctx context.Context, f weft.Fence) error {
	return s.writeOwn(ctx, func(w *writer) error {
		w.rows.drop(f.ThreadID)
		if err := s.releaseLease(ctx, w, f, f.ThreadID); err != nil {
			return fmt.Errorf("sqlite: thread %s: release lease: %w", f.ThreadID, err)
		}
		return nil
	})
}

// releaseLease frees f's lease (of f.ThreadID, or threadID when that is empty) inside a write,
// with the activity its run left pending. The caller drops the thread's kept row.
func (s *Store) releaseLease(ctx context.Context, w *writer, f weft.Fence, threadID string) error {
	if f.ThreadID != "" {
		threadID = f.ThreadID
	}
	if _, err := w.exec(ctx, qEndActivity, threadID, f.Node, f.Token); err != nil {
		return err
	}
	_, err := w.exec(ctx, qReleaseLease, threadID, f.Node, f.Token)
	return err
}

// BeginRun takes the thread's lease for node as AcquireLease does and, in the same write
// transaction, reads what a run starts from: the thread, its run state, its top-level (depth 0)
// messages of every status, its queue and the env values of the thread, its user (when UserID is
// set) and the instance. The result is the caller's to keep. An unknown thread is ErrNotFound, a
// live lease of another acquisition ErrLeaseHeld; nothing is taken when it fails.
//
// push, when set, is queued first, as PushQueue does: it is then in RunStart.Queued, and it stays
// queued (committed) when the lease is held elsewhere. A thread that refuses it leaves nothing
// written.
func (s *Store) BeginRun(ctx context.Context, threadID, node string, ttl time.Duration, push *weft.QueuedMessage) (weft.Fence, *weft.RunStart, error) {
	var pushMD []byte
	if push != nil {
		var err error
		if pushMD, err = s.prepareQueued(push); err != nil {
			return weft.Fence{}, nil, err
		}
	}
	var f weft.Fence
	var held error // the lease is held elsewhere: the push commits, the run does not start
	rs := &weft.RunStart{}
	err := s.writeOwn(ctx, func(w *writer) error {
		*rs, held = weft.RunStart{}, nil // a group commit may run this again (write)
		rd, err := s.readRunStart(ctx, w, threadID, rs)
		if err != nil {
			return err
		}
		c, l, sets, hist, known := rd.row, rd.lease, rd.sets, rd.hist, rd.known
		rs.EffectsDue = effectsDue(rd.pending, rd.claimed)
		var p *pushed
		if push != nil {
			// Queued as PushQueue would, after the read: its seq and the refusals come from the
			// row read, and its counter is written with the lease.
			doc, err := queueCheck(push, pushMD, threadID, rs.Thread.Status, c.queueSeq, c.msgSeq)
			if err != nil {
				return err
			}
			c.queueSeq = push.Seq
			p = &pushed{seq: push.Seq, doc: doc, inbox: c.inbox == "" && sets.queue == ""}
		}
		if f, err = l.take(ctx, s, w, threadID, c.rowid, node, ttl, p); err != nil {
			if push != nil && errors.Is(err, weft.ErrLeaseHeld) {
				held = err
				return nil
			}
			if push != nil {
				push.Seq = 0
			}
			return err
		}
		table := sets.queue // the queue table's rows, after the inbox's message
		sets.queue = c.inbox + table
		if err := s.runStartRows(rs, &sets); err != nil {
			return fmt.Errorf("sqlite: thread %s: begin run: %w", threadID, err)
		}
		// The run shares the history with the writer's cache (histcache.go).
		if !known {
			hist = make([]*weft.Message, len(rs.Messages))
			for i := range rs.Messages {
				hist[i] = &rs.Messages[i]
			}
			w.rows.hist.put(threadID, hist, len(sets.messages))
			hist = slices.Clip(hist)
		}
		rs.Rows, rs.Messages = hist, nil
		if p != nil {
			doc := docString(p.doc) // queueCheck's, new on every call
			q := weft.QueuedMessage{ThreadID: threadID}
			if err := decodeQueued(doc, &q); err != nil {
				return fmt.Errorf("sqlite: thread %s: begin run: queued message: %w", threadID, err)
			}
			rs.Queued = append(rs.Queued, q)
			if p.inbox {
				c.inbox = doc
			} else {
				table += doc
			}
		}
		// The run's first Tx starts from the row as this leaves it (rowcache.go).
		c.owner, c.token, c.expires, c.runState = l.owner, l.token, l.expires, sets.exec
		c.queue, c.queueKnown = table, true
		w.rows.put(threadID, c)
		return nil
	})
	if err == nil {
		err = held
	}
	if err != nil {
		return weft.Fence{}, nil, err
	}
	return f, rs, nil
}

// runStartRead is what BeginRun read, or took from the writer's caches, for a run's start.
type runStartRead struct {
	row              cachedRow
	lease            lease
	sets             runStartSets
	pending, claimed sql.NullInt64
	hist             []*weft.Message // the kept history (known), or none yet
	known            bool
}

// readRunStart reads what a run starts from into rs (its thread and children) and rd: from the
// row and history the writer keeps when it keeps them (rowcache.go, histcache.go), with what is
// around the row when that is kept too; else in one statement.
func (s *Store) readRunStart(ctx context.Context, w *writer, threadID string, rs *weft.RunStart) (rd runStartRead, err error) {
	c, idle := w.rows.takeIdle(threadID)
	w.rows.drop(threadID)
	rd.hist, rd.known = w.rows.hist.get(threadID)
	sets := &rd.sets
	if idle && rd.known && c.queueKnown {
		// The row as the thread's last run (or its creation, or an unfenced Tx) left it: at most
		// what is around it is read.
		w.rows.idleHits++
		if rs.Thread, err = decodeThread(c.doc); err != nil {
			return rd, fmt.Errorf("sqlite: thread %s: begin run: %w", threadID, err)
		}
		var ok bool
		if sets.env, rs.Children, rd.pending, rd.claimed, ok = w.rows.aroundOf(c, rs.Thread.UserID); ok {
			w.rows.aroundHits++
		} else {
			row, err := w.rowOf(ctx, qRunStartIdle, threadID)
			if err != nil {
				return rd, err
			}
			if err := row.Scan(&sets.env[0], &sets.env[1], &sets.env[2], &rs.Children, &rd.pending, &rd.claimed); err != nil {
				return rd, s.noThread(threadID, err)
			}
		}
		rd.lease = lease{owner: c.owner, token: c.token, expires: c.expires}
		sets.exec, sets.queue = c.runState, c.queue
		if verifyHistory {
			if err := checkIdleRow(ctx, w, threadID, c, sets, rs.Children, rd.pending, rd.claimed); err != nil {
				return rd, err
			}
		}
	} else {
		c = cachedRow{}
		q := qRunStart
		if rd.known {
			q = qRunStartKnown
		}
		row, err := w.rowOf(ctx, q, threadID)
		if err != nil {
			return rd, err
		}
		l := &rd.lease
		if err := row.Scan(&c.rowid, &c.doc, &l.owner, &l.token, &l.expires, &sets.exec, &sets.messages, &sets.queue,
			&sets.env[0], &sets.env[1], &sets.env[2], &rs.Children, &rd.pending, &rd.claimed,
			&c.msgSeq, &c.callSeq, &c.logSeq, &c.queueSeq, &c.inbox, &c.pendingActivity, &c.calls.col); err != nil {
			return rd, s.noThread(threadID, err)
		}
		c.calls.read, c.calls.exact = true, c.calls.col == ""
		if rs.Thread, err = decodeThread(c.doc); err != nil {
			return rd, fmt.Errorf("sqlite: thread %s: begin run: %w", threadID, err)
		}
	}
	c.around = around{threadEnv: sets.env[0], children: rs.Children, known: true}
	w.rows.noteAround(rs.Thread.UserID, sets.env[1], sets.env[2], rd.pending, rd.claimed)
	if rd.known && verifyHistory {
		if err := checkHistory(ctx, w, threadID, rd.hist); err != nil {
			return rd, err
		}
	}
	rd.row = c
	return rd, nil
}

// verifyHistory makes BeginRun read everything it takes from the writer's caches — the history,
// the row, what is around it — from the database too, and fail when they differ: this package's
// tests set it, and CI sets WEFT_SQLITE_CHECK_HISTORY for every test (and every weft process the
// end-to-end tests start).
var verifyHistory = os.Getenv("WEFT_SQLITE_CHECK_HISTORY") != ""

// checkIdleRow compares a kept idle row, and what was kept around it, with the database's
// (verifyHistory).
func checkIdleRow(ctx context.Context, w *writer, threadID string, kept cachedRow, sets *runStartSets, children bool, pending, claimed sql.NullInt64) error {
	var c cachedRow
	var messages string
	var st runStartSets
	var stChildren bool
	var stPending, stClaimed sql.NullInt64
	row, err := w.rowOf(ctx, qRunStart, threadID)
	if err != nil {
		return err
	}
	if err := row.Scan(&c.rowid, &c.doc, &c.owner, &c.token, &c.expires, &c.runState, &messages, &c.queue, &st.env[0], &st.env[1], &st.env[2],
		&stChildren, &stPending, &stClaimed, &c.msgSeq, &c.callSeq, &c.logSeq, &c.queueSeq, &c.inbox, &c.pendingActivity, &c.calls.col); err != nil {
		return err
	}
	// Which open calls went to tool_calls since is the writer's own knowledge: each must be there.
	c.calls.read, c.calls.exact, c.calls.moved, c.calls.storedMany = kept.calls.read, kept.calls.exact, kept.calls.moved, kept.calls.storedMany
	if kept.calls.storedKnown {
		var ids sql.NullString
		if err := w.row(ctx, qStoredCalls, []any{&ids}, c.rowid); err != nil {
			return err
		}
		split := func(s string) []string { l := strings.Split(s, "\x00"); slices.Sort(l); return l }
		if !ids.Valid || !slices.Equal(split(ids.String), split(kept.calls.stored)) {
			return fmt.Errorf("sqlite: thread %s: the kept ids of tool_calls %q are not the stored %q", threadID, kept.calls.stored, ids.String)
		}
		c.calls.stored, c.calls.storedKnown = kept.calls.stored, true
	}
	for id := range strings.SplitSeq(strings.TrimSuffix(kept.calls.moved, "\x00"), "\x00") {
		var seq int64
		if id == "" {
			continue
		}
		if err := w.row(ctx, qToolCallSeq, []any{&seq}, c.rowid, id); err != nil {
			return fmt.Errorf("sqlite: thread %s: kept open call %s moved to tool_calls: %w", threadID, id, err)
		}
	}
	if kept.rowid == 0 {
		c.rowid = 0 // not known: the row is found by id
	}
	c.queueKnown, c.around = true, kept.around
	if kept.maxMsgKnown {
		// The kept greatest id may be a deleted message's: it must be at least the stored one.
		var stored string
		var found bool
		if err := w.row(ctx, qMessageIDs, []any{&stored, &found}, c.rowid, ""); err != nil {
			return err
		}
		if stored > kept.maxMsgID {
			return fmt.Errorf("sqlite: thread %s: the kept greatest message id %q is below the stored %q", threadID, kept.maxMsgID, stored)
		}
		c.maxMsgID, c.maxMsgKnown = kept.maxMsgID, true
	}
	if kept.eventSeqKnown {
		if err := w.row(ctx, qEventSeq, []any{&c.eventSeq}, c.rowid); err != nil {
			return err
		}
		c.eventSeqKnown = true
	}
	if c != kept {
		return fmt.Errorf("sqlite: thread %s: the kept row is not the stored one:\n kept %+v\n stored %+v", threadID, kept, c)
	}
	if st.env != sets.env || stChildren != children || stPending != pending || stClaimed != claimed {
		return fmt.Errorf("sqlite: thread %s: what was kept around the row is not what is stored: env %q children %v effects %v %v; stored env %q children %v effects %v %v",
			threadID, sets.env, children, pending, claimed, st.env, stChildren, stPending, stClaimed)
	}
	return nil
}

// checkHistory compares a kept history with the database's.
func checkHistory(ctx context.Context, w *writer, threadID string, kept []*weft.Message) error {
	var docs string
	if err := w.row(ctx, `SELECT COALESCE(group_concat(doc, ''), '') FROM messages INDEXED BY messages_seq WHERE thread_num = `+numOf1+` AND depth <= 0`, []any{&docs}, threadID); err != nil {
		return err
	}
	stored, err := decodeMessages(docs, threadID, nil)
	if err != nil {
		return fmt.Errorf("sqlite: thread %s: checking the kept history: %w", threadID, err)
	}
	slices.SortFunc(stored, func(a, b weft.Message) int { return cmp.Compare(a.Seq, b.Seq) })
	if !sqlstore.SameHistory(stored, kept) {
		return fmt.Errorf("sqlite: thread %s: the kept history (%d messages) is not the stored one (%d messages)", threadID, len(kept), len(stored))
	}
	return nil
}

// effectsDue is the earlier of a pending effect's run time and a claim's expiry (zero when neither;
// a time at or before the epoch is the epoch's first nanosecond, due at once).
func effectsDue(pending, claimed sql.NullInt64) time.Time {
	switch {
	case pending.Valid && (!claimed.Valid || pending.Int64 <= claimed.Int64):
		return time.Unix(0, max(pending.Int64, 1)).UTC()
	case claimed.Valid:
		return time.Unix(0, max(claimed.Int64, 1)).UTC()
	}
	return time.Time{}
}

// runStartSets are the concatenated row sets of qRunStart.
type runStartSets struct {
	exec, messages, queue string
	env                   [3]string // thread, user, instance
}

// runStartRows decodes the row sets of qRunStart into rs. Decoded strings share the sets' memory.
func (s *Store) runStartRows(rs *weft.RunStart, sets *runStartSets) error {
	id := rs.Thread.ID
	var err error
	if rs.ExecState, err = decodeRunState(sets.exec); err != nil {
		return fmt.Errorf("exec state: %w", err)
	}

	// With the history kept (qRunStartKnown) no message is read, and nothing is allocated for
	// them: 32 messages' worth was 12 KiB of garbage a run start.
	if sets.messages != "" {
		if rs.Messages, err = decodeMessages(sets.messages, id, make([]weft.Message, 0, 32)); err != nil {
			return fmt.Errorf("messages: %w", err)
		}
	}
	// SQLite returns them in primary-key order; the sort guards the order whatever the plan.
	if !slices.IsSortedFunc(rs.Messages, func(a, b weft.Message) int { return cmp.Compare(a.Seq, b.Seq) }) {
		slices.SortFunc(rs.Messages, func(a, b weft.Message) int { return cmp.Compare(a.Seq, b.Seq) })
	}

	for docs := (docList{s: sets.queue, first: qSeq}); docs.more(); {
		doc := docs.next()
		if docs.err != nil {
			return fmt.Errorf("queue: %w", docs.err)
		}
		q := weft.QueuedMessage{ThreadID: id}
		if err := decodeQueued(doc, &q); err != nil {
			return fmt.Errorf("queued message %d: %w", q.Seq, err)
		}
		rs.Queued = append(rs.Queued, q)
	}
	if !slices.IsSortedFunc(rs.Queued, func(a, b weft.QueuedMessage) int { return cmp.Compare(a.Seq, b.Seq) }) {
		slices.SortFunc(rs.Queued, func(a, b weft.QueuedMessage) int { return cmp.Compare(a.Seq, b.Seq) })
	}

	if rs.ThreadEnv, err = s.envSet(weft.EnvThread, id, sets.env[0]); err != nil {
		return err
	}
	if rs.Thread.UserID != "" {
		if rs.UserEnv, err = s.envSet(weft.EnvUser, rs.Thread.UserID, sets.env[1]); err != nil {
			return err
		}
	}
	rs.InstanceEnv, err = s.envSet(weft.EnvInstance, "", sets.env[2])
	return err
}

// envSet decrypts a concatenation of env docs of one scope and owner, sorted by name as Env sorts.
func (s *Store) envSet(scope weft.EnvScope, owner, set string) ([]weft.EnvValue, error) {
	out := []weft.EnvValue{}
	for docs := (docList{s: set, first: eName}); docs.more(); {
		doc := docs.next()
		if docs.err != nil {
			return nil, fmt.Errorf("env %s %s: %w", scope, owner, docs.err)
		}
		v, err := s.openEnv(scope, owner, doc)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	// SQLite returns them in primary-key (name) order; the sort guards it whatever the plan.
	if !slices.IsSortedFunc(out, func(a, b weft.EnvValue) int { return strings.Compare(a.Name, b.Name) }) {
		slices.SortFunc(out, func(a, b weft.EnvValue) int { return strings.Compare(a.Name, b.Name) })
	}
	return out, nil
}

// frames reads back a concatenation of framed values: each is its length in decimal, ':' and that
// many bytes.
// decodeRunState reads a threads.run_state column: framed keys and values, a repeated key keeping
// its last value.
func decodeRunState(framed string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for f := (frames{s: framed}); f.more(); {
		k, v := f.next(), f.next()
		if f.err != nil {
			return nil, f.err
		}
		out[k] = json.RawMessage(v)
	}
	return out, nil
}

type frames struct {
	s   string
	err error
}

func (f *frames) more() bool { return f.s != "" && f.err == nil }

// next returns the next value; "" with f.err set when the input is corrupt.
func (f *frames) next() string {
	if f.err != nil {
		return ""
	}
	n, rest, ok := strings.Cut(f.s, ":")
	size, err := strconv.Atoi(n)
	if !ok || err != nil || size < 0 || size > len(rest) {
		f.err = errBadDoc
		return ""
	}
	v := rest[:size]
	f.s = rest[size:]
	return v
}

// docList splits a concatenation of docs, each beginning with a field tagged first (and holding
// no other field tagged so at the top level).
type docList struct {
	s     string
	first byte
	err   error
}

func (d *docList) more() bool { return d.s != "" && d.err == nil }

// next returns the next doc; "" with d.err set when the input is corrupt.
func (d *docList) next() string {
	if d.s[0] != d.first {
		d.err = errBadDoc
		return ""
	}
	r := docReader{s: d.s}
	end := 0
	for {
		tag, _, ok := r.next()
		if !ok || (tag == d.first && end > 0) {
			break
		}
		end = len(d.s) - len(r.s)
	}
	if r.err != nil {
		d.err = r.err
		return ""
	}
	doc := d.s[:end]
	d.s = d.s[end:]
	return doc
}

// ExecState returns the thread's run-state documents by key.
func (s *Store) ExecState(ctx context.Context, threadID string) (map[string]json.RawMessage, error) {
	var framed string
	if err := s.row(ctx, qRunState, []any{&framed}, threadID); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: thread %s: exec state: %w", threadID, err)
	}
	out, err := decodeRunState(framed)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: exec state: %w", threadID, err)
	}
	return out, nil
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
	t.w.rows.drop(t.fence.ThreadID) // the lease's thread's row changed under its run's cache
	return nil
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
