package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
)

// effectClaimTTL bounds how long a claimed effect may run before another node may take it over.
const effectClaimTTL = 5 * time.Minute

// EffectReport tells what RunDueEffects did.
type EffectReport struct {
	// Ran counts effects run (succeeded or failed).
	Ran int
	// Threads are the threads whose effects ran, in order, without repeats; their queued messages
	// need a run.
	Threads []string
}

// RunDueEffects claims the effects that are due and runs them: arguments are
// validated first (a failure is recorded, never retried); a failing run is retried only when the
// effect allows several attempts, with backoff. Messages an effect injects or queues carry
// metadata.scheduled_effect.
func (e *Engine) RunDueEffects(ctx context.Context) (EffectReport, error) {
	var rep EffectReport
	seen := map[string]bool{}
	for {
		claimed, err := e.store.ClaimEffects(ctx, e.node, 16, effectClaimTTL)
		if err != nil || len(claimed) == 0 {
			return rep, err
		}
		for _, rec := range claimed {
			e.runEffect(ctx, rec)
			rep.Ran++
			if !seen[rec.ThreadID] {
				seen[rec.ThreadID] = true
				rep.Threads = append(rep.Threads, rec.ThreadID)
			}
		}
	}
}

// NextEffectAt returns when the earliest pending effect is due (zero when none).
func (e *Engine) NextEffectAt(ctx context.Context) (time.Time, error) {
	return e.store.NextEffectAt(ctx)
}

func (e *Engine) runEffect(ctx context.Context, rec weft.EffectRecord) {
	finish := func(status weft.EffectStatus, text string, retryAt time.Time) {
		if err := e.store.FinishEffect(context.WithoutCancel(ctx), rec.ID, status, text, retryAt); err != nil {
			e.log.Warn("recording an effect's outcome failed", "effect", rec.ID, "error", err)
		}
		e.emitOutside(ctx, Event{Type: "effect_changed", ThreadID: rec.ThreadID, Data: Fields{"id": rec.ID, "name": rec.Name, "status": status}})
	}
	def, ok := e.reg.Effect(rec.Name)
	if !ok {
		finish(weft.EffectFailed, fmt.Sprintf("no effect named %q", rec.Name), time.Time{})
		return
	}
	if limit := max(def.MaxAttempts, 1); rec.Attempts > limit {
		// An expired claim (a node died running it) counts as an attempt.
		finish(weft.EffectFailed, fmt.Sprintf("interrupted: the effect was claimed %d times and allows %d attempts", rec.Attempts, limit), time.Time{})
		return
	}
	args := rec.Args
	if def.Args != nil {
		var raw any
		if len(args) > 0 {
			if err := json.Unmarshal(args, &raw); err != nil {
				finish(weft.EffectFailed, "Effect arguments are not valid JSON: "+err.Error(), time.Time{})
				return
			}
		}
		if raw == nil {
			raw = map[string]any{}
		}
		v, err := e.validator(def.Args)
		if err == nil {
			var out any
			if out, err = v.Validate(raw); err == nil {
				args, _ = json.Marshal(out)
			}
		}
		if err != nil {
			finish(weft.EffectFailed, "Effect argument validation failed: "+err.Error(), time.Time{})
			return
		}
	}
	t, err := e.store.Thread(ctx, rec.ThreadID)
	if err != nil {
		finish(weft.EffectFailed, err.Error(), time.Time{})
		return
	}
	st := newState(stateCore{e: e, thread: t, ctx: ctx, effect: &rec})
	err = hooks.Call(func() error { return def.Run(ctx, st, args) })
	if err == nil {
		finish(weft.EffectCompleted, "", time.Time{})
		return
	}
	red := e.threadRedactor(ctx, t.ID).String
	if def.MaxAttempts > 1 && rec.Attempts < def.MaxAttempts {
		backoff := time.Duration(1<<min(rec.Attempts-1, 10)) * time.Second
		finish(weft.EffectPending, red(err.Error()), e.clock.Now().Add(backoff))
		return
	}
	finish(weft.EffectFailed, red(err.Error()), time.Time{})
}

// scheduleEffect stores a durable effect row (State.ScheduleEffect).
func (s stateEffects) scheduleEffect(ctx context.Context, name string, args any, delay time.Duration) (string, error) {
	def, ok := s.e.reg.Effect(name)
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
	rec := &weft.EffectRecord{ThreadID: s.thread.ID, Name: name, Args: raw, RunAt: s.e.clock.Now().UTC().Add(delay),
		MaxAttempts: max(def.MaxAttempts, 1)}
	if err := s.e.store.ScheduleEffect(ctx, rec); err != nil {
		return "", err
	}
	s.e.sched.EffectScheduled()
	s.emit(ctx, "effect_changed", Fields{"id": rec.ID, "name": name, "status": rec.Status})
	return rec.ID, nil
}

// ScheduleEffect stores a durable effect to run after delay and returns its id.
func (s stateEffects) ScheduleEffect(ctx context.Context, name string, args any, delay time.Duration) (string, error) {
	return s.scheduleEffect(ctx, name, args, delay)
}

// ScheduledEffects lists the thread's effects.
func (s stateEffects) ScheduledEffects(ctx context.Context) ([]weft.EffectRecord, error) {
	return s.e.store.Effects(ctx, s.thread.ID)
}

// CancelEffect cancels a pending effect of the thread.
func (s stateEffects) CancelEffect(ctx context.Context, id string) error {
	// The event names the effect, as every effect_changed does.
	effects, err := s.e.store.Effects(ctx, s.thread.ID)
	if err != nil {
		return err
	}
	name := ""
	for _, e := range effects {
		if e.ID == id {
			name = e.Name
		}
	}
	if err := s.e.store.CancelEffect(ctx, s.thread.ID, id); err != nil {
		return err
	}
	s.emit(ctx, "effect_changed", Fields{"id": id, "name": name, "status": weft.EffectCanceled})
	return nil
}
