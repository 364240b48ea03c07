// Package lease keeps a run's lease on its thread: only one run of a thread happens at a time
// cluster-wide, the one whose process holds the thread's lease (weft.Fence) and renews it before
// it ends. A Renewal renews it on a timer, with no goroutine while it waits; losing the lease
// cancels the run, and a store that is briefly unavailable is tried again while the lease lasts.
package lease

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/weft-agents/weft"
)

// Renewer renews the leases of a store's threads.
type Renewer struct {
	// Store holds the leases.
	Store weft.Store
	// TTL is how long a lease lasts between renewals.
	TTL time.Duration
}

// Renewal is a run's lease renewal: one allocation, whose methods are the timer's callback and
// the stop.
type Renewal struct {
	by     *Renewer
	ctx    context.Context
	f      weft.Fence
	cancel context.CancelCauseFunc

	stopped atomic.Bool
	t       *time.Timer
	// expires is when the lease ends unless renewed, by this process's clock: only the timer's
	// callback reads and writes it.
	expires time.Time
}

// Renew renews the lease f every TTL/3 until Stop; losing the lease cancels ctx's run with
// cancel (cause weft.ErrLeaseLost).
func (r *Renewer) Renew(ctx context.Context, f weft.Fence, cancel context.CancelCauseFunc) *Renewal {
	l := &Renewal{by: r, ctx: ctx, f: f, cancel: cancel, expires: time.Now().Add(r.TTL)}
	// Armed once l.t is set: with a short TTL the timer could fire before AfterFunc returned, and
	// renew resets l.t.
	l.t = time.AfterFunc(math.MaxInt64, l.renew)
	l.t.Reset(r.TTL / 3)
	return l
}

func (l *Renewal) renew() {
	if l.ctx.Err() != nil {
		return
	}
	ttl := l.by.TTL
	start := time.Now()
	next := ttl / 3
	if err := l.by.Store.RenewLease(l.ctx, l.f, ttl); err != nil {
		// An unavailable store (a lost connection, a database restarting) is not a lost lease:
		// while the lease lasts, the renewal is tried again soon, and the run — a tool perhaps
		// in the middle of its work — goes on. Past the lease's end, another process may take
		// the thread: the run stops.
		left := time.Until(l.expires)
		if l.ctx.Err() == nil && (!weft.Unavailable(l.by.Store, err) || left < ttl/10) {
			l.cancel(fmt.Errorf("%w: %v", weft.ErrLeaseLost, err))
			return
		}
		next = min(100*time.Millisecond, left/4)
	} else {
		l.expires = start.Add(ttl)
	}
	if !l.stopped.Load() {
		l.t.Reset(next)
		if l.stopped.Load() {
			l.t.Stop() // Stop ran meanwhile: its t.Stop may have come before this Reset
		}
	}
}

// Stop ends the renewal: the timer does not fire again (a renewal under way finishes).
func (l *Renewal) Stop() {
	l.stopped.Store(true)
	l.t.Stop()
}
