package openaiapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/turn"
)

// responsesRequest is the body of POST /v1/responses: the fields Weft reads.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       string          `json:"instructions"`
	PreviousResponseID string          `json:"previous_response_id"`
	Conversation       json.RawMessage `json:"conversation"`
	Stream             bool            `json:"stream"`
	Tools              json.RawMessage `json:"tools"`
}

// responseID names a response by its thread and the message it answers, so that it can be read
// back (GET) and continued (previous_response_id) without storing anything of its own.
func responseID(threadID, inputID string) string { return "resp_" + threadID + "." + inputID }

// parseResponseID reads a responseID; ok is false for anything else.
func parseResponseID(id string) (threadID, inputID string, ok bool) {
	rest, ok := strings.CutPrefix(id, "resp_")
	if !ok {
		return "", "", false
	}
	threadID, inputID, ok = strings.Cut(rest, ".")
	return threadID, inputID, ok && threadID != "" && inputID != ""
}

// conversationID reads the conversation field: a thread id, as a string or {"id": …}.
func conversationID(raw json.RawMessage) (string, error) {
	if !hasValue(raw) {
		return "", nil
	}
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id, nil
	}
	var obj struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.ID == "" {
		return "", invalid("conversation", "conversation must be a thread id or {\"id\": thread id}")
	}
	return obj.ID, nil
}

// responsesInput reads input: a text, or a list of message items (the last one the user's).
func responsesInput(raw json.RawMessage) ([]weft.NewMessage, weft.NewMessage, error) {
	if !hasValue(raw) {
		return nil, weft.NewMessage{}, invalid("input", "input is required: a text or a list of messages")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if text == "" {
			return nil, weft.NewMessage{}, invalid("input", "input must not be empty")
		}
		return nil, weft.NewMessage{Role: weft.RoleUser, Content: text}, nil
	}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, weft.NewMessage{}, invalid("input", "input must be a text or a list of input items")
	}
	msgs := make([]chatMessage, len(items))
	for i, it := range items {
		if it.Type != "" && it.Type != "message" {
			return nil, weft.NewMessage{}, invalid("input["+strconv.Itoa(i)+"].type",
				"input items of type %q are not supported: a Weft agent runs its own tools", it.Type)
		}
		msgs[i] = chatMessage{Role: it.Role, Content: it.Content}
	}
	h, last, err := input(msgs)
	if ae, ok := err.(*apiError); ok {
		ae.param = strings.Replace(ae.param, "messages", "input", 1)
		ae.message = strings.Replace(ae.message, "messages", "input", 1)
	}
	return h, last, err
}

func (h *Handler) createResponse(w http.ResponseWriter, r *http.Request, c httpapi.Caller) error {
	var req responsesRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if hasValue(req.Tools) {
		return invalid("tools", "client-side tools are not supported: a Weft agent runs its own tools (they appear as mcp_call items)")
	}
	if err := h.agentOf(req.Model); err != nil {
		return err
	}
	history, last, err := responsesInput(req.Input)
	if err != nil {
		return err
	}
	threadID, err := conversationID(req.Conversation)
	if err != nil {
		return err
	}
	if req.PreviousResponseID != "" {
		prev, _, ok := parseResponseID(req.PreviousResponseID)
		if !ok {
			return &apiError{status: http.StatusNotFound, typ: typeInvalidRequest, param: "previous_response_id", code: "not_found",
				message: "Previous response with id '" + req.PreviousResponseID + "' not found."}
		}
		if threadID != "" && threadID != prev {
			return invalid("conversation", "conversation and previous_response_id name different threads")
		}
		threadID = prev
	}
	if req.Instructions != "" {
		if threadID != "" {
			return invalid("instructions", "instructions apply to a new conversation only (a continued thread keeps its own)")
		}
		history = append([]weft.NewMessage{{Role: weft.RoleSystem, Content: req.Instructions}}, history...)
	}
	t, err := turn.Start(r, h.api, c, turn.Input{Agent: req.Model, ThreadID: threadID, History: history, Message: last})
	if err != nil {
		if weft.ErrorCode(err) == weft.ENotFound && req.PreviousResponseID != "" {
			return &apiError{status: http.StatusNotFound, typ: typeInvalidRequest, param: "previous_response_id", code: "not_found",
				message: "Previous response with id '" + req.PreviousResponseID + "' not found."}
		}
		return err
	}
	defer t.Close()
	rb := &responseBuilder{resp: newResponse(responseID(t.Thread.ID, t.InputID), req.Model, t.Thread.ID, h.now().Unix())}
	rb.resp.PreviousResponseID = nilIfEmpty(req.PreviousResponseID)
	rd := t.Reader()
	if !req.Stream {
		parts, err := t.Collect(rd)
		if err != nil {
			return err
		}
		rb.readAll(parts, rd.Usage)
		writeJSON(w, http.StatusOK, rb.resp)
		return nil
	}
	h.streamResponse(w, t.Feed, rd, rb)
	return nil
}

