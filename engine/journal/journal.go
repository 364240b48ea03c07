package journal

import (
	"bytes"
	"context"
	"sync"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/engine/runstate"
)

// Journal writes one run's changes to the store, in fenced transactions of the run's lease. The
// messages drained from the queue at a step boundary join the context at once but are stored by
// the run's next transaction, whatever it is: until then they stay in the queue, so a crash loses
// nothing. Each transaction also records the events waiting in the outbox (Config.RecordEvents),
// published once it commits. A Journal lives in its run (Init), which it must not outlive.
type Journal struct {
	c    *Committer
	host Host
	// thread is the run's thread; its events name it and its root.
	thread *weft.Thread
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
	// closed: the run wrote its last transaction (close).
	closed bool
	// hold: the transaction under way records the run's end (StageEnd); its events are published
	// by PublishHeld, not at the commit. (Here, not in txWork: with the flags above it takes no
	// word of its own, and the Journal sits in the run, whose size is counted.)
	hold bool

	// recMu serializes the transactions that record the outbox's events, the run's (txDrain) and
	// a State's (StateTx, from a tool's goroutine), so that each event is recorded once and in
	// order. Held only when the run records its events.
	recMu sync.Mutex
	// outbox holds events waiting for the next transaction; a tool may use its State from
	// goroutines of its own.
	outboxMu sync.Mutex
	outbox   []Event

	// held are the events of the transaction that recorded the run's end, committed and not yet
	// published (PublishHeld).
	held []Event

	// cur is the transaction under way (txDrain); body is txBody, bound once by Init.
	cur  txWork
	body func(weft.Tx) error
}

// Host is the run a Journal writes for.
type Host interface {
	// Redactor returns the run's redactor as it stands (a State may add a secret meanwhile), for
	// a caller on any goroutine.
	Redactor() *redact.Redactor
	// Drained notes in the run's caches the messages drained from the queue that a transaction
	// stored, their seqs now final; called on the run's goroutine once it committed.
	Drained(rows []*weft.Message)
}

// Init readies j to write the run of host on thread t under fence: ctx is the run's context
// without cancellation (its writes must finish), queued the queue rows its start read.
func (j *Journal) Init(ctx context.Context, c *Committer, host Host, t *weft.Thread, fence weft.Fence, queued []weft.QueuedMessage) {
	*j = Journal{c: c, host: host, thread: t, ctx: ctx, fence: fence, queued: queued}
	j.body = j.txBody // bound once: a transaction allocates no closure
}

// Fence is the run's fence, which every transaction of the run carries.
func (j *Journal) Fence() *weft.Fence { return &j.fence }

// Records reports whether the run records its events: then the transaction that stores a row
// records its message event too (StageMessage), so that no crash between two commits can leave a
// row without one.
func (j *Journal) Records() bool { return j.c.cfg.RecordEvents }

// Tx runs fn in a fenced transaction, storing first the messages drained since the last one.
// Once it committed, the run's caches note those messages (Host.Drained) and the transaction's
// events are published.
func (j *Journal) Tx(fn func(weft.Tx) error) error {
	j.releasing = false
	drained, err := j.txDrain(fn)
	if err == nil && j.releasing {
		j.released = true
	}
	j.releasing = false
	if len(drained) > 0 {
		j.host.Drained(drained)
		for _, m := range drained {
			j.Stored(*m) // (txBody recorded it when the run records its events)
		}
	}
	return err
}

// Release releases the lease in tx: the run writes nothing more.
func (j *Journal) Release(tx weft.Tx) error {
	j.releasing = true
	return tx.ReleaseLease()
}

// Released reports that a transaction that released the lease committed.
func (j *Journal) Released() bool { return j.released }

