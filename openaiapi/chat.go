package openaiapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/turn"
)

// chatRequest is the body of POST /v1/chat/completions: the fields Weft reads. Sampling
// parameters and the like are ignored (the agent's model settings apply).
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N         *int            `json:"n"`
	Tools     json.RawMessage `json:"tools"`
	Functions json.RawMessage `json:"functions"`
}

// chatMessage is a message as the openai client sends it; content is a string or a list of
// parts.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text reads a message's content: a string, or the text of its text parts. Other parts (images,
// audio, files) are refused.
func (m chatMessage) text(param string) (string, error) {
	c := m.Content
	if len(c) == 0 || string(c) == "null" {
		return "", nil
	}
	if c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return "", invalid(param, "%s must be a string or a list of content parts", param)
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(c, &parts); err != nil {
		return "", invalid(param, "%s must be a string or a list of content parts", param)
	}
	var b strings.Builder
	for i, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text":
			b.WriteString(p.Text)
		default:
			return "", invalid(fmt.Sprintf("%s[%d].type", param, i), "content parts of type %q are not supported; send text", p.Type)
		}
	}
	return b.String(), nil
}

// input reads a conversation's messages: the last must be the user's, and is posted; those
// before it are the history a new thread is given.
func input(msgs []chatMessage) (history []weft.NewMessage, last weft.NewMessage, err error) {
	if len(msgs) == 0 {
		return nil, last, invalid("messages", "messages must hold at least one message")
	}
	for i, m := range msgs {
		param := "messages[" + strconv.Itoa(i) + "]"
		text, err := m.text(param + ".content")
		if err != nil {
			return nil, last, err
		}
		var role weft.Role
		switch m.Role {
		case "system", "developer":
			role = weft.RoleSystem
		case "user":
			role = weft.RoleUser
		case "assistant":
			role = weft.RoleAssistant
		case "tool", "function":
			return nil, last, invalid(param+".role", "messages of role %q are not supported: a Weft agent runs its own tools", m.Role)
		default:
			return nil, last, invalid(param+".role", "unknown role %q", m.Role)
		}
		if i == len(msgs)-1 {
			if role != weft.RoleUser {
				return nil, last, invalid(param+".role", "the last message must be the user's (role user), not %q", m.Role)
			}
			if text == "" {
				return nil, last, invalid(param+".content", "the last message must have text")
			}
			last = weft.NewMessage{Role: role, Content: text}
			break
		}
		if text != "" {
			history = append(history, weft.NewMessage{Role: role, Content: text})
		}
	}
	return history, last, nil
}

// check refuses what a Weft agent cannot do.
func (req *chatRequest) check() error {
	if req.N != nil && *req.N != 1 {
		return invalid("n", "n must be 1: an agent gives one answer")
	}
	if hasValue(req.Tools) || hasValue(req.Functions) {
		return invalid("tools", "client-side tools are not supported: a Weft agent runs its own tools (they appear in weft_tool_calls)")
	}
	return nil
}

func hasValue(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null" && s != "[]"
}

