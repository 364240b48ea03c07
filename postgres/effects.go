package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

const (
	effectCols = `id, thread_id, name, args, run_at, status, attempts, max_attempts, claimed_by,
		claim_expires_at, error, created_at, finished_at`
	// qClaimEffects claims due rows in one statement: pending ones due by $1 and processing ones whose
	// claim expired by $1, earliest RunAt first, at most $2. SKIP LOCKED lets claimers on other nodes
	// take other rows at the same time instead of waiting for these.
	qClaimEffects = `UPDATE effects SET status = 'processing', claimed_by = $3, claim_expires_at = $4,
		attempts = attempts + 1
		WHERE id IN (SELECT id FROM effects
			WHERE (status = 'pending' AND run_at <= $1) OR (status = 'processing' AND claim_expires_at <= $1)
			ORDER BY run_at, created_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING ` + effectCols
)

// scanEffect scans a row of effectCols.
func scanEffect(row pgx.Row) (weft.EffectRecord, error) {
	var e weft.EffectRecord
	var args []byte
	var status string
	var runAt, claimExp, created, finished int64
	if err := row.Scan(&e.ID, &e.ThreadID, &e.Name, &args, &runAt, &status, &e.Attempts, &e.MaxAttempts,
		&e.ClaimedBy, &claimExp, &e.Error, &created, &finished); err != nil {
		return e, err
	}
	if len(args) > 0 {
		e.Args = args
	}
	e.Status = weft.EffectStatus(status)
	e.RunAt, e.CreatedAt = fromNanos(runAt), fromNanos(created)
	e.ClaimExpiresAt, e.FinishedAt = optTime(claimExp), optTime(finished)
	return e, nil
}

func scanEffects(rows pgx.Rows, what string) ([]weft.EffectRecord, error) {
	defer rows.Close()
	out := []weft.EffectRecord{}
	for rows.Next() {
		e, err := scanEffect(rows)
		if err != nil {
			return nil, pgErr(what, err)
		}
		out = append(out, e)
	}
	return out, pgErr(what, rows.Err())
}

