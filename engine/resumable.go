package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/threadstate"
	"github.com/weft-agents/weft/schema"
)

// resumableEntry is an enabled resumable agent entry of the acting prompt.
type resumableEntry struct {
	entry weft.ToolEntry
	agent *weft.Agent
}

// offered is the entry as a subagent target whose message, attachments and name arguments play
// the init roles.
func (re resumableEntry) offered() *offered {
	e := re.entry
	e.InitUserMessageProperty, e.InitAttachmentsProperty, e.InitAgentNameProperty = "message", "attachments", "name"
	return &offered{entry: e, target: weft.Target{Kind: weft.EntryAgent, Name: re.agent.Name, Agent: re.agent}}
}

// The injected lifecycle tools of resumable subagents.
const (
	toolSubagentCreate  = "subagent_create"
	toolSubagentMessage = "subagent_message"
	toolSubagents       = "subagents"
	toolNotifyParent    = "notify_parent"
)

// subagentProperty is the child thread property holding its registry row.
const subagentProperty = threadstate.SubagentProperty

// registryRow is a child's registry row as stored on the child thread.
func registryRow(t *weft.Thread) (map[string]any, bool) { return threadstate.RegistryRow(t) }

// liveChildren lists the thread's non-terminated resumable children owned by side.
func (r *run) liveChildren(side weft.Side) ([]*weft.Thread, error) {
	kids, _, err := r.e.store.Threads(r.ctx, weft.ThreadQuery{ParentID: r.thread.ID, Sort: "oldest", Limit: 1000})
	if err != nil {
		return nil, err
	}
	var out []*weft.Thread
	for _, k := range kids {
		row, ok := registryRow(k)
		if !ok || k.Status == weft.ThreadTerminated || row["resumable"] != true || row["owner_side"] != string(side) {
			continue
		}
		out = append(out, k)
	}
	return out, nil
}

// offerLifecycle injects subagent_create, subagent_message (when the side owns a live child) and
// subagents for the prompt's enabled resumable entries.
func (r *run) offerLifecycle(s *scope, entries []resumableEntry) error {
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
	live, err := r.liveChildren(s.side)
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
	switch o.lifecycle {
	case toolSubagentCreate:
		return r.subagentCreate(s, o, c, msg, args)
	case toolSubagentMessage:
		return r.subagentMessage(s, args)
	case toolNotifyParent:
		st := runState(r, nil)
		if err := st.NotifyParent(context.WithoutCancel(r.ctx), initText(args["message"]), attachmentPaths(args["attachments"])...); err != nil {
			return weft.Failure(r.red.Error(err))
		}
		return weft.Success("Message sent to parent.")
	default:
		return r.subagentList(s)
	}
}

func (r *run) subagentCreate(s *scope, o *offered, c weft.ToolCall, msg *weft.Message, args map[string]any) weft.ToolResult {
	name, _ := args["agent"].(string)
	var re *resumableEntry
	names := make([]string, len(o.entries))
	for i := range o.entries {
		names[i] = o.entries[i].agent.Name
		if o.entries[i].agent.Name == name {
			re = &o.entries[i]
		}
	}
	if re == nil {
		return weft.Failure(fmt.Sprintf("Agent %q is not available for this prompt. Use one of: %s", name, strings.Join(names, ", ")))
	}
	blocking := weft.Flag(re.entry.Blocking, true)
	if max := re.entry.Resumable.MaxInstances; max > 0 {
		live, err := r.liveChildren(s.side)
		if err != nil {
			return weft.Failure("Subagent could not be created: " + r.red.Error(err))
		}
		var refs []string
		for _, k := range live {
			if row, _ := registryRow(k); row["agent"] == name {
				refs = append(refs, k.ID)
			}
		}
		if len(refs) >= max {
			if blocking && max == 1 {
				// A blocking create on the single live instance messages it and awaits.
				return r.subagentMessage(s, map[string]any{"referenceId": refs[0], "message": args["message"], "attachments": args["attachments"]})
			}
			return weft.Failure(fmt.Sprintf("Maximum instances (%d) of %q reached. Active references: %s. Use subagent_message to continue one of them.",
				max, name, strings.Join(refs, ", ")))
		}
	}
	childArgs := map[string]any{}
	if a, ok := args["arguments"].(map[string]any); ok {
		for k, v := range a {
			childArgs[k] = v
		}
	}
	for _, k := range []string{"message", "attachments", "name"} {
		if v, ok := args[k]; ok {
			childArgs[k] = v
		}
	}
	eo := re.offered()
	entry := eo.entry
	child, fail := r.createChild(s, eo, childArgs, weft.NewID("thr_"), nil)
	if fail != nil {
		return *fail
	}
	if !blocking {
		r.e.children.startChild(child, re.agent, s.side, childMode{resumable: true, explicit: entry.Resumable.ParentCommunication == "explicit"})
		return weft.Success("The subagent was initiated successfully. Reference: " + child.ID)
	}
	r.e.reports.beginAwait(child.ID)
	return r.awaitResumable(child, re.agent)
}

