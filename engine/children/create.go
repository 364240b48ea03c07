package children

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/vars"
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

// ChildVars are a new child's variables as ResolveVars finds them.
type ChildVars struct {
	// Own is the child's own thread layer: the values given for it.
	Own []weft.EnvValue
	// Declared are the variables its agent's graph declares.
	Declared map[string]*vars.Declaration
	// Missing are the required ones without a value in any layer.
	Missing []vars.MissingVar
}

// ResolveVars resolves the variables of a new child of agent target, started by the parent
// thread parentID whose variables are parent: through the values given for the child (its own
// thread layer, each typed as the graph declares it, a secret otherwise; nil: none given), the
// values the parent's threads pass down, the agent's layer, and the parent's user and instance
// layers. declared are the types target's graph declares.
func (c *Room) ResolveVars(ctx context.Context, parentID string, parent *vars.View, declared map[string]weft.VarType, target *weft.Agent, given map[string]string) (ChildVars, error) {
	flag := func(name string) bool {
		v, ok := parent.Lookup(name)
		return ok && vars.FlagOn(v.Value)
	}
	decls := vars.NewGraph(c.reg, target, flag).Declared()
	inherited, err := vars.Inherited(ctx, c.store, parentID, decls)
	if err != nil {
		return ChildVars{}, err
	}
	own := map[string]weft.EnvValue{}
	for k, v := range given {
		t := weft.VarSecret
		if d, ok := decls[k]; ok && d.Type != "" {
			t = d.Type
		}
		own[k] = weft.EnvValue{Name: k, Value: v, Type: t}
	}
	view := &vars.View{Thread: own, Inherited: inherited, Agent: target.Env, User: parent.User, Instance: parent.Instance, Declared: declared}
	cv := ChildVars{Declared: decls, Missing: vars.Missing(decls, view), Own: make([]weft.EnvValue, 0, len(own))}
	for _, v := range own {
		cv.Own = append(cv.Own, v)
	}
	return cv, nil
}

// MissingFailure is the result of a call whose given values left required variables missing.
func (v ChildVars) MissingFailure() *weft.ToolResult {
	names := make([]string, len(v.Missing))
	for i, m := range v.Missing {
		names[i] = m.Name
	}
	f := weft.Failure("missing required variables: " + strings.Join(names, ", "))
	f.ErrorCode = "missing_required_variables"
	return &f
}

// Open creates the child thread sp describes, with its own variables, and queues its first rows
// (QueueInit); created runs between the two, once the host was told (Host.Created): the caller's
// hooks see the child before its first message.
func (c *Room) Open(ctx context.Context, sp *Spec, own []weft.EnvValue, created func(child *weft.Thread)) error {
	if err := c.store.CreateThread(ctx, sp.Thread, own); err != nil {
		return err
	}
	c.host.Created(ctx, sp.Thread)
	created(sp.Thread)
	return c.QueueInit(ctx, sp)
}
