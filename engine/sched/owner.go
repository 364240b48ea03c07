// Package sched is the scheduler of thread owners: this process's coordination of the threads it
// works on. Each thread being worked on here has one owner, a small state machine (below) that
// decides which goroutine of the process runs the thread, when a thread is run again for a
// wake-up (a queued message, a child's report, a due effect, a continue, a resume), which run a
// new message or an interrupt reaches, and when a tree of threads is quiet. The scheduler also
// runs a serving process's loops (Serve: the recovery at start, the watch of other processes'
// commits, the sweep for abandoned threads, the effect loop, the shutdown) and keeps the results
// of tools whose store failed, for the resume.
//
// The scheduler starts runs but does not perform them: the Host (the engine) runs a thread, runs
// due effects, interrupts a run and tells subscribers of commits made elsewhere. It does not
// import the engine.
//
// # The owner's states
//
// An owner exists while anything of this process refers to its thread; an idle thread has none
// and is only its rows in the store. Its state is the product of five parts, each changed only
// under the scheduler's lock (which is never held across store I/O):
//
//	turn     free | held                 (held: one goroutine of the process runs the thread)
//	worker   none | active | again       (again: a wake-up came during the active worker's pass)
//	run      none | registered           (a run is in progress: Stop, Send and interrupts reach it)
//	drivers  0 | n                       (background drivers of a child thread)
//	reports  idle | awaited              (a child's report coordination, children.Watch: blocking
//	                                      calls awaiting it, reports held back meanwhile)
//
// with refs, the goroutines holding or waiting for the turn (an active worker counts as one), and
// two marks: request (what the worker's next pass does beyond taking queued messages: a continue
// or a resume) and checkInterrupts (a message was queued while no run was registered: the next
// run to register reads the queue for one that interrupts it).
//
// The transitions, each a method of Scheduler:
//
//	Acquire / TryAcquire   turn free → held (Acquire waits, TryAcquire gives up); refs+1
//	release                turn held → free; refs-1
//	Wake                   worker none → active (a pass starts on a pooled goroutine), or
//	                       active → again; request set when given
//	worker pass end        again → active (another pass), or active → none
//	Transfer               (all parts empty) → turn held, worker active: Send's message goes to
//	                       a new worker that queues it in the transaction starting its run
//	Register               run none → registered; takes checkInterrupts
//	Unregister             run registered → none
//	Queued                 run registered: the run is told (Run.Queued); none: checkInterrupts
//	Drive / its end        drivers+1 / drivers-1
//	Watch                  reports changed by engine/children (a call awaits the child, a report
//	                       is held, sent or recorded)
//	(any of the above)     every part empty, refs 0 → no owner (the entry is deleted)
//
// Owners are not recycled: a deleted owner is garbage, and a late holder of one never sees
// another thread's state. A pool of owners would save two small allocations (the owner and its
// turn channel) when a turn starts on a thread no goroutine of the process works on, of some 88
// in an in-memory turn (BenchmarkStep), at the price of that hazard. What is reused is the
// goroutines workers and conversations run on (goPool, activity.go): their grown stacks.
//
// Where the other work of a thread fits:
//
//   - Queued messages are rows in the store; the owner only decides who takes them: a registered
//     run at its next step boundary (told by Queued), else the next pass of a worker (Wake).
//   - Approvals: a run that stops awaiting approval gives its turn back (the pending calls are
//     rows in the store); while serving, the decision wakes the thread with a continue
//     (Continue), as lifting a budget's pause does.
//   - Child reports: a blocking subagent's parent awaits its child inside its own run, holding its
//     own turn while it acquires the child's, and counted in the child's reports part (Watch), so
//     that the reports of the child's background runs are held back for the call meanwhile; a
//     background child is driven by a goroutine registered with Drive (drivers > 0), so that
//     recovery leaves it to its driver. A child's report is delivered as a silent message queued
//     on the parent, then a Wake of the parent: from the parent's owner's side, a report
//     delivered is a queued message and a wake-up.
//   - Effects due: the effect loop (Serve) runs them through the Host and wakes the threads they
//     queued messages on.
//
// # What the lock does not decide
//
// The turn orders this process's goroutines only. What another process may also write — which
// process runs a thread, whether a message is queued or refused, a run's rows — is decided in the
// store, inside transactions fenced by the thread's lease (weft.Store.BeginRun and the run's
// fence); an owner never holds its lock across store I/O.
//
// # Recovery
//
// "Recover" names restart recovery: resuming the runs and queues a stopped process left
// (Recovery, which Serve calls first through the Host's RecoverAll), the recovery of a tree's
// children that report on their own (engine/children's Room.Recover), and a kept lease's resume
// (KeepLease). A thread passed from one worker or node to another is a transfer or a lease taken
// over, never a recovery.
package sched

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
)

