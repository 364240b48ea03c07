package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
)

// owner is this process's bookkeeping for one thread while anything here works on it. Whoever
// holds turn is the only goroutine of the process running the thread: the others wait on the
// channel (never by polling the lease), and the store's lease keeps other processes out.
//
// It is also the thread's mailbox: wake-ups (a queued message, a child's report, a due effect, a
// continue) are requests to one worker goroutine, coalesced while it is busy.
type owner struct {
	turn chan struct{} // capacity 1: held while a goroutine of this process runs the thread
	refs int           // goroutines holding or waiting for turn, and an active worker

	run *activeRun // the run in progress, if any (Stop, Send's mark)
	// checkInterrupts: a message was queued while no run was registered (between the transaction
	// that starts a run and its registration, or before): the next run to register reads the
	// queue for one that interrupts it (ifbusy.go).
	checkInterrupts bool

	worker  bool      // a mailbox worker is active
	again   bool      // a wake-up arrived: the worker makes another pass
	request *wakeKind // what the next pass does beyond taking queued messages

	drivers int // background drivers of this child in this process
	// watch is the thread's report coordination as a child (engine/children): the blocking calls
	// awaiting it, the reports held back meanwhile, its reported stops being recorded; guarded by
	// e.mu, nil while idle.
	watch *children.Watch
}

// wakeKind is a request to a thread's worker: a continue (optionally of a side), or the resume of
// a run a stopped process left interrupted.
type wakeKind struct {
	trigger string // "continue", "resume", or "" (queued messages)
	side    weft.Side
	// retries counts passes that found the lease held by another process (a dead one's lease
	// lasts until it expires).
	retries int
	// outages counts passes in a row that failed on an unavailable store.
	outages int
}

// maxLeaseRetries bounds the retries of a wake-up that found the thread's lease held elsewhere.
const maxLeaseRetries = 3

// ownerOf returns the thread's owner, creating it; the caller holds e.mu.
func (e *Engine) ownerOf(threadID string) *owner {
	o := e.owners[threadID]
	if o == nil {
		o = &owner{turn: make(chan struct{}, 1)}
		e.owners[threadID] = o
	}
	return o
}

// dropIfUnused forgets an owner nothing refers to any more; the caller holds e.mu. An idle thread
// is only its rows in the store.
func (e *Engine) dropIfUnused(threadID string, o *owner) {
	if o.refs == 0 && o.run == nil && !o.worker && o.drivers == 0 && o.watch == nil {
		delete(e.owners, threadID) // not recycled: a late holder of o never sees another thread's
	}
}

// turnKey marks, in a context, the threads whose turn the goroutine holds: acquiring one of them
// again would wait for itself.
type turnKey struct{}

type heldSet struct {
	id   string
	next *heldSet
}

func holds(ctx context.Context, threadID string) bool {
	for h, _ := ctx.Value(turnKey{}).(*heldSet); h != nil; h = h.next {
		if h.id == threadID {
			return true
		}
	}
	return false
}

// errReentrant: a goroutine asked to run a thread whose run it is already inside.
var errReentrant = weft.Errorf(weft.EConflict, "the thread is already being run by this call")

// acquire waits for the thread's turn in this process. The returned context carries the hold
// (runs started with it must be derived from it); release gives the turn back.
func (e *Engine) acquire(ctx context.Context, threadID string) (context.Context, func(), error) {
	if holds(ctx, threadID) {
		return nil, nil, fmt.Errorf("thread %s: %w", threadID, errReentrant)
	}
	e.mu.Lock()
	o := e.ownerOf(threadID)
	o.refs++
	e.mu.Unlock()
	select {
	case o.turn <- struct{}{}:
	case <-ctx.Done():
		e.mu.Lock()
		o.refs--
		e.dropIfUnused(threadID, o)
		e.mu.Unlock()
		return nil, nil, context.Cause(ctx)
	}
	held, release := e.holding(ctx, threadID, o)
	return held, release, nil
}

