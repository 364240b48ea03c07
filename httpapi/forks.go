package httpapi

import (
	"net/http"

	"github.com/weft-agents/weft"
)

// forkThread answers POST /api/threads/{id}/fork {"at": MESSAGE_ID}: a new thread, owned by the
// caller, holding the thread's history up to and including that message (engine.Fork).
func (s *Server) forkThread(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	var b struct {
		At string `json:"at"`
	}
	if err := decodeJSON(w, r, maxJSONBody, &b, false); err != nil {
		return err
	}
	if b.At == "" {
		return validation("at", "the id of the message to fork at is required")
	}
	fork, err := s.engine().Fork(r.Context(), t.ID, b.At, p.userID)
	if err != nil {
		return err
	}
	return s.forked(w, r, fork, nil)
}

// editMessage answers POST /api/threads/{id}/messages/{mid}/edit {"content": …}: a fork cut just
// before the user message mid, on which the edited text (with the message's attachments) is
// sent.
func (s *Server) editMessage(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, m, err := s.forkedMessage(r, p, weft.RoleUser)
	if err != nil {
		return err
	}
	var b struct {
		Content string `json:"content"`
	}
	if err := decodeJSON(w, r, maxMessageBody, &b, false); err != nil {
		return err
	}
	nm := weft.NewMessage{Role: weft.RoleUser, Content: b.Content, Silent: m.Silent}
	for _, a := range m.Attachments {
		nm.Attachments = append(nm.Attachments, weft.ToolAttachment{ID: a.ID, Path: a.Path, Name: a.Name,
			MimeType: a.MimeType, Size: a.Size, Width: a.Width, Height: a.Height, Description: a.Description})
	}
	if nm.Content == "" && len(nm.Attachments) == 0 {
		return validation("content", "the edited message needs content")
	}
	if err := weft.CheckNewMessage(nm); err != nil {
		return err
	}
	eng := s.engine()
	fork, err := eng.ForkBefore(r.Context(), t.ID, m.ID, p.userID)
	if err != nil {
		return err
	}
	id, err := eng.Send(r.Context(), fork.ID, nm)
	if err != nil {
		return err
	}
	return s.forked(w, r, fork, map[string]any{"message_id": id})
}

// retryMessage answers POST /api/threads/{id}/messages/{mid}/retry: a fork cut just before the
// assistant message mid, continued at once, so that its side answers the same input again.
func (s *Server) retryMessage(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, m, err := s.forkedMessage(r, p, weft.RoleAssistant)
	if err != nil {
		return err
	}
	if err := decodeJSON(w, r, maxJSONBody, &struct{}{}, true); err != nil {
		return err
	}
	eng := s.engine()
	fork, err := eng.ForkBefore(r.Context(), t.ID, m.ID, p.userID)
	if err != nil {
		return err
	}
	if err := eng.ContinueAsync(r.Context(), fork.ID, m.Side); err != nil {
		return err
	}
	return s.forked(w, r, fork, nil)
}

// forkedMessage reads the visible thread {id} and its top-level message {mid}, which must have
// the given role: 400 otherwise.
func (s *Server) forkedMessage(r *http.Request, p *principal, role weft.Role) (*weft.Thread, weft.Message, error) {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return nil, weft.Message{}, err
	}
	m, err := s.engine().Store().Message(r.Context(), t.ID, r.PathValue("mid"))
	if err != nil {
		return nil, weft.Message{}, err
	}
	if m.Role != role || m.Depth != 0 {
		return nil, weft.Message{}, validation("mid", "message "+m.ID+" is a "+string(m.Role)+" message; this route takes a top-level "+string(role)+" message")
	}
	return t, m, nil
}

// forked answers 201 with the new thread (redacted) and extra fields, and tells the global
// stream of it.
func (s *Server) forked(w http.ResponseWriter, r *http.Request, fork *weft.Thread, extra map[string]any) error {
	if err := s.redactThread(r.Context(), fork); err != nil {
		return err
	}
	out := map[string]any{"thread": fork}
	for k, v := range extra {
		out[k] = v
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}
