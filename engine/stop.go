package engine

import (
	"context"
	"errors"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
	"github.com/weft-agents/weft/engine/modelcall"
	"github.com/weft-agents/weft/engine/runstate"
)

// How a run ends: a stop's reason stored with the thread's status, the rows a stop stores or
// changes, and the run_stopped event.

// runStop is a stop of a run: the reason the run stops with and the text that tells why (the
// stop's error, a session's result).
type runStop struct {
	r      *run
	reason weft.StopReason
	text   string
}

// fail stops the run with step_error.
func (r *run) fail(err error) (weft.StopInfo, error) {
	if errors.Is(err, weft.ErrLeaseLost) || errors.Is(context.Cause(r.ctx), weft.ErrLeaseLost) {
		// Another node owns the thread now: write nothing more.
		return weft.StopInfo{RunID: r.id, Reason: weft.StopAborted, Side: r.state.Side, Error: r.red.Error(err), Steps: r.steps}, nil
	}
	if r.stopRequested() || r.interrupting() {
		return r.stop(r.abortReason(), "")
	}
	if weft.Unavailable(r.e.store, err) {
		// Not the step's failure but the store's, for now (a lost connection, a database
		// restarting, a full disk): the thread stays running and the run resumes when the store
		// answers again (Engine.retryWhenAvailable), as after a crash — not stopped as failed.
		return weft.StopInfo{RunID: r.id, Side: r.state.Side, Steps: r.steps}, err
	}
	var ce *modelcall.ContextError
	if errors.As(err, &ce) {
		return r.stop(weft.StopContextTooLong, r.red.String(ce.Text))
	}
	return r.stop(weft.StopStepError, r.red.Error(err))
}

// stop ends the run: persists state, status and stop reason in one transaction, then runs the
// after_run_stopped hooks.
func (r *run) stop(reason weft.StopReason, text string) (weft.StopInfo, error) {
	return runStop{r, reason, text}.end(false)
}

// end ends the run with the stop; stored says that the step that ended the run already stored the
// stop with its reply (modelStep.commit), which leaves the rest to do.
func (st runStop) end(stored bool) (weft.StopInfo, error) {
	r, reason, text := st.r, st.reason, st.text
	if r.suspending() {
		// A shutdown interrupts the run without stopping it: its status stays running and the
		// lease is released, so the next start resumes it as after a crash.
		return weft.StopInfo{RunID: r.id, Steps: r.steps}, nil
	}
	info := weft.StopInfo{RunID: r.id, Reason: reason, Side: r.state.Side, Error: text, Steps: r.steps}
	var rollback bool // the stop removes the run's rows (weft.IfBusyRollback)
	if reason == weft.StopInterrupted {
		var by string
		by, rollback = r.ar.interrupter()
		if r.e.commit.Observed() {
			// Recorded by the stop's transaction, before run_stopped.
			r.journal.Emit("run_interrupted", Fields{"run_id": r.id, "message_id": by, "rollback": rollback})
		}
	}
	var removed []string
	status := weft.ThreadIdle
	next := r.state // the run state the stop stores
	switch {
	case reason == weft.StopAbortedByUser:
		status = weft.ThreadStopped
		next.Stopped = true
	case r.terminated:
		status = weft.ThreadTerminated
	case reason == weft.StopAwaitingHuman || reason == weft.StopOnResponse || reason == weft.StopTool:
		status = weft.ThreadAwaitingHuman
	case reason == weft.StopAwaitingApproval:
		status = weft.ThreadAwaitingApproval
	case reason == weft.StopBudgetExceeded:
		status = weft.ThreadPaused
	case !reason.OK():
		status = weft.ThreadFailed
	}
	var rows []*weft.Message // the rows the stop stores or changes, in that order
	var err error
	if !stored || reason == "" {
		// (The final step of a turn persists its stop together with its reply.)
		last := r.stopIsLast(nil)
		base, stopped := next, next
		err = r.tx(func(tx weft.Tx) error {
			rows, removed = rows[:0], nil
			stopped = base // this attempt's copy
			if rollback {
				var err error
				if removed, err = r.rollbackRows(tx); err != nil {
					return err
				}
				if r.e.opt.RecordEvents && r.e.commit.Observed() {
					for _, id := range removed {
						r.journal.Stage(r.journal.Event("message_deleted", Fields{"message_id": id}))
					}
				}
			}
			if reason == weft.StopAbortedByUser {
				var err error
				if rows, err = r.tools.StopRows(tx); err != nil {
					return err
				}
			}
			_, err := st.persist(tx, &stopped, status, last, rows...)
			return err
		})
		next = stopped
	}
	if err == nil {
		// The state the stop committed (or, when the step's transaction stored the stop, the
		// state it left): a stop that failed to commit leaves the run's state as it was, though
		// its report and run_stopped still carry the number it was to have.
		r.state = next
	}
	info.Seq = next.Stops
	if err == nil && len(removed) > 0 {
		r.cache.Delete(removed...)
		if !r.e.opt.RecordEvents && r.e.commit.Observed() {
			for _, id := range removed {
				r.journal.Emit("message_deleted", Fields{"message_id": id})
			}
		}
	}
	if err == nil {
		for _, m := range rows {
			if m.Status == weft.MessageFailed {
				r.replaceRow(*m)
			} else {
				r.addRow(*m)
			}
			r.journal.Stored(*m)
		}
	}
	if r.e.watches.Active() {
		var reply *weft.Message
		if m := r.lastReply(); m != nil {
			reply = redactedCopy(m, r.red)
		}
		r.e.watches.Note(r.thread.ID, info, r.model.Redactions(), reply)
	}
	if r.journal.EndRecorded() {
		r.journal.PublishHeld() // the stop's transaction recorded run_stopped
	} else if r.e.commit.Observed() {
		r.journal.Emit("run_stopped", st.event(&next))
	}
	if hs := hooks.Select(r.e.reg, r.agent.Hooks, weft.HookAfterRunStopped); len(hs) > 0 {
		ctx := context.WithoutCancel(r.ctx)
		r.hooks.RunStopped(ctx, hooks.Set{Hooks: hs, State: runState(r, nil)}, info)
	}
	if err != nil && !errors.Is(err, weft.ErrLeaseLost) {
		return info, err
	}
	return info, nil
}

