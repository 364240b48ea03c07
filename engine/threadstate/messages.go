package threadstate

import (
	"context"
	"fmt"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/feed"
	"github.com/weft-agents/weft/engine/hooks"
	"github.com/weft-agents/weft/engine/payload"
)

func (s messages) Messages(ctx context.Context, q weft.MessageQuery) ([]weft.Message, error) {
	if q.Limit == 0 {
		q.Limit = 100
	}
	return s.e.Store().Messages(ctx, s.thread.ID, q)
}

func (s messages) Message(ctx context.Context, id string) (weft.Message, error) {
	return s.e.Store().Message(ctx, s.thread.ID, id)
}

// InjectMessage persists a row now; the model sees it from the next step. It never starts a run.
func (s messages) InjectMessage(ctx context.Context, nm weft.NewMessage) (weft.Message, error) {
	s.markEffect(&nm)
	if err := s.beforeCreate(ctx, &nm); err != nil {
		return weft.Message{}, err
	}
	atts, err := s.StoreAttachments(ctx, nm.Attachments)
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
	if s.r != nil {
		m.RunID = s.r.ID()
	}
	insert := func(tx weft.Tx) error { return tx.InsertMessage(m) }
	if s.inRun() && s.r.Records() {
		// The row's event is recorded with it, after the run's waiting events.
		if err := s.r.RecordInsert(ctx, insert, m); err != nil {
			return weft.Message{}, err
		}
		s.r.PostRow(*m)
		return *m, nil
	}
	if err := s.e.Tx(ctx, s.thread.ID, s.fence(), s.writeRedactor(), insert); err != nil {
		return weft.Message{}, err
	}
	if s.r != nil {
		s.r.PostRow(*m)
	}
	s.emitRow(ctx, *m)
	return *m, nil
}

// emitRow streams m, a row the State stored or changed: through its run (recorded by the run's
// next transaction when it records its events), or outside any run, its text redacted as a run's
// rows are.
func (s messages) emitRow(ctx context.Context, m weft.Message) {
	if s.inRun() {
		s.r.EmitMessage(m)
		return
	}
	if !s.e.Observed() {
		return
	}
	red, err := s.redactor(ctx)
	if err != nil {
		s.e.Log().Warn("message event not emitted", "thread", s.thread.ID, "message", m.ID, "error", err)
		return
	}
	m.Content = red(m.Content)
	s.e.EmitOutside(ctx, feed.Event{Type: "message", ThreadID: s.thread.ID, RootID: rootOf(s.thread), Data: payload.MessageData{Message: m}})
}

func (s messages) beforeCreate(ctx context.Context, nm *weft.NewMessage) error {
	if s.r == nil {
		return nil
	}
	for _, h := range s.r.Hooks(s.exec, weft.HookBeforeCreateMessage) {
		f, _ := weft.HookFunc[weft.BeforeCreateMessageFunc](*h)
		if err := f(ctx, s.State, nm); err != nil {
			return fmt.Errorf("hook %s rejected the message: %w", h.ID, err)
		}
	}
	return nil
}

// QueueMessage queues a row for the next step boundary.
func (s messages) QueueMessage(ctx context.Context, nm weft.NewMessage) (string, error) {
	s.markEffect(&nm)
	if err := s.beforeCreate(ctx, &nm); err != nil {
		return "", err
	}
	return s.e.Send(ctx, s.thread.ID, nm)
}

func (s messages) UpdateMessage(ctx context.Context, id string, u weft.MessageUpdate) (weft.Message, error) {
	if s.r != nil {
		for _, h := range s.r.Hooks(s.exec, weft.HookBeforeUpdateMessage) {
			f, _ := weft.HookFunc[weft.BeforeUpdateMessageFunc](*h)
			if err := f(ctx, s.State, id, &u); err != nil {
				return weft.Message{}, fmt.Errorf("hook %s rejected the update: %w", h.ID, err)
			}
		}
	}
	c := weft.MessageChange{Content: u.Content, Silent: u.Silent, Metadata: u.Metadata}
	if u.ExcludeFromContext != nil {
		cur, err := s.e.Store().Message(ctx, s.thread.ID, id)
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
	update := func(tx weft.Tx) error { return tx.UpdateMessage(id, c) }
	recorded := s.inRun() && s.r.Records()
	if recorded {
		// The changed row's event is recorded with the change.
		cur, err := s.e.Store().Message(ctx, s.thread.ID, id)
		if err != nil {
			return weft.Message{}, err
		}
		if err := s.r.RecordChange(ctx, update, cur, c); err != nil {
			return weft.Message{}, err
		}
	} else if err := s.e.Tx(ctx, s.thread.ID, s.fence(), s.writeRedactor(), update); err != nil {
		return weft.Message{}, err
	}
	m, err := s.e.Store().Message(ctx, s.thread.ID, id)
	if err != nil {
		return m, err
	}
	if s.r != nil {
		s.r.PostReplace(m)
	}
	if !recorded {
		s.emitRow(ctx, m) // a message event carries a created or an updated row
	}
	if s.r != nil {
		for _, h := range s.r.Hooks(s.exec, weft.HookAfterUpdateMessage) {
			f, _ := weft.HookFunc[weft.MessageFunc](*h)
			if herr := hooks.Call(func() error { return f(ctx, s.State, m) }); herr != nil {
				s.r.HookFailed(h, herr)
			}
		}
	}
	return m, nil
}

func (s messages) DeleteMessage(ctx context.Context, id string) error {
	del := func(tx weft.Tx) error { return tx.DeleteMessage(id) }
	if s.inRun() && s.r.Records() {
		// The deletion's event is recorded with it.
		err := s.r.RecordDelete(ctx, del, id)
		if err == nil {
			s.r.PostDelete(id)
		}
		return err
	}
	err := s.e.Tx(ctx, s.thread.ID, s.fence(), keep, del)
	if err == nil && s.r != nil {
		s.r.PostDelete(id)
	}
	if err == nil {
		s.emit(ctx, "message_deleted", payload.Fields{"message_id": id})
	}
	return err
}

func (s messages) Logs(ctx context.Context, q weft.LogQuery) ([]weft.LogEntry, error) {
	return s.e.Store().Logs(ctx, s.thread.ID, q)
}

// markEffect tags a message created by an effect.
func (s messages) markEffect(nm *weft.NewMessage) {
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
