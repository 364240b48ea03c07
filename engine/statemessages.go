package engine

import (
	"context"
	"fmt"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
)

func (s stateMessages) Messages(ctx context.Context, q weft.MessageQuery) ([]weft.Message, error) {
	if q.Limit == 0 {
		q.Limit = 100
	}
	return s.e.store.Messages(ctx, s.thread.ID, q)
}

func (s stateMessages) Message(ctx context.Context, id string) (weft.Message, error) {
	return s.e.store.Message(ctx, s.thread.ID, id)
}

// InjectMessage persists a row now; the model sees it from the next step. It never starts a run.
func (s stateMessages) InjectMessage(ctx context.Context, nm weft.NewMessage) (weft.Message, error) {
	s.markEffect(&nm)
	if err := s.beforeCreate(ctx, &nm); err != nil {
		return weft.Message{}, err
	}
	atts, err := s.storeAttachments(ctx, nm.Attachments)
	if err != nil {
		return weft.Message{}, err
	}
	m := &weft.Message{Role: nm.Role, Content: nm.Content, Attachments: atts, Silent: nm.Silent, Metadata: nm.Metadata,
		Status: weft.MessageCompleted}
	switch nm.Role {
	case weft.RoleUser:
		m.Side = weft.SideB
	case weft.RoleAssistant:
		m.Side = weft.SideA
	case weft.RoleSystem:
	default:
		return weft.Message{}, weft.Errorf(weft.EInvalid, "an injected message's role is user, assistant or system")
	}
	var fence *weft.Fence
	if s.r != nil {
		fence = &s.r.journal.fence
		m.RunID = s.r.id
	}
	insert := func(tx weft.Tx) error { return tx.InsertMessage(m) }
	if s.inRun() && s.r.journal.messageEvent != nil {
		// The row's event is recorded with it, after the run's waiting events.
		if err := s.r.journal.txState(ctx, insert, func() Event { return s.r.journal.messageEvent(*m) }); err != nil {
			return weft.Message{}, err
		}
		s.r.postRow(*m)
		return *m, nil
	}
	if err := s.e.tx(ctx, s.thread.ID, fence, s.writeRedactor(), insert); err != nil {
		return weft.Message{}, err
	}
	if s.r != nil {
		s.r.postRow(*m)
	}
	s.emitRow(ctx, *m)
	return *m, nil
}

// emitRow streams m, a row the State stored or changed: through its run (recorded by the run's
// next transaction when it records its events), or outside any run, its text redacted as a run's
// rows are.
func (s stateMessages) emitRow(ctx context.Context, m weft.Message) {
	if s.inRun() {
		s.r.emitMessage(m)
		return
	}
	if !s.e.observed() {
		return
	}
	red, err := s.redactor(ctx)
	if err != nil {
		s.e.log.Warn("message event not emitted", "thread", s.thread.ID, "message", m.ID, "error", err)
		return
	}
	m.Content = red(m.Content)
	s.e.emitOutside(ctx, Event{Type: "message", ThreadID: s.thread.ID, RootID: rootOf(s.thread), Data: MessageData{Message: m}})
}

func (s stateMessages) beforeCreate(ctx context.Context, nm *weft.NewMessage) error {
	if s.r == nil {
		return nil
	}
	for _, h := range s.r.activeHooks(s.exec, weft.HookBeforeCreateMessage) {
		f, _ := weft.HookFunc[weft.BeforeCreateMessageFunc](*h)
		if err := f(ctx, s.threadState, nm); err != nil {
			return fmt.Errorf("hook %s rejected the message: %w", h.ID, err)
		}
	}
	return nil
}

// QueueMessage queues a row for the next step boundary.
func (s stateMessages) QueueMessage(ctx context.Context, nm weft.NewMessage) (string, error) {
	s.markEffect(&nm)
	if err := s.beforeCreate(ctx, &nm); err != nil {
		return "", err
	}
	return s.e.Send(ctx, s.thread.ID, nm)
}

