package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// Effect statements (migrations/0002_effects.sql).
const (
	effectCols = `id, thread_id, name, args, run_at, status, attempts, max_attempts, claimed_by,
		claim_expires_at, error, created_at, finished_at`
	qInsertEffect = `INSERT INTO effects (` + effectCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// qClaimEffects claims the due rows in one statement: pending ones due by ?1 and processing ones
	// whose claim expired by ?1, earliest RunAt first, at most ?2 (no limit when negative).
	qClaimEffects = `UPDATE effects SET status = 'processing', claimed_by = ?3, claim_expires_at = ?4,
		attempts = attempts + 1
		WHERE id IN (SELECT id FROM effects
			WHERE (status = 'pending' AND run_at <= ?1) OR (status = 'processing' AND claim_expires_at <= ?1)
			ORDER BY run_at, created_at, id LIMIT ?2)
		RETURNING ` + effectCols
	qEffectStatus  = `SELECT thread_id, status FROM effects WHERE id = ?`
	qFinishEffect  = `UPDATE effects SET status = ?2, error = ?3, claimed_by = '', claim_expires_at = 0, finished_at = ?4 WHERE id = ?1`
	qRetryEffect   = `UPDATE effects SET status = 'pending', error = ?2, claimed_by = '', claim_expires_at = 0, run_at = ?3 WHERE id = ?1`
	qCancelEffect  = `UPDATE effects SET status = 'canceled', finished_at = ?2 WHERE id = ?1`
	qThreadEffects = `SELECT ` + effectCols + ` FROM effects WHERE thread_id = ? ORDER BY run_at, created_at, id`
	qNextEffect    = `SELECT run_at FROM effects WHERE status = 'pending' ORDER BY run_at LIMIT 1`
	// qClaimable tells whether ClaimEffects would claim anything: each branch reads its own
	// partial index.
	qClaimable = `SELECT EXISTS (SELECT 1 FROM effects WHERE status = 'pending' AND run_at <= ?1)
		OR EXISTS (SELECT 1 FROM effects WHERE status = 'processing' AND claim_expires_at <= ?1)`
)

// scanEffect scans a row of effectCols.
func scanEffect(sc scanner) (weft.EffectRecord, error) {
	var e weft.EffectRecord
	var args, status string
	var runAt, claimExp, created, finished int64
	if err := sc.Scan(&e.ID, &e.ThreadID, &e.Name, &args, &runAt, &status, &e.Attempts, &e.MaxAttempts,
		&e.ClaimedBy, &claimExp, &e.Error, &created, &finished); err != nil {
		return e, err
	}
	if args != "" {
		e.Args = []byte(args)
	}
	e.Status = weft.EffectStatus(status)
	e.RunAt, e.CreatedAt = fromNanos(runAt), fromNanos(created)
	if claimExp != 0 {
		t := fromNanos(claimExp)
		e.ClaimExpiresAt = &t
	}
	if finished != 0 {
		t := fromNanos(finished)
		e.FinishedAt = &t
	}
	return e, nil
}

func optNanos(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return nanos(*t)
}

// ScheduleEffect stores a new effect; ID (eff_…), CreatedAt (now), RunAt (CreatedAt) and Status
// (pending) are filled when empty and written back to e. An unknown thread is ErrNotFound; Args
// must be valid JSON when set; an existing id is a conflict.
func (s *Store) ScheduleEffect(ctx context.Context, e *weft.EffectRecord) error {
	if err := storecontract.PrepareEffect(e, s.now().UTC()); err != nil {
		return err
	}
	return s.write(ctx, func(w *writer) error {
		var one int
		if err := w.row(ctx, qThreadExists, []any{&one}, e.ThreadID); err != nil {
			return s.noThread(e.ThreadID, err)
		}
		_, err := w.exec(ctx, qInsertEffect, e.ID, e.ThreadID, e.Name, string(e.Args), nanos(e.RunAt), string(e.Status),
			e.Attempts, e.MaxAttempts, e.ClaimedBy, optNanos(e.ClaimExpiresAt), e.Error, nanos(e.CreatedAt), optNanos(e.FinishedAt))
		switch {
		case isConstraint(err, "UNIQUE"), isConstraint(err, "PRIMARY KEY"):
			return weft.Errorf(weft.EConflict, "effect %s already exists", e.ID)
		case err != nil:
			return fmt.Errorf("sqlite: thread %s: schedule effect: %w", e.ThreadID, err)
		}
		return nil
	})
}

