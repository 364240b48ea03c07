package engine

import "time"

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
