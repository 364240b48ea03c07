package storecontract

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/weft-agents/weft"
)

// PrepareEffect checks an effect handed to ScheduleEffect and fills its defaults, written back to
// e: ThreadID and Name are required, Args (when set) must be valid JSON, an empty ID gets a new
// eff_ id, an empty Status is pending, a zero CreatedAt is now and a zero RunAt is CreatedAt (due at
// once); times are made UTC. Whether the thread exists is the store's to check.
func PrepareEffect(e *weft.EffectRecord, now time.Time) error {
	if e.ThreadID == "" {
		return weft.Errorf(weft.EInvalid, "effect %s: thread id is required", e.ID)
	}
	if e.Name == "" {
		return weft.Errorf(weft.EInvalid, "thread %s: effect %s: name is required", e.ThreadID, e.ID)
	}
	if len(e.Args) > 0 && !json.Valid(e.Args) {
		return weft.Errorf(weft.EInvalid, "thread %s: effect %s: args are not valid JSON", e.ThreadID, e.Name)
	}
	switch e.Status {
	case "":
		e.Status = weft.EffectPending
	case weft.EffectPending, weft.EffectProcessing, weft.EffectCompleted, weft.EffectFailed, weft.EffectCanceled:
	default:
		return weft.Errorf(weft.EInvalid, "thread %s: effect %s: unknown status %q", e.ThreadID, e.Name, e.Status)
	}
	if e.ID == "" {
		e.ID = weft.NewID("eff_")
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
	e.CreatedAt = e.CreatedAt.UTC()
	if e.RunAt.IsZero() {
		e.RunAt = e.CreatedAt
	}
	e.RunAt = e.RunAt.UTC()
	return nil
}

// CheckClaim validates the arguments of ClaimEffects: a node name and a positive claim TTL.
func CheckClaim(node string, claimTTL time.Duration) error {
	if node == "" {
		return weft.Errorf(weft.EInvalid, "claim effects: node is required")
	}
	if claimTTL <= 0 {
		return weft.Errorf(weft.EInvalid, "claim effects: claim TTL must be positive, got %s", claimTTL)
	}
	return nil
}

// EffectDue reports whether ClaimEffects may claim e at now: pending and due, or processing with an
// expired claim (its node is presumed dead).
func EffectDue(e *weft.EffectRecord, now time.Time) bool {
	switch e.Status {
	case weft.EffectPending:
		return !e.RunAt.After(now)
	case weft.EffectProcessing:
		return e.ClaimExpiresAt == nil || !e.ClaimExpiresAt.After(now)
	}
	return false
}

// EffectDueAt returns when e becomes claimable (EffectDue): a pending effect at its RunAt, a
// processing one when its claim expires; zero when it never does (it ended).
func EffectDueAt(e *weft.EffectRecord) time.Time {
	switch e.Status {
	case weft.EffectPending:
		return e.RunAt
	case weft.EffectProcessing:
		if e.ClaimExpiresAt == nil {
			return time.Unix(0, 0).UTC()
		}
		return *e.ClaimExpiresAt
	}
	return time.Time{}
}

// CompareEffects orders effects by RunAt, then CreatedAt, then ID: the order of Effects and of
// the claims of ClaimEffects.
func CompareEffects(a, b *weft.EffectRecord) int {
	return cmp.Or(a.RunAt.Compare(b.RunAt), a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
}

// CheckFinish validates the outcome handed to FinishEffect: completed, failed or pending (a retry).
func CheckFinish(id string, status weft.EffectStatus) error {
	switch status {
	case weft.EffectCompleted, weft.EffectFailed, weft.EffectPending:
		return nil
	}
	return weft.Errorf(weft.EInvalid, "effect %s: cannot finish with status %q (want completed, failed or pending)", id, status)
}

// FinishConflict is the error of FinishEffect on an effect that already ended (completed, failed or
// canceled); nil for a pending or processing one.
func FinishConflict(id string, cur weft.EffectStatus) error {
	switch cur {
	case weft.EffectCompleted, weft.EffectFailed, weft.EffectCanceled:
		return weft.Errorf(weft.EConflict, "effect %s is already %s", id, cur)
	}
	return nil
}

// CancelConflict is the error of CancelEffect on an effect that is no longer pending.
func CancelConflict(id string, cur weft.EffectStatus) error {
	return weft.Errorf(weft.EConflict, "effect %s is %s, only a pending effect can be canceled", id, cur)
}

// EffectNotFound is the ErrNotFound of an unknown effect.
func EffectNotFound(id string) error {
	return fmt.Errorf("effect %s: %w", id, weft.ErrNotFound)
}

// EffectNotFoundIn is the ErrNotFound of an effect unknown in a thread.
func EffectNotFoundIn(threadID, id string) error {
	return fmt.Errorf("thread %s: effect %s: %w", threadID, id, weft.ErrNotFound)
}
