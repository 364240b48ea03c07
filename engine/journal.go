package engine

import (
	"bytes"
	"context"
	"sync"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/engine/runstate"
)

// journal writes one run's changes to the store, in fenced transactions of the run's lease. The
// messages drained from the queue at a step boundary join the context at once but are stored by
// the run's next transaction, whatever it is: until then they stay in the queue, so a crash loses
// nothing. Each transaction also records the events waiting in the outbox (Options.RecordEvents),
// published once it commits.
type journal struct {
	e        *Engine
	threadID string
	// ctx is the run's context without cancellation: a write must finish.
	ctx   context.Context
	fence weft.Fence

	// queued holds queue rows read but not yet drained; drained are the rows taken from it whose
	// insert waits for the next transaction (drainedUpTo is the last queue seq taken).
	queued      []weft.QueuedMessage
	drained     []*weft.Message
	drainedUpTo int64
	// queueSeq is the thread's newest queue seq as the last transaction saw it, and queueKnown the
	// seq up to which the run has read the queue: messages wait when the first is above both
	// drainedUpTo and queueKnown.
	queueSeq, queueKnown int64

	// saved is the run state as last written.
	saved []byte
	// releasing: the current transaction releases the lease; released: one that did committed.
	releasing, released bool

	// recMu serializes the transactions that record the outbox's events, the run's (txDrain) and
	// a State's (txState, from a tool's goroutine), so that each event is recorded once and in
	// order. Held only when the run records its events.
	recMu sync.Mutex
	// outbox holds events waiting for the next transaction; a tool may use its State from
	// goroutines of its own.
	outboxMu sync.Mutex
	outbox   []Event
	closed   bool // the run wrote its last transaction (close)

	// held are the events of the transaction that recorded the run's end, committed and not yet
	// published (publishHeld).
	held []Event

	// cur is the transaction under way (txDrain); body is txBody, bound once by run.wire.
	cur  txWork
	body func(weft.Tx) error
	// messageEvent, when set (a run that records its events), is the message event of a stored
	// row: the transaction that stores a row records its event (stageMessage), so that no crash
	// between two commits can leave a row without one.
	messageEvent func(weft.Message) Event
	// red returns the run's redactor as it stands (a State may add a secret meanwhile).
	red func() *redact.Redactor
}

// tx runs fn in a fenced transaction, storing first the messages drained since the last one, and
// returns those messages once it committed.
func (j *journal) tx(fn func(weft.Tx) error) ([]*weft.Message, error) {
	j.releasing = false
	drained, err := j.txDrain(fn)
	if err == nil && j.releasing {
		j.released = true
	}
	j.releasing = false
	return drained, err
}

// release releases the lease in tx: the run writes nothing more.
func (j *journal) release(tx weft.Tx) error {
	j.releasing = true
	return tx.ReleaseLease()
}

// txDrain is tx, without the lease's bookkeeping; it notes the queue seq the transaction saw.
func (j *journal) txDrain(fn func(weft.Tx) error) ([]*weft.Message, error) {
	if j.messageEvent != nil {
		j.recMu.Lock()
		defer j.recMu.Unlock()
	}
	cur := &j.cur
	*cur = txWork{fn: fn, drained: j.drained, pending: cur.pending[:0], staged: cur.staged[:0]}
	err := j.e.tx(j.ctx, j.threadID, &j.fence, j.red(), j.body)
	// Taken out of cur while published: a subscriber's callback cannot reach this journal, but
	// if it did, its transaction would not write into the events being published.
	w := *cur
	*cur = txWork{}
	if err == nil && len(w.pending) > 0 {
		// Published in commit order; events emitted meanwhile wait for the next transaction.
		j.committed(w.pending, w.recs, len(w.pending)-len(w.staged))
		if w.hold {
			// The run's end: published once the run has noted its stop (publishHeld), as its
			// run_stopped was emitted after that before it was staged.
			j.held = append(j.held, w.pending...)
		} else {
			j.e.emitAll(w.pending)
		}
		clear(w.pending) // the subscribers have their copies
	}
	clear(w.staged)
	cur.pending, cur.staged = w.pending[:0], w.staged[:0] // reused by the next transaction
	if err != nil {
		return nil, err
	}
	j.queueSeq = max(j.queueSeq, w.queueSeq)
	j.drained = nil
	return w.drained, nil
}

