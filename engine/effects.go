package engine

import (
	"context"
	"time"

	"github.com/weft-agents/weft/engine/threadstate"
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
			threadstate.RunEffect(ctx, stateHost{e}, rec)
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
