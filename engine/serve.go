package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weft-agents/weft"
)

// ServeOptions configure Serve.
type ServeOptions struct {
	// Workers bounds the threads that wake-ups run at once (default 8). A blocking subagent runs
	// inside its parent's run and a background subagent in its own driver, outside the bound, so
	// that a parent waiting for a child never waits for a slot as well.
	Workers int
	// DrainTimeout is how long running steps get at shutdown to reach a step boundary (default
	// 10s). Runs still going then are interrupted; like runs at the boundary they keep their
	// status and resume at the next start.
	DrainTimeout time.Duration
	// Started, when set, is called once Serve has resumed the work a stopped process left
	// (RecoverAll returned) and takes new work: a server's readiness.
	Started func()
}

// errShutdown interrupts the runs still going when a shutdown's drain deadline passes.
var errShutdown = errors.New("the engine is shutting down")

// Serve runs the engine's scheduler until ctx ends. It first resumes the work a stopped process
// left (RecoverAll); from then on a message queued with Send runs at once on its thread's
// worker, effects run when due (the engine wakes when one is scheduled here), and a child's
// report or a continue (ContinueAsync) runs its thread. When ctx ends Serve stops taking work,
// lets running steps reach a boundary within DrainTimeout, interrupts the rest, and returns once
// every lease of this process is released. An idle serving engine holds no goroutine per thread
// and does nothing until woken.
func (e *Engine) Serve(ctx context.Context, o ServeOptions) error {
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 10 * time.Second
	}
	if !e.serving.CompareAndSwap(false, true) {
		return errors.New("engine: Serve is already running")
	}
	e.workers.Store(new(make(chan struct{}, o.Workers)))
	e.stopping.Store(false)
	if n, ok := e.store.(weft.Notifier); ok {
		// A store other processes share: follow their commits, and take over the work of any
		// that died. Recovery waits until the watch listens, so that a message another process
		// queues is either there for recovery to find or noticed.
		wctx, stop := context.WithCancel(ctx)
		listening, watching := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(watching)
			e.watch(wctx, n, listening)
		}()
		defer func() { stop(); <-watching }()
		select {
		case <-listening:
		case <-watching:
		case <-ctx.Done():
		case <-time.After(listenWait):
			e.log.Warn("not yet following other processes' commits; serving meanwhile", "waited", listenWait)
		}
		go e.sweepLoop(ctx)
	}
	if _, err := e.RecoverAll(ctx); err != nil && ctx.Err() == nil {
		e.serving.Store(false)
		return fmt.Errorf("recovering interrupted work: %w", err)
	}
	if o.Started != nil {
		o.Started()
	}
	e.effectsLoop(ctx)
	return e.shutdown(o.DrainTimeout)
}

// listenWait bounds how long Serve waits for the watch of other processes' commits to listen before
// it recovers work and serves anyway (the sweep then finds what a lost notice would have started).
const listenWait = 10 * time.Second

// watch follows other processes' commits: their events wake this process's subscribers of the
// thread, and their effects the effect loop. listening is closed at the first NoticeReset, when
// the watch listens.
func (e *Engine) watch(ctx context.Context, n weft.Notifier, listening chan struct{}) {
	var once sync.Once
	err := n.Watch(ctx, func(nt weft.Notice) {
		switch nt.Kind {
		case weft.NoticeEvents:
			e.subs.Poke(nt.ThreadID)
		case weft.NoticeEffect:
			e.effectScheduled()
		case weft.NoticeQueued:
			// Another process queued a message (a CLI's push, another node's API): take the
			// thread unless it runs here already; one that another process runs refuses the
			// lease at once, and that process drains its queue itself.
			e.mu.Lock()
			o, here := e.owners[nt.ThreadID]
			running := here && o.run != nil
			if here && !running {
				// A run may have started here and not be registered yet: it reads the queue once
				// it is, for a message that interrupts it (weft.IfBusyInterrupt).
				o.checkInterrupts = true
			}
			e.mu.Unlock()
			if running {
				// A run here: the message may interrupt it (weft.IfBusyInterrupt), which only
				// its queued row tells; read off the watch's goroutine.
				e.bg.Go(func() { e.interruptFromStore(ctx, nt.ThreadID) })
			}
			if !here && !e.stopping.Load() {
				e.wake(ctx, nt.ThreadID, "", &wakeKind{retries: maxLeaseRetries})
			}
		case weft.NoticeReset:
			once.Do(func() { close(listening) })
			e.subs.Poke("")
			e.effectScheduled()
		}
	})
	if err != nil && ctx.Err() == nil {
		e.log.Warn("following other processes' commits failed", "error", err)
	}
}

