package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/budget"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/runstate"
)

// stopRequested reports a user stop or a cancelled context.
func (r *run) stopRequested() bool {
	return r.ar.stop.Load() || r.state.Stopped || r.ctx.Err() != nil
}

// loop runs steps until a stop reason.
func (r *run) loop(trigger string, forceSide weft.Side) (weft.StopInfo, error) {
	fx, end := r.begin(trigger, forceSide)
	for end == nil {
		end = r.boundary(&fx)
	}
	return end.info, end.err
}

// ending is how a run ends: what loop returns. A step of the loop returns nil to go on.
type ending struct {
	info weft.StopInfo
	err  error
}

func ended(info weft.StopInfo, err error) *ending { return &ending{info, err} }

// begin starts the loop: it clears or keeps the stop flag, resumes what a previous run left open
// and ends a turn whose stop tool committed. It returns the resumed calls' effects not applied
// yet, or how the run ends before its first step.
func (r *run) begin(trigger string, forceSide weft.Side) (toolEffects, *ending) {
	if trigger == "continue" {
		r.state.Stopped = false
		if forceSide != "" {
			r.state.Side = forceSide
		}
	}
	// An inbound user message clears the stop flag: it runs instead of being
	// failed by the stop check before the queue is drained.
	if r.state.Stopped && !r.ar.stop.Load() && slices.ContainsFunc(r.journal.Queued(), func(q weft.QueuedMessage) bool { return q.Role == weft.RoleUser }) {
		r.state.Stopped = false
	}
	// fx holds the tools' effects not applied yet: the resumed calls', then each step's. A stop
	// asked for while no run held the thread (Stop, for a run that died) runs none of the calls
	// left open: the stop answers them (Dispatcher.StopRows).
	var resumed bool
	var fx toolEffects
	if !r.state.Stopped {
		var err error
		resumed, fx, err = resumeTools(r)
		r.terminated = fx.terminate
		if errors.Is(err, errAwaitApproval) {
			return fx, ended(r.stop(weft.StopAwaitingApproval, ""))
		}
		if err != nil {
			return fx, ended(r.fail(err))
		}
	}
	if resumed {
		trigger = "resume"
		r.trigger = trigger
	}
	if r.e.commit.Observed() {
		r.journal.Emit("run_started", RunStarted{RunID: r.id, Trigger: trigger, Side: r.state.Side})
	}
	if side := r.state.Side; dispatch.StopToolDone(r.cache.Rows, side, r.agent.Side(side).StopTool) && forceSide == "" && !r.state.Stopped {
		// The run died after the stop tool's result committed: the turn ends as it would have.
		r.state.CompleteTurn(side, r.cache.LastSeq)
		r.state.Side = side.Other()
		if nd := r.agent.Side(r.state.Side); nd.Human || !nd.IsAI() {
			return fx, ended(r.stop(weft.StopTool, ""))
		}
	}
	return fx, nil
}

