package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// qAcquire takes a free or expired lease, incrementing the token; or, for ReclaimRun, the lease
// node $2 still holds with token $5 (0: none, as no held lease has token 0).
const qAcquire = `UPDATE threads SET lease_owner = $2, lease_token = lease_token + 1, lease_expires_at = $3
	WHERE id = $1 AND (lease_owner = '' OR lease_expires_at <= $4 OR (lease_owner = $2 AND lease_token = $5)) RETURNING lease_token`

// AcquireLease takes the thread's lease for node if it is free or expired, with a token higher than
// any before; ErrLeaseHeld while another acquisition is live (whichever node holds it).
func (s *Store) AcquireLease(ctx context.Context, threadID, node string, ttl time.Duration) (weft.Fence, error) {
	now := s.now()
	var token int64
	err := s.pool.QueryRow(ctx, qAcquire, threadID, node, now.Add(ttl).UnixNano(), now.UnixNano(), 0).Scan(&token)
	if errors.Is(err, pgx.ErrNoRows) {
		return weft.Fence{}, s.leaseRefused(ctx, threadID)
	}
	if err != nil {
		return weft.Fence{}, pgErr("thread "+threadID+": lease", err)
	}
	return weft.Fence{Node: node, Token: token, ThreadID: threadID}, nil
}

// leaseRefused says why a lease was not taken: the thread is missing or someone holds it.
func (s *Store) leaseRefused(ctx context.Context, threadID string) error {
	var owner string
	err := s.pool.QueryRow(ctx, "SELECT lease_owner FROM threads WHERE id = $1", threadID).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return threadNotFound(threadID)
	}
	if err != nil {
		return pgErr("thread "+threadID+": lease", err)
	}
	return fmt.Errorf("thread %s: lease held by %s: %w", threadID, owner, weft.ErrLeaseHeld)
}

// asyncCommit makes a lease transaction commit without waiting for its WAL to reach disk. A lease
// only matters while the database runs: if PostgreSQL crashes and loses the change, the holder's
// next fenced write finds another token (or owner) and fails with ErrLeaseLost, and the thread is
// taken again. The run's next step transaction, which does wait, makes it durable anyway.
const asyncCommit = "SET LOCAL synchronous_commit = off"

// qBeginPush queues BeginRun's message as qPushQueue does, but refuses in the server: a
// terminated thread, or one whose newest message has seq $3 or more ($3 > 0), divides by zero,
// which aborts the transaction the statement is in (the statements after it are already sent,
// and a COMMIT would otherwise take the lease). A missing thread inserts nothing. It notifies
// nobody: the run that queues it takes it.
const qBeginPush = `WITH t AS (
	UPDATE threads SET queue_seq = queue_seq + 1 / (status <> 'terminated' AND ($3 <= 0 OR ` + qLastSeq + ` < $3))::int
		WHERE id = $1 RETURNING queue_seq)
	INSERT INTO queue (thread_id, seq, doc) SELECT $1, queue_seq, $2 FROM t RETURNING seq`

// qNotifyUnleased tells the processes serving the store of a message queued by a BeginRun that
// did not take the lease ($2 is the expiry it would have set): whoever holds it takes the message.
const qNotifyUnleased = `SELECT pg_notify('` + channelQueue + `', $1) FROM threads WHERE id = $1 AND lease_expires_at <> $2`

// qRunTree reads whether thread $1 has children and when an effect of any thread is next
// claimable (weft.RunStart.EffectsDue), each from an index.
const qRunTree = `SELECT EXISTS (SELECT 1 FROM threads WHERE parent_id = $1),
	LEAST((SELECT MIN(run_at) FROM effects WHERE status = 'pending'),
		(SELECT MIN(claim_expires_at) FROM effects WHERE status = 'processing'))`

// qRunEnv reads the env values of a run's thread, its user (when it has one) and the instance.
const qRunEnv = `SELECT scope, name, value_enc, key_id, type, updated_at FROM env
	WHERE (scope = 'thread' AND owner = $1)
		OR (scope = 'user' AND owner = (SELECT user_id FROM threads WHERE id = $1 AND user_id <> ''))
		OR (scope = 'instance' AND owner = '')
	ORDER BY scope, name`

// leaseTx runs one lease statement in an asynchronously committed transaction (one round trip)
// and returns the rows it changed.
func (s *Store) leaseTx(ctx context.Context, sql string, args ...any) (int64, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(asyncCommit)
	var n int64
	b.Queue(sql, args...).Exec(func(ct pgconn.CommandTag) error {
		n = ct.RowsAffected()
		return nil
	})
	b.Queue("COMMIT")
	err := s.pool.SendBatch(ctx, b).Close()
	return n, err
}

// RenewLease extends a lease still held with f's token (even if it just expired, as long as nobody
// took it since); ErrLeaseLost otherwise.
func (s *Store) RenewLease(ctx context.Context, f weft.Fence, ttl time.Duration) error {
	s.known.drop(f.ThreadID)
	n, err := s.leaseTx(ctx, "UPDATE threads SET lease_expires_at = $4 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3",
		f.ThreadID, f.Node, f.Token, s.now().Add(ttl).UnixNano())
	if err != nil {
		return pgErr("thread "+f.ThreadID+": renew lease", err)
	}
	if n == 0 {
		return leaseLost(&f)
	}
	return nil
}

