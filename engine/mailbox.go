package engine

import (
	"encoding/json"
	"maps"
	"sync/atomic"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/redact"
)

// mailbox carries to a run's goroutine what others tell it: a State's changes to its caches, and
// a message queued on its thread (activeRun.Queued, which Send and the scheduler call). A tool may
// start a goroutine that injects, updates or deletes rows, sets a variable or queues a tool while
// the run goes on and reads those caches; so a State never changes them itself. It posts the
// change here, and the run applies what was posted, in order, on its own goroutine (run.sync)
// before it reads or changes a cache or looks at its queue. It belongs to the activeRun, which
// exists (and may be told of a message) before the run is made, and is guarded by its lock
// (activeRun.mu). Only the run's goroutine touches its row cache, the env's thread layer,
// red and the queued tools; a State on another goroutine reads red and the env through shared,
// under the same lock.
type mailbox struct {
	// ops are the changes posted, in order.
	ops []func(*run)
	// has: ops is not empty (read without the lock).
	has atomic.Bool
}

// add queues op for the run's goroutine; the caller holds the activeRun's lock.
func (b *mailbox) add(op func(*run)) {
	b.ops = append(b.ops, op)
	b.has.Store(true)
}

// post queues op for the run's goroutine.
func (ar *activeRun) post(op func(*run)) {
	ar.mu.Lock()
	ar.mail.add(op)
	ar.mu.Unlock()
}

// sync applies what States posted, in the order they posted it. The run calls it before it reads
// or changes a cache the mailbox guards; it costs one atomic load when nothing was posted.
func (r *run) sync() {
	if !r.ar.mail.has.Load() {
		return
	}
	r.ar.mu.Lock()
	ops := r.ar.mail.ops
	r.ar.mail.ops = nil
	r.ar.mail.has.Store(false)
	r.ar.mu.Unlock()
	for _, op := range ops {
		op(r)
	}
}

// shared runs fn under the mailbox's lock (the activeRun's): how a State, on any goroutine, reads
// what the run's goroutine changes under the same lock (envSet).
func (ar *activeRun) shared(fn func()) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	fn()
}

// redactorNow returns the run's redactor for a caller on any goroutine.
func (r *run) redactorNow() *redact.Redactor {
	var red *redact.Redactor
	r.ar.shared(func() { red = r.red })
	return red
}

// The mailbox's messages of a State's changes (stateRun posts them). rowStored, rowReplaced and
// rowDeleted carry a State's stored change of a row to the run's cache.

func rowStored(m weft.Message) func(*run) { return func(r *run) { r.cache.Insert(m) } }

func rowReplaced(m weft.Message) func(*run) { return func(r *run) { r.cache.Replace(m) } }

func rowDeleted(id string) func(*run) {
	return func(r *run) {
		r.cache.Delete(id)
	}
}

// envSet carries a thread variable a State set: the run's env and its redactor follow it. The
// thread layer is replaced, not changed in place, as a State may be reading the old one.
func envSet(v weft.EnvValue) func(*run) {
	return func(r *run) {
		layer := maps.Clone(r.env.Thread)
		if layer == nil {
			layer = map[string]weft.EnvValue{}
		}
		layer[v.Name] = v
		next := *r.env
		next.Thread = layer
		red := r.e.secrets.For(&next)
		r.ar.shared(func() {
			r.env.Thread = layer
			r.red = red
		})
	}
}

// toolQueued carries a tool a State asked for, to run after the step's calls.
func toolQueued(name string, args json.RawMessage) func(*run) {
	return func(r *run) { r.tools.Queue(name, args) }
}

// runMemory is a run's Execution.Memory, kept under the mailbox's lock.
type runMemory struct{ r *run }

func (m runMemory) Load(key string) (v any, ok bool) {
	m.r.ar.shared(func() { v, ok = m.r.memory[key] })
	return v, ok
}

func (m runMemory) Store(key string, v any) {
	m.r.ar.shared(func() {
		if m.r.memory == nil {
			m.r.memory = map[string]any{}
		}
		m.r.memory[key] = v
	})
}

func (m runMemory) Delete(key string) { m.r.ar.shared(func() { delete(m.r.memory, key) }) }
