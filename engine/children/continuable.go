package children

import (
	"context"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
)

// The tools a parent uses to work with its continuable children: subagents of entries with
// resumable enabled, which stay alive after each run for later messages (unrelated to resuming a
// run after a crash).

// Entry is an enabled continuable agent entry of the acting prompt.
type Entry struct {
	// Entry is the prompt's tool entry (Resumable enabled).
	Entry weft.ToolEntry
	// Agent is the entry's agent.
	Agent *weft.Agent
}

// Parent is the run of a parent thread calling a lifecycle tool (subagent_create,
// subagent_message, subagents): the engine's view of the call.
type Parent interface {
	// Context is the run's context.
	Context() context.Context
	// ThreadID is the parent thread's id.
	ThreadID() string
	// Side is the parent's acting side, which owns the children it creates.
	Side() weft.Side
	// Redact replaces the parent's secrets in text, RedactError in an error's text.
	Redact(text string) string
	RedactError(err error) string
	// Create creates a child of e's agent with args (message, attachments, name and the agent's
	// own arguments) under the reference id and queues its first message; a non-nil result is the
	// call's error result, nothing being created.
	Create(e Entry, args map[string]any, id string) (*weft.Thread, *weft.ToolResult)
}

// Live lists the parent's non-terminated continuable children owned by side.
func (c *Room) Live(ctx context.Context, parentID string, side weft.Side) ([]*weft.Thread, error) {
	kids, _, err := c.store.Threads(ctx, weft.ThreadQuery{ParentID: parentID, Sort: "oldest", Limit: 1000})
	if err != nil {
		return nil, err
	}
	var out []*weft.Thread
	for _, k := range kids {
		row, ok := Row(k)
		if !ok || k.Status == weft.ThreadTerminated || row["resumable"] != true || row["owner_side"] != string(side) {
			continue
		}
		out = append(out, k)
	}
	return out, nil
}

