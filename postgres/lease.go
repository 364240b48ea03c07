package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-agents/weft"
)

// qAcquire takes a free or expired lease, incrementing the token.
const qAcquire = `UPDATE threads SET lease_owner = $2, lease_token = lease_token + 1, lease_expires_at = $3
	WHERE id = $1 AND (lease_owner = '' OR lease_expires_at <= $4) RETURNING lease_token`

// AcquireLease takes the thread's lease for node if it is free or expired, with a token higher than
// any before; ErrLeaseHeld while another acquisition is live (whichever node holds it).
func (s *Store) AcquireLease(ctx context.Context, threadID, node string, ttl time.Duration) (weft.Fence, error) {
	now := s.now()
	var token int64
	err := s.pool.QueryRow(ctx, qAcquire, threadID, node, now.Add(ttl).UnixNano(), now.UnixNano()).Scan(&token)
	if errors.Is(err, pgx.ErrNoRows) {
		return weft.Fence{}, s.leaseRefused(ctx, s.pool, threadID)
	}
	if err != nil {
		return weft.Fence{}, pgErr("thread "+threadID+": lease", err)
	}
	return weft.Fence{Node: node, Token: token, ThreadID: threadID}, nil
}

// leaseRefused says why a lease was not taken: the thread is missing or someone holds it.
func (s *Store) leaseRefused(ctx context.Context, q querier, threadID string) error {
	var owner string
	err := q.QueryRow(ctx, "SELECT lease_owner FROM threads WHERE id = $1", threadID).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return threadNotFound(threadID)
	}
	if err != nil {
		return pgErr("thread "+threadID+": lease", err)
	}
	return fmt.Errorf("thread %s: lease held by %s: %w", threadID, owner, weft.ErrLeaseHeld)
}

// RenewLease extends a lease still held with f's token (even if it just expired, as long as nobody
// took it since); ErrLeaseLost otherwise.
func (s *Store) RenewLease(ctx context.Context, f weft.Fence, ttl time.Duration) error {
	ct, err := s.pool.Exec(ctx, "UPDATE threads SET lease_expires_at = $4 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3",
		f.ThreadID, f.Node, f.Token, s.now().Add(ttl).UnixNano())
	if err != nil {
		return pgErr("thread "+f.ThreadID+": renew lease", err)
	}
	if ct.RowsAffected() == 0 {
		return leaseLost(&f)
	}
	return nil
}

// ReleaseLease frees a lease held with f's token; no error if it was already lost.
func (s *Store) ReleaseLease(ctx context.Context, f weft.Fence) error {
	_, err := s.pool.Exec(ctx, "UPDATE threads SET lease_owner = '', lease_expires_at = 0 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3",
		f.ThreadID, f.Node, f.Token)
	return pgErr("thread "+f.ThreadID+": release lease", err)
}

// BeginRun takes the thread's lease for node as AcquireLease does and returns, read in the same
// transaction, the thread, its run state, its top-level messages, its queue and the env values of
// the thread, its user (when UserID is set) and the instance. An unknown thread is ErrNotFound;
// nothing is taken when it fails.
func (s *Store) BeginRun(ctx context.Context, threadID, node string, ttl time.Duration) (weft.Fence, *weft.RunStart, error) {
	var f weft.Fence
	var rs *weft.RunStart
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.now()
		var doc []byte
		var owner string
		var expires int64
		err := tx.QueryRow(ctx, "SELECT doc, lease_owner, lease_expires_at FROM threads WHERE id = $1 FOR UPDATE", threadID).
			Scan(&doc, &owner, &expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return threadNotFound(threadID)
		}
		if err != nil {
			return err
		}
		if owner != "" && now.UnixNano() < expires {
			return fmt.Errorf("thread %s: lease held by %s: %w", threadID, owner, weft.ErrLeaseHeld)
		}
		th, err := decodeThread(doc)
		if err != nil {
			return err
		}
		rs = &weft.RunStart{Thread: th}
		// Env first: it is the only part that can fail for a reason of its own (a wrong key).
		if rs.ThreadEnv, err = s.env(ctx, tx, weft.EnvThread, threadID); err != nil {
			return err
		}
		if th.UserID != "" {
			if rs.UserEnv, err = s.env(ctx, tx, weft.EnvUser, th.UserID); err != nil {
				return err
			}
		}
		if rs.InstanceEnv, err = s.env(ctx, tx, weft.EnvInstance, ""); err != nil {
			return err
		}
		if rs.ExecState, err = jsonMap(ctx, tx, "SELECT key, value FROM exec_state WHERE thread_id = $1", threadID, "run state"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT doc, seq FROM messages WHERE thread_id = $1 AND depth <= 0 ORDER BY seq", threadID)
		if err != nil {
			return err
		}
		if rs.Messages, err = collect(rows, "thread "+threadID+": messages", func(doc []byte, seq int64) (weft.Message, error) {
			return decodeMessage(doc, threadID, seq)
		}); err != nil {
			return err
		}
		if rs.Queued, err = queued(ctx, tx, threadID, 0); err != nil {
			return err
		}
		var token int64
		if err := tx.QueryRow(ctx, qAcquire, threadID, node, now.Add(ttl).UnixNano(), now.UnixNano()).Scan(&token); err != nil {
			return err
		}
		f = weft.Fence{Node: node, Token: token, ThreadID: threadID}
		return nil
	})
	if err != nil {
		return weft.Fence{}, nil, pgErr("thread "+threadID+": begin run", err)
	}
	return f, rs, nil
}
