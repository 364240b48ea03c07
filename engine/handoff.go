package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/runstate"
	"github.com/weft-agents/weft/engine/vars"
)

// pendingHandoff is a handoff called in the current step, applied after it.
type pendingHandoff struct {
	target *weft.Agent
	args   map[string]any
	init   *weft.Message
}

// startHandoff answers a call of an ai_human agent listed as a tool: it checks the target's required
// variables (missing → an error listing them, no handoff) and records the handoff for the end of
// the step.
func (r *run) startHandoff(s *scope, o *offered, args map[string]any) weft.ToolResult {
	target := o.target.Agent
	flag := func(name string) bool {
		v, ok := r.env.Lookup(name)
		return ok && vars.FlagOn(v.Value)
	}
	view := &vars.View{Thread: r.env.Thread, Agent: target.Env, User: r.env.User, Instance: r.env.Instance, Declared: r.e.varTypes.Of(target)}
	if missing := vars.Missing(vars.NewGraph(r.e.reg, target, flag).Declared(), view); len(missing) > 0 {
		names := make([]string, len(missing))
		for i, m := range missing {
			names[i] = m.Name
		}
		return weft.Failure(fmt.Sprintf("Cannot hand off to %q: missing required variables: %s", target.Name, strings.Join(names, ", ")))
	}
	e := o.entry
	msgProp, attProp := e.InitUserMessageProperty, e.InitAttachmentsProperty
	if sp, ok := r.e.reg.Prompt(target.SideA.Prompt); !ok || sp.RequiredSchema == nil {
		// The default handoff schema: {message, attachments?}.
		if msgProp == "" {
			msgProp = "message"
		}
		if attProp == "" {
			attProp = "attachments"
		}
	}
	init := &weft.Message{Role: weft.RoleUser, Side: weft.SideB, Status: weft.MessageCompleted, RunID: r.id,
		Metadata: map[string]any{"handoff_from": r.agent.Name}}
	switch v := args[msgProp].(type) {
	case nil:
	case string:
		init.Content = v
	default:
		b, _ := json.Marshal(v)
		init.Content = string(b)
	}
	atts, err := children.Attachments(r.ctx, r.e.store, r.thread.ID, children.AttachmentPaths(args[attProp]))
	if err != nil {
		return weft.Failure(err.Error())
	}
	init.Attachments = atts
	s.fx.handoff = &pendingHandoff{target: target, args: args, init: init}
	return weft.Success("Handoff complete")
}

// applyHandoff switches the thread to the handoff's agent after the step: agent (origin kept),
// side A, turn counters reset, arguments merged, the init message stored; the run goes on with no
// side switch or turn count.
func (r *run) applyHandoff(h *pendingHandoff) error {
	args := map[string]any{}
	for k, v := range r.thread.Arguments {
		args[k] = v
	}
	for k, v := range h.args {
		args[k] = v
	}
	from := r.agent.Name
	r.state = runstate.State{}
	r.sync()
	r.state.EndSession(r.lastSeq)
	state := r.state.Encode()
	name := h.target.Name
	err := r.tx(func(tx weft.Tx) error {
		if err := tx.UpdateThread(weft.ThreadPatch{Agent: &name, Arguments: args}); err != nil {
			return err
		}
		if h.init.Content != "" || len(h.init.Attachments) > 0 {
			if err := r.journal.Insert(tx, h.init); err != nil {
				return err
			}
		}
		return tx.SetExecState(runstate.Key, state)
	})
	if err != nil {
		return err
	}
	r.journal.NoteSaved(state)
	if h.init.ID != "" {
		r.addRow(*h.init)
		r.journal.Stored(*h.init)
	}
	r.thread.Agent, r.thread.Arguments, r.agent = name, args, h.target
	r.ceiling = max(250, h.target.SideA.MaxSteps, h.target.Side(weft.SideB).MaxSteps)
	r.sideSteps = [2]int{}
	r.env.Agent, r.env.Declared = h.target.Env, r.e.varTypes.Of(h.target)
	if r.e.commit.Observed() {
		r.journal.Emit("handoff", Fields{"from_agent": from, "to_agent": name})
	}
	return nil
}
