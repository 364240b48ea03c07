package sched

import (
	"context"
	"errors"
	"time"

	"github.com/weft-agents/weft"
)

// Bounds of the results kept for calls whose store failed.
const (
	maxKept = 4096
	keptTTL = time.Hour
)

// keptResults keeps the results of tools that finished in this process while storing them failed
// (a lost database connection, a restarting database): the call's record still says running, and
// a resume in this process stores the kept result instead of answering the call as interrupted —
// a lost connection is not a lost process, and the tool must not look unfinished to the model,
// which would call it again. Guarded by the scheduler's lock: calls are rare, a store failure's.
// Keyed by thread and call: a call's id is the model's, and the same in many threads ("call_1").
type keptResults struct {
	// m holds the kept results.
	m map[keptKey]kept
	// leases are the leases kept for threads with kept results, on a store several processes
	// share (weft.RunReclaimer): the run resumes here, with the results, and not on a node that
	// would answer the calls as interrupted.
	leases map[string]weft.Fence
}

// keptKey names a call of a thread.
type keptKey struct {
	// thread is the thread's id.
	thread string
	// call is the call's id, as the model gave it.
	call string
}

// kept is what is kept of a call.
type kept struct {
	// res is the tool's result.
	res weft.ToolResult
	// notRun marks a call whose tool this process has not run, although the transaction that
	// failed may have recorded it as running.
	notRun bool
	// at is when it was kept.
	at time.Time
}

// KeepResult remembers the result of a call whose store failed.
func (s *Scheduler) KeepResult(threadID, callID string, res weft.ToolResult) {
	s.mu.Lock()
	s.kept.keep(keptKey{threadID, callID}, kept{res: res})
	s.mu.Unlock()
}

// KeepNotRun remembers a call whose tool has not run, marked running by a transaction that failed.
func (s *Scheduler) KeepNotRun(threadID, callID string) {
	s.mu.Lock()
	s.kept.keep(keptKey{threadID, callID}, kept{notRun: true})
	s.mu.Unlock()
}

// keep adds a call's kept result, dropping expired ones when full; the caller holds the
// scheduler's lock.
func (u *keptResults) keep(k keptKey, x kept) {
	if u.m == nil {
		u.m = map[keptKey]kept{}
	}
	now := time.Now()
	if len(u.m) >= maxKept {
		for id, x := range u.m {
			if now.Sub(x.at) > keptTTL || len(u.m) >= maxKept {
				delete(u.m, id)
			}
		}
	}
	x.at = now
	u.m[k] = x
}

// TakeResult returns and forgets the kept result of a call of a thread, or notRun.
func (s *Scheduler) TakeResult(threadID, callID string) (_ weft.ToolResult, notRun, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := keptKey{threadID, callID}
	x, ok := s.kept.m[k]
	if ok {
		delete(s.kept.m, k)
	}
	return x.res, x.notRun, ok && time.Since(x.at) <= keptTTL
}

// dropNotRun forgets the thread's calls kept as not run: a run that did not start with this
// process's kept lease may follow another process's, which may have run them. The caller holds
// the scheduler's lock.
func (u *keptResults) dropNotRun(threadID string) {
	for k, x := range u.m {
		if k.thread == threadID && x.notRun {
			delete(u.m, k)
		}
	}
}

// holds reports whether results of the thread's calls are kept; the caller holds the scheduler's
// lock.
func (u *keptResults) holds(threadID string) bool {
	for k := range u.m {
		if k.thread == threadID {
			return true
		}
	}
	return false
}

// KeepLease keeps the lease of a run that ended on an unavailable store with results of its calls
// kept, instead of giving it back, when the store lets this process take it again
// (weft.RunReclaimer): the lease is renewed as soon as the store answers, and the thread woken to
// resume here. It reports whether it kept the lease. Only a serving engine keeps it: one that
// does not (weft run) resumes nothing by itself, and its kept results end with its process, so
// its lease goes back for the next process at once.
func (s *Scheduler) KeepLease(f weft.Fence) bool {
	store := s.cfg.Store
	if _, ok := store.(weft.RunReclaimer); !ok || f.Token == 0 || !s.serving.Load() {
		return false
	}
	s.mu.Lock()
	if !s.kept.holds(f.ThreadID) {
		s.mu.Unlock()
		return false
	}
	if s.kept.leases == nil {
		s.kept.leases = map[string]weft.Fence{}
	}
	s.kept.leases[f.ThreadID] = f
	s.mu.Unlock()
	s.Go(func() {
		// Renewed (or found lost) once the store answers; a lease that expires meanwhile may be
		// taken by another process, as a dead process's would be.
		ctx := context.Background()
		for delay := 50 * time.Millisecond; ; delay = min(2*delay, s.cfg.LeaseTTL/4) {
			time.Sleep(delay)
			err := store.RenewLease(ctx, f, s.cfg.LeaseTTL)
			if weft.Unavailable(store, err) && !s.stopping.Load() {
				continue
			}
			if err == nil && s.serving.Load() && !s.stopping.Load() {
				s.Resume(ctx, f.ThreadID, "")
			}
			return
		}
	})
	return true
}

// BeginRun starts a run of the thread: with the lease a failed run of this process kept for it
// (KeepLease), else with the store's BeginRun, whose transaction queues push when not nil.
func (s *Scheduler) BeginRun(ctx context.Context, threadID string, push *weft.QueuedMessage) (weft.Fence, *weft.RunStart, error) {
	store := s.cfg.Store
	if rr, ok := store.(weft.RunReclaimer); ok {
		s.mu.Lock()
		f, kept := s.kept.leases[threadID]
		s.mu.Unlock()
		if kept && push == nil {
			fence, start, err := rr.ReclaimRun(ctx, f, s.cfg.LeaseTTL)
			if !weft.Unavailable(store, err) {
				s.mu.Lock()
				if s.kept.leases[threadID] == f {
					delete(s.kept.leases, threadID)
				}
				s.mu.Unlock()
			}
			if !errors.Is(err, weft.ErrLeaseHeld) {
				return fence, start, err
			}
		}
		s.mu.Lock()
		s.kept.dropNotRun(threadID)
		s.mu.Unlock()
	}
	return store.BeginRun(ctx, threadID, s.cfg.Node, s.cfg.LeaseTTL, push)
}