// sweepLoop looks, every lease TTL, for runnable threads nobody runs (sweep).
func (e *Engine) sweepLoop(ctx context.Context) {
	for {
		if err := e.clock.Sleep(ctx, e.opt.LeaseTTL); err != nil {
			return
		}
		if err := e.sweep(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("looking for abandoned threads failed", "error", err)
		}
	}
}

// sweep wakes the root threads that are running or have queued messages and that this process
// does not work on: one whose lease expired (its process died) is resumed here, and one that
// another process runs refuses the lease at once (a sweep never retries). On a shared store this
// is how a node that died has its threads taken over, without a restart.
func (e *Engine) sweep(ctx context.Context) error {
	running, _, err := e.store.Threads(ctx, weft.ThreadQuery{Status: weft.ThreadRunning, RootsOnly: true, Sort: "oldest"})
	if err != nil {
		return err
	}
	queued, _, err := e.store.Threads(ctx, weft.ThreadQuery{Queued: true, RootsOnly: true, Sort: "oldest"})
	if err != nil {
		return err
	}
	for i, list := range [][]*weft.Thread{running, queued} {
		for _, t := range list {
			e.mu.Lock()
			_, here := e.owners[t.ID]
			e.mu.Unlock()
			if here || t.Status == weft.ThreadTerminated || e.stopping.Load() {
				continue
			}
			req := &wakeKind{retries: maxLeaseRetries}
			if i == 0 {
				req.trigger = "resume"
			}
			e.wake(ctx, t.ID, rootOf(t), req)
		}
	}
	return nil
}

// effectsLoop runs due effects until ctx ends, sleeping on the engine's clock until the next one
// is due or one is scheduled.
func (e *Engine) effectsLoop(ctx context.Context) {
	for ctx.Err() == nil {
		rep, err := e.RunDueEffects(ctx)
		if err != nil && ctx.Err() == nil {
			e.log.Warn("running due effects failed", "error", err)
		}
		for _, id := range rep.Threads {
			e.wake(ctx, id, "", nil)
		}
		next, err := e.store.NextEffectAt(ctx)
		if err != nil && ctx.Err() == nil {
			e.log.Warn("reading the next effect failed", "error", err)
		}
		sleepCtx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(ctx, cancel)
		go func() {
			select {
			case <-e.effectsChanged:
				cancel()
			case <-sleepCtx.Done():
			}
		}()
		if next.IsZero() {
			<-sleepCtx.Done()
		} else if wait := next.Sub(e.clock.Now()); wait > 0 {
			_ = e.clock.Sleep(sleepCtx, wait)
		}
		cancel()
		stop()
	}
}

// effectScheduled wakes Serve's effect loop: an effect was scheduled in this process.
func (e *Engine) effectScheduled() {
	e.effectsScheduled.Add(1)
	select {
	case e.effectsChanged <- struct{}{}:
	default:
	}
}

// shutdown stops taking work, gives running steps drain to reach a boundary, interrupts the rest
// and waits for every run of this process to release its lease.
func (e *Engine) shutdown(drain time.Duration) error {
	e.stopping.Store(true)
	e.serving.Store(false)
	idle := make(chan struct{})
	go func() { e.bg.Wait(); close(idle) }()
	timer := time.NewTimer(drain)
	defer timer.Stop()
	select {
	case <-idle:
	case <-timer.C:
		e.mu.Lock()
		for _, o := range e.owners {
			if o.run != nil {
				o.run.cancel(errShutdown)
			}
		}
		e.mu.Unlock()
		<-idle
	}
	e.stopping.Store(false)
	return nil
}

// ContinueAsync asks the thread's worker to continue the thread (side "" = the side due next)
// and returns at once; the run's events reach subscribers. A terminated thread is
// weft.ErrTerminated, and a thread running now is EConflict.
func (e *Engine) ContinueAsync(ctx context.Context, threadID string, side weft.Side) error {
	t, err := e.store.Thread(ctx, threadID)
	if err != nil {
		return err
	}
	switch t.Status {
	case weft.ThreadTerminated:
		return fmt.Errorf("thread %s: %w", threadID, weft.ErrTerminated)
	case weft.ThreadRunning:
		return weft.Errorf(weft.EConflict, "thread %s is running", threadID)
	}
	e.wake(ctx, threadID, rootOf(t), &wakeKind{trigger: "continue", side: side})
	return nil
}