// tryAcquire is acquire when the turn is free; ok is false, with nothing held, when it is not.
func (e *Engine) tryAcquire(ctx context.Context, threadID string) (_ context.Context, _ func(), ok bool, _ error) {
	if holds(ctx, threadID) {
		return nil, nil, false, fmt.Errorf("thread %s: %w", threadID, errReentrant)
	}
	e.mu.Lock()
	o := e.ownerOf(threadID)
	select {
	case o.turn <- struct{}{}:
		o.refs++
		e.mu.Unlock()
	default:
		e.mu.Unlock()
		return nil, nil, false, nil
	}
	held, release := e.holding(ctx, threadID, o)
	return held, release, true, nil
}

// holding returns ctx marked as holding the thread's turn, and the function giving the turn back.
func (e *Engine) holding(ctx context.Context, threadID string, o *owner) (context.Context, func()) {
	prev, _ := ctx.Value(turnKey{}).(*heldSet)
	held := context.WithValue(ctx, turnKey{}, &heldSet{id: threadID, next: prev})
	return held, func() {
		<-o.turn
		e.mu.Lock()
		o.refs--
		e.dropIfUnused(threadID, o)
		e.mu.Unlock()
	}
}

// wake asks for a pass over the thread: one worker of this process runs it while it has work
// (queued messages, or the request), then exits. A wake-up while the worker is busy makes it look
// once more after its current pass, so any number of wake-ups cost one queue check per pass. root
// names the thread's tree for quiescence ("" when unknown: the worker reads it).
func (e *Engine) wake(ctx context.Context, threadID, root string, req *wakeKind) {
	e.mu.Lock()
	o := e.ownerOf(threadID)
	if req != nil {
		o.request = req
	}
	if o.worker {
		o.again = true
		e.mu.Unlock()
		return
	}
	o.worker = true
	o.refs++
	e.mu.Unlock()
	done := e.busy(root)
	e.bg.Go(func() {
		defer done()
		e.work(context.WithoutCancel(ctx), threadID, root, o, nil)
	})
}

// handoff is a message Send gives a new worker of an idle thread, which queues it with the
// transaction that starts the thread's run (one commit for both) and reports on done once it is
// queued (nil) or refused.
type handoff struct {
	q     *weft.QueuedMessage
	slots *chan struct{} // the pool the worker's slot was taken from (nil: unbounded)
	once  sync.Once
	done  chan error // capacity 1
}

func (h *handoff) report(err error) { h.once.Do(func() { h.done <- err }) }

// handOff starts a worker for q's thread that queues q as its run begins, when nothing of this
// process works on the thread and a worker slot is free: the worker starts with the slot and the
// thread's turn, so that nothing it waits for can hold the caller up. nil otherwise: the caller
// queues the message and wakes the thread.
func (e *Engine) handOff(ctx context.Context, q *weft.QueuedMessage) *handoff {
	slots := e.workers.Load()
	e.mu.Lock()
	o := e.ownerOf(q.ThreadID)
	if o.worker || o.refs > 0 || o.run != nil || o.drivers > 0 || e.stopping.Load() {
		e.dropIfUnused(q.ThreadID, o)
		e.mu.Unlock()
		return nil
	}
	if slots != nil {
		select {
		case *slots <- struct{}{}:
		default:
			e.dropIfUnused(q.ThreadID, o)
			e.mu.Unlock()
			return nil
		}
	}
	o.turn <- struct{}{} // free: nothing holds it or waits for it (refs is 0)
	o.worker = true
	o.refs++
	e.mu.Unlock()
	h := &handoff{q: q, slots: slots, done: make(chan error, 1)}
	// The worker reads the thread's root and counts itself busy on its tree (work).
	threadID := q.ThreadID // (the worker holds h, not the message: passHandoff)
	e.bg.Go(func() { e.work(context.WithoutCancel(ctx), threadID, "", o, h) })
	return h
}