func (h *Handler) chatCompletions(w http.ResponseWriter, r *http.Request, c httpapi.Caller) error {
	var req chatRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if err := req.check(); err != nil {
		return err
	}
	if err := h.agentOf(req.Model); err != nil {
		return err
	}
	history, last, err := input(req.Messages)
	if err != nil {
		return err
	}
	t, err := turn.Start(r, h.api, c, turn.Input{Agent: req.Model, ThreadID: r.Header.Get(ThreadHeader),
		History: history, Message: last})
	if err != nil {
		return err
	}
	defer t.Close()
	w.Header().Set(ThreadHeader, t.Thread.ID)
	cc := &chatTranslator{id: "chatcmpl-" + t.InputID, model: req.Model, created: h.now().Unix()}
	rd := t.Reader()
	if !req.Stream {
		parts, err := t.Collect(rd)
		if err != nil {
			return err
		}
		for _, p := range parts {
			cc.read(p)
		}
		if cc.err != nil {
			return cc.err
		}
		writeJSON(w, http.StatusOK, cc.completion(rd.Usage))
		return nil
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	sse := turn.NewSSE(w)
	first := []map[string]any{cc.chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	err = turn.StreamData(sse, t.Feed, rd, first, cc.read, h.ping)
	if err != nil || !rd.Done() {
		return nil // the client went, or the server ends its streams: the turn runs on
	}
	if cc.err != nil {
		_ = sse.Data(cc.err.body())
		return nil
	}
	if includeUsage {
		frame := cc.chunk(nil, nil)
		frame["choices"] = []any{}
		frame["usage"] = usageOf(rd.Usage)
		_ = sse.Data(frame)
	}
	_ = sse.Raw("data: [DONE]\n\n")
	return nil
}

// chatTranslator turns a turn's parts into a chat completion: the texts of the assistant
// messages (separated by a blank line) are its content; the tool calls the agent ran are in
// weft_tool_calls, each with its output, as a model with server-side tools would report them —
// never in tool_calls, which would ask the client to run them.
type chatTranslator struct {
	id, model string
	created   int64

	content strings.Builder
	texts   []msgText        // the content by message, in order
	ended   []string         // the messages whose text is complete (stored)
	lastMsg string           // the message whose text came last
	calls   []map[string]any // weft_tool_calls, in call order
	callAt  map[string]int
	finish  string
	stopped weft.StopReason
	intr    weftInterrupt // who interrupted the run, when a new message did
	err     *apiError
}

// read takes a part and returns the stream chunks it gives.
func (cc *chatTranslator) read(p turn.Part) []map[string]any {
	switch p.Kind {
	case turn.TextDelta:
		delta := p.Text
		if p.MessageID != cc.lastMsg {
			if cc.content.Len() > 0 {
				delta = "\n\n" + delta
			}
			cc.lastMsg = p.MessageID
		}
		cc.content.WriteString(delta)
		if n := len(cc.texts); n == 0 || cc.texts[n-1].id != p.MessageID {
			cc.texts = append(cc.texts, msgText{id: p.MessageID})
		}
		cc.texts[len(cc.texts)-1].text += delta
		return []map[string]any{cc.chunk(map[string]any{"content": delta}, nil)}
	case turn.ToolCall:
		if cc.callAt == nil {
			cc.callAt = map[string]int{}
		}
		call := map[string]any{"index": len(cc.calls), "id": p.CallID, "type": "function",
			"function": map[string]any{"name": p.Name, "arguments": p.Text}}
		cc.callAt[p.CallID] = len(cc.calls)
		cc.calls = append(cc.calls, call)
		return []map[string]any{cc.chunk(map[string]any{"weft_tool_calls": []any{call}}, nil)}
	case turn.ToolResult:
		i, ok := cc.callAt[p.CallID]
		if !ok {
			return nil
		}
		status := "completed"
		if p.Failed {
			status = "failed"
		}
		cc.calls[i]["output"], cc.calls[i]["status"] = p.Text, status
		update := map[string]any{"index": i, "id": p.CallID, "output": p.Text, "status": status}
		return []map[string]any{cc.chunk(map[string]any{"weft_tool_calls": []any{update}}, nil)}
	case turn.TextEnd:
		cc.ended = append(cc.ended, p.MessageID)
	case turn.End:
		cc.stopped = p.Reason
		cc.intr = interruptOf(p)
		if p.Interrupt != nil {
			cc.keepStored(p.Interrupt.Removed)
		}
		cc.finish, cc.err = outcome(p)
		if cc.err != nil {
			return nil
		}
		return []map[string]any{cc.chunk(map[string]any{}, cc.finish)}
	}
	return nil
}

// msgText is the content one assistant message gave (its separator included).
type msgText struct{ id, text string }

// keepStored leaves in the completion's content only the text the thread holds once a new message
// stopped the run: not that of the model call the interrupt cut short (never stored), nor that of
// the replies a rollback removed. (A stream has sent it already; its finishing chunk says why.)
func (cc *chatTranslator) keepStored(removed []string) {
	cc.content.Reset()
	for _, m := range cc.texts {
		if slices.Contains(cc.ended, m.id) && !slices.Contains(removed, m.id) {
			text := m.text
			if cc.content.Len() == 0 {
				text = strings.TrimPrefix(text, "\n\n")
			}
			cc.content.WriteString(text)
		}
	}
}

// outcome maps a run's stop to a finish_reason, or to an error: a failed run is a server error,
// a thread over its budget is 429 insufficient_quota.
func outcome(p turn.Part) (string, *apiError) {
	switch {
	case p.Reason == weft.StopBudgetExceeded:
		return "", &apiError{status: http.StatusTooManyRequests, typ: "insufficient_quota", code: "insufficient_quota",
			message: "The thread reached its budget: " + orDefault(p.Error, "raise it with PATCH /api/threads/{id}")}
	case p.Error != "":
		return "", &apiError{status: http.StatusInternalServerError, typ: typeServer, code: string(p.Reason), message: p.Error}
	case p.Reason == weft.StopMaxSideSteps || p.Reason == weft.StopMaxTotalSteps:
		return "length", nil
	}
	return "stop", nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// chunk is a chat.completion.chunk with one choice holding delta (nil finish = null).
func (cc *chatTranslator) chunk(delta map[string]any, finish any) map[string]any {
	choice := map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}
	if finish != nil && cc.stopped != "" {
		choice["weft_stop_reason"] = cc.stopped
		cc.interruptInto(choice)
	}
	out := map[string]any{"id": cc.id, "object": "chat.completion.chunk", "created": cc.created, "model": cc.model,
		"choices": []any{choice}}
	if delta == nil {
		delete(choice, "delta")
	}
	return out
}

// completion is the whole chat.completion.
func (cc *chatTranslator) completion(u turn.Usage) map[string]any {
	msg := map[string]any{"role": "assistant", "content": cc.content.String(), "refusal": nil}
	if len(cc.calls) > 0 {
		msg["weft_tool_calls"] = cc.calls
	}
	choice := map[string]any{"index": 0, "message": msg, "finish_reason": cc.finish, "logprobs": nil,
		"weft_stop_reason": cc.stopped}
	cc.interruptInto(choice)
	return map[string]any{"id": cc.id, "object": "chat.completion", "created": cc.created, "model": cc.model,
		"choices": []any{choice}, "usage": usageOf(u)}
}

// interruptInto adds to a finishing choice the weft_interrupted_by, weft_rolled_back and
// weft_removed_message_ids of a run a new message stopped: chat completions have no finish_reason
// for it (it finishes "stop", with weft_stop_reason "interrupted").
func (cc *chatTranslator) interruptInto(choice map[string]any) {
	if cc.intr.InterruptedBy == "" {
		return
	}
	removed := cc.intr.RemovedMessageIDs
	if removed == nil {
		removed = []string{}
	}
	choice["weft_interrupted_by"], choice["weft_rolled_back"], choice["weft_removed_message_ids"] = cc.intr.InterruptedBy, cc.intr.RolledBack, removed
}

// usageOf is a turn's usage as chat completions report it.
func usageOf(u turn.Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens,
		"total_tokens":              u.InputTokens + u.OutputTokens,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedTokens},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens}}
}
