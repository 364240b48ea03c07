package sched

import "time"

// background counts goroutines doing background work, like a sync.WaitGroup that may be waited
// on while work is still being started: a serving engine starts workers at any time, and Wait
// only asks for a moment at which none is running. Guarded by the scheduler's lock.
type background struct {
	// n counts the goroutines running.
	n int
	// idle is closed when n reaches 0; made by a Wait while n > 0.
	idle chan struct{}
}

// Go runs f in a goroutine of the pool, counted until it returns (Wait).
func (s *Scheduler) Go(f func()) {
	s.mu.Lock()
	s.bg.n++
	s.mu.Unlock()
	s.pool.Go(func() {
		defer s.done()
		f()
	})
}

func (s *Scheduler) done() {
	s.mu.Lock()
	if s.bg.n--; s.bg.n == 0 && s.bg.idle != nil {
		close(s.bg.idle)
		s.bg.idle = nil
	}
	s.mu.Unlock()
}

// Wait returns once no goroutine started by Go runs.
func (s *Scheduler) Wait() {
	s.mu.Lock()
	if s.bg.n == 0 {
		s.mu.Unlock()
		return
	}
	if s.bg.idle == nil {
		s.bg.idle = make(chan struct{})
	}
	idle := s.bg.idle
	s.mu.Unlock()
	<-idle
}

// Spawn runs f in a goroutine of the pool, not counted by Wait (a conversation's run, which its
// caller waits for).
func (s *Scheduler) Spawn(f func()) { s.pool.Go(f) }

// treeActivity counts the goroutines of this process working on one tree of threads.
type treeActivity struct {
	// n counts them.
	n int
	// waiters are closed when n reaches 0 (Quiet).
	waiters []chan struct{}
}

// Busy counts work in progress on a tree until the returned function is called; Quiet tells when
// a tree's count reaches zero (Converse waits for it).
func (s *Scheduler) Busy(root string) func() {
	if root == "" {
		return func() {}
	}
	s.mu.Lock()
	a := s.trees[root]
	if a == nil {
		a = &treeActivity{}
		s.trees[root] = a
	}
	a.n++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		a.n--
		if a.n == 0 {
			for _, w := range a.waiters {
				close(w)
			}
			delete(s.trees, root)
		}
		s.mu.Unlock()
	}
}

// Quiet returns a channel closed once no work of this process is in progress on the tree.
func (s *Scheduler) Quiet(root string) <-chan struct{} {
	ch := make(chan struct{})
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.trees[root]
	if a == nil {
		close(ch)
		return ch
	}
	a.waiters = append(a.waiters, ch)
	return ch
}

// goPool starts functions on goroutines that outlive them briefly. A run's call chain is deep: a
// new goroutine starts with a small stack and grows it several times on the way down (each growth
// copies the stack and walks its frames), about a sixth of an in-memory turn's instructions. A
// goroutine that finished one function waits idleFor for the next and runs it on the stack it
// already grew; under load every conversation finds one, and when work stops they all exit, so
// idle threads still hold no goroutine. Make one with newGoPool.
type goPool struct {
	// work hands a function to an idle goroutine: unbuffered, so a send succeeds only when one
	// is waiting.
	work chan func()
}

// idleFor is how long a goroutine of the pool waits for its next function.
const idleFor = 50 * time.Millisecond

func newGoPool() goPool { return goPool{work: make(chan func())} }

// Go runs fn on an idle goroutine of the pool, or on a new one.
func (p *goPool) Go(fn func()) {
	select {
	case p.work <- fn:
	default:
		go p.serve(fn)
	}
}

func (p *goPool) serve(fn func()) {
	var idle *time.Timer
	for {
		fn()
		fn = nil // let what it holds go while waiting
		if idle == nil {
			idle = time.NewTimer(idleFor)
		} else {
			idle.Reset(idleFor)
		}
		select {
		case fn = <-p.work:
			idle.Stop()
		case <-idle.C:
			return
		}
	}
}