// boundary runs the loop from one step boundary to the next: the stop checks, the queue, and one
// step of the acting side (a handler's turn or a model step); nil goes on.
func (r *run) boundary(fx *toolEffects) *ending {
	// A shutdown suspends the run at this step boundary.
	if r.e.sched.Stopping() && !r.ar.stop.Load() {
		r.suspend.Store(true)
	}
	// S1: stop flag, cancellation, or a message that interrupts the run.
	if r.stopRequested() || r.interrupting() || r.suspending() {
		return ended(r.stop(r.abortReason(), ""))
	}
	// S2: drain the queue at the step boundary, unless a message in it interrupts the run.
	if err := r.drain(); err != nil {
		return ended(r.fail(err))
	}
	if r.interrupting() {
		return ended(r.stop(r.abortReason(), ""))
	}
	side := r.state.Side
	def := r.agent.Side(side)
	// S4: the session's turn cap.
	if n := r.agent.MaxSessionTurns; n > 0 && r.state.MinTurns() >= n {
		return ended(runStop{r, weft.StopMaxSessionTurn, ""}.endSession())
	}
	// S5: a human side parks the run.
	if def.Human || !def.IsAI() {
		return ended(r.stop(weft.StopAwaitingHuman, ""))
	}
	if def.Handler != "" {
		return r.handlerBoundary(side, def, fx)
	}
	// S7: step caps.
	if def.MaxSteps > 0 && r.sideSteps[runstate.SideIndex(side)] >= def.MaxSteps {
		return ended(r.stop(weft.StopMaxSideSteps, fmt.Sprintf("side %s reached maxSteps (%d)", side, def.MaxSteps)))
	}
	if r.steps >= r.ceiling {
		return ended(r.stop(weft.StopMaxTotalSteps, fmt.Sprintf("run reached %d steps", r.ceiling)))
	}
	p, ok := r.e.reg.Prompt(def.Prompt)
	if !ok {
		return ended(r.fail(weft.Errorf(weft.EInvalid, "prompt %q is not defined", def.Prompt)))
	}
	out, err := r.step(p, side, def, *fx)
	*fx = out.effects
	r.terminated = r.terminated || fx.terminate
	if err != nil {
		return ended(r.stepFailed(err))
	}
	return r.afterStep(side, out, fx)
}

// handlerBoundary is S6, a handler's turn, and what follows it.
func (r *run) handlerBoundary(side weft.Side, def weft.AgentSide, fx *toolEffects) *ending {
	idle, hfx, err := r.handlerTurn(side, def, *fx)
	*fx = hfx
	r.terminated = r.terminated || fx.terminate
	if err != nil {
		return ended(r.fail(err))
	}
	r.state.Of(side).Idle = idle
	// An idle handler gives the other side nothing new: the run stops, unless the other side
	// is a handler that has not been idle yet (two idle handler sides stop the run).
	other := r.agent.Side(side.Other())
	if idle && (other.Handler == "" || r.state.Of(side.Other()).Idle) {
		return ended(r.stop(weft.StopHandlerIdle, ""))
	}
	if !idle {
		r.sync()
		r.state.CompleteTurn(side, r.cache.LastSeq)
	}
	if next := fx.takeForced(); next != "" {
		r.state.Side = next
	} else {
		r.state.Side = side.Other()
	}
	if nd := r.agent.Side(r.state.Side); nd.Human || !nd.IsAI() {
		return ended(r.stop(weft.StopAwaitingHuman, ""))
	}
	if err := r.saveState(); err != nil {
		return ended(r.fail(err))
	}
	return nil
}

// stepFailed stops the run after a step that failed: awaiting an approval, over a budget, or
// failed.
func (r *run) stepFailed(err error) (weft.StopInfo, error) {
	if errors.Is(err, errAwaitApproval) {
		return r.stop(weft.StopAwaitingApproval, "")
	}
	if be := (*budget.Error)(nil); errors.As(err, &be) {
		return r.stop(weft.StopBudgetExceeded, be.Why)
	}
	return r.fail(err)
}