// ClaimEffects claims for node up to limit (no limit when limit ≤ 0) due effects, by RunAt: pending
// ones with RunAt ≤ now and processing ones whose claim expired. Each becomes processing, claimed by
// node until now + claimTTL, with one more attempt. The claim is one statement in one BEGIN
// IMMEDIATE transaction, so each effect goes to exactly one caller, across processes too.
func (s *Store) ClaimEffects(ctx context.Context, node string, limit int, claimTTL time.Duration) ([]weft.EffectRecord, error) {
	if err := storecontract.CheckClaim(node, claimTTL); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = -1
	}
	// Most calls find nothing due (every conversation's end asks): a read answers them without
	// taking the write connection. What it misses, the next call claims.
	row, err := s.rowOf(ctx, qClaimable, s.now().UnixNano())
	if err != nil {
		return nil, err
	}
	var due bool
	if err := row.Scan(&due); err != nil {
		return nil, fmt.Errorf("sqlite: claim effects: %w", err)
	}
	if !due {
		return []weft.EffectRecord{}, nil
	}
	var out []weft.EffectRecord
	err = s.write(ctx, func(w *writer) error {
		out = out[:0]
		now := s.now()
		rows, err := w.query(ctx, qClaimEffects, now.UnixNano(), limit, node, now.Add(claimTTL).UnixNano())
		if err != nil {
			return fmt.Errorf("sqlite: claim effects: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			e, err := scanEffect(rows)
			if err != nil {
				return fmt.Errorf("sqlite: claim effects: %w", err)
			}
			out = append(out, e)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: claim effects: %w", err)
		}
		return rows.Close()
	})
	if err != nil {
		return nil, err
	}
	// RETURNING rows come in no particular order.
	slices.SortFunc(out, func(a, b weft.EffectRecord) int { return storecontract.CompareEffects(&a, &b) })
	if out == nil {
		out = []weft.EffectRecord{}
	}
	return out, nil
}

// effectStatus reads an effect's thread and status inside a write; ErrNotFound when unknown.
func effectStatus(ctx context.Context, w *writer, id string) (threadID string, status weft.EffectStatus, err error) {
	var st string
	if err := w.row(ctx, qEffectStatus, []any{&threadID, &st}, id); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return "", "", storecontract.EffectNotFound(id)
		}
		return "", "", fmt.Errorf("sqlite: effect %s: %w", id, err)
	}
	return threadID, weft.EffectStatus(st), nil
}

// FinishEffect records the outcome of a claimed effect: completed or failed (FinishedAt now, Error
// errText), or pending again at retryAt (now when zero) keeping errText as the last error. The
// claim is cleared. An unknown effect is ErrNotFound, one that already ended a conflict.
func (s *Store) FinishEffect(ctx context.Context, id string, status weft.EffectStatus, errText string, retryAt time.Time) error {
	if err := storecontract.CheckFinish(id, status); err != nil {
		return err
	}
	return s.write(ctx, func(w *writer) error {
		_, cur, err := effectStatus(ctx, w, id)
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
			_, err = w.exec(ctx, qRetryEffect, id, errText, nanos(retryAt))
		} else {
			_, err = w.exec(ctx, qFinishEffect, id, string(status), errText, now.UnixNano())
		}
		if err != nil {
			return fmt.Errorf("sqlite: effect %s: finish: %w", id, err)
		}
		return nil
	})
}

// CancelEffect cancels a pending effect of the thread (FinishedAt now). One no longer pending is a
// conflict naming its status; an unknown one, or one of another thread, ErrNotFound.
func (s *Store) CancelEffect(ctx context.Context, threadID, id string) error {
	return s.write(ctx, func(w *writer) error {
		tid, cur, err := effectStatus(ctx, w, id)
		if err != nil || tid != threadID {
			if err == nil || errors.Is(err, weft.ErrNotFound) {
				return storecontract.EffectNotFoundIn(threadID, id)
			}
			return err
		}
		if cur != weft.EffectPending {
			return storecontract.CancelConflict(id, cur)
		}
		if _, err := w.exec(ctx, qCancelEffect, id, s.now().UnixNano()); err != nil {
			return fmt.Errorf("sqlite: effect %s: cancel: %w", id, err)
		}
		return nil
	})
}

// Effects lists a thread's effects by RunAt, then CreatedAt. An unknown thread has none.
func (s *Store) Effects(ctx context.Context, threadID string) ([]weft.EffectRecord, error) {
	rows, err := s.query(ctx, qThreadEffects, threadID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: effects: %w", threadID, err)
	}
	defer rows.Close()
	out := []weft.EffectRecord{}
	for rows.Next() {
		e, err := scanEffect(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: effects: %w", threadID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: effects: %w", threadID, err)
	}
	return out, nil
}

// NextEffectAt returns the earliest RunAt of the pending effects of all threads (one index
// lookup); zero when none.
func (s *Store) NextEffectAt(ctx context.Context) (time.Time, error) {
	var n int64
	err := s.row(ctx, qNextEffect, []any{&n})
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: next effect: %w", err)
	}
	return fromNanos(n), nil
}