// ReleaseLease frees a lease held with f's token; no error if it was already lost.
func (s *Store) ReleaseLease(ctx context.Context, f weft.Fence) error {
	s.known.drop(f.ThreadID)
	_, err := s.leaseTx(ctx, "UPDATE threads SET lease_owner = '', lease_expires_at = 0 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3",
		f.ThreadID, f.Node, f.Token)
	return pgErr("thread "+f.ThreadID+": release lease", err)
}

// BeginRun takes the thread's lease for node as AcquireLease does and returns, read in the same
// transaction, the thread, its run state, its top-level messages, its queue and the env values of
// the thread, its user (when UserID is set) and the instance. An unknown thread is ErrNotFound;
// nothing is taken when it fails. push is queued first, in the same round trip (see weft.Store).
func (s *Store) BeginRun(ctx context.Context, threadID, node string, ttl time.Duration, push *weft.QueuedMessage) (weft.Fence, *weft.RunStart, error) {
	return s.beginRun(ctx, threadID, node, ttl, push, 0)
}

// ReclaimRun is BeginRun for the node that holds the thread's lease with f's token, live or
// expired but not taken since (weft.RunReclaimer): the lease is taken again with a new token.
func (s *Store) ReclaimRun(ctx context.Context, f weft.Fence, ttl time.Duration) (weft.Fence, *weft.RunStart, error) {
	return s.beginRun(ctx, f.ThreadID, f.Node, ttl, nil, f.Token)
}