// Host is what the scheduler needs of the engine: to run a thread and its due effects, to
// interrupt a run, and to tell subscribers of commits made by other processes.
type Host interface {
	// RunThread runs the thread whose turn ctx holds until it is quiescent, from trigger:
	// "message" (its queued messages), "continue" (of side; "" = the side due next) or "resume"
	// (a run a stopped process left). When push is not nil, the first run's starting transaction
	// queues it and tells queued, once, whether it did (nil; also when the lease is held
	// elsewhere) or why not; a stopped thread's run then gives its lease back at once.
	RunThread(ctx context.Context, threadID, trigger string, side weft.Side, push *weft.QueuedMessage, queued func(error)) error
	// RunDueEffects runs the effects that are due and returns the threads they ran on, in order.
	RunDueEffects(ctx context.Context) ([]string, error)
	// RecoverAll resumes the work a stopped process left in the store (Serve's start).
	RecoverAll(ctx context.Context) error
	// InterruptFromStore interrupts the thread's run here for a message with
	// weft.IfBusyInterrupt that another process queued (it reads the queue).
	InterruptFromStore(ctx context.Context, threadID string)
	// Poke tells the thread's subscribers ("" = every subscriber) that events were committed by
	// another process.
	Poke(threadID string)
}

// Run is a run in progress that a thread's owner holds while it is registered.
type Run interface {
	// Queued tells the run that a message was queued on its thread: it reads the queue at its
	// next step boundary, and once it ends, even if its last transaction saw nothing waiting.
	// Called under the scheduler's lock, so that a message is either told to the run or found
	// by what follows its unregistration.
	Queued()
	// Cancel cancels the run (a shutdown's drain deadline passed).
	Cancel(cause error)
}

// Config is what a scheduler works with.
type Config struct {
	// Store holds the threads.
	Store weft.Store
	// Host runs threads for the scheduler.
	Host Host
	// Clock tells time and waits (the sweep and effect loops).
	Clock weft.Clock
	// Log receives operational logs.
	Log *slog.Logger
	// Node names this process for leases.
	Node string
	// LeaseTTL is how long a run's lease lasts between renewals.
	LeaseTTL time.Duration
}

// Scheduler is this process's owners of threads and the loops of a serving process. Its zero
// value is not usable: call Init.
type Scheduler struct {
	cfg Config

	// mu guards owners, trees, the background count and kept: bookkeeping, never held across
	// store I/O.
	mu sync.Mutex
	// owners are the threads this process works on, by id.
	owners map[string]*owner
	// trees counts the work in progress on each tree of threads, by root (Busy, Quiet).
	trees map[string]*treeActivity
	// bg counts background goroutines (Go, Wait).
	bg background
	// kept are the results of tools whose store failed, and the leases kept for their resume.
	kept keptResults

	// pool runs goroutines on stacks that have grown.
	pool goPool
	// workers bounds the mailbox workers running at once while serving (nil = unbounded).
	workers atomic.Pointer[chan struct{}]
	// serving: Serve is running (wake-ups start workers); stopping: Serve is shutting down.
	serving, stopping atomic.Bool
	// effectsChanged wakes Serve's effect loop when an effect is scheduled here; effectsScheduled
	// counts those effects.
	effectsChanged   chan struct{}
	effectsScheduled atomic.Int64
}

