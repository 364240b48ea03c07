package sched

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/weft-agents/weft"
)

// wakeKind is a request to a thread's worker: a continue (optionally of a side), or the resume of
// a run a stopped process left interrupted.
type wakeKind struct {
	// trigger is "continue", "resume", or "" (queued messages).
	trigger string
	// side is the side a continue runs ("" = the side due next).
	side weft.Side
	// retries counts passes that found the lease held by another process (a dead one's lease
	// lasts until it expires).
	retries int
	// outages counts passes in a row that failed on an unavailable store.
	outages int
}

// maxLeaseRetries bounds the retries of a wake-up that found the thread's lease held elsewhere.
const maxLeaseRetries = 3

// Wake asks for a pass over the thread's queued messages (a message was queued, a child reported,
// an effect ran). root names the thread's tree for quiescence ("" when unknown: the worker reads
// it).
func (s *Scheduler) Wake(ctx context.Context, threadID, root string) {
	s.wake(ctx, threadID, root, nil)
}

// Continue asks for a pass that continues the thread (side "" = the side due next).
func (s *Scheduler) Continue(ctx context.Context, threadID, root string, side weft.Side) {
	s.wake(ctx, threadID, root, &wakeKind{trigger: "continue", side: side})
}

// Resume asks for a pass that resumes the run a stopped process (or a failed run of this one)
// left interrupted.
func (s *Scheduler) Resume(ctx context.Context, threadID, root string) {
	s.wake(ctx, threadID, root, &wakeKind{trigger: "resume"})
}

// wake asks for a pass over the thread: one worker of this process runs it while it has work
// (queued messages, or the request), then exits. A wake-up while the worker is busy makes it look
// once more after its current pass, so any number of wake-ups cost one queue check per pass.
func (s *Scheduler) wake(ctx context.Context, threadID, root string, req *wakeKind) {
	s.mu.Lock()
	o := s.ownerOf(threadID)
	if req != nil {
		o.request = req
	}
	if o.worker {
		o.again = true
		s.mu.Unlock()
		return
	}
	o.worker = true
	o.refs++
	s.mu.Unlock()
	done := s.Busy(root)
	s.Go(func() {
		defer done()
		s.work(context.WithoutCancel(ctx), threadID, root, o, nil)
	})
}

// transfer is a message Send gives a new worker of an idle thread, which queues it with the
// transaction that starts the thread's run (one commit for both) and reports on done once it is
// queued (nil) or refused.
type transfer struct {
	// q is the message; the worker drops it once its run has it.
	q *weft.QueuedMessage
	// slots is the pool the worker's slot was taken from (nil: unbounded).
	slots *chan struct{}
	// once makes the report happen once.
	once sync.Once
	// done has capacity 1: the report.
	done chan error
}

func (t *transfer) report(err error) { t.once.Do(func() { t.done <- err }) }

// Transfer starts a worker for q's thread that queues q as its run begins, when Serve runs,
// nothing of this process works on the thread and a worker slot is free: the worker starts with
// the slot and the thread's turn, so that nothing it waits for can hold the caller up. The
// returned channel reports once q is queued (nil) or refused. It returns nil when no worker was
// started: the caller queues the message and wakes the thread.
func (s *Scheduler) Transfer(ctx context.Context, q *weft.QueuedMessage) <-chan error {
	slots := s.workers.Load()
	s.mu.Lock()
	o := s.ownerOf(q.ThreadID)
	if o.worker || o.refs > 0 || o.run != nil || o.drivers > 0 || s.stopping.Load() {
		s.dropIfUnused(q.ThreadID, o)
		s.mu.Unlock()
		return nil
	}
	if slots != nil {
		select {
		case *slots <- struct{}{}:
		default:
			s.dropIfUnused(q.ThreadID, o)
			s.mu.Unlock()
			return nil
		}
	}
	o.turn <- struct{}{} // free: nothing holds it or waits for it (refs is 0)
	o.worker = true
	o.refs++
	s.mu.Unlock()
	t := &transfer{q: q, slots: slots, done: make(chan error, 1)}
	// The worker reads the thread's root and counts itself busy on its tree (work).
	threadID := q.ThreadID // (the worker holds t, not the message: runTransfer)
	s.Go(func() { s.work(context.WithoutCancel(ctx), threadID, "", o, t) })
	return t.done
}

