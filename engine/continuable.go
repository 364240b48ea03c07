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
func (r *run) offerLifecycle(s *scope, entries []continuableEntry) error {
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
func (r *run) callLifecycle(s *scope, o *offered, c weft.ToolCall, msg *weft.Message, args map[string]any) weft.ToolResult {
	p := lifecycleCall{r: r, s: s}
	switch o.lifecycle {
	case toolSubagentCreate:
		return r.e.subagents.Create(p, o.continuable(), args)
	case toolSubagentMessage:
		return r.e.subagents.Message(p, args)
	case toolNotifyParent:
		st := newState(stateCore{e: r.e, thread: r.thread, r: r, ctx: r.ctx})
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

// lifecycleCall is a run's lifecycle tool call as engine/children's Parent.
type lifecycleCall struct {
	r *run
	s *scope
}

func (p lifecycleCall) Context() context.Context     { return p.r.ctx }
func (p lifecycleCall) ThreadID() string             { return p.r.thread.ID }
func (p lifecycleCall) Side() weft.Side              { return p.s.side }
func (p lifecycleCall) Redact(text string) string    { return p.r.red.String(text) }
func (p lifecycleCall) RedactError(err error) string { return p.r.red.Error(err) }

// Create creates a child of the entry, its message, attachments and name arguments playing the
// init roles.
func (p lifecycleCall) Create(e children.Entry, args map[string]any, id string) (*weft.Thread, *weft.ToolResult) {
	return p.r.createChild(p.s, continuableEntry{entry: e.Entry, agent: e.Agent}.offered(), args, id, nil)
}