// work is a thread's mailbox worker. A handoff's worker starts holding a slot and the turn.
func (e *Engine) work(ctx context.Context, threadID, root string, o *owner, h *handoff) {
	if h != nil {
		// Whatever happens, the sender is told.
		defer h.report(errors.New("the message was not queued: the thread's worker ended first"))
	}
	if root == "" {
		if t, err := e.store.Thread(ctx, threadID); err == nil {
			root = orDefault(t.RootID, t.ID)
			defer e.busy(root)()
		}
	}
	for {
		var slots *chan struct{}
		if h != nil {
			slots = h.slots // taken by handOff, as the turn was (Serve may have set the pool since)
		} else {
			if slots = e.workers.Load(); slots != nil {
				*slots <- struct{}{}
			}
			o.turn <- struct{}{}
		}
		e.mu.Lock()
		req := o.request
		o.request, o.again = nil, false
		e.mu.Unlock()
		held := context.WithValue(ctx, turnKey{}, &heldSet{id: threadID})
		if h != nil {
			e.passHandoff(held, threadID, h)
			h = nil
			if req != nil {
				// A request that arrived meanwhile gets a pass of its own.
				e.mu.Lock()
				o.request, o.again = req, true
				e.mu.Unlock()
			}
		} else {
			e.pass(held, threadID, req)
		}
		<-o.turn
		if slots != nil {
			<-*slots
		}
		e.mu.Lock()
		if !o.again && o.request == nil || e.stopping.Load() {
			o.worker = false
			o.refs--
			e.dropIfUnused(threadID, o)
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
	}
}

// pass runs the thread once for a wake-up, holding its turn: a requested continue or resume, else
// its queued messages unless it is stopped or terminated.
func (e *Engine) pass(ctx context.Context, threadID string, req *wakeKind) {
	t, err := e.store.Thread(ctx, threadID)
	if weft.Unavailable(e.store, err) {
		e.retryWhenAvailable(threadID, "", req)
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
		q, err := e.store.Queued(ctx, threadID)
		if weft.Unavailable(e.store, err) {
			e.retryWhenAvailable(threadID, rootOf(t), req)
			return
		}
		if err != nil || len(q) == 0 {
			return
		}
	}
	_, err = e.runHeld(ctx, threadID, trigger, side, nil)
	e.passed(threadID, rootOf(t), trigger, req, err)
}

// passHandoff is pass for a handoff: the run's first transaction queues the message. The thread
// is not read first: BeginRun refuses a terminated, full or unknown thread, and the run leaves a
// stopped one alone.
func (e *Engine) passHandoff(ctx context.Context, threadID string, h *handoff) {
	refused := false
	queued := func(err error) {
		refused = err != nil
		h.report(err)
	}
	// The run's first transaction takes the message; the worker, which holds h until it ends,
	// does not keep it (with a text of 20 MiB) alive for the whole run.
	q := h.q
	h.q = nil
	_, err := e.runHeld(ctx, threadID, "message", "", &startPush{q: q, queued: queued, serve: true})
	if refused {
		return // the sender was told
	}
	e.passed(threadID, "", "message", nil, err)
}

// passed handles how a pass's run ended: a lease held elsewhere is looked at again, a failure is
// logged.
func (e *Engine) passed(threadID, root, trigger string, req *wakeKind, err error) {
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
		if retry.retries++; retry.retries <= maxLeaseRetries && e.serving.Load() {
			time.AfterFunc(e.opt.LeaseTTL+e.opt.LeaseTTL/10, func() {
				if e.serving.Load() && !e.stopping.Load() {
					e.wake(context.Background(), threadID, root, retry)
				}
			})
		}
	case weft.Unavailable(e.store, err):
		e.log.Warn("thread run failed on an unavailable store; retrying", "thread", threadID, "trigger", trigger, "error", err)
		e.retryWhenAvailable(threadID, root, req)
	default:
		e.log.Warn("thread run failed", "thread", threadID, "trigger", trigger, "error", err)
	}
}

// maxOutageDelay bounds the wait between passes of a thread while the store is unavailable.
const maxOutageDelay = 5 * time.Second

