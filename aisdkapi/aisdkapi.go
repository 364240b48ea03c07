// Package aisdkapi serves the AI SDK's UI message stream (v1) — what useChat's
// DefaultChatTransport posts to and reads — at POST /api/agents/{agent}/chat, with
// GET /api/agents/{agent}/chat/{id}/stream resuming a turn still running. A chat id is a thread
// of the caller's, created on first use. It translates the protocol-neutral parts of package
// turn; the engine knows nothing of the AI SDK. docs/ai-sdk.md describes the mapping.
package aisdkapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/turn"
)

// StreamHeader marks a response as a UI message stream, as the AI SDK's server helpers do.
const StreamHeader = "x-vercel-ai-ui-message-stream"

// chatTag tags the thread of a chat id.
const chatTag = "ai-sdk-chat:"

// Handler serves the routes.
type Handler struct {
	api  *httpapi.Server
	ping time.Duration
}

// Register mounts the routes on the API server.
func Register(api *httpapi.Server) *Handler {
	h := &Handler{api: api, ping: 15 * time.Second}
	api.Mount("POST /api/agents/{agent}/chat", turn.Route(api, h.chat))
	api.Mount("GET /api/agents/{agent}/chat/{id}/stream", turn.Route(api, h.resume))
	return h
}

// chatBody is what DefaultChatTransport posts: the chat id, the whole conversation as UI
// messages, and what triggered the request. Other fields (a client's own body) are ignored.
type chatBody struct {
	ID        string      `json:"id"`
	Messages  []uiMessage `json:"messages"`
	Trigger   string      `json:"trigger"`
	MessageID string      `json:"messageId"`
}

