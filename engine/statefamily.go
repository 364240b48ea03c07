package engine

import (
	"context"
	"fmt"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
)

// NotifyParent queues "Subagent (reference: …) sent a message" to the parent,
// silent, role by the owner side, with the files copied into the parent's /attachments/.
func (s stateFamily) NotifyParent(ctx context.Context, text string, attachments ...string) error {
	if s.thread.ParentID == "" {
		return weft.ErrNoParent
	}
	var atts []weft.ToolAttachment
	for _, p := range attachments {
		a, err := children.ReadAttachment(ctx, s.e.store, s.thread.ID, p)
		if err != nil {
			return err
		}
		atts = append(atts, a)
	}
	owner := weft.SideA
	if row, ok := registryRow(s.thread); ok && row["owner_side"] == string(weft.SideB) {
		owner = weft.SideB
	}
	msg := fmt.Sprintf("Subagent (reference: %s) sent a message:\n\n%s", s.thread.ID, text)
	return s.e.subagents.Deliver(ctx, s.thread, owner, msg, "subagent_message", atts)
}

// SetStatus sets the status text of the thread's registry row, which the parent's listing shows.
func (s stateFamily) SetStatus(ctx context.Context, text string) error {
	t, err := s.e.store.Thread(ctx, s.thread.ID)
	if err != nil {
		return err
	}
	row, ok := registryRow(t)
	if !ok {
		return weft.ErrNoParent
	}
	props := map[string]any{}
	for k, v := range t.Properties {
		props[k] = v
	}
	nr := map[string]any{}
	for k, v := range row {
		nr[k] = v
	}
	// The text leaves the child: the parent's listing, its model and its stream show it, so the
	// child's secrets are redacted before it is stored.
	red, err := s.e.Redactor(ctx, t.ID)
	if err != nil {
		return err
	}
	text = red(text)
	nr["status_text"] = text
	props[subagentProperty] = nr
	if err := s.e.tx(ctx, t.ID, nil, keep, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Properties: props}) }); err != nil {
		return err
	}
	// The parent's stream hears of it as of the child's creation and end (the inspector's tree).
	agent, _ := nr["agent"].(string)
	s.e.children.emitSubagent(ctx, t, agent, t.Status.SubagentStatus(), text)
	return nil
}

// StopSession ends the session after the current step (state_stop_session; session_fail with
// Failed).
func (s stateFamily) StopSession(ctx context.Context, o weft.StopSessionOptions) error {
	if s.r == nil {
		return weft.ErrNotInRun
	}
	if s.exec != nil {
		s.exec.s.fx.stopSession = &o
	}
	return nil
}

// Terminate stops the thread for good: inside a run after the current tool, else at once.
func (s stateFamily) Terminate(ctx context.Context) error {
	if s.r != nil && s.r.thread.ID == s.thread.ID {
		if s.exec != nil {
			s.exec.s.fx.terminate = true
		}
		effects, err := s.e.store.Effects(ctx, s.thread.ID)
		if err != nil {
			return err
		}
		for _, ef := range effects {
			if ef.Status == weft.EffectPending {
				_ = s.e.store.CancelEffect(ctx, s.thread.ID, ef.ID)
			}
		}
		return nil
	}
	return s.e.Terminate(ctx, s.thread.ID)
}

// Parent returns the parent thread's state; ErrNoParent at the root.
func (s stateFamily) Parent(ctx context.Context) (weft.State, error) {
	if s.thread.ParentID == "" {
		return nil, weft.ErrNoParent
	}
	t, err := s.e.store.Thread(ctx, s.thread.ParentID)
	if err != nil {
		return nil, err
	}
	return newState(stateCore{e: s.e, thread: t, ctx: ctx}), nil
}

// Child returns the state of one of the thread's subagents.
func (s stateFamily) Child(ctx context.Context, ref string) (weft.State, error) {
	t, err := s.e.store.Thread(ctx, ref)
	if err != nil || t.ParentID != s.thread.ID {
		return nil, fmt.Errorf("subagent %s: %w", ref, weft.ErrNotFound)
	}
	return newState(stateCore{e: s.e, thread: t, ctx: ctx}), nil
}

// Children lists the thread's subagent registry, oldest first.
func (s stateFamily) Children(ctx context.Context) ([]weft.SubagentInfo, error) {
	kids, _, err := s.e.store.Threads(ctx, weft.ThreadQuery{ParentID: s.thread.ID, Sort: "oldest", Limit: -1})
	if err != nil {
		return nil, err
	}
	out := make([]weft.SubagentInfo, 0, len(kids))
	for _, k := range kids {
		row, _ := registryRow(k)
		str := func(key string) string { v, _ := row[key].(string); return v }
		flag := func(key string) bool { v, _ := row[key].(bool); return v }
		out = append(out, weft.SubagentInfo{Reference: k.ID, ParentThreadID: s.thread.ID, Agent: k.Agent, Label: str("label"),
			OwnerSide: weft.Side(str("owner_side")), Blocking: flag("blocking"), Resumable: flag("resumable"),
			ReceivesMessages: str("receives_messages"), ParentCommunication: str("parent_communication"),
			Status: k.Status.SubagentStatus(), StatusText: str("status_text"), CreatedAt: k.CreatedAt, UpdatedAt: k.UpdatedAt})
	}
	return out, nil
}
