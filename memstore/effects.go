package memstore

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// effects holds the effects of every thread under one mutex, so that each claim is atomic across
// all callers. active indexes the pending and processing effects, the only ones ClaimEffects and
// NextEffectAt look at.
type effects struct {
	mu       sync.Mutex
	byID     map[string]*weft.EffectRecord
	byThread map[string]map[string]struct{}
	active   map[string]struct{}
}

func (es *effects) init() {
	es.byID = map[string]*weft.EffectRecord{}
	es.byThread = map[string]map[string]struct{}{}
	es.active = map[string]struct{}{}
}

// setActive keeps e in active exactly while it is pending or processing. Caller holds mu.
func (es *effects) setActive(e *weft.EffectRecord) {
	if e.Status == weft.EffectPending || e.Status == weft.EffectProcessing {
		es.active[e.ID] = struct{}{}
	} else {
		delete(es.active, e.ID)
	}
}

// deleteThread drops a thread's effects.
func (es *effects) deleteThread(threadID string) {
	es.mu.Lock()
	defer es.mu.Unlock()
	for id := range es.byThread[threadID] {
		delete(es.byID, id)
		delete(es.active, id)
	}
	delete(es.byThread, threadID)
}

// copyEffect returns a copy of a stored effect that shares nothing with it.
func copyEffect(e *weft.EffectRecord) weft.EffectRecord {
	c := *e
	c.Args = slices.Clone(e.Args)
	c.ClaimExpiresAt = copyTime(e.ClaimExpiresAt)
	c.FinishedAt = copyTime(e.FinishedAt)
	return c
}

// ScheduleEffect stores a new effect; ID (eff_…), CreatedAt (now), RunAt (CreatedAt) and Status
// (pending) are filled when empty and written back to e. An unknown thread is ErrNotFound; Args
// must be valid JSON when set; an existing id is a conflict.
func (s *Store) ScheduleEffect(ctx context.Context, e *weft.EffectRecord) error {
	if s.closed.Load() {
		return errClosed
	}
	if err := storecontract.PrepareEffect(e, s.nowUTC()); err != nil {
		return err
	}
	th, err := s.get(e.ThreadID)
	if err != nil {
		return err
	}
	c := copyEffect(e)
	if len(c.Args) == 0 {
		c.Args = nil
	}
	es := &s.effects
	es.mu.Lock()
	defer es.mu.Unlock()
	// Checked under es.mu: DeleteThread marks the thread deleted before it drops its effects under
	// es.mu, so an effect is either refused here or dropped there.
	th.mu.RLock()
	deleted := th.deleted
	th.mu.RUnlock()
	if deleted {
		return notFound(e.ThreadID)
	}
	if _, ok := es.byID[c.ID]; ok {
		return weft.Errorf(weft.EConflict, "effect %s already exists", c.ID)
	}
	es.byID[c.ID] = &c
	ids := es.byThread[c.ThreadID]
	if ids == nil {
		ids = map[string]struct{}{}
		es.byThread[c.ThreadID] = ids
	}
	ids[c.ID] = struct{}{}
	es.setActive(&c)
	return nil
}

