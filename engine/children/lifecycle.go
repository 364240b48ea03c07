package children

import (
	"context"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// The lifecycle tools injected for continuable children (Create, Message, List), and the tool a
// child that reports explicitly gets to talk to its parent.
const (
	ToolCreate       = "subagent_create"
	ToolMessage      = "subagent_message"
	ToolList         = "subagents"
	ToolNotifyParent = "notify_parent"
)

// LifecycleTools are the lifecycle tools offered to a parent thread's side for its continuable
// entries: subagent_create, subagent_message when the side owns a live child, and subagents.
// createCheck is what subagent_create's arguments are checked against instead of its parameters:
// any agent name passes, and Create refuses an unknown one with the names it knows.
func (c *Room) LifecycleTools(ctx context.Context, parentID string, side weft.Side, entries []Entry) (specs []weft.ToolSpec, createCheck *schema.Schema, err error) {
	names := make([]any, len(entries))
	lines := make([]string, len(entries))
	hasArgs := false
	for i, e := range entries {
		names[i] = e.Agent.Name
		lines[i] = "- " + e.Agent.Name + ": " + e.Agent.ToolDescription
		if p, ok := c.reg.Prompt(e.Agent.SideA.Prompt); ok && p.RequiredSchema != nil {
			hasArgs = true
		}
	}
	props := []schema.Prop{schema.Field("agent", schema.Enum(names...)), schema.Field("message", schema.String()),
		schema.OptionalField("name", schema.String()), schema.OptionalField("attachments", schema.Array(schema.String()))}
	if hasArgs {
		props = append(props, schema.OptionalField("arguments", &schema.Schema{Type: "object"}))
	}
	specs = append(specs, weft.ToolSpec{Name: ToolCreate, Description: "Create a subagent instance. Available agents:\n" + strings.Join(lines, "\n"),
		Parameters: schema.Object(props...)})
	createCheck = schema.Object(append([]schema.Prop{schema.Field("agent", schema.String())}, props[1:]...)...)
	live, err := c.Live(ctx, parentID, side)
	if err != nil {
		return nil, nil, err
	}
	if len(live) > 0 {
		specs = append(specs, weft.ToolSpec{Name: ToolMessage, Description: "Send a message to a subagent instance you created.",
			Parameters: schema.Object(schema.Field("referenceId", schema.String()), schema.Field("message", schema.String()),
				schema.OptionalField("attachments", schema.Array(schema.String())))})
	}
	specs = append(specs, weft.ToolSpec{Name: ToolList, Description: "List your subagent instances and their status.", Parameters: schema.NoArgs()})
	return specs, createCheck, nil
}

// NotifyParentSpec is notify_parent, offered to a child that reports explicitly.
func NotifyParentSpec() weft.ToolSpec {
	return weft.ToolSpec{Name: ToolNotifyParent, Description: "Send a message to the agent that created you.",
		Parameters: schema.Object(schema.Field("message", schema.String()), schema.OptionalField("attachments", schema.Array(schema.String())))}
}
