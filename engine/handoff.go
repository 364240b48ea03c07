package engine

import (
	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/runstate"
)

// startHandoff answers a call of an ai_human agent listed as a tool (children.Room.HandOff): the
// thread switches to the target agent after the step, unless a required variable of the target
// has no value.
func (r *run) startHandoff(s *scope, o *offered, args map[string]any) weft.ToolResult {
	target := o.target.Agent
	h, fail := r.e.subagents.HandOff(r.ctx, r.thread.ID, r.id, r.agent.Name, r.env, r.e.varTypes.Of(target), target, o.entry, args)
	if fail != nil {
		return *fail
	}
	s.fx.handoff = h
	return weft.Success("Handoff complete")
}

// applyHandoff switches the thread to the handoff's agent after the step: agent (origin kept),
// side A, turn counters reset, arguments merged, the init message stored; the run goes on with no
// side switch or turn count.
func (r *run) applyHandoff(h *children.AgentHandoff) error {
	args := h.Arguments(r.thread.Arguments)
	from := r.agent.Name
	// The target starts a new session: its run state replaces the run's once the handoff commits.
	var next runstate.State
	r.sync()
	next.EndSession(r.cache.LastSeq)
	state := next.Encode()
	name := h.Target.Name
	err := r.tx(func(tx weft.Tx) error {
		if err := tx.UpdateThread(weft.ThreadPatch{Agent: &name, Arguments: args}); err != nil {
			return err
		}
		if h.Init.Content != "" || len(h.Init.Attachments) > 0 {
			if err := r.journal.Insert(tx, h.Init); err != nil {
				return err
			}
		}
		return tx.SetExecState(runstate.Key, state)
	})
	if err != nil {
		return err
	}
	r.state = next
	r.journal.NoteSaved(state)
	if h.Init.ID != "" {
		r.addRow(*h.Init)
		r.journal.Stored(*h.Init)
	}
	r.thread.Agent, r.thread.Arguments, r.agent = name, args, h.Target
	r.ceiling = max(250, h.Target.SideA.MaxSteps, h.Target.Side(weft.SideB).MaxSteps)
	r.sideSteps = [2]int{}
	r.env.Agent, r.env.Declared = h.Target.Env, r.e.varTypes.Of(h.Target)
	if r.e.commit.Observed() {
		r.journal.Emit("handoff", Fields{"from_agent": from, "to_agent": name})
	}
	return nil
}