// retryWhenAvailable wakes the thread again after a pass failed on an unavailable store (a full
// disk, a database restarting): its accepted messages are taken soon after the store answers
// again, not left for a lease period or the next message. The wait doubles from 200 ms to
// maxOutageDelay; retries go on while the engine serves.
func (e *Engine) retryWhenAvailable(threadID, root string, req *wakeKind) {
	retry := &wakeKind{}
	if req != nil {
		*retry = *req
	}
	retry.outages++
	if retry.trigger == "" {
		// A run that failed midway left its thread running: the retry resumes it here, where the
		// results of tools whose store failed are kept (unstored.go), rather than waiting for a
		// node's sweep to resume it without them.
		retry.trigger = "resume"
	}
	if !e.serving.Load() {
		return
	}
	delay := min(200*time.Millisecond<<min(retry.outages-1, 5), maxOutageDelay)
	time.AfterFunc(delay, func() {
		if e.serving.Load() && !e.stopping.Load() {
			e.wake(context.Background(), threadID, root, retry)
		}
	})
}

// giveBackLease releases a run's lease. When the store is unavailable the release is retried in
// the background until it is done or the lease has expired anyway, so that a run whose start
// failed on a full disk does not keep its thread for a lease period; once it is released the
// thread is woken, since a pass meanwhile found its lease held.
func (e *Engine) giveBackLease(ctx context.Context, f weft.Fence) {
	err := e.store.ReleaseLease(ctx, f)
	if err == nil || !weft.Unavailable(e.store, err) {
		return
	}
	go func() {
		deadline := time.Now().Add(e.opt.LeaseTTL)
		for delay := 100 * time.Millisecond; time.Now().Before(deadline); delay = min(2*delay, time.Second) {
			time.Sleep(delay)
			err := e.store.ReleaseLease(ctx, f)
			if err == nil && e.serving.Load() && !e.stopping.Load() {
				e.wake(context.Background(), f.ThreadID, "", &wakeKind{trigger: "resume"})
			}
			if err == nil || !weft.Unavailable(e.store, err) {
				return
			}
		}
	}()
}

// busy counts work in progress on a tree until the returned function is called; Converse waits
// for a tree's count to reach zero (quiescence).
func (e *Engine) busy(root string) func() {
	if root == "" {
		return func() {}
	}
	e.mu.Lock()
	a := e.trees[root]
	if a == nil {
		a = &treeActivity{}
		e.trees[root] = a
	}
	a.n++
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		a.n--
		if a.n == 0 {
			for _, w := range a.waiters {
				close(w)
			}
			delete(e.trees, root)
		}
		e.mu.Unlock()
	}
}

// treeActivity counts the goroutines of this process working on one tree of threads.
type treeActivity struct {
	n       int
	waiters []chan struct{}
}

// quiet returns a channel closed once no work of this process is in progress on the tree.
func (e *Engine) quiet(root string) <-chan struct{} {
	ch := make(chan struct{})
	e.mu.Lock()
	defer e.mu.Unlock()
	a := e.trees[root]
	if a == nil {
		close(ch)
		return ch
	}
	a.waiters = append(a.waiters, ch)
	return ch
}

// activity counts goroutines doing background work, like a sync.WaitGroup that may be waited on
// while work is still being started: a serving engine starts workers at any time, and Wait only
// asks for a moment at which none is running.
type activity struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n reaches 0; made by a Wait while n > 0
	pool *goPool       // where its goroutines come from
}

// Go runs f in a goroutine counted until it returns.
func (a *activity) Go(f func()) {
	a.mu.Lock()
	a.n++
	a.mu.Unlock()
	a.pool.Go(func() {
		defer a.done()
		f()
	})
}

func (a *activity) done() {
	a.mu.Lock()
	if a.n--; a.n == 0 && a.idle != nil {
		close(a.idle)
		a.idle = nil
	}
	a.mu.Unlock()
}

// Wait returns once no counted goroutine runs.
func (a *activity) Wait() {
	a.mu.Lock()
	if a.n == 0 {
		a.mu.Unlock()
		return
	}
	if a.idle == nil {
		a.idle = make(chan struct{})
	}
	idle := a.idle
	a.mu.Unlock()
	<-idle
}