// beginRun is BeginRun, and with reclaim > 0 ReclaimRun.
func (s *Store) beginRun(ctx context.Context, threadID, node string, ttl time.Duration, push *weft.QueuedMessage, reclaim int64) (weft.Fence, *weft.RunStart, error) {
	var pushDoc []byte
	if push != nil {
		storecontract.PrepareQueued(push, s.nowUTC)
		var err error
		if pushDoc, err = encodeQueued(push); err != nil {
			return weft.Fence{}, nil, err
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return weft.Fence{}, nil, pgErr("thread "+threadID+": begin run", err)
	}
	defer conn.Release()
	now := s.now()
	// One round trip reads everything under the row lock, takes the lease if it is free or expired
	// (else the update changes nothing) and commits. An env value that cannot be opened (it was
	// sealed with another key) gives the lease back.
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	refused := false // the push inserted nothing: the thread is terminated or missing
	if push == nil {
		b.Queue(asyncCommit) // a lease alone is recoverable: it expires
	} else {
		// The message must be durable once BeginRun returns: this commit waits for its flush.
		// A terminated thread must fail in the server, so that the transaction aborts: the
		// statements after it are already sent, and a COMMIT would take the lease.
		b.Queue(qBeginPush, push.ThreadID, pushDoc, push.MaxMessages).QueryRow(func(r pgx.Row) error {
			err := r.Scan(&push.Seq)
			refused = errors.Is(err, pgx.ErrNoRows) // an unknown thread
			return err
		})
	}
	var doc []byte
	var owner string
	var msgSeq, msgRev int64 // the last message seq assigned (at least the history's length); msg_rev
	b.Queue("SELECT doc, lease_owner, msg_seq, msg_rev FROM threads WHERE id = $1 FOR UPDATE", threadID).QueryRow(func(r pgx.Row) error {
		return r.Scan(&doc, &owner, &msgSeq, &msgRev)
	})
	envRows := map[weft.EnvScope][]envRow{}
	b.Queue(qRunEnv, threadID).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		for rows.Next() {
			var scope string
			var r envRow
			if err := rows.Scan(&scope, &r.name, &r.enc, &r.keyID, &r.typ, &r.at); err != nil {
				return err
			}
			envRows[weft.EnvScope(scope)] = append(envRows[weft.EnvScope(scope)], r)
		}
		return rows.Err()
	})
	rs := &weft.RunStart{}
	b.Queue(qRunTree, threadID).QueryRow(func(r pgx.Row) error {
		var due *int64
		if err := r.Scan(&rs.Children, &due); err != nil {
			return err
		}
		if due != nil {
			rs.EffectsDue = time.Unix(0, max(*due, 1)).UTC()
		}
		return nil
	})
	b.Queue("SELECT key, value FROM exec_state WHERE thread_id = $1", threadID).Query(func(rows pgx.Rows) error {
		rs.ExecState = map[string]json.RawMessage{}
		for rows.Next() {
			var k string
			var v []byte
			if err := rows.Scan(&k, &v); err != nil {
				return err
			}
			rs.ExecState[k] = v
		}
		return rows.Err()
	})
	// The messages after those this node keeps (history.go), or all of them.
	kept, _ := s.hist.get(threadID)
	var read []weft.Message
	docBytes := 0
	b.Queue(qRunMessages, threadID, kept.rev, kept.last).Query(func(rows pgx.Rows) error {
		var err error
		// Sized once (a long history grown by appends copied its messages about twice over);
		// messages of sub-prompts and deleted ones count in msgSeq too, so it may be more.
		n := 8
		if msgRev != kept.rev {
			n = int(min(max(msgSeq, 32), 1<<20))
		}
		read, err = collectN(rows, "thread "+threadID+": messages", n, func(doc []byte, seq int64) (weft.Message, error) {
			docBytes += len(doc)
			return decodeMessage(doc, threadID, seq)
		})
		return err
	})
	var stored []weft.Message
	if verifyHistory {
		b.Queue(qAllRunMessages, threadID).Query(func(rows pgx.Rows) error {
			var err error
			stored, err = collect(rows, "thread "+threadID+": messages", func(doc []byte, seq int64) (weft.Message, error) {
				return decodeMessage(doc, threadID, seq)
			})
			return err
		})
	}
	b.Queue("SELECT doc, seq FROM queue WHERE thread_id = $1 ORDER BY seq", threadID).Query(func(rows pgx.Rows) error {
		var err error
		rs.Queued, err = collect(rows, "thread "+threadID+": queue", func(doc []byte, seq int64) (weft.QueuedMessage, error) {
			return decodeQueued(doc, threadID, seq)
		})
		return err
	})
	var token int64
	expires := now.Add(ttl).UnixNano()
	k := &known{node: node, row: threadRow{leaseOwner: node, leaseExpires: expires}}
	b.Queue(qAcquire+`, xmin::text, status, msg_seq, queue_seq, event_seq`, threadID, node, expires, now.UnixNano(), reclaim).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(&token, &k.xmin, &k.row.status, &k.row.msgSeq, &k.row.queueSeq, &k.row.eventSeq); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if push != nil {
		b.Queue(qNotifyUnleased, threadID, expires)
	}
	b.Queue("COMMIT")
	err = conn.SendBatch(ctx, b).Close()
	if pe := (*pgconn.PgError)(nil); push != nil && errors.As(err, &pe) && pe.Code == "22012" { // division_by_zero
		refused = true // qBeginPush
	}
	if err != nil {
		// The batch stopped at an error: the transaction is open and aborted.
		if _, rerr := conn.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
		token = 0
	}
	f := weft.Fence{Node: node, Token: token, ThreadID: threadID}
	if err == nil && token == 0 {
		err = fmt.Errorf("thread %s: lease held by %s: %w", threadID, owner, weft.ErrLeaseHeld)
	}
	if err == nil {
		rs.Thread, err = decodeThread(doc)
	}
	if err == nil {
		err = s.runRows(rs, threadID, kept, msgRev, read, docBytes, stored)
	}
	for _, scope := range []weft.EnvScope{weft.EnvThread, weft.EnvUser, weft.EnvInstance} {
		var vals []weft.EnvValue
		if err == nil {
			vals, err = s.openEnv(scope, threadID, envRows[scope])
		}
		switch scope {
		case weft.EnvThread:
			rs.ThreadEnv = vals
		case weft.EnvUser:
			if rs.Thread != nil && rs.Thread.UserID != "" {
				rs.UserEnv = vals
			}
		case weft.EnvInstance:
			rs.InstanceEnv = vals
		}
	}
	if err != nil {
		if token != 0 {
			_ = s.ReleaseLease(context.WithoutCancel(ctx), f)
		}
		if refused {
			return weft.Fence{}, nil, s.pushRefused(context.WithoutCancel(ctx), push)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			s.hist.drop(threadID)
			return weft.Fence{}, nil, threadNotFound(threadID)
		}
		return weft.Fence{}, nil, pgErr("thread "+threadID+": begin run", err)
	}
	// The run's transactions start from the row as this one leaves it (known.go).
	k.token, k.row.leaseToken, k.row.doc, k.queued = token, token, doc, rs.Queued
	s.known.put(threadID, k)
	return f, rs, nil
}

// ExecState returns the thread's run-state documents by key.
func (s *Store) ExecState(ctx context.Context, threadID string) (map[string]json.RawMessage, error) {
	return s.jsonMap(ctx, "SELECT key, value FROM exec_state WHERE thread_id = $1", threadID, "run state")
}

// SetExecState stores a run-state document (nil deletes it).
func (t *tx) SetExecState(key string, value json.RawMessage) error {
	if err := storecontract.CheckExecState(t.id, key, value); err != nil {
		return err
	}
	if value == nil {
		t.queue(op{sql: "DELETE FROM exec_state WHERE thread_id = $1 AND key = $2", args: []any{t.id, key}})
		return nil
	}
	t.queue(op{sql: `INSERT INTO exec_state (thread_id, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (thread_id, key) DO UPDATE SET value = excluded.value`, args: []any{t.id, key, []byte(slices.Clone(value))}})
	return nil
}

// ReleaseLease frees the fence's lease when the transaction commits (a no-op without a fence).
func (t *tx) ReleaseLease() error {
	t.release = t.fence != nil
	return nil
}