func (s stateMessages) UpdateMessage(ctx context.Context, id string, u weft.MessageUpdate) (weft.Message, error) {
	if s.r != nil {
		for _, h := range s.r.activeHooks(s.exec, weft.HookBeforeUpdateMessage) {
			f, _ := weft.HookFunc[weft.BeforeUpdateMessageFunc](*h)
			if err := f(ctx, s.threadState, id, &u); err != nil {
				return weft.Message{}, fmt.Errorf("hook %s rejected the update: %w", h.ID, err)
			}
		}
	}
	c := weft.MessageChange{Content: u.Content, Silent: u.Silent, Metadata: u.Metadata}
	if u.ExcludeFromContext != nil {
		cur, err := s.e.store.Message(ctx, s.thread.ID, id)
		if err != nil {
			return weft.Message{}, err
		}
		meta := map[string]any{}
		for k, v := range cur.Metadata {
			meta[k] = v
		}
		for k, v := range u.Metadata {
			meta[k] = v
		}
		meta["exclude_from_context"] = *u.ExcludeFromContext
		c.Metadata = meta
	}
	var fence *weft.Fence
	if s.r != nil {
		fence = &s.r.journal.fence
	}
	update := func(tx weft.Tx) error { return tx.UpdateMessage(id, c) }
	recorded := s.inRun() && s.r.journal.messageEvent != nil
	if recorded {
		// The changed row's event is recorded with the change.
		cur, err := s.e.store.Message(ctx, s.thread.ID, id)
		if err != nil {
			return weft.Message{}, err
		}
		row := changedRow(cur, c, s.r.redactorNow())
		if err := s.r.journal.txState(ctx, update, func() Event { return s.r.journal.messageEvent(row) }); err != nil {
			return weft.Message{}, err
		}
	} else if err := s.e.tx(ctx, s.thread.ID, fence, s.writeRedactor(), update); err != nil {
		return weft.Message{}, err
	}
	m, err := s.e.store.Message(ctx, s.thread.ID, id)
	if err != nil {
		return m, err
	}
	if s.r != nil {
		s.r.postReplace(m)
	}
	if !recorded {
		s.emitRow(ctx, m) // a message event carries a created or an updated row
	}
	if s.r != nil {
		for _, h := range s.r.activeHooks(s.exec, weft.HookAfterUpdateMessage) {
			f, _ := weft.HookFunc[weft.MessageFunc](*h)
			if herr := hooks.Call(func() error { return f(ctx, s.threadState, m) }); herr != nil {
				s.r.hookFailed(h, herr)
			}
		}
	}
	return m, nil
}

func (s stateMessages) DeleteMessage(ctx context.Context, id string) error {
	var fence *weft.Fence
	if s.r != nil {
		fence = &s.r.journal.fence
	}
	del := func(tx weft.Tx) error { return tx.DeleteMessage(id) }
	if s.inRun() && s.r.journal.messageEvent != nil {
		// The deletion's event is recorded with it.
		err := s.r.journal.txState(ctx, del, func() Event { return s.r.event("message_deleted", Fields{"message_id": id}) })
		if err == nil {
			s.r.postDelete(id)
		}
		return err
	}
	err := s.e.tx(ctx, s.thread.ID, fence, keep, del)
	if err == nil && s.r != nil {
		s.r.postDelete(id)
	}
	if err == nil {
		s.emit(ctx, "message_deleted", Fields{"message_id": id})
	}
	return err
}

func (s stateMessages) Logs(ctx context.Context, q weft.LogQuery) ([]weft.LogEntry, error) {
	return s.e.store.Logs(ctx, s.thread.ID, q)
}

// markEffect tags a message created by an effect.
func (s stateMessages) markEffect(nm *weft.NewMessage) {
	if s.effect == nil {
		return
	}
	meta := map[string]any{}
	for k, v := range nm.Metadata {
		meta[k] = v
	}
	meta["scheduled_effect"] = map[string]any{"id": s.effect.ID, "name": s.effect.Name}
	nm.Metadata = meta
}
