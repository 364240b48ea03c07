package aisdkapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/turn"
)

// triggerRegenerate is the trigger of useChat's regenerate(): answer again from just before an
// answer (messageId), the messages after it dropped.
const triggerRegenerate = "regenerate-message"

// regenerate answers a regenerate request as a retry on a fork: a Weft thread only grows, so the
// answer messageId names is not replaced. The chat's thread is forked just before the answer's
// first reply (engine.ForkBefore: the history up to the message it answered, the original left
// as it was), the chat id moves to the fork (its tag: the chat goes on there, as the client's
// messages now do), and the fork's run answers the same message again, streamed as a turn.
func (h *Handler) regenerate(w http.ResponseWriter, r *http.Request, c httpapi.Caller, b *chatBody) error {
	ctx := r.Context()
	agent := r.PathValue("agent")
	inputID, ok := strings.CutPrefix(b.MessageID, "answer-")
	if !ok || inputID == "" {
		return invalid("messageId: %q is not an answer of this server (answer-MESSAGE_ID): only those can be regenerated", b.MessageID)
	}
	t, err := turn.Tagged(ctx, h.api, c, agent, chatTag+b.ID)
	if err != nil {
		return err
	}
	if t == nil {
		return weft.Errorf(weft.ENotFound, "no chat %q of agent %q to regenerate an answer in", b.ID, agent)
	}
	eng := h.api.Engine()
	rows, err := eng.Store().Messages(ctx, t.ID, weft.MessageQuery{Limit: -1})
	if err != nil {
		return err
	}
	i := slices.IndexFunc(rows, func(m weft.Message) bool { return m.ID == inputID })
	if i < 0 {
		return weft.Errorf(weft.ENotFound, "messageId: chat %q holds no message %s", b.ID, inputID)
	}
	j := slices.IndexFunc(rows[i+1:], func(m weft.Message) bool { return m.Role == weft.RoleAssistant && m.Depth == 0 })
	if j < 0 {
		return weft.Errorf(weft.EConflict, "messageId: message %s of chat %q has no answer yet", inputID, b.ID)
	}
	first := rows[i+1+j]
	fork, err := eng.ForkBefore(ctx, t.ID, first.ID, c.UserID)
	if err != nil {
		return err
	}
	if err := h.moveChat(r, t, fork, chatTag+b.ID); err != nil {
		return err
	}
	cursor, err := h.api.LastEventSeq(ctx, fork.ID)
	if err != nil {
		return err
	}
	f, err := turn.Open(r, h.api, fork.ID, cursor)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := eng.ContinueAsync(ctx, fork.ID, first.Side); err != nil {
		return err
	}
	// The fork keeps its messages' ids: the new answer's UI message id is the one regenerated.
	h.stream(w, f, &turn.Reader{}, inputID)
	return nil
}

// moveChat gives the chat's tag to the fork, then takes it from the thread it was forked from:
// the chat id names the fork from now on.
func (h *Handler) moveChat(r *http.Request, from, to *weft.Thread, tag string) error {
	st := h.api.Engine().Store()
	retag := func(t *weft.Thread, tags []string) error {
		return st.Tx(r.Context(), t.ID, nil, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Tags: tags}) })
	}
	if err := retag(to, append(slices.Clone(to.Tags), tag)); err != nil {
		return err
	}
	return retag(from, slices.DeleteFunc(slices.Clone(from.Tags), func(s string) bool { return s == tag }))
}
