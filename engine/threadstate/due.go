package threadstate

import (
	"context"
	"time"
)

// effectClaimTTL bounds how long a claimed effect may run before another node may take it over.
const effectClaimTTL = 5 * time.Minute

// DueEffects tells what RunDue did.
type DueEffects struct {
	// Ran counts effects run (succeeded or failed).
	Ran int
	// Threads are the threads whose effects ran, in order, without repeats; their queued messages
	// need a run.
	Threads []string
}

// RunDue claims for node the effects that are due, a batch at a time, and runs each (RunEffect)
// until none is left. Messages an effect injects or queues carry metadata.scheduled_effect; the
// caller runs the threads they were queued on.
func RunDue(ctx context.Context, e Engine, node string) (DueEffects, error) {
	var rep DueEffects
	seen := map[string]bool{}
	for {
		claimed, err := e.Store().ClaimEffects(ctx, node, 16, effectClaimTTL)
		if err != nil || len(claimed) == 0 {
			return rep, err
		}
		for _, rec := range claimed {
			RunEffect(ctx, e, rec)
			rep.Ran++
			if !seen[rec.ThreadID] {
				seen[rec.ThreadID] = true
				rep.Threads = append(rep.Threads, rec.ThreadID)
			}
		}
	}
}