// ScheduleEffect stores a new effect; ID (eff_…), CreatedAt (now), RunAt (CreatedAt) and Status
// (pending) are filled when empty and written back to e. An unknown thread is ErrNotFound; Args
// must be valid JSON when set; an existing id is a conflict. Nodes waiting for due effects are
// woken.
func (s *Store) ScheduleEffect(ctx context.Context, e *weft.EffectRecord) error {
	if err := storecontract.PrepareEffect(e, s.nowUTC()); err != nil {
		return err
	}
	var args []byte
	if len(e.Args) > 0 {
		args = e.Args
	}
	// Nodes sleeping until their next known effect are woken by the notification, sent on commit.
	_, err := s.pool.Exec(ctx, `WITH e AS (INSERT INTO effects (`+effectCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		RETURNING id) SELECT pg_notify('`+channelEffects+`', '') FROM e`,
		e.ID, e.ThreadID, text(e.Name), args, nanos(e.RunAt), string(e.Status), e.Attempts, e.MaxAttempts, text(e.ClaimedBy),
		optNanos(e.ClaimExpiresAt), text(e.Error), nanos(e.CreatedAt), optNanos(e.FinishedAt))
	switch {
	case isCode(err, uniqueViolation):
		return weft.Errorf(weft.EConflict, "effect %s already exists", e.ID)
	case isCode(err, foreignKeyViolation):
		return threadNotFound(e.ThreadID)
	case err != nil:
		return pgErr("thread "+e.ThreadID+": schedule effect", err)
	}
	return nil
}

// ClaimEffects claims for node up to limit (no limit when limit ≤ 0) due effects, by RunAt: pending
// ones with RunAt ≤ now and processing ones whose claim expired. Each becomes processing, claimed by
// node until now + claimTTL, with one more attempt; each goes to exactly one claimer, across nodes.
func (s *Store) ClaimEffects(ctx context.Context, node string, limit int, claimTTL time.Duration) ([]weft.EffectRecord, error) {
	if err := storecontract.CheckClaim(node, claimTTL); err != nil {
		return nil, err
	}
	var lim any = limit
	if limit <= 0 {
		lim = nil // LIMIT NULL: no limit
	}
	now := s.now()
	rows, err := s.pool.Query(ctx, qClaimEffects, now.UnixNano(), lim, text(node), now.Add(claimTTL).UnixNano())
	if err != nil {
		return nil, pgErr("claim effects", err)
	}
	out, err := scanEffects(rows, "claim effects")
	if err != nil {
		return nil, err
	}
	// RETURNING rows come in no particular order.
	slices.SortFunc(out, func(a, b weft.EffectRecord) int { return storecontract.CompareEffects(&a, &b) })
	return out, nil
}

// effectStatus reads and locks an effect's row inside tx; ErrNotFound when unknown.
func effectStatus(ctx context.Context, tx pgx.Tx, id string) (threadID string, status weft.EffectStatus, err error) {
	var st string
	err = tx.QueryRow(ctx, "SELECT thread_id, status FROM effects WHERE id = $1 FOR UPDATE", id).Scan(&threadID, &st)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", storecontract.EffectNotFound(id)
	}
	return threadID, weft.EffectStatus(st), err
}

// FinishEffect records the outcome of a claimed effect: completed or failed (FinishedAt now, Error
// errText), or pending again at retryAt (now when zero) keeping errText as the last error. The
// claim is cleared. An unknown effect is ErrNotFound, one that already ended a conflict.
func (s *Store) FinishEffect(ctx context.Context, id string, status weft.EffectStatus, errText string, retryAt time.Time) error {
	if err := storecontract.CheckFinish(id, status); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, cur, err := effectStatus(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := storecontract.FinishConflict(id, cur); err != nil {
			return err
		}
		now := s.now()
		if status == weft.EffectPending {
			if retryAt.IsZero() {
				retryAt = now
			}
			_, err = tx.Exec(ctx, `UPDATE effects SET status = 'pending', error = $2, claimed_by = '', claim_expires_at = 0,
				run_at = $3 WHERE id = $1`, id, text(errText), nanos(retryAt))
			if err == nil {
				_, err = tx.Exec(ctx, "SELECT pg_notify('"+channelEffects+"', '')")
			}
		} else {
			_, err = tx.Exec(ctx, `UPDATE effects SET status = $2, error = $3, claimed_by = '', claim_expires_at = 0,
				finished_at = $4 WHERE id = $1`, id, string(status), text(errText), now.UnixNano())
		}
		return err
	})
	return pgErr("effect "+id+": finish", err)
}

// CancelEffect cancels a pending effect of the thread (FinishedAt now). One no longer pending is a
// conflict naming its status; an unknown one, or one of another thread, ErrNotFound.
func (s *Store) CancelEffect(ctx context.Context, threadID, id string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tid, cur, err := effectStatus(ctx, tx, id)
		if err != nil || tid != threadID {
			if err == nil || errors.Is(err, weft.ErrNotFound) {
				return storecontract.EffectNotFoundIn(threadID, id)
			}
			return err
		}
		if cur != weft.EffectPending {
			return storecontract.CancelConflict(id, cur)
		}
		_, err = tx.Exec(ctx, "UPDATE effects SET status = 'canceled', finished_at = $2 WHERE id = $1", id, s.now().UnixNano())
		return err
	})
	return pgErr("effect "+id+": cancel", err)
}

// Effects lists a thread's effects by RunAt, then CreatedAt. An unknown thread has none.
func (s *Store) Effects(ctx context.Context, threadID string) ([]weft.EffectRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+effectCols+` FROM effects WHERE thread_id = $1 ORDER BY run_at, created_at, id`, threadID)
	if err != nil {
		return nil, pgErr("thread "+threadID+": effects", err)
	}
	return scanEffects(rows, "thread "+threadID+": effects")
}

// NextEffectAt returns the earliest RunAt of the pending effects of all threads; zero when none.
func (s *Store) NextEffectAt(ctx context.Context) (time.Time, error) {
	var n int64
	err := s.pool.QueryRow(ctx, "SELECT run_at FROM effects WHERE status = 'pending' ORDER BY run_at LIMIT 1").Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, pgErr("next effect", err)
	}
	return fromNanos(n), nil
}
