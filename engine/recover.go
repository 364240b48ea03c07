package engine

import (
	"context"

	"github.com/weft-agents/weft/engine/sched"
)

// Recovered says what RecoverAll found and started.
type Recovered = sched.Recovered

// RecoverAll resumes the work a stopped process left in the store, as a long-lived process (a
// server, a worker) does at start (engine/sched's Recovery): every interrupted run — a thread
// whose status says running without a live lease — is resumed, every idle thread with queued
// messages runs, and the subagent tree of each such thread's root is recovered (Recover). Threads
// that another live process is running are left to it. Runs start in the background; Wait waits
// for them.
func (e *Engine) RecoverAll(ctx context.Context) (*Recovered, error) {
	return sched.Recovery{Scheduler: &e.sched, Tree: e.subagents.Recover}.All(ctx)
}

// Recover picks up, after a restart, the subagents of a thread's tree that report on their own
// (engine/children's Room.Recover): children whose runs a crash interrupted are driven again, and
// stops whose report was lost are reported now.
func (e *Engine) Recover(ctx context.Context, threadID string) error {
	return e.subagents.Recover(ctx, threadID)
}