// Init makes s ready to use with cfg.
func (s *Scheduler) Init(cfg Config) {
	s.cfg = cfg
	s.owners = map[string]*owner{}
	s.trees = map[string]*treeActivity{}
	s.effectsChanged = make(chan struct{}, 1)
	s.pool = newGoPool()
}

// owner is this process's bookkeeping for one thread while anything here works on it: the state
// machine the package comment describes. Whoever holds turn is the only goroutine of the process
// running the thread: the others wait on the channel (never by polling the lease), and the
// store's lease keeps other processes out.
type owner struct {
	// turn has capacity 1: held while a goroutine of this process runs the thread.
	turn chan struct{}
	// refs counts the goroutines holding or waiting for turn, and an active worker.
	refs int
	// run is the run in progress, if any (Stop, Send's mark, interrupts).
	run Run
	// checkInterrupts: a message was queued while no run was registered (between the
	// transaction that starts a run and its registration, or before): the next run to register
	// reads the queue for one that interrupts it.
	checkInterrupts bool
	// worker: a worker is active; again: a wake-up arrived during its pass, which it follows with
	// another.
	worker, again bool
	// request is what the worker's next pass does beyond taking queued messages.
	request *wakeKind
	// drivers counts the background drivers of this child thread in this process.
	drivers int
	// reports is the thread's report coordination as a child (engine/children): the blocking
	// calls awaiting it, the reports held back meanwhile, its reported stops being recorded; nil
	// while idle, so that an owner no report concerns is as small as without it.
	reports *children.Watch
}

// ownerOf returns the thread's owner, creating it; the caller holds s.mu.
func (s *Scheduler) ownerOf(threadID string) *owner {
	o := s.owners[threadID]
	if o == nil {
		o = &owner{turn: make(chan struct{}, 1)}
		s.owners[threadID] = o
	}
	return o
}

// dropIfUnused forgets an owner nothing refers to any more; the caller holds s.mu.
func (s *Scheduler) dropIfUnused(threadID string, o *owner) {
	if o.refs == 0 && o.run == nil && !o.worker && o.drivers == 0 && o.reports == nil {
		delete(s.owners, threadID) // not recycled: a late holder of o never sees another thread's
	}
}

// turnKey marks, in a context, the threads whose turn the goroutine holds: acquiring one of them
// again would wait for itself.
type turnKey struct{}

// heldSet is a list of the threads whose turn a context's goroutine holds.
type heldSet struct {
	// id is a thread whose turn is held.
	id string
	// next lists the turns held before.
	next *heldSet
}

// holds tells whether ctx holds the thread's turn.
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

// Acquire waits for the thread's turn in this process. The returned context carries the hold
// (runs started with it must be derived from it); release gives the turn back.
func (s *Scheduler) Acquire(ctx context.Context, threadID string) (context.Context, func(), error) {
	if holds(ctx, threadID) {
		return nil, nil, fmt.Errorf("thread %s: %w", threadID, errReentrant)
	}
	s.mu.Lock()
	o := s.ownerOf(threadID)
	o.refs++
	s.mu.Unlock()
	select {
	case o.turn <- struct{}{}:
	case <-ctx.Done():
		s.mu.Lock()
		o.refs--
		s.dropIfUnused(threadID, o)
		s.mu.Unlock()
		return nil, nil, context.Cause(ctx)
	}
	held, release := s.holding(ctx, threadID, o)
	return held, release, nil
}