// work is a thread's worker. A transfer's worker starts holding a slot and the turn.
func (s *Scheduler) work(ctx context.Context, threadID, root string, o *owner, t *transfer) {
	if t != nil {
		// Whatever happens, the sender is told.
		defer t.report(errors.New("the message was not queued: the thread's worker ended first"))
	}
	if root == "" {
		if th, err := s.cfg.Store.Thread(ctx, threadID); err == nil {
			root = rootOf(th)
			defer s.Busy(root)()
		}
	}
	for {
		var slots *chan struct{}
		if t != nil {
			slots = t.slots // taken by Transfer, as the turn was (Serve may have set the pool since)
		} else {
			if slots = s.workers.Load(); slots != nil {
				*slots <- struct{}{}
			}
			o.turn <- struct{}{}
		}
		s.mu.Lock()
		req := o.request
		o.request, o.again = nil, false
		s.mu.Unlock()
		held := context.WithValue(ctx, turnKey{}, &heldSet{id: threadID})
		if t != nil {
			s.runTransfer(held, threadID, t)
			t = nil
			if req != nil {
				// A request that arrived meanwhile gets a pass of its own.
				s.mu.Lock()
				o.request, o.again = req, true
				s.mu.Unlock()
			}
		} else {
			s.pass(held, threadID, req)
		}
		<-o.turn
		if slots != nil {
			<-*slots
		}
		s.mu.Lock()
		if !o.again && o.request == nil || s.stopping.Load() {
			o.worker = false
			o.refs--
			s.dropIfUnused(threadID, o)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
}

// pass runs the thread once for a wake-up, holding its turn: a requested continue or resume, else
// its queued messages unless it is stopped or terminated.
func (s *Scheduler) pass(ctx context.Context, threadID string, req *wakeKind) {
	store := s.cfg.Store
	t, err := store.Thread(ctx, threadID)
	if weft.Unavailable(store, err) {
		s.retryWhenAvailable(threadID, "", req)
		return
	}
	if err != nil || t.Status == weft.ThreadTerminated {
		return
	}
	trigger, side := "message", weft.Side("")
	switch {
	case req != nil && req.trigger == "continue":
		trigger, side = "continue", req.side
	case req != nil && req.trigger == "resume" && t.Status == weft.ThreadRunning:
		// Not a continue: a continue clears the stop flag, which Stop sets for a run that died.
		trigger = "resume"
	case t.Status == weft.ThreadStopped:
		return
	default:
		q, err := store.Queued(ctx, threadID)
		if weft.Unavailable(store, err) {
			s.retryWhenAvailable(threadID, rootOf(t), req)
			return
		}
		if err != nil || len(q) == 0 {
			return
		}
	}
	err = s.cfg.Host.RunThread(ctx, threadID, trigger, side, nil, nil)
	s.afterPass(threadID, rootOf(t), trigger, req, err)
}

// runTransfer is pass for a transfer: the run's first transaction queues the message. The thread
// is not read first: BeginRun refuses a terminated, full or unknown thread, and the run leaves a
// stopped one alone.
func (s *Scheduler) runTransfer(ctx context.Context, threadID string, t *transfer) {
	refused := false
	queued := func(err error) {
		refused = err != nil
		t.report(err)
	}
	// The run's first transaction takes the message; the worker, which holds t until it ends,
	// does not keep it (with a text of 20 MiB) alive for the whole run.
	q := t.q
	t.q = nil
	err := s.cfg.Host.RunThread(ctx, threadID, "message", "", q, queued)
	if refused {
		return // the sender was told
	}
	s.afterPass(threadID, "", "message", nil, err)
}

// afterPass handles how a pass's run ended: a lease held elsewhere is looked at again, a failure
// is logged.
func (s *Scheduler) afterPass(threadID, root, trigger string, req *wakeKind, err error) {
	switch {
	case err == nil:
	case errors.Is(err, weft.ErrLeaseHeld):
		// A live process runs the thread and takes new messages itself; but the lease may be a
		// dead process's, valid until it expires (a restart within the lease TTL): look again once
		// it has, a few times at most, while serving.
		retry := &wakeKind{}
		if req != nil {
			*retry = *req
		}
		if retry.retries++; retry.retries <= maxLeaseRetries && s.serving.Load() {
			ttl := s.cfg.LeaseTTL
			time.AfterFunc(ttl+ttl/10, func() {
				if s.serving.Load() && !s.stopping.Load() {
					s.wake(context.Background(), threadID, root, retry)
				}
			})
		}
	case weft.Unavailable(s.cfg.Store, err):
		s.cfg.Log.Warn("thread run failed on an unavailable store; retrying", "thread", threadID, "trigger", trigger, "error", err)
		s.retryWhenAvailable(threadID, root, req)
	default:
		s.cfg.Log.Warn("thread run failed", "thread", threadID, "trigger", trigger, "error", err)
	}
}

// maxOutageDelay bounds the wait between passes of a thread while the store is unavailable.
const maxOutageDelay = 5 * time.Second

// retryWhenAvailable wakes the thread again after a pass failed on an unavailable store (a full
// disk, a database restarting): its accepted messages are taken soon after the store answers
// again, not left for a lease period or the next message. The wait doubles from 200 ms to
// maxOutageDelay; retries go on while the engine serves.
func (s *Scheduler) retryWhenAvailable(threadID, root string, req *wakeKind) {
	retry := &wakeKind{}
	if req != nil {
		*retry = *req
	}
	retry.outages++
	if retry.trigger == "" {
		// A run that failed midway left its thread running: the retry resumes it here, where the
		// results of tools whose store failed are kept (kept.go), rather than waiting for a
		// node's sweep to resume it without them.
		retry.trigger = "resume"
	}
	if !s.serving.Load() {
		return
	}
	delay := min(200*time.Millisecond<<min(retry.outages-1, 5), maxOutageDelay)
	time.AfterFunc(delay, func() {
		if s.serving.Load() && !s.stopping.Load() {
			s.wake(context.Background(), threadID, root, retry)
		}
	})
}

// GiveBackLease releases a run's lease. When the store is unavailable the release is retried in
// the background until it is done or the lease has expired anyway, so that a run whose start
// failed on a full disk does not keep its thread for a lease period; once it is released the
// thread is woken, since a pass meanwhile found its lease held.
func (s *Scheduler) GiveBackLease(ctx context.Context, f weft.Fence) {
	store := s.cfg.Store
	err := store.ReleaseLease(ctx, f)
	if err == nil || !weft.Unavailable(store, err) {
		return
	}
	go func() {
		deadline := time.Now().Add(s.cfg.LeaseTTL)
		for delay := 100 * time.Millisecond; time.Now().Before(deadline); delay = min(2*delay, time.Second) {
			time.Sleep(delay)
			err := store.ReleaseLease(ctx, f)
			if err == nil && s.serving.Load() && !s.stopping.Load() {
				s.Resume(context.Background(), f.ThreadID, "")
			}
			if err == nil || !weft.Unavailable(store, err) {
				return
			}
		}
	}()
}

// rootOf returns the root of a thread's tree.
func rootOf(t *weft.Thread) string {
	if t.RootID != "" {
		return t.RootID
	}
	return t.ID
}