// uiMessage is a UIMessage: its text parts are read, other parts (tools, reasoning, files of an
// assistant's earlier answers) are what Weft already holds.
type uiMessage struct {
	ID    string `json:"id"`
	Role  string `json:"role"`
	Parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"parts"`
}

func (m uiMessage) text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func invalid(format string, args ...any) error {
	return weft.Errorf(weft.EInvalid, format, args...)
}

// read decodes and checks a request: the last message is the user's and is posted; those before
// it are a new chat's history.
func read(w http.ResponseWriter, r *http.Request) (*chatBody, []weft.NewMessage, weft.NewMessage, error) {
	var b chatBody
	var last weft.NewMessage
	if err := turn.ReadJSON(w, r, &b, "a chat request"); err != nil {
		return nil, nil, last, err
	}
	if b.ID == "" {
		return nil, nil, last, invalid("id: the chat id is required")
	}
	if b.Trigger != "" && b.Trigger != "submit-message" && b.Trigger != triggerRegenerate {
		return nil, nil, last, invalid("trigger: %q is not submit-message or regenerate-message", b.Trigger)
	}
	if len(b.Messages) == 0 {
		return nil, nil, last, invalid("messages: at least one message is required")
	}
	var history []weft.NewMessage
	for i, m := range b.Messages {
		role := weft.Role(m.Role)
		if role != weft.RoleUser && role != weft.RoleAssistant && role != weft.RoleSystem {
			return nil, nil, last, invalid("messages[%d].role: %q is not user, assistant or system", i, m.Role)
		}
		text := m.text()
		if i == len(b.Messages)-1 {
			if role != weft.RoleUser || text == "" {
				return nil, nil, last, invalid("messages[%d]: the last message must be the user's, with text", i)
			}
			last = weft.NewMessage{Role: role, Content: text, Metadata: map[string]any{"ui_message_id": m.ID}}
			break
		}
		if text != "" {
			history = append(history, weft.NewMessage{Role: role, Content: text})
		}
	}
	return &b, history, last, nil
}

// chat posts the conversation's new message to the chat's thread and streams the turn.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request, c httpapi.Caller) error {
	b, history, last, err := read(w, r)
	if err != nil {
		return err
	}
	if b.Trigger == triggerRegenerate {
		return h.regenerate(w, r, c, b)
	}
	t, err := turn.Start(r, h.api, c, turn.Input{Agent: r.PathValue("agent"), Tag: chatTag + b.ID,
		History: history, Message: last, Label: "chat " + b.ID})
	if err != nil {
		return err
	}
	defer t.Close()
	h.stream(w, t.Feed, t.Reader(), t.InputID)
	return nil
}

// resume streams the chat's running turn from its start (204 when none runs): what was recorded
// comes at once, a message being written comes whole once stored, and the rest live.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, c httpapi.Caller) error {
	id := r.PathValue("id")
	rs, err := turn.Resume(w, r, h.api, c, r.PathValue("agent"), chatTag+id, "chat "+strconv.Quote(id))
	if err != nil || rs == nil {
		return err
	}
	defer rs.Close()
	h.stream(w, rs.Feed, rs.Reader(), rs.Input.ID)
	return nil
}

// stream writes the turn as a UI message stream.
func (h *Handler) stream(w http.ResponseWriter, f *turn.Feed, rd *turn.Reader, inputID string) {
	s := turn.NewSSE(w, StreamHeader, "v1")
	tr := &translator{messageID: MessageID(inputID)}
	if err := turn.StreamData(s, f, rd, tr.start(), tr.read, h.ping); err == nil && rd.Done() {
		_ = s.Raw("data: [DONE]\n\n")
	}
}

// MessageID is the UI message id of the answer to a posted message: the same on every stream of
// the turn, so that a resumed stream continues the message the client holds.
func MessageID(inputID string) string { return "answer-" + inputID }

// translator turns a turn's parts into UI message chunks.
type translator struct {
	messageID string
	text      string // the text block open ("" = none)
	reasoning string // the reasoning block open
	step      int
}

func (tr *translator) start() []map[string]any {
	return []map[string]any{{"type": "start", "messageId": tr.messageID}}
}

// closeBlocks ends the open text and reasoning blocks.
func (tr *translator) closeBlocks(out []map[string]any) []map[string]any {
	if tr.reasoning != "" {
		out = append(out, map[string]any{"type": "reasoning-end", "id": tr.reasoning})
		tr.reasoning = ""
	}
	if tr.text != "" {
		out = append(out, map[string]any{"type": "text-end", "id": tr.text})
		tr.text = ""
	}
	return out
}

// read returns the chunks of one part.
func (tr *translator) read(p turn.Part) []map[string]any {
	var out []map[string]any
	switch p.Kind {
	case turn.StepStart:
		out = tr.closeBlocks(out)
		out = append(out, map[string]any{"type": "start-step"})
		tr.step++
	case turn.StepEnd:
		out = tr.closeBlocks(out)
		if tr.step > 0 {
			out = append(out, map[string]any{"type": "finish-step"})
			tr.step--
		}
	case turn.ReasoningDelta:
		id := p.MessageID + "-reasoning"
		if tr.reasoning != id {
			out = tr.closeBlocks(out)
			out = append(out, map[string]any{"type": "reasoning-start", "id": id})
			tr.reasoning = id
		}
		out = append(out, map[string]any{"type": "reasoning-delta", "id": id, "delta": p.Text})
	case turn.TextDelta:
		if tr.text != p.MessageID {
			out = tr.closeBlocks(out)
			out = append(out, map[string]any{"type": "text-start", "id": p.MessageID})
			tr.text = p.MessageID
		}
		out = append(out, map[string]any{"type": "text-delta", "id": p.MessageID, "delta": p.Text})
	case turn.TextEnd:
		out = tr.closeBlocks(out)
	case turn.ToolCall:
		out = tr.closeBlocks(out)
		out = append(out, map[string]any{"type": "tool-input-available", "toolCallId": p.CallID, "toolName": p.Name,
			"input": jsonOrText(p.Text), "providerExecuted": true, "dynamic": true})
	case turn.ToolResult:
		if p.Failed {
			out = append(out, map[string]any{"type": "tool-output-error", "toolCallId": p.CallID, "errorText": p.Text,
				"providerExecuted": true, "dynamic": true})
		} else {
			out = append(out, map[string]any{"type": "tool-output-available", "toolCallId": p.CallID, "output": jsonOrText(p.Text),
				"providerExecuted": true, "dynamic": true})
		}
	case turn.End:
		out = tr.closeBlocks(out)
		for ; tr.step > 0; tr.step-- {
			out = append(out, map[string]any{"type": "finish-step"})
		}
		finish := "stop"
		switch {
		case p.Error != "" || p.Reason == weft.StopBudgetExceeded:
			out = append(out, map[string]any{"type": "error", "errorText": orDefault(p.Error, "the thread reached its budget")})
			finish = "error"
		case p.Reason == weft.StopMaxSideSteps || p.Reason == weft.StopMaxTotalSteps:
			finish = "length"
		case p.Reason != weft.StopOnResponse && p.Reason != weft.StopTool && p.Reason != weft.StopHandlerIdle:
			finish = "other"
		}
		meta := map[string]any{"weftStopReason": string(p.Reason)}
		if in := p.Interrupt; in != nil {
			// A new message stopped the run (if_busy interrupt or rollback): the answer ends here,
			// and with a rollback none of it stays in the thread.
			removed := in.Removed
			if removed == nil {
				removed = []string{}
			}
			meta["weftInterruptedBy"], meta["weftRolledBack"], meta["weftRemovedMessageIds"] = in.By, in.Rollback, removed
		}
		out = append(out, map[string]any{"type": "finish", "finishReason": finish, "messageMetadata": meta})
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// jsonOrText is a tool's JSON text as a value, or the text itself when it is not JSON.
func jsonOrText(s string) any {
	var v any
	if json.Unmarshal([]byte(s), &v) == nil {
		return v
	}
	return s
}