// TryAcquire is Acquire when the turn is free; ok is false, with nothing held, when it is not.
func (s *Scheduler) TryAcquire(ctx context.Context, threadID string) (_ context.Context, _ func(), ok bool, _ error) {
	if holds(ctx, threadID) {
		return nil, nil, false, fmt.Errorf("thread %s: %w", threadID, errReentrant)
	}
	s.mu.Lock()
	o := s.ownerOf(threadID)
	select {
	case o.turn <- struct{}{}:
		o.refs++
		s.mu.Unlock()
	default:
		s.mu.Unlock()
		return nil, nil, false, nil
	}
	held, release := s.holding(ctx, threadID, o)
	return held, release, true, nil
}

// holding returns ctx marked as holding the thread's turn, and the function giving the turn back.
func (s *Scheduler) holding(ctx context.Context, threadID string, o *owner) (context.Context, func()) {
	prev, _ := ctx.Value(turnKey{}).(*heldSet)
	held := context.WithValue(ctx, turnKey{}, &heldSet{id: threadID, next: prev})
	return held, func() {
		<-o.turn
		s.mu.Lock()
		o.refs--
		s.dropIfUnused(threadID, o)
		s.mu.Unlock()
	}
}

// Register records r as the thread's run in progress, and reports whether a message was queued
// while none was registered (checkInterrupts): the run then reads the queue for one that
// interrupts it.
func (s *Scheduler) Register(threadID string, r Run) (checkInterrupts bool) {
	s.mu.Lock()
	o := s.ownerOf(threadID)
	o.run = r
	checkInterrupts = o.checkInterrupts
	o.checkInterrupts = false
	s.mu.Unlock()
	return checkInterrupts
}

// Unregister ends the registration of the thread's run. A message queued afterwards is no longer
// told to the run (Queued): the run's caller looks at the queue.
func (s *Scheduler) Unregister(threadID string) {
	s.mu.Lock()
	if o := s.owners[threadID]; o != nil {
		o.run = nil
		s.dropIfUnused(threadID, o)
	}
	s.mu.Unlock()
}

// Running returns the thread's run in progress in this process, nil when none.
func (s *Scheduler) Running(threadID string) Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.owners[threadID]; o != nil {
		return o.run
	}
	return nil
}

// Queued records that a message was queued on the thread: a run registered here is told
// (Run.Queued) and returned; with none registered and interrupts set, the next run to register
// reads the queue for a message that interrupts it. here reports whether the thread has an owner
// in this process.
func (s *Scheduler) Queued(threadID string, interrupts bool) (_ Run, here bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.owners[threadID]
	switch {
	case o == nil:
		return nil, false
	case o.run != nil:
		o.run.Queued()
	case interrupts:
		o.checkInterrupts = true
	}
	return o.run, true
}

// Drive runs f in the background as a driver of the child thread, counted as work on its tree
// (root) until f returns: Driven tells recovery to leave the child to it.
func (s *Scheduler) Drive(childID, root string, f func()) {
	s.mu.Lock()
	o := s.ownerOf(childID)
	o.drivers++
	s.mu.Unlock()
	done := s.Busy(root)
	s.Go(func() {
		defer func() {
			s.mu.Lock()
			o.drivers--
			s.dropIfUnused(childID, o)
			s.mu.Unlock()
			done()
		}()
		f()
	})
}

// Driven tells whether a driver of this process runs the child thread (Drive).
func (s *Scheduler) Driven(childID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.owners[childID]
	return o != nil && o.drivers > 0
}

// Watch calls fn with the child thread's report coordination (engine/children), kept with its
// owner, under the scheduler's lock: fn must neither block nor do I/O.
func (s *Scheduler) Watch(childID string, fn func(*children.Watch)) {
	s.mu.Lock()
	o := s.ownerOf(childID)
	if o.reports == nil {
		o.reports = &children.Watch{}
	}
	fn(o.reports)
	if o.reports.Idle() {
		o.reports = nil
	}
	s.dropIfUnused(childID, o)
	s.mu.Unlock()
}