// endSession ends the session: turn counters reset, the run stops with the session's reason. The
// next inbound message starts a new session.
func (st runStop) endSession() (weft.StopInfo, error) {
	r := st.r
	r.sync()
	r.state.EndSession(r.cache.LastSeq)
	return st.end(false)
}

// persist writes the stop: thread status and reason, run state (returned as written), and the
// lease's release. A run that records its events records the message events of rows (the rows the
// transaction stores) in it, and releases the lease in the transaction that records its last
// events: this one when it is the run's last (last, from stopIsLast), which then also records
// run_stopped; else Journal.Finish's.
//
// next is the run state the stop stores, the caller's copy for this attempt of the transaction
// (a store may run a transaction's function again, weft.Store.Tx): persist counts the stop in it,
// and the caller makes it the run's state once the transaction has committed.
func (st runStop) persist(tx weft.Tx, next *runstate.State, status weft.ThreadStatus, last bool, rows ...*weft.Message) ([]byte, error) {
	r, reason := st.r, st.reason
	now := r.now()
	next.Stops++
	if err := tx.UpdateThread(weft.ThreadPatch{Status: &status, StopReason: &reason, LastActivityAt: &now}); err != nil {
		return nil, err
	}
	state := next.Encode()
	if err := tx.SetExecState(runstate.Key, state); err != nil {
		return nil, err
	}
	if r.e.opt.RecordEvents {
		// The rows' events, after those of the queued messages the transaction stores (txBody
		// staged them); when the transaction is the run's last, run_stopped after them, and all
		// of them held for publishHeld (stageEnd holds the transaction's events).
		for _, m := range rows {
			r.journal.StageMessage(m)
		}
		if !last {
			return state, nil
		}
		r.journal.StageEnd(r.journal.Event("run_stopped", st.event(next)))
	}
	return state, r.journal.Release(tx)
}

// event is the payload of the stop's run_stopped event with the run state state.
func (st runStop) event(state *runstate.State) RunStopped {
	r := st.r
	return RunStopped{RunID: r.id, Reason: st.reason, Side: state.Side, Error: st.text, Steps: r.steps, Seq: state.Stops,
		LastLineRedactions: r.model.Redactions()}
}