// txDrain is Tx, without the lease's bookkeeping; it notes the queue seq the transaction saw.
func (j *Journal) txDrain(fn func(weft.Tx) error) ([]*weft.Message, error) {
	if j.Records() {
		j.recMu.Lock()
		defer j.recMu.Unlock()
	}
	cur := &j.cur
	*cur = txWork{fn: fn, drained: j.drained, pending: cur.pending[:0], staged: cur.staged[:0]}
	err := j.c.Tx(j.ctx, j.thread.ID, &j.fence, j.host.Redactor(), j.body)
	// Taken out of cur while published: a subscriber's callback cannot reach this journal, but
	// if it did, its transaction would not write into the events being published.
	w, hold := *cur, j.hold
	*cur, j.hold = txWork{}, false
	if err == nil && len(w.pending) > 0 {
		// Published in commit order; events emitted meanwhile wait for the next transaction.
		j.committed(w.pending, w.recs, len(w.pending)-len(w.staged))
		if hold {
			// The run's end: published once the run has noted its stop (PublishHeld), as its
			// run_stopped was emitted after that before it was staged.
			j.held = append(j.held, w.pending...)
		} else {
			j.c.PublishAll(w.pending)
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

// StateTx runs fn, a State's write of a row from any goroutine (a tool's), in a transaction
// fenced by the run's lease, and records in it the events waiting in the outbox and then the row
// change's event (ev, built once fn ran), published once it commits: a crash cannot leave the
// change without its event. Only for a run that records its events (Records). The run's own
// transactions wait meanwhile.
func (j *Journal) StateTx(ctx context.Context, fn func(weft.Tx) error, ev func() Event) error {
	j.recMu.Lock()
	defer j.recMu.Unlock()
	var pending []Event
	var recs []weft.EventRecord
	err := j.c.Tx(ctx, j.thread.ID, &j.fence, j.host.Redactor(), func(tx weft.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		pending = append(j.waitingEvents(pending[:0]), ev())
		recs = Records(pending)
		return tx.AppendEvents(recs)
	})
	if err != nil {
		return err
	}
	// Events emitted meanwhile stay for the run's next transaction.
	j.committed(pending, recs, len(pending)-1)
	j.c.PublishAll(pending)
	return nil
}

// waitingEvents appends the events waiting in the outbox to dst, for the transaction under way
// to record.
func (j *Journal) waitingEvents(dst []Event) []Event {
	j.outboxMu.Lock()
	defer j.outboxMu.Unlock()
	return append(dst, j.outbox...)
}

// committed notes that a transaction recorded pending (its first fromOutbox taken from the
// outbox by waitingEvents) as recs: those leave the outbox, while events emitted since stay for
// the next transaction, and pending get their seqs.
func (j *Journal) committed(pending []Event, recs []weft.EventRecord, fromOutbox int) {
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
	// staged holds the events fn emitted for this run of the body only (Stage), recorded after
	// the outbox's and dropped with a run that fails.
	staged []Event
}

// txBody is the body of txDrain's transaction.
func (j *Journal) txBody(tx weft.Tx) error {
	cur := &j.cur
	cur.staged, j.hold = cur.staged[:0], false
	if drained := cur.drained; len(drained) > 0 {
		if _, err := tx.DrainQueue(j.drainedUpTo); err != nil {
			return err
		}
		for _, m := range drained {
			if err := j.Insert(tx, m); err != nil {
				return err
			}
		}
		preview := Preview(drained[len(drained)-1].Content)
		now := j.c.cfg.Clock.Now().UTC()
		if err := tx.UpdateThread(weft.ThreadPatch{Status: ptr(weft.ThreadRunning), LastActivityAt: &now, Preview: &preview}); err != nil {
			return err
		}
	}
	if err := cur.fn(tx); err != nil {
		return err
	}
	cur.pending = append(j.waitingEvents(cur.pending[:0]), cur.staged...)
	if len(cur.pending) > 0 {
		cur.recs = Records(cur.pending)
		if err := tx.AppendEvents(cur.recs); err != nil {
			return err
		}
	}
	var err error
	cur.queueSeq, err = tx.QueueSeq()
	return err
}

// SaveState writes the run state when it changed since it was last written.
func (j *Journal) SaveState(s *runstate.State) error {
	enc := s.Encode()
	if bytes.Equal(enc, j.saved) {
		return nil
	}
	if err := j.Tx(func(tx weft.Tx) error { return tx.SetExecState(runstate.Key, enc) }); err != nil {
		return err
	}
	j.saved = enc
	return nil
}

// NoteSaved notes the run state that a transaction of the run's own wrote (encoded).
func (j *Journal) NoteSaved(enc []byte) { j.saved = enc }

// Stage records an event in the transaction under way, after the outbox's: called from its
// function, which may run more than once, each run staging its own.
func (j *Journal) Stage(ev Event) {
	j.cur.staged = append(j.cur.staged, ev)
}

// StageMessage records a row's message event in the transaction under way, which stores the row
// (a no-op when the run does not record its events).
func (j *Journal) StageMessage(m *weft.Message) {
	if j.Records() {
		j.Stage(j.MessageEvent(*m))
	}
}

// StageEnd is Stage for the events that end the run: the transaction's events are held once it
// commits, for PublishHeld.
func (j *Journal) StageEnd(ev Event) {
	j.hold = true
	j.Stage(ev)
}

// PublishHeld publishes the events held since their commit.
func (j *Journal) PublishHeld() {
	if len(j.held) > 0 {
		j.c.PublishAll(j.held)
		j.held = nil
	}
}

// close ends the outbox once the run has written its last transaction: it returns the events
// still waiting, and record refuses any more (a tool's goroutine may emit after the run).
func (j *Journal) close() []Event {
	j.outboxMu.Lock()
	defer j.outboxMu.Unlock()
	evs := j.outbox
	j.outbox, j.closed = nil, true
	return evs
}

// record queues an event for the next transaction; false once the outbox is closed.
func (j *Journal) record(ev Event) bool {
	j.outboxMu.Lock()
	defer j.outboxMu.Unlock()
	if j.closed {
		return false
	}
	j.outbox = append(j.outbox, ev)
	return true
}

// recording reports events waiting in the outbox.
func (j *Journal) recording() bool {
	j.outboxMu.Lock()
	defer j.outboxMu.Unlock()
	return len(j.outbox) > 0
}

// messageData is the payload of a stored row's message event: the row, its content redacted.
func (j *Journal) messageData(m weft.Message) payload.MessageData {
	m.Content = j.host.Redactor().String(m.Content)
	return payload.MessageData{Message: m}
}
