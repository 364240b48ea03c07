package children

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/vars"
)

// AgentHandoff is a thread's switch to another agent: a call of an ai_human agent listed as a
// tool, applied after the step that called it. The thread keeps its rows and goes on with the
// target agent's side A. (Not to be confused with a thread's turn passing to another worker or
// process: that is engine/sched's transfer, or a lease taken over.)
type AgentHandoff struct {
	// Target is the agent the thread switches to.
	Target *weft.Agent
	// Args are the call's arguments, merged into the thread's.
	Args map[string]any
	// Init is the target's first message, from side B: the call's message argument and the
	// thread's files its attachments argument names; stored only with content or files.
	Init *weft.Message
}

// Arguments are the thread's arguments after the handoff: args, the call's over them.
func (h *AgentHandoff) Arguments(args map[string]any) map[string]any {
	out := maps.Clone(args)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, h.Args)
	return out
}

// HandOff prepares a handoff, called with args through entry e, of a thread whose agent is from
// (its variables env) to target, for the end of the step of run runID. A required variable of
// the target without a value (declared are the target's variable types) fails the call with an
// error listing them, and no handoff happens.
func (c *Room) HandOff(ctx context.Context, threadID, runID, from string, env *vars.View, declared map[string]weft.VarType, target *weft.Agent, e weft.ToolEntry, args map[string]any) (*AgentHandoff, *weft.ToolResult) {
	flag := func(name string) bool {
		v, ok := env.Lookup(name)
		return ok && vars.FlagOn(v.Value)
	}
	view := &vars.View{Thread: env.Thread, Agent: target.Env, User: env.User, Instance: env.Instance, Declared: declared}
	if missing := vars.Missing(vars.NewGraph(c.reg, target, flag).Declared(), view); len(missing) > 0 {
		names := make([]string, len(missing))
		for i, m := range missing {
			names[i] = m.Name
		}
		f := weft.Failure(fmt.Sprintf("Cannot hand off to %q: missing required variables: %s", target.Name, strings.Join(names, ", ")))
		return nil, &f
	}
	msgProp, attProp := e.InitUserMessageProperty, e.InitAttachmentsProperty
	if sp, ok := c.reg.Prompt(target.SideA.Prompt); !ok || sp.RequiredSchema == nil {
		// The default handoff schema: {message, attachments?}.
		msgProp, attProp = orDefault(msgProp, "message"), orDefault(attProp, "attachments")
	}
	atts, err := Attachments(ctx, c.store, threadID, AttachmentPaths(args[attProp]))
	if err != nil {
		f := weft.Failure(err.Error())
		return nil, &f
	}
	init := &weft.Message{Role: weft.RoleUser, Side: weft.SideB, Status: weft.MessageCompleted, RunID: runID,
		Content: Text(args[msgProp]), Attachments: atts, Metadata: map[string]any{"handoff_from": from}}
	return &AgentHandoff{Target: target, Args: args, Init: init}, nil
}
