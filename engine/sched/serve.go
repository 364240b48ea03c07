package sched

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

// ErrShutdown interrupts the runs still going when a shutdown's drain deadline passes.
var ErrShutdown = errors.New("the engine is shutting down")

// Serving tells whether Serve runs: wake-ups then start workers.
func (s *Scheduler) Serving() bool { return s.serving.Load() }

// Stopping tells whether Serve is shutting down: runs suspend at their next step boundary.
func (s *Scheduler) Stopping() bool { return s.stopping.Load() }

// Serve runs the scheduler until ctx ends. It first resumes the work a stopped process left
// (Host.RecoverAll); from then on wake-ups run on their threads' workers, effects run when due
// (the loop wakes when one is scheduled here), and on a store other processes share it follows
// their commits and sweeps for threads nobody runs. When ctx ends Serve stops taking work, lets
// running steps reach a boundary within DrainTimeout, interrupts the rest, and returns once
// every lease of this process is released. An idle serving process holds no goroutine per thread
// and does nothing until woken.
func (s *Scheduler) Serve(ctx context.Context, o ServeOptions) error {
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 10 * time.Second
	}
	if !s.serving.CompareAndSwap(false, true) {
		return errors.New("engine: Serve is already running")
	}
	s.workers.Store(new(make(chan struct{}, o.Workers)))
	sv := server{s}
	s.stopping.Store(false)
	if n, ok := s.cfg.Store.(weft.Notifier); ok {
		// A store other processes share: follow their commits, and take over the work of any
		// that died. Recovery waits until the watch listens, so that a message another process
		// queues is either there for recovery to find or noticed.
		wctx, stop := context.WithCancel(ctx)
		listening, watching := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(watching)
			sv.watch(wctx, n, listening)
		}()
		defer func() { stop(); <-watching }()
		select {
		case <-listening:
		case <-watching:
		case <-ctx.Done():
		case <-time.After(listenWait):
			s.cfg.Log.Warn("not yet following other processes' commits; serving meanwhile", "waited", listenWait)
		}
		go sv.sweepLoop(ctx)
	}
	if err := s.cfg.Host.RecoverAll(ctx); err != nil && ctx.Err() == nil {
		s.serving.Store(false)
		return fmt.Errorf("recovering interrupted work: %w", err)
	}
	if o.Started != nil {
		o.Started()
	}
	sv.effectsLoop(ctx)
	return sv.shutdown(o.DrainTimeout)
}

// server is a serving scheduler's loops.
type server struct {
	// s is the scheduler that serves.
	s *Scheduler
}

// listenWait bounds how long Serve waits for the watch of other processes' commits to listen before
// it recovers work and serves anyway (the sweep then finds what a lost notice would have started).
const listenWait = 10 * time.Second

// watch follows other processes' commits: their events wake this process's subscribers of the
// thread, and their effects the effect loop. listening is closed at the first NoticeReset, when
// the watch listens.
func (sv server) watch(ctx context.Context, n weft.Notifier, listening chan struct{}) {
	s := sv.s
	var once sync.Once
	err := n.Watch(ctx, func(nt weft.Notice) {
		switch nt.Kind {
		case weft.NoticeEvents:
			s.cfg.Host.Poke(nt.ThreadID)
		case weft.NoticeEffect:
			s.EffectScheduled()
		case weft.NoticeQueued:
			// Another process queued a message (a CLI's push, another node's API): take the
			// thread unless it runs here already; one that another process runs refuses the
			// lease at once, and that process drains its queue itself. A run may have started
			// here and not be registered yet: it reads the queue once it is, for a message that
			// interrupts it (weft.IfBusyInterrupt).
			run, here := s.Queued(nt.ThreadID, true)
			if run != nil {
				// A run here: the message may interrupt it, which only its queued row tells;
				// read off the watch's goroutine.
				s.Go(func() { s.cfg.Host.InterruptFromStore(ctx, nt.ThreadID) })
			}
			if !here && !s.stopping.Load() {
				s.wake(ctx, nt.ThreadID, "", &wakeKind{retries: maxLeaseRetries})
			}
		case weft.NoticeReset:
			once.Do(func() { close(listening) })
			s.cfg.Host.Poke("")
			s.EffectScheduled()
		}
	})
	if err != nil && ctx.Err() == nil {
		s.cfg.Log.Warn("following other processes' commits failed", "error", err)
	}
}

