package engine

import (
	"context"

	"github.com/weft-agents/weft/engine/threadstate"
)

// EffectReport tells what RunDueEffects did: the effects run and the threads they ran on.
type EffectReport = threadstate.DueEffects

// RunDueEffects claims the effects that are due and runs them (engine/threadstate.RunDue):
// arguments are validated first (a failure is recorded, never retried); a failing run is retried
// only when the effect allows several attempts, with backoff. Messages an effect injects or queues
// carry metadata.scheduled_effect.
func (e *Engine) RunDueEffects(ctx context.Context) (EffectReport, error) {
	return threadstate.RunDue(ctx, stateHost{e}, e.node)
}
