package children

import (
	"context"
	"encoding/json"
	"time"

	"github.com/weft-agents/weft"
)

// Spec is a new child as a call's arguments make it, before it is created: its thread, and what
// its first rows will be.
type Spec struct {
	// Thread is the child thread to create: idle, under its parent and root, labelled, with its
	// registry row and the call's arguments.
	Thread *weft.Thread

	entry            weft.ToolEntry
	args             map[string]any
	sideA            *weft.Prompt // the agent's side-A prompt, if defined
	msgProp, attProp string       // the arguments holding the first message and its attachments
	atts             []weft.ToolAttachment
}

// NewChild reads a call's arguments as a new child of parent, of agent target through entry e,
// owned by the parent's side owner, under the reference id: its label (the entry's name property,
// else "name", else the agent's name), its registry row, and the parent's files its first message
// attaches (read now: a missing one fails the call before anything is created).
func (c *Room) NewChild(ctx context.Context, parent *weft.Thread, id string, target *weft.Agent, e weft.ToolEntry, owner weft.Side, args map[string]any, now time.Time) (*Spec, error) {
	sp := &Spec{entry: e, args: args, msgProp: e.InitUserMessageProperty, attProp: e.InitAttachmentsProperty}
	sp.sideA, _ = c.reg.Prompt(target.SideA.Prompt)
	if sp.sideA == nil || sp.sideA.RequiredSchema == nil {
		sp.msgProp, sp.attProp = orDefault(sp.msgProp, "message"), orDefault(sp.attProp, "attachments")
	}
	label := target.Name
	if v, ok := args[e.InitAgentNameProperty].(string); ok && e.InitAgentNameProperty != "" && v != "" {
		label = v
	} else if v, ok := args["name"].(string); ok && v != "" {
		label = v
	}
	// Attachments are copied into the child's own /attachments/.
	for _, p := range AttachmentPaths(args[sp.attProp]) {
		a, err := ReadAttachment(ctx, c.store, parent.ID, p)
		if err != nil {
			return nil, err
		}
		sp.atts = append(sp.atts, a)
	}
	sp.Thread = &weft.Thread{ID: id, ParentID: parent.ID, RootID: orDefault(parent.RootID, parent.ID),
		Agent: target.Name, OriginAgent: target.Name, UserID: parent.UserID, Label: label,
		Tags: []string{"name:" + label}, Properties: map[string]any{RowProperty: NewRow(target, e, label, owner)}, Arguments: args, Status: weft.ThreadIdle,
		CreatedAt: now, UpdatedAt: now, LastActivityAt: now}
	if sp.Thread.Arguments == nil {
		sp.Thread.Arguments = map[string]any{}
	}
	return sp, nil
}

// QueueInit queues the first rows of a child created from sp: for a non-templated side-A prompt,
// the arguments beyond the init properties as a silent row; then its first message, with its
// attachments ("Begin your task." when it has neither text nor files).
func (c *Room) QueueInit(ctx context.Context, sp *Spec) error {
	child, e, args := sp.Thread, sp.entry, sp.args
	extra := false
	for k := range args {
		if k != sp.msgProp && k != sp.attProp && k != e.InitAgentNameProperty {
			extra = true
		}
	}
	if extra && sp.sideA != nil && sp.sideA.Template == nil {
		b, _ := json.MarshalIndent(args, "", "  ")
		if err := c.host.Enqueue(ctx, child.ID, weft.NewMessage{Role: weft.RoleSystem, Content: "Subagent arguments:\n" + string(b), Silent: true}); err != nil {
			return err
		}
	}
	init := weft.NewMessage{Role: weft.RoleUser, Content: Text(args[sp.msgProp]), Metadata: map[string]any{"subagent_of": child.ParentID}}
	if e.Resumable != nil && e.Resumable.Enabled && e.Resumable.ReceivesMessages == "side_b" {
		init.Role = weft.RoleAssistant
	}
	init.Attachments = sp.atts
	if init.Content == "" && len(sp.atts) == 0 {
		init.Content = "Begin your task."
	}
	return c.host.Enqueue(ctx, child.ID, init)
}
