package engine

import (
	"context"
	"errors"
	"time"

	"github.com/weft-agents/weft"
)

// Bounds of the results kept for calls whose store failed.
const (
	maxUnstored = 4096
	unstoredTTL = time.Hour
)

// unstoredResults keeps the results of tools that finished in this process while storing them
// failed (a lost database connection, a restarting database): the call's record still says
// running, and a resume in this process stores the kept result instead of answering the call as
// interrupted — a lost connection is not a lost process, and the tool must not look unfinished
// to the model, which would call it again.
// Kept by the Engine under its lock (e.mu): calls are rare, a store failure's.
// Keyed by thread and call: a call's id is the model's, and the same in many threads ("call_1").
type unstoredResults struct {
	m map[unstoredKey]unstored
	// leases are the leases kept for threads with kept results, on a store several processes
	// share (weft.RunReclaimer): the run resumes here, with the results, and not on a node that
	// would answer the calls as interrupted.
	leases map[string]weft.Fence
}

type unstoredKey struct{ thread, call string }

type unstored struct {
	res weft.ToolResult
	// notRun marks a call whose tool this process has not run, although the transaction that
	// failed may have recorded it as running.
	notRun bool
	at     time.Time
}

// keepUnstored remembers the result of a call whose store failed.
func (e *Engine) keepUnstored(threadID, callID string, res weft.ToolResult) {
	e.keep(unstoredKey{threadID, callID}, unstored{res: res})
}

// keepNotRun remembers a call whose tool has not run, marked running by a transaction that failed.
func (e *Engine) keepNotRun(threadID, callID string) {
	e.keep(unstoredKey{threadID, callID}, unstored{notRun: true})
}

func (e *Engine) keep(k unstoredKey, x unstored) {
	e.mu.Lock()
	defer e.mu.Unlock()
	u := &e.unstored
	if u.m == nil {
		u.m = map[unstoredKey]unstored{}
	}
	now := time.Now()
	if len(u.m) >= maxUnstored {
		for id, x := range u.m {
			if now.Sub(x.at) > unstoredTTL || len(u.m) >= maxUnstored {
				delete(u.m, id)
			}
		}
	}
	x.at = now
	u.m[k] = x
}

// takeUnstored returns and forgets the kept result of a call of a thread, or notRun.
func (e *Engine) takeUnstored(threadID, callID string) (_ weft.ToolResult, notRun, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := unstoredKey{threadID, callID}
	x, ok := e.unstored.m[k]
	if ok {
		delete(e.unstored.m, k)
	}
	return x.res, x.notRun, ok && time.Since(x.at) <= unstoredTTL
}

// dropNotRun forgets the thread's calls kept as not run: a run that did not start with this
// process's kept lease may follow another process's, which may have run them.
func (e *Engine) dropNotRun(threadID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, x := range e.unstored.m {
		if k.thread == threadID && x.notRun {
			delete(e.unstored.m, k)
		}
	}
}

// holdsUnstored reports whether results of the thread's calls are kept.
func (e *Engine) holdsUnstored(threadID string) bool {
	for k := range e.unstored.m {
		if k.thread == threadID {
			return true
		}
	}
	return false
}

// keepLease keeps the lease of a run that ended on an unavailable store with results of its calls
// kept, instead of giving it back, when the store lets this process take it again
// (weft.RunReclaimer): the lease is renewed as soon as the store answers, and the thread woken to
// resume here. It reports whether it kept the lease. Only a serving engine keeps it: one that
// does not (weft run) resumes nothing by itself, and its kept results end with its process, so
// its lease goes back for the next process at once.
func (e *Engine) keepLease(f weft.Fence) bool {
	if _, ok := e.store.(weft.RunReclaimer); !ok || f.Token == 0 || !e.serving.Load() {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.holdsUnstored(f.ThreadID) {
		return false
	}
	if e.unstored.leases == nil {
		e.unstored.leases = map[string]weft.Fence{}
	}
	e.unstored.leases[f.ThreadID] = f
	e.bg.Go(func() {
		// Renewed (or found lost) once the store answers; a lease that expires meanwhile may be
		// taken by another process, as a dead process's would be.
		ctx := context.Background()
		for delay := 50 * time.Millisecond; ; delay = min(2*delay, e.opt.LeaseTTL/4) {
			time.Sleep(delay)
			err := e.store.RenewLease(ctx, f, e.opt.LeaseTTL)
			if weft.Unavailable(e.store, err) && !e.stopping.Load() {
				continue
			}
			if err == nil && e.serving.Load() && !e.stopping.Load() {
				e.wake(ctx, f.ThreadID, "", &wakeKind{trigger: "resume"})
			}
			return
		}
	})
	return true
}

// beginRun starts a run of the thread: with the lease a failed run of this process kept for it
// (keepLease), else with BeginRun.
func (e *Engine) beginRun(ctx context.Context, threadID string, push *weft.QueuedMessage) (weft.Fence, *weft.RunStart, error) {
	if rr, ok := e.store.(weft.RunReclaimer); ok {
		e.mu.Lock()
		f, kept := e.unstored.leases[threadID]
		e.mu.Unlock()
		if kept && push == nil {
			fence, start, err := rr.ReclaimRun(ctx, f, e.opt.LeaseTTL)
			if !weft.Unavailable(e.store, err) {
				e.mu.Lock()
				if e.unstored.leases[threadID] == f {
					delete(e.unstored.leases, threadID)
				}
				e.mu.Unlock()
			}
			if !errors.Is(err, weft.ErrLeaseHeld) {
				return fence, start, err
			}
		}
		e.dropNotRun(threadID)
	}
	return e.store.BeginRun(ctx, threadID, e.node, e.opt.LeaseTTL, push)
}