// Create answers subagent_create: a child of the named agent among entries, started in the
// background or awaited (blocking entries, the default) until its run stops; it stays alive.
func (c *Room) Create(p Parent, entries []Entry, args map[string]any) weft.ToolResult {
	name, _ := args["agent"].(string)
	var re *Entry
	names := make([]string, len(entries))
	for i := range entries {
		names[i] = entries[i].Agent.Name
		if entries[i].Agent.Name == name {
			re = &entries[i]
		}
	}
	if re == nil {
		return weft.Failure(fmt.Sprintf("Agent %q is not available for this prompt. Use one of: %s", name, strings.Join(names, ", ")))
	}
	blocking := weft.Flag(re.Entry.Blocking, true)
	if max := re.Entry.Resumable.MaxInstances; max > 0 {
		live, err := c.Live(p.Context(), p.ThreadID(), p.Side())
		if err != nil {
			return weft.Failure("Subagent could not be created: " + p.RedactError(err))
		}
		var refs []string
		for _, k := range live {
			if row, _ := Row(k); row["agent"] == name {
				refs = append(refs, k.ID)
			}
		}
		if len(refs) >= max {
			if blocking && max == 1 {
				// A blocking create on the single live instance messages it and awaits.
				return c.Message(p, map[string]any{"referenceId": refs[0], "message": args["message"], "attachments": args["attachments"]})
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
	child, fail := p.Create(*re, childArgs, weft.NewID("thr_"))
	if fail != nil {
		return *fail
	}
	if !blocking {
		c.Start(child, re.Agent, p.Side(), Mode{Continuable: true, Explicit: re.Entry.Resumable.ParentCommunication == "explicit"})
		return weft.Success("The subagent was initiated successfully. Reference: " + child.ID)
	}
	c.BeginAwait(child.ID)
	return c.await(p, child, re.Agent)
}

// await runs a continuable child until it stops; it stays alive for later messages. The caller
// registered the wait with BeginAwait before queueing its message.
func (c *Room) await(p Parent, child *weft.Thread, a *weft.Agent) weft.ToolResult {
	ctx := p.Context()
	info, err := c.RunChild(ctx, child, false)
	defer c.EndAwait(context.WithoutCancel(ctx), child, info.Seq)
	if err != nil {
		return weft.Failure(fmt.Sprintf("Subagent (reference: %s) could not run: %s", child.ID, p.RedactError(err)))
	}
	out := c.Result(context.WithoutCancel(ctx), child, a, info)
	c.Stopped(context.WithoutCancel(ctx), child, out)
	suffix := "\n\nReference: " + child.ID
	if out.Status == weft.ToolSuccess {
		out.Result = p.Redact(out.Result) + suffix
	} else {
		out.Error = p.Redact(out.Error) + suffix
	}
	return out
}

// Message answers subagent_message: the message (and attachments, copied from the parent) is
// queued on a live child of the parent's side, which a blocking child's call awaits and a
// background one's driver runs.
func (c *Room) Message(p Parent, args map[string]any) weft.ToolResult {
	ref, _ := args["referenceId"].(string)
	live, err := c.Live(p.Context(), p.ThreadID(), p.Side())
	if err != nil {
		return weft.Failure("Subagent message failed: " + p.RedactError(err))
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
	row, _ := Row(child)
	a, ok := c.reg.Agent(child.Agent)
	if !ok {
		return weft.Failure(fmt.Sprintf("Subagent reference %q is not active.", ref))
	}
	ctx := context.WithoutCancel(p.Context())
	nm := weft.NewMessage{Role: weft.RoleUser, Content: Text(args["message"])}
	if row["receives_messages"] == "side_b" {
		nm.Role = weft.RoleAssistant
	}
	for _, path := range AttachmentPaths(args["attachments"]) {
		att, err := ReadAttachment(ctx, c.store, p.ThreadID(), path)
		if err != nil {
			return weft.Failure(err.Error())
		}
		nm.Attachments = append(nm.Attachments, att)
	}
	blocking := row["blocking"] != false
	if blocking {
		c.BeginAwait(child.ID)
	}
	if err := c.host.Enqueue(ctx, child.ID, nm); err != nil {
		if blocking {
			c.EndAwait(ctx, child, 0)
		}
		return weft.Failure(fmt.Sprintf("Subagent reference %q is not active.", ref))
	}
	if !blocking {
		c.Start(child, a, p.Side(), Mode{Continuable: true, Explicit: row["parent_communication"] == "explicit"})
		return weft.Success("Message sent to subagent " + child.ID + ".")
	}
	return c.await(p, child, a)
}

// List answers subagents: the parent side's live continuable children with their status.
func (c *Room) List(p Parent) weft.ToolResult {
	live, err := c.Live(p.Context(), p.ThreadID(), p.Side())
	if err != nil {
		return weft.Failure("Listing subagents failed: " + p.RedactError(err))
	}
	if len(live) == 0 {
		return weft.Success("No active subagent instances.")
	}
	lines := make([]string, len(live))
	for i, k := range live {
		row, _ := Row(k)
		lines[i] = fmt.Sprintf("- %s: %s %q — %s", k.ID, row["agent"], row["label"], k.Status.SubagentStatus())
		if text, _ := row["status_text"].(string); text != "" {
			lines[i] += ": " + text
		}
	}
	return weft.Success(strings.Join(lines, "\n"))
}

// StartImmediate starts, without waiting, an immediate instance of the agent named by args
// ("agent") among entries, with args as its arguments.
func (c *Room) StartImmediate(p Parent, entries []Entry, args map[string]any) weft.ToolResult {
	name, _ := args["agent"].(string)
	for _, re := range entries {
		if re.Agent.Name != name {
			continue
		}
		child, fail := p.Create(re, args, weft.NewID("thr_"))
		if fail != nil {
			return *fail
		}
		c.Start(child, re.Agent, p.Side(), Mode{Continuable: true, Explicit: re.Entry.Resumable.ParentCommunication == "explicit"})
		return weft.Success("The subagent was initiated successfully. Reference: " + child.ID)
	}
	return weft.Failure(fmt.Sprintf("Agent %q is not available for this prompt.", name))
}

// ImmediateMessage is the first message of an immediate subagent, started as if the parent's
// model had called it the first time the parent's prompt became active.
const ImmediateMessage = "You were started automatically when this thread was created. Begin your task."

// ImmediateKey is what a thread's run state records (runstate.State.Immediate) once the
// immediate subagents of a side's prompt were started: they start at most once per thread.
func ImmediateKey(side weft.Side, prompt string) string { return string(side) + ":" + prompt }

// ImmediateStarted tells whether keys record the start of the immediate subagents of side's
// prompt. (Compared in place: a key is built only when it is recorded, not at every step.)
func ImmediateStarted(keys []string, side weft.Side, prompt string) bool {
	for _, k := range keys {
		if s, name, ok := strings.Cut(k, ":"); ok && s == string(side) && name == prompt {
			return true
		}
	}
	return false
}
