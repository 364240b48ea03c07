package engine

import (
	"context"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/schema"
)

// continuableEntry is an enabled continuable agent entry of the acting prompt: a subagent entry
// with resumable enabled, whose children stay alive after each run for later messages (nothing
// to do with resuming a run after a crash, resume.go). The parent works with them through the
// injected lifecycle tools below, which engine/children answers.
type continuableEntry struct {
	entry weft.ToolEntry
	agent *weft.Agent
}

// offered is the entry as a subagent target whose message, attachments and name arguments play
// the init roles.
func (re continuableEntry) offered() *offered {
	e := re.entry
	e.InitUserMessageProperty, e.InitAttachmentsProperty, e.InitAgentNameProperty = "message", "attachments", "name"
	return &offered{entry: e, target: weft.Target{Kind: weft.EntryAgent, Name: re.agent.Name, Agent: re.agent}}
}

// The injected lifecycle tools of continuable subagents.
const (
	toolSubagentCreate  = "subagent_create"
	toolSubagentMessage = "subagent_message"
	toolSubagents       = "subagents"
	toolNotifyParent    = "notify_parent"
)

// offerLifecycle injects subagent_create, subagent_message (when the side owns a live child) and
// subagents for the prompt's enabled continuable entries.
func (p parentRun) offerLifecycle(entries []continuableEntry) error {
	r, s := p.r, p.s
	names := make([]any, len(entries))
	lines := make([]string, len(entries))
	hasArgs := false
	for i, e := range entries {
		names[i] = e.agent.Name
		lines[i] = "- " + e.agent.Name + ": " + e.agent.ToolDescription
		if p, ok := r.e.reg.Prompt(e.agent.SideA.Prompt); ok && p.RequiredSchema != nil {
			hasArgs = true
		}
	}
	props := []schema.Prop{schema.Field("agent", schema.Enum(names...)), schema.Field("message", schema.String()),
		schema.OptionalField("name", schema.String()), schema.OptionalField("attachments", schema.Array(schema.String()))}
	if hasArgs {
		props = append(props, schema.OptionalField("arguments", &schema.Schema{Type: "object"}))
	}
	add := func(name, desc string, params *schema.Schema) {
		o := &offered{lifecycle: name, entries: entries, spec: weft.ToolSpec{Name: name, Description: desc, Parameters: params}}
		if _, dup := s.offered[name]; !dup {
			s.offered[name] = o
			s.specs = append(s.specs, o.spec)
		}
	}
	add(toolSubagentCreate, "Create a subagent instance. Available agents:\n"+strings.Join(lines, "\n"), schema.Object(props...))
	check := append([]schema.Prop{schema.Field("agent", schema.String())}, props[1:]...)
	s.offered[toolSubagentCreate].check = schema.Object(check...)
	live, err := r.e.subagents.Live(r.ctx, r.thread.ID, s.side)
	if err != nil {
		return err
	}
	if len(live) > 0 {
		add(toolSubagentMessage, "Send a message to a subagent instance you created.", schema.Object(schema.Field("referenceId", schema.String()),
			schema.Field("message", schema.String()), schema.OptionalField("attachments", schema.Array(schema.String()))))
	}
	add(toolSubagents, "List your subagent instances and their status.", schema.NoArgs())
	return nil
}

// callLifecycle runs an injected lifecycle tool.
func (p parentRun) callLifecycle(o *offered, args map[string]any) weft.ToolResult {
	r := p.r
	switch o.lifecycle {
	case toolSubagentCreate:
		return r.e.subagents.Create(p, o.continuable(), args)
	case toolSubagentMessage:
		return r.e.subagents.Message(p, args)
	case toolNotifyParent:
		st := runState(r, nil)
		if err := st.NotifyParent(context.WithoutCancel(r.ctx), children.Text(args["message"]), children.AttachmentPaths(args["attachments"])...); err != nil {
			return weft.Failure(r.red.Error(err))
		}
		return weft.Success("Message sent to parent.")
	default:
		return r.e.subagents.List(p)
	}
}

// continuable returns a lifecycle tool's entries as engine/children's.
func (o *offered) continuable() []children.Entry {
	entries := make([]children.Entry, len(o.entries))
	for i, re := range o.entries {
		entries[i] = children.Entry{Entry: re.entry, Agent: re.agent}
	}
	return entries
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
	return p.createChild(continuableEntry{entry: e.Entry, agent: e.Agent}.offered(), args, id, nil)
}