// ClaimEffects claims for node up to limit (no limit when limit ≤ 0) due effects, by RunAt: pending
// ones with RunAt ≤ now and processing ones whose claim expired. Each becomes processing, claimed by
// node until now + claimTTL, with one more attempt. The claims are made under one lock, so each
// effect goes to exactly one caller.
func (s *Store) ClaimEffects(ctx context.Context, node string, limit int, claimTTL time.Duration) ([]weft.EffectRecord, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	if err := storecontract.CheckClaim(node, claimTTL); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	es := &s.effects
	es.mu.Lock()
	defer es.mu.Unlock()
	now := s.nowUTC()
	var due []*weft.EffectRecord
	for id := range es.active {
		if e := es.byID[id]; storecontract.EffectDue(e, now) {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, storecontract.CompareEffects)
	if limit > 0 && len(due) > limit {
		due = due[:limit]
	}
	out := make([]weft.EffectRecord, 0, len(due))
	exp := now.Add(claimTTL)
	for _, e := range due {
		e.Status, e.ClaimedBy, e.ClaimExpiresAt = weft.EffectProcessing, node, &exp
		e.Attempts++
		es.setActive(e)
		out = append(out, copyEffect(e))
	}
	return out, nil
}

// FinishEffect records the outcome of a claimed effect: completed or failed (FinishedAt now, Error
// errText), or pending again at retryAt (now when zero) keeping errText as the last error. The
// claim is cleared. An unknown effect is ErrNotFound, one that already ended a conflict.
func (s *Store) FinishEffect(ctx context.Context, id string, status weft.EffectStatus, errText string, retryAt time.Time) error {
	if s.closed.Load() {
		return errClosed
	}
	if err := storecontract.CheckFinish(id, status); err != nil {
		return err
	}
	es := &s.effects
	es.mu.Lock()
	defer es.mu.Unlock()
	e := es.byID[id]
	if e == nil {
		return storecontract.EffectNotFound(id)
	}
	if err := storecontract.FinishConflict(id, e.Status); err != nil {
		return err
	}
	now := s.nowUTC()
	e.Status, e.Error, e.ClaimedBy, e.ClaimExpiresAt = status, errText, "", nil
	if status == weft.EffectPending {
		if retryAt.IsZero() {
			retryAt = now
		}
		e.RunAt = retryAt.UTC()
	} else {
		e.FinishedAt = &now
	}
	es.setActive(e)
	return nil
}

// CancelEffect cancels a pending effect of the thread (FinishedAt now). One no longer pending is a
// conflict naming its status; an unknown one, or one of another thread, ErrNotFound.
func (s *Store) CancelEffect(ctx context.Context, threadID, id string) error {
	if s.closed.Load() {
		return errClosed
	}
	es := &s.effects
	es.mu.Lock()
	defer es.mu.Unlock()
	e := es.byID[id]
	if e == nil || e.ThreadID != threadID {
		return storecontract.EffectNotFoundIn(threadID, id)
	}
	if e.Status != weft.EffectPending {
		return storecontract.CancelConflict(id, e.Status)
	}
	now := s.nowUTC()
	e.Status, e.FinishedAt = weft.EffectCanceled, &now
	es.setActive(e)
	return nil
}

// Effects lists a thread's effects by RunAt, then CreatedAt. An unknown thread has none.
func (s *Store) Effects(ctx context.Context, threadID string) ([]weft.EffectRecord, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	es := &s.effects
	es.mu.Lock()
	rows := make([]*weft.EffectRecord, 0, len(es.byThread[threadID]))
	for id := range es.byThread[threadID] {
		rows = append(rows, es.byID[id])
	}
	slices.SortFunc(rows, storecontract.CompareEffects)
	out := make([]weft.EffectRecord, len(rows))
	for i, e := range rows {
		out[i] = copyEffect(e)
	}
	es.mu.Unlock()
	return out, nil
}

// effectsDue returns the earliest time an effect of any thread becomes claimable (zero when none
// will).
func (s *Store) effectsDue() time.Time {
	es := &s.effects
	es.mu.Lock()
	defer es.mu.Unlock()
	var next time.Time
	for id := range es.active {
		if at := storecontract.EffectDueAt(es.byID[id]); !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

// NextEffectAt returns the earliest RunAt of the pending effects of all threads; zero when none.
func (s *Store) NextEffectAt(ctx context.Context) (time.Time, error) {
	if s.closed.Load() {
		return time.Time{}, errClosed
	}
	es := &s.effects
	es.mu.Lock()
	defer es.mu.Unlock()
	var next time.Time
	for id := range es.active {
		if e := es.byID[id]; e.Status == weft.EffectPending && (next.IsZero() || e.RunAt.Before(next)) {
			next = e.RunAt
		}
	}
	return next, nil
}
