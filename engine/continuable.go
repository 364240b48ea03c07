package engine

import (
	"context"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
)

// A continuable entry is an enabled subagent entry of the acting prompt with resumable enabled,
// whose children stay alive after each run for later messages (nothing to do with resuming a run
// after a crash, resume.go). The parent works with them through the injected lifecycle tools
// (children.LifecycleTools), which engine/children answers.

// continuableOffered is a continuable entry as a subagent target whose message, attachments and
// name arguments play the init roles.
func continuableOffered(re children.Entry) *offered {
	e := re.Entry
	e.InitUserMessageProperty, e.InitAttachmentsProperty, e.InitAgentNameProperty = "message", "attachments", "name"
	return &offered{entry: e, target: weft.Target{Kind: weft.EntryAgent, Name: re.Agent.Name, Agent: re.Agent}}
}

// offerLifecycle injects subagent_create, subagent_message (when the side owns a live child) and
// subagents for the prompt's enabled continuable entries.
func (p parentRun) offerLifecycle(entries []children.Entry) error {
	r, s := p.r, p.s
	specs, check, err := r.e.subagents.LifecycleTools(r.ctx, r.thread.ID, s.side, entries)
	if err != nil {
		return err
	}
	for _, spec := range specs {
		if _, dup := s.offered[spec.Name]; !dup {
			s.offered[spec.Name] = &offered{lifecycle: spec.Name, entries: entries, spec: spec}
			s.specs = append(s.specs, spec)
		}
	}
	s.offered[children.ToolCreate].check = check
	return nil
}

// callLifecycle runs an injected lifecycle tool.
func (p parentRun) callLifecycle(o *offered, args map[string]any) weft.ToolResult {
	r := p.r
	switch o.lifecycle {
	case children.ToolCreate:
		return r.e.subagents.Create(p, o.entries, args)
	case children.ToolMessage:
		return r.e.subagents.Message(p, args)
	case children.ToolNotifyParent:
		st := runState(r, nil)
		if err := st.NotifyParent(context.WithoutCancel(r.ctx), children.Text(args["message"]), children.AttachmentPaths(args["attachments"])...); err != nil {
			return weft.Failure(r.red.Error(err))
		}
		return weft.Success("Message sent to parent.")
	default:
		return r.e.subagents.List(p)
	}
}

// parentRun is a run, in the scope of a call, as the parent of the children engine/children runs
// (its Parent): it calls agents listed as tools, starts immediate ones, and offers and answers the
// lifecycle tools of continuable children.
type parentRun struct {
	r *run
	s *scope
}

func (p parentRun) Context() context.Context     { return p.r.ctx }
func (p parentRun) ThreadID() string             { return p.r.thread.ID }
func (p parentRun) Side() weft.Side              { return p.s.side }
func (p parentRun) Redact(text string) string    { return p.r.red.String(text) }
func (p parentRun) RedactError(err error) string { return p.r.red.Error(err) }

// Create creates a child of the entry, its message, attachments and name arguments playing the
// init roles.
func (p parentRun) Create(e children.Entry, args map[string]any, id string) (*weft.Thread, *weft.ToolResult) {
	return p.createChild(continuableOffered(e), args, id, nil)
}