// txState runs fn, a State's write of a row from any goroutine (a tool's), in a transaction fenced
// by the run's lease, and records in it the events waiting in the outbox and then the row
// change's event (ev, built once fn ran), published once it commits: a crash cannot leave the
// change without its event. Only for a run that records its events (messageEvent set). The run's
// own transactions wait meanwhile.
func (j *journal) txState(ctx context.Context, fn func(weft.Tx) error, ev func() Event) error {
	j.recMu.Lock()
	defer j.recMu.Unlock()
	var pending []Event
	var recs []weft.EventRecord
	err := j.e.tx(ctx, j.threadID, &j.fence, j.red(), func(tx weft.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		pending = append(j.waitingEvents(pending[:0]), ev())
		recs = records(pending)
		return tx.AppendEvents(recs)
	})
	if err != nil {
		return err
	}
	// Events emitted meanwhile stay for the run's next transaction.
	j.committed(pending, recs, len(pending)-1)
	j.e.emitAll(pending)
	return nil
}

// waitingEvents appends the events waiting in the outbox to dst, for the transaction under way
// to record.
func (j *journal) waitingEvents(dst []Event) []Event {
	j.outboxMu.Lock()
	defer j.outboxMu.Unlock()
	return append(dst, j.outbox...)
}

// committed notes that a transaction recorded pending (its first fromOutbox taken from the
// outbox by waitingEvents) as recs: those leave the outbox, while events emitted since stay for
// the next transaction, and pending get their seqs.
func (j *journal) committed(pending []Event, recs []weft.EventRecord, fromOutbox int) {
	j.outboxMu.Lock()
	j.outbox = append(j.outbox[:0], j.outbox[fromOutbox:]...)
	j.outboxMu.Unlock()
	for i := range pending {
		pending[i].Seq = recs[i].Seq
	}
}

// txWork is the transaction under way in txDrain: its function and what its body learnt. The
// store may run the body more than once; each run starts over from fn and drained.
type txWork struct {
	fn       func(weft.Tx) error
	drained  []*weft.Message
	queueSeq int64
	pending  []Event            // the events the transaction records: the outbox's, then staged
	recs     []weft.EventRecord // their records, numbered by the store
	// staged holds the events fn emitted for this run of the body only (stage), recorded after
	// the outbox's and dropped with a run that fails.
	staged []Event
	// hold: the transaction records the run's end (stageEnd); its events are published by
	// publishHeld, not at the commit.
	hold bool
}

// txBody is the body of txDrain's transaction.
func (j *journal) txBody(tx weft.Tx) error {
	cur := &j.cur
	cur.staged, cur.hold = cur.staged[:0], false
	if drained := cur.drained; len(drained) > 0 {
		if _, err := tx.DrainQueue(j.drainedUpTo); err != nil {
			return err
		}
		for _, m := range drained {
			if err := tx.InsertMessage(m); err != nil {
				return err
			}
			j.stageMessage(m)
		}
		preview := preview(drained[len(drained)-1].Content)
		now := j.e.clock.Now().UTC()
		if err := tx.UpdateThread(weft.ThreadPatch{Status: ptr(weft.ThreadRunning), LastActivityAt: &now, Preview: &preview}); err != nil {
			return err
		}
	}
	if err := cur.fn(tx); err != nil {
		return err
	}
	cur.pending = append(j.waitingEvents(cur.pending[:0]), cur.staged...)
	if len(cur.pending) > 0 {
		cur.recs = records(cur.pending)
		if err := tx.AppendEvents(cur.recs); err != nil {
			return err
		}
	}
	var err error
	cur.queueSeq, err = tx.QueueSeq()
	return err
}

