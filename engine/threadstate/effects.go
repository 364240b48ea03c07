package threadstate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/payload"
)

// scheduleEffect stores a durable effect row (State.ScheduleEffect).
func (s effects) scheduleEffect(ctx context.Context, name string, args any, delay time.Duration) (string, error) {
	def, ok := s.e.Registry().Effect(name)
	if !ok {
		return "", fmt.Errorf("%w: %q", weft.ErrUnknownEffect, name)
	}
	if delay < 0 {
		return "", weft.Errorf(weft.EInvalid, "an effect's delay must not be negative")
	}
	var raw json.RawMessage
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return "", fmt.Errorf("effect %s arguments: %w", name, err)
		}
		raw = b
	}
	rec := &weft.EffectRecord{ThreadID: s.thread.ID, Name: name, Args: raw, RunAt: s.e.Now().UTC().Add(delay),
		MaxAttempts: max(def.MaxAttempts, 1)}
	if err := s.e.Store().ScheduleEffect(ctx, rec); err != nil {
		return "", err
	}
	s.e.EffectScheduled()
	s.emit(ctx, "effect_changed", payload.Fields{"id": rec.ID, "name": name, "status": rec.Status})
	return rec.ID, nil
}

// ScheduleEffect stores a durable effect to run after delay and returns its id.
func (s effects) ScheduleEffect(ctx context.Context, name string, args any, delay time.Duration) (string, error) {
	return s.scheduleEffect(ctx, name, args, delay)
}

// ScheduledEffects lists the thread's effects.
func (s effects) ScheduledEffects(ctx context.Context) ([]weft.EffectRecord, error) {
	return s.e.Store().Effects(ctx, s.thread.ID)
}

// CancelEffect cancels a pending effect of the thread.
func (s effects) CancelEffect(ctx context.Context, id string) error {
	// The event names the effect, as every effect_changed does.
	effects, err := s.e.Store().Effects(ctx, s.thread.ID)
	if err != nil {
		return err
	}
	name := ""
	for _, e := range effects {
		if e.ID == id {
			name = e.Name
		}
	}
	if err := s.e.Store().CancelEffect(ctx, s.thread.ID, id); err != nil {
		return err
	}
	s.emit(ctx, "effect_changed", payload.Fields{"id": id, "name": name, "status": weft.EffectCanceled})
	return nil
}
