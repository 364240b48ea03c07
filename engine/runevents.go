package engine

import (
	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
)

// A run's events: emitted as it goes; with Options.RecordEvents, recorded by the transactions of
// the run (a stored row's message event by the transaction that stores it) and published once
// they commit (journal.go).

// event is an event of the run's thread.
func (r *run) event(typ string, data Payload) Event {
	return Event{Type: typ, ThreadID: r.thread.ID, RootID: orDefault(r.thread.RootID, r.thread.ID), Data: data}
}

func (r *run) emit(typ string, data Payload) {
	ev := r.event(typ, data)
	if r.e.opt.RecordEvents && !transient(typ) {
		// Recorded by the run's next transaction (or flush), published once it commits; after
		// the run's last, outside the run.
		if !r.journal.record(ev) {
			r.e.emitOutside(r.journal.ctx, ev)
		}
		return
	}
	r.e.emit(ev)
}

// flushEvents records and publishes the events waiting in the outbox, before the run blocks on a
// model or a tool (a no-op when none wait).
func (r *run) flushEvents() error {
	if !r.journal.recording() {
		return nil
	}
	return r.tx(func(weft.Tx) error { return nil })
}

// finishEvents ends a run that records events: its last transaction records the events still
// waiting and releases the lease, unless the stop's did (endRecorded). Events emitted after that
// one (a tool's goroutine may still emit, with State.Emit) are recorded outside the run.
func (r *run) finishEvents() {
	if !r.e.opt.RecordEvents {
		return
	}
	if r.journal.released {
		r.journal.publishHeld() // (when stop returned before publishing them)
	} else if err := r.tx(r.journal.release); err != nil {
		// (With the lease lost, another node runs the thread: what this run emitted last goes.)
		r.e.log.Warn("the run's last events were not recorded", "thread", r.thread.ID, "error", err)
		r.journal.close()
		return
	}
	for _, ev := range r.journal.close() {
		r.e.emitOutside(r.journal.ctx, ev)
	}
}

// endRecorded reports that the transaction that stored the stop recorded the run's last events
// (its rows' messages and run_stopped) and released the lease (persistStop with last).
func (r *run) endRecorded() bool { return r.e.opt.RecordEvents && r.journal.released }

// stopIsLast reports whether a stop's transaction can be the run's last one when the run records
// its events: nothing the run does after it writes or emits, which hooks after the stop, and
// after_create_message hooks on rows the stop stores (of scope s, when not nil), could.
func (r *run) stopIsLast(s *scope) bool {
	if !r.e.opt.RecordEvents || !r.e.observed() || len(hooks.Select(r.e.reg, r.agent.Hooks, weft.HookAfterRunStopped)) > 0 {
		return false
	}
	return s == nil || len(hooks.Select(r.e.reg, hooks.Applying(s.prompt.Hooks, r.agent.Hooks), weft.HookAfterCreateMessage)) == 0
}

func (r *run) emitMessage(m weft.Message) {
	if !r.e.observed() {
		return
	}
	r.emit("message", r.messageData(m))
}

// insertRecorded stores m in tx and, when the run records its events, records m's message event
// in tx too (journal.stageMessage); the caller then emits it with emitUnrecorded once tx commits.
func (r *run) insertRecorded(tx weft.Tx, m *weft.Message) error {
	if err := tx.InsertMessage(m); err != nil {
		return err
	}
	r.journal.stageMessage(m)
	return nil
}

// emitUnrecorded emits, once its transaction committed, the message event of a row whose
// transaction recorded the event when the run records its events (insertRecorded,
// journal.stageMessage).
func (r *run) emitUnrecorded(m weft.Message) {
	if !r.e.opt.RecordEvents {
		r.emitMessage(m)
	}
}

// messageData is the payload of a stored row's message event: the row, its content redacted.
func (r *run) messageData(m weft.Message) MessageData {
	m.Content = r.redactorNow().String(m.Content)
	return MessageData{Message: m}
}