// streamResponse streams a response's events: created and in_progress, then the turn's as the
// feed gives them, until its run stops.
func (h *Handler) streamResponse(w http.ResponseWriter, f *turn.Feed, rd *turn.Reader, rb *responseBuilder) {
	s := turn.NewSSE(w)
	rb.emit = s.Event
	if rb.send("response.created", map[string]any{"response": rb.resp}) != nil ||
		rb.send("response.in_progress", map[string]any{"response": rb.resp}) != nil {
		return
	}
	_ = f.Stream(rd, func(parts []turn.Part) error {
		for _, p := range parts {
			if err := rb.read(p, rd.Usage); err != nil {
				return err
			}
		}
		return nil
	}, s.Ping, h.ping)
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// getResponse reads a response back from its thread's recorded events (in_progress while its run
// goes on).
func (h *Handler) getResponse(w http.ResponseWriter, r *http.Request, c httpapi.Caller) error {
	id := r.PathValue("id")
	notFound := &apiError{status: http.StatusNotFound, typ: typeInvalidRequest, code: "not_found", param: "response_id",
		message: "Response with id '" + id + "' not found."}
	threadID, inputID, ok := parseResponseID(id)
	if !ok {
		return notFound
	}
	t, err := h.api.VisibleThread(r.Context(), c, threadID)
	if weft.ErrorCode(err) == weft.ENotFound {
		return notFound
	}
	if err != nil {
		return err
	}
	rb, found, err := h.rebuild(r.Context(), t, id, inputID)
	if err != nil {
		return err
	}
	if !found {
		return notFound
	}
	if r.URL.Query().Get("stream") != "true" {
		writeJSON(w, http.StatusOK, rb.resp)
		return nil
	}
	if r.URL.Query().Has("starting_after") {
		return invalid("starting_after", "starting_after is not supported: the stream replays the whole response from its start")
	}
	return h.replay(w, r, t, id, inputID, rb.resp.CreatedAt)
}

// replay streams a response again from its start, then live until its run stops: what was
// stored comes at once (a message whose deltas passed comes whole), a model call under way when
// the replay began comes whole once stored, and the rest as it is written. A client that drops a
// stream and reads it again this way misses and repeats nothing.
func (h *Handler) replay(w http.ResponseWriter, r *http.Request, t *weft.Thread, id, inputID string, created int64) error {
	now, err := h.api.LastEventSeq(r.Context(), t.ID)
	if err != nil {
		return err
	}
	f, err := turn.Open(r, h.api, t.ID, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	rd := &turn.Reader{Input: inputID, AfterInput: true, ResumeAt: now}
	rb := &responseBuilder{resp: newResponse(id, t.Agent, t.ID, created)}
	h.streamResponse(w, f, rd, rb)
	return nil
}

// rebuild reads the turn answering inputID from the thread's event log; found is false when the
// log does not hold that message.
func (h *Handler) rebuild(ctx context.Context, t *weft.Thread, id, inputID string) (*responseBuilder, bool, error) {
	rd := &turn.Reader{Input: inputID, AfterInput: true}
	rb := &responseBuilder{resp: newResponse(id, t.Agent, t.ID, 0)}
	st := h.api.Engine().Store()
	var parts []turn.Part
	found := false
	for after := int64(0); !rd.Done(); {
		recs, err := st.Events(ctx, t.ID, after, 500)
		if err != nil {
			return nil, false, err
		}
		for _, rec := range recs {
			after = rec.Seq
			ev := engine.Event{Type: rec.Type, ThreadID: rec.ThreadID, Seq: rec.Seq}
			ev.Data, _ = engine.DecodePayload(rec.Type, rec.Data)
			if d, ok := ev.Data.(engine.MessageData); ok && d.Message.ID == inputID {
				found = true
				rb.resp.CreatedAt = d.Message.CreatedAt.Unix()
			}
			parts = rd.Read(ev, parts)
		}
		if len(recs) < 500 {
			break
		}
	}
	redact, err := h.api.Redactor(ctx, t.ID)
	if err != nil {
		return nil, false, err
	}
	turn.Redact(parts, redact)
	rb.readAll(parts, rd.Usage)
	return rb, found, nil
}