// awaitResumable runs a resumable child until it stops; it stays alive for later messages. The
// caller registered the wait with beginAwait before queueing its message.
func (r *run) awaitResumable(child *weft.Thread, a *weft.Agent) weft.ToolResult {
	info, err := r.e.children.runChild(r.ctx, child, false)
	defer r.e.reports.endAwait(context.WithoutCancel(r.ctx), child, info.Seq)
	if err != nil {
		return weft.Failure(fmt.Sprintf("Subagent (reference: %s) could not run: %s", child.ID, r.red.Error(err)))
	}
	out := r.e.children.childResult(context.WithoutCancel(r.ctx), child, a, info)
	r.e.childStopped(context.WithoutCancel(r.ctx), child, out)
	suffix := "\n\nReference: " + child.ID
	if out.Status == weft.ToolSuccess {
		out.Result = r.red.String(out.Result) + suffix
	} else {
		out.Error = r.red.String(out.Error) + suffix
	}
	return out
}

func (r *run) subagentMessage(s *scope, args map[string]any) weft.ToolResult {
	ref, _ := args["referenceId"].(string)
	live, err := r.liveChildren(s.side)
	if err != nil {
		return weft.Failure("Subagent message failed: " + r.red.Error(err))
	}
	var child *weft.Thread
	for _, k := range live {
		if k.ID == ref {
			child = k
		}
	}
	if child == nil {
		return weft.Failure(fmt.Sprintf("Subagent reference %q is not active.", ref))
	}
	row, _ := registryRow(child)
	a, ok := r.e.reg.Agent(child.Agent)
	if !ok {
		return weft.Failure(fmt.Sprintf("Subagent reference %q is not active.", ref))
	}
	ctx := context.WithoutCancel(r.ctx)
	nm := weft.NewMessage{Role: weft.RoleUser, Content: initText(args["message"])}
	if row["receives_messages"] == "side_b" {
		nm.Role = weft.RoleAssistant
	}
	for _, p := range attachmentPaths(args["attachments"]) {
		att, errText := r.readAttachment(ctx, p)
		if errText != "" {
			return weft.Failure(errText)
		}
		nm.Attachments = append(nm.Attachments, att)
	}
	blocking := row["blocking"] != false
	if blocking {
		r.e.reports.beginAwait(child.ID)
	}
	if _, err := r.e.enqueue(ctx, child.ID, nm); err != nil {
		if blocking {
			r.e.reports.endAwait(ctx, child, 0)
		}
		return weft.Failure(fmt.Sprintf("Subagent reference %q is not active.", ref))
	}
	if !blocking {
		r.e.children.startChild(child, a, s.side, childMode{resumable: true, explicit: row["parent_communication"] == "explicit"})
		return weft.Success("Message sent to subagent " + child.ID + ".")
	}
	return r.awaitResumable(child, a)
}

func (r *run) subagentList(s *scope) weft.ToolResult {
	live, err := r.liveChildren(s.side)
	if err != nil {
		return weft.Failure("Listing subagents failed: " + r.red.Error(err))
	}
	if len(live) == 0 {
		return weft.Success("No active subagent instances.")
	}
	lines := make([]string, len(live))
	for i, k := range live {
		row, _ := registryRow(k)
		lines[i] = fmt.Sprintf("- %s: %s %q — %s", k.ID, row["agent"], row["label"], k.Status.SubagentStatus())
		if text, _ := row["status_text"].(string); text != "" {
			lines[i] += ": " + text
		}
	}
	return weft.Success(strings.Join(lines, "\n"))
}