// afterStep applies what a model step asked for: a handoff, a stop, a session's end, a forced
// turn, the turn's completion (S12); nil goes on.
func (r *run) afterStep(side weft.Side, out stepOutcome, fx *toolEffects) *ending {
	if h := fx.handoff; h != nil && out.stop == "" && out.session == "" {
		// The thread switches agent and goes on at once, with no side switch or turn count.
		fx.handoff = nil
		if err := r.applyHandoff(h); err != nil {
			return ended(r.fail(err))
		}
		return nil
	}
	if out.stop != "" {
		return ended(runStop{r, out.stop, out.stopText}.end(out.stored))
	}
	if out.session != "" {
		return ended(runStop{r, out.session, out.stopText}.endSession())
	}
	if r.terminated {
		return ended(r.stop(weft.StopAborted, "thread terminated"))
	}
	if next := fx.takeForced(); next != "" {
		// Execution.ForceTurn: the chosen side acts next; a human side parks the run.
		if out.turnDone {
			r.sync()
			r.state.CompleteTurn(side, r.cache.LastSeq)
		}
		r.state.Side = next
		if nd := r.agent.Side(next); nd.Human || !nd.IsAI() {
			return ended(r.stop(weft.StopAwaitingHuman, ""))
		}
		if err := r.saveState(); err != nil {
			return ended(r.fail(err))
		}
		return nil
	}
	// S12: turn completion.
	if out.turnDone {
		r.sync()
		r.state.CompleteTurn(side, r.cache.LastSeq)
		next := side.Other()
		if nd := r.agent.Side(next); nd.Human || !nd.IsAI() {
			reason := weft.StopOnResponse
			if out.byStopTool {
				reason = weft.StopTool
			}
			r.state.Side = next
			return ended(r.stop(reason, ""))
		}
		r.state.Side = next
	}
	if err := r.saveState(); err != nil {
		return ended(r.fail(err))
	}
	return nil
}

// saveState persists the run state when it changed since it was last written.
func (r *run) saveState() error {
	return r.journal.SaveState(&r.state)
}

// suspending tells whether the run is being interrupted by a shutdown (at a step boundary, or
// cancelled with errShutdown once the drain deadline passed).
func (r *run) suspending() bool {
	if r.suspend.Load() {
		return true
	}
	cause := context.Cause(r.ctx)
	return cause != nil && errors.Is(cause, errShutdown)
}

func (r *run) abortReason() weft.StopReason {
	if r.ar.stop.Load() || r.state.Stopped || errors.Is(context.Cause(r.ctx), errStopped) {
		return weft.StopAbortedByUser
	}
	if r.ctx.Err() == nil && r.interrupting() {
		return weft.StopInterrupted
	}
	return weft.StopAborted
}

// drain moves queued messages into the thread (S2): they join the context now and are stored by
// the run's next transaction. The acting side of a new turn follows the first drained row:
// user/system → A, assistant → B. An inbound human message is a completed B turn.
func (r *run) drain() error {
	j := &r.journal
	if j.Queued() == nil && r.steps > 0 {
		r.sync() // a message queued meanwhile is told through the mailbox (activeRun.Queued)
		pushed := r.pushed
		r.pushed = false
		if pushed || j.Waiting() {
			if err := j.ReadQueue(r.ctx); err != nil {
				return err
			}
		}
	}
	qs := j.Unread()
	if len(qs) == 0 || r.interruptedBy(qs) {
		return nil
	}
	r.sync()
	first := true
	var last *weft.Message
	for _, q := range qs {
		if j.Taken(q.Seq) {
			continue // its insert waits for the next transaction
		}
		r.ar.take(&q)
		m := &weft.Message{ID: q.ID, Role: q.Role, Content: q.Content, Attachments: q.Attachments, Silent: q.Silent,
			Metadata: q.Metadata, Status: weft.MessageCompleted, RunID: r.id, CreatedAt: q.CreatedAt}
		switch q.Role {
		case weft.RoleUser:
			m.Side = weft.SideB
		case weft.RoleAssistant:
			m.Side = weft.SideA
		}
		// Provisional seq until the insert assigns the real one (the run holds the lease).
		m.Seq = r.cache.LastSeq + int64(j.Unstored()) + 1
		if first {
			first = false
			if q.Role == weft.RoleAssistant {
				r.state.Side = weft.SideB
			} else {
				r.state.Side = weft.SideA
			}
		}
		j.Take(m, q.Seq)
		r.cache.Rows = append(r.cache.Rows, m)
		last = m
	}
	if first {
		return nil
	}
	if r.state.Side == weft.SideA && r.agent.Kind() == weft.AIHuman {
		// The human's messages complete a B turn.
		b := r.state.Of(weft.SideB)
		b.Turns++
		b.Window = last.Seq
	}
	r.state.Stopped = false
	return nil
}