// saveState writes the run state when it changed since it was last written.
func (j *journal) saveState(s *runstate.State) ([]*weft.Message, error) {
	enc := s.Encode()
	if bytes.Equal(enc, j.saved) {
		return nil, nil
	}
	drained, err := j.tx(func(tx weft.Tx) error { return tx.SetExecState(runstate.Key, enc) })
	if err != nil {
		return nil, err
	}
	j.saved = enc
	return drained, nil
}

// stage records an event in the transaction under way, after the outbox's: called from its
// function, which may run more than once, each run staging its own.
func (j *journal) stage(ev Event) {
	j.cur.staged = append(j.cur.staged, ev)
}

// stageMessage records a row's message event in the transaction under way, which stores the row
// (a no-op when the run does not record its events).
func (j *journal) stageMessage(m *weft.Message) {
	if j.messageEvent != nil {
		j.stage(j.messageEvent(*m))
	}
}

// stageEnd is stage for the events that end the run (persistStop): the transaction's events are
// held once it commits, for publishHeld.
func (j *journal) stageEnd(ev Event) {
	j.cur.hold = true
	j.stage(ev)
}

// publishHeld publishes the events held since their commit.
func (j *journal) publishHeld() {
	if len(j.held) > 0 {
		j.e.emitAll(j.held)
		j.held = nil
	}
}

// close ends the outbox once the run has written its last transaction: it returns the events
// still waiting, and record refuses any more (a tool's goroutine may emit after the run).
func (j *journal) close() []Event {
	j.outboxMu.Lock()
	defer j.outboxMu.Unlock()
	evs := j.outbox
	j.outbox, j.closed = nil, true
	return evs
}

// record queues an event for the next transaction; false once the outbox is closed.
func (j *journal) record(ev Event) bool {
	j.outboxMu.Lock()
	defer j.outboxMu.Unlock()
	if j.closed {
		return false
	}
	j.outbox = append(j.outbox, ev)
	return true
}

// recording reports events waiting in the outbox.
func (j *journal) recording() bool {
	j.outboxMu.Lock()
	defer j.outboxMu.Unlock()
	return len(j.outbox) > 0
}

// waiting reports queued messages that the run has neither drained nor read, as of its last
// transaction.
func (j *journal) waiting() bool {
	return j.queueSeq > max(j.drainedUpTo, j.queueKnown)
}

// readQueue reads the thread's queue, unless rows read before are still unread.
func (j *journal) readQueue(ctx context.Context) error {
	if j.queued != nil {
		return nil
	}
	known := j.queueSeq
	q, err := j.e.store.Queued(ctx, j.threadID)
	if err != nil {
		return err
	}
	j.queued, j.queueKnown = q, max(j.queueKnown, known)
	return nil
}

// unread returns and forgets the queue rows read (at the run's start, or by readQueue); some may
// be taken already (taken).
func (j *journal) unread() []weft.QueuedMessage {
	qs := j.queued
	j.queued = nil
	return qs
}

// taken reports a queue row taken already: its insert waits for the next transaction.
func (j *journal) taken(seq int64) bool { return seq <= j.drainedUpTo }

// take stages m, made of the queue row of seq, for the next transaction. m joins the context at
// once, as the user wrote it: a secret a user pasted is the last-line pass's to catch in the
// request (and count: under a model script the run then exits 5); the committer stores the row
// redacted, and the context has it so from then on.
func (j *journal) take(m *weft.Message, seq int64) {
	j.drained = append(j.drained, m)
	j.drainedUpTo = max(j.drainedUpTo, seq)
}

// preview is a thread's preview of a message (weft.PreviewOf).
func preview(s string) string { return weft.PreviewOf(s) }

func ptr[T any](v T) *T { return &v }
