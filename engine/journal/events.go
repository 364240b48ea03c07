package journal

import (
	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/payload"
)

// A run's events: emitted as it goes; with Config.RecordEvents, recorded by the transactions of
// the run (a stored row's message event by the transaction that stores it) and published once
// they commit.

// Event returns an event of the run's thread.
func (j *Journal) Event(typ string, data payload.Payload) Event {
	t := j.thread
	root := t.RootID
	if root == "" {
		root = t.ID
	}
	return Event{Type: typ, ThreadID: t.ID, RootID: root, Data: data}
}

// Emit emits an event of the run's thread: when events are recorded, the run's next transaction
// (or Flush) records it and it is published once that commits; after the run's last, outside the
// run.
func (j *Journal) Emit(typ string, data payload.Payload) {
	ev := j.Event(typ, data)
	if j.c.cfg.RecordEvents && !Transient(typ) {
		if !j.record(ev) {
			j.c.Outside(j.ctx, ev)
		}
		return
	}
	j.c.Publish(ev)
}

// observed tells whether events are wanted (Committer.Observed).
func (j *Journal) observed() bool { return j.c.Observed() }

// MessageEvent is the message event of a stored row: the row, its content redacted.
func (j *Journal) MessageEvent(m weft.Message) Event { return j.Event("message", j.messageData(m)) }

// EmitMessage emits the message event of a stored row, when events are wanted.
func (j *Journal) EmitMessage(m weft.Message) {
	if !j.observed() {
		return
	}
	j.Emit("message", j.messageData(m))
}

// Insert stores m in tx and, when the run records its events, records m's message event in tx
// too (StageMessage); the caller then calls Stored once tx commits.
func (j *Journal) Insert(tx weft.Tx, m *weft.Message) error {
	if err := tx.InsertMessage(m); err != nil {
		return err
	}
	j.StageMessage(m)
	return nil
}

// Stored emits, once its transaction committed, the message event of a row (inserted or
// changed), unless the transaction recorded it (the run records its events: Insert,
// StageMessage).
func (j *Journal) Stored(m weft.Message) {
	if !j.c.cfg.RecordEvents {
		j.EmitMessage(m)
	}
}

// Flush records and publishes the events waiting in the outbox, before the run blocks on a model
// or a tool (a no-op when none wait).
func (j *Journal) Flush() error {
	if !j.recording() {
		return nil
	}
	return j.Tx(func(weft.Tx) error { return nil })
}

// Finish ends a run that records events: its last transaction records the events still waiting
// and releases the lease, unless the stop's did (EndRecorded). Events emitted after that one (a
// tool's goroutine may still emit, with State.Emit) are recorded outside the run.
func (j *Journal) Finish() {
	if !j.c.cfg.RecordEvents {
		return
	}
	if j.released {
		j.PublishHeld() // (when the stop returned before publishing them)
	} else if err := j.Tx(j.Release); err != nil {
		// (With the lease lost, another node runs the thread: what this run emitted last goes.)
		j.c.cfg.Log.Warn("the run's last events were not recorded", "thread", j.thread.ID, "error", err)
		j.close()
		return
	}
	for _, ev := range j.close() {
		j.c.Outside(j.ctx, ev)
	}
}

// EndRecorded reports that the transaction that stored the stop recorded the run's last events
// (its rows' messages and run_stopped) and released the lease.
func (j *Journal) EndRecorded() bool { return j.c.cfg.RecordEvents && j.released }