// sweepLoop looks, every lease TTL, for runnable threads nobody runs (sweep).
func (sv server) sweepLoop(ctx context.Context) {
	s := sv.s
	for {
		if err := s.cfg.Clock.Sleep(ctx, s.cfg.LeaseTTL); err != nil {
			return
		}
		if err := sv.sweep(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Log.Warn("looking for abandoned threads failed", "error", err)
		}
	}
}

// sweep wakes the root threads that are running or have queued messages and that this process
// does not work on: one whose lease expired (its process died) is resumed here, and one that
// another process runs refuses the lease at once (a sweep never retries). On a shared store this
// is how a node that died has its threads taken over, without a restart.
func (sv server) sweep(ctx context.Context) error {
	s := sv.s
	store := s.cfg.Store
	running, _, err := store.Threads(ctx, weft.ThreadQuery{Status: weft.ThreadRunning, RootsOnly: true, Sort: "oldest"})
	if err != nil {
		return err
	}
	queued, _, err := store.Threads(ctx, weft.ThreadQuery{Queued: true, RootsOnly: true, Sort: "oldest"})
	if err != nil {
		return err
	}
	for i, list := range [][]*weft.Thread{running, queued} {
		for _, t := range list {
			s.mu.Lock()
			_, here := s.owners[t.ID]
			s.mu.Unlock()
			if here || t.Status == weft.ThreadTerminated || s.stopping.Load() {
				continue
			}
			req := &wakeKind{retries: maxLeaseRetries}
			if i == 0 {
				req.trigger = "resume"
			}
			s.wake(ctx, t.ID, rootOf(t), req)
		}
	}
	return nil
}

// effectsLoop runs due effects until ctx ends, sleeping on the clock until the next one is due or
// one is scheduled.
func (sv server) effectsLoop(ctx context.Context) {
	s := sv.s
	for ctx.Err() == nil {
		threads, err := s.cfg.Host.RunDueEffects(ctx)
		if err != nil && ctx.Err() == nil {
			s.cfg.Log.Warn("running due effects failed", "error", err)
		}
		for _, id := range threads {
			s.wake(ctx, id, "", nil)
		}
		next, err := s.cfg.Store.NextEffectAt(ctx)
		if err != nil && ctx.Err() == nil {
			s.cfg.Log.Warn("reading the next effect failed", "error", err)
		}
		sleepCtx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(ctx, cancel)
		go func() {
			select {
			case <-s.effectsChanged:
				cancel()
			case <-sleepCtx.Done():
			}
		}()
		if next.IsZero() {
			<-sleepCtx.Done()
		} else if wait := next.Sub(s.cfg.Clock.Now()); wait > 0 {
			_ = s.cfg.Clock.Sleep(sleepCtx, wait)
		}
		cancel()
		stop()
	}
}

// EffectScheduled wakes Serve's effect loop: an effect was scheduled in this process.
func (s *Scheduler) EffectScheduled() {
	s.effectsScheduled.Add(1)
	select {
	case s.effectsChanged <- struct{}{}:
	default:
	}
}

// EffectsScheduled counts the effects scheduled in this process (EffectScheduled) so far.
func (s *Scheduler) EffectsScheduled() int64 { return s.effectsScheduled.Load() }

// shutdown stops taking work, gives running steps drain to reach a boundary, interrupts the rest
// and waits for every run of this process to release its lease.
func (sv server) shutdown(drain time.Duration) error {
	s := sv.s
	s.stopping.Store(true)
	s.serving.Store(false)
	idle := make(chan struct{})
	go func() { s.Wait(); close(idle) }()
	timer := time.NewTimer(drain)
	defer timer.Stop()
	select {
	case <-idle:
	case <-timer.C:
		s.mu.Lock()
		for _, o := range s.owners {
			if o.run != nil {
				o.run.Cancel(ErrShutdown)
			}
		}
		s.mu.Unlock()
		<-idle
	}
	s.stopping.Store(false)
	return nil
}
