// Package aguiapi serves the AG-UI protocol at POST /api/agents/{agent}/ag-ui: a RunAgentInput
// in, the AG-UI event stream out (RUN_STARTED, STEP_*, REASONING_*, TEXT_MESSAGE_*,
// TOOL_CALL_*, RUN_FINISHED or RUN_ERROR). A threadId names a thread of the
// caller's, created on first use. GET /api/agents/{agent}/ag-ui/{threadId}/stream resumes a
// run still going. It translates the protocol-neutral parts of package turn; the engine knows
// nothing of AG-UI. docs/ag-ui.md describes the mapping.
package aguiapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/turn"
)

// threadTag tags the thread of an AG-UI threadId.
const threadTag = "ag-ui-thread:"

// Handler serves the routes.
type Handler struct {
	api  *httpapi.Server
	ping time.Duration
}

// Register mounts the routes on the API server.
func Register(api *httpapi.Server) *Handler {
	h := &Handler{api: api, ping: 15 * time.Second}
	api.Mount("POST /api/agents/{agent}/ag-ui", h.route(h.run))
	api.Mount("GET /api/agents/{agent}/ag-ui/{thread}/stream", h.route(h.resume))
	return h
}

func (h *Handler) route(f func(w http.ResponseWriter, r *http.Request, c httpapi.Caller) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := h.api.Authenticate(r)
		if err == nil {
			err = f(w, r, c)
		}
		if err != nil {
			h.api.WriteError(w, r, err)
		}
	})
}

// runInput is a RunAgentInput: the fields Weft reads.
type runInput struct {
	ThreadID string       `json:"threadId"`
	RunID    string       `json:"runId"`
	Messages []runMessage `json:"messages"`
	Tools    []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// runMessage is an AG-UI message; content is a string, or a list of parts for a user's.
type runMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text is a message's text: its string content, or its text parts.
func (m runMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func invalid(format string, args ...any) error { return weft.Errorf(weft.EInvalid, format, args...) }

// read decodes and checks the input: the last message is the user's and is posted; the ones
// before it are a new thread's history.
func read(w http.ResponseWriter, r *http.Request) (*runInput, []weft.NewMessage, weft.NewMessage, error) {
	var in runInput
	var last weft.NewMessage
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, weft.MaxMessageBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, nil, last, weft.LimitError("the request body", mbe.Limit+1, weft.MaxMessageBytes)
	}
	if err != nil {
		return nil, nil, last, invalid("reading the request body: %v", err)
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, nil, last, invalid("the body is not a RunAgentInput: %v", err)
	}
	if in.ThreadID == "" || in.RunID == "" {
		return nil, nil, last, invalid("threadId and runId are required")
	}
	if len(in.Tools) > 0 {
		return nil, nil, last, invalid("tools: frontend tools are not supported yet: a Weft agent runs its own tools")
	}
	if len(in.Messages) == 0 {
		return nil, nil, last, invalid("messages: at least one message is required")
	}
	var history []weft.NewMessage
	for i, m := range in.Messages {
		var role weft.Role
		switch m.Role {
		case "user":
			role = weft.RoleUser
		case "assistant":
			role = weft.RoleAssistant
		case "system", "developer":
			role = weft.RoleSystem
		case "tool", "reasoning", "activity":
			continue // what the agent's own run produced: the thread holds it
		default:
			return nil, nil, last, invalid("messages[%d].role: unknown role %q", i, m.Role)
		}
		text := m.text()
		if i == len(in.Messages)-1 {
			if role != weft.RoleUser || text == "" {
				return nil, nil, last, invalid("messages[%d]: the last message must be the user's, with text", i)
			}
			last = weft.NewMessage{Role: role, Content: text, Metadata: map[string]any{"ag_ui_message_id": m.ID}}
			break
		}
		if text != "" {
			history = append(history, weft.NewMessage{Role: role, Content: text})
		}
	}
	if last.Content == "" {
		return nil, nil, last, invalid("messages: the last message must be the user's, with text")
	}
	return &in, history, last, nil
}

// run posts the input's new message to the thread and streams the run as AG-UI events.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, c httpapi.Caller) error {
	in, history, last, err := read(w, r)
	if err != nil {
		return err
	}
	t, err := turn.Start(r, h.api, c, turn.Input{Agent: r.PathValue("agent"), Tag: threadTag + in.ThreadID,
		History: history, Message: last, Label: "ag-ui " + in.ThreadID})
	if err != nil {
		return err
	}
	defer t.Close()
	h.stream(w, t.Feed, &turn.Reader{Input: t.InputID}, in.ThreadID, in.RunID)
	return nil
}

// resume streams the thread's running turn from its start (204 when none runs), as run does:
// AG-UI leaves resumption to the server.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, c httpapi.Caller) error {
	agent, id := r.PathValue("agent"), r.PathValue("thread")
	eng := h.api.Engine()
	found, _, err := eng.Store().Threads(r.Context(), weft.ThreadQuery{UserID: c.UserID, Agent: agent, Tag: threadTag + id, Limit: 1})
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return weft.Errorf(weft.ENotFound, "no AG-UI thread %q of agent %q", id, agent)
	}
	t := found[0]
	msgs, err := eng.Store().Messages(r.Context(), t.ID, weft.MessageQuery{Limit: 20, Desc: true})
	if err != nil {
		return err
	}
	input, runID := "", ""
	for _, m := range msgs {
		if m.Role == weft.RoleUser {
			input, runID = m.ID, m.RunID
			break
		}
	}
	if t.Status != weft.ThreadRunning || input == "" {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	now, err := h.api.LastEventSeq(r.Context(), t.ID)
	if err != nil {
		return err
	}
	f, err := turn.Open(r, h.api, t.ID, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	h.stream(w, f, &turn.Reader{Input: input, AfterInput: true, ResumeAt: now}, id, orDefault(r.URL.Query().Get("runId"), runID))
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// stream writes the turn as AG-UI events over SSE.
func (h *Handler) stream(w http.ResponseWriter, f *turn.Feed, rd *turn.Reader, aguiThread, runID string) {
	rc := http.NewResponseController(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(s string) error {
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(w, s); err != nil {
			return err
		}
		return rc.Flush()
	}
	tr := &translator{threadID: aguiThread, runID: runID}
	send := func(evs []map[string]any) error {
		var b strings.Builder
		for _, ev := range evs {
			enc, _ := json.Marshal(ev)
			b.WriteString("data: ")
			b.Write(enc)
			b.WriteString("\n\n")
		}
		if b.Len() == 0 {
			return nil
		}
		return write(b.String())
	}
	if send(tr.start()) != nil {
		return
	}
	_ = f.Stream(rd, func(parts []turn.Part) error {
		for _, p := range parts {
			if err := send(tr.read(p)); err != nil {
				return err
			}
		}
		return nil
	}, func() error { return write(": ping\n\n") }, h.ping)
}

// translator turns a turn's parts into AG-UI events.
type translator struct {
	threadID, runID string
	text            string // the text message open
	reasoning       string // the reasoning message open
	step            string // the step open
}

func (tr *translator) start() []map[string]any {
	return []map[string]any{{"type": "RUN_STARTED", "threadId": tr.threadID, "runId": tr.runID}}
}

func (tr *translator) closeMessages(out []map[string]any) []map[string]any {
	if tr.reasoning != "" {
		out = append(out, map[string]any{"type": "REASONING_MESSAGE_END", "messageId": tr.reasoning},
			map[string]any{"type": "REASONING_END", "messageId": tr.reasoning})
		tr.reasoning = ""
	}
	if tr.text != "" {
		out = append(out, map[string]any{"type": "TEXT_MESSAGE_END", "messageId": tr.text})
		tr.text = ""
	}
	return out
}

// read returns the events of one part.
func (tr *translator) read(p turn.Part) []map[string]any {
	var out []map[string]any
	switch p.Kind {
	case turn.StepStart:
		out = tr.closeMessages(out)
		tr.step = "step " + strconv.Itoa(p.Step)
		out = append(out, map[string]any{"type": "STEP_STARTED", "stepName": tr.step})
	case turn.StepEnd:
		out = tr.closeMessages(out)
		if tr.step != "" {
			out = append(out, map[string]any{"type": "STEP_FINISHED", "stepName": tr.step})
			tr.step = ""
		}
	case turn.ReasoningDelta:
		id := p.MessageID + "-reasoning"
		if tr.reasoning != id {
			out = tr.closeMessages(out)
			out = append(out, map[string]any{"type": "REASONING_START", "messageId": id},
				map[string]any{"type": "REASONING_MESSAGE_START", "messageId": id, "role": "reasoning"})
			tr.reasoning = id
		}
		out = append(out, map[string]any{"type": "REASONING_MESSAGE_CONTENT", "messageId": id, "delta": p.Text})
	case turn.TextDelta:
		if tr.text != p.MessageID {
			out = tr.closeMessages(out)
			out = append(out, map[string]any{"type": "TEXT_MESSAGE_START", "messageId": p.MessageID, "role": "assistant"})
			tr.text = p.MessageID
		}
		out = append(out, map[string]any{"type": "TEXT_MESSAGE_CONTENT", "messageId": p.MessageID, "delta": p.Text})
	case turn.TextEnd:
		out = tr.closeMessages(out)
	case turn.ToolCall:
		out = tr.closeMessages(out)
		out = append(out, map[string]any{"type": "TOOL_CALL_START", "toolCallId": p.CallID, "toolCallName": p.Name, "parentMessageId": p.MessageID})
		if p.Text != "" {
			out = append(out, map[string]any{"type": "TOOL_CALL_ARGS", "toolCallId": p.CallID, "delta": p.Text})
		}
		out = append(out, map[string]any{"type": "TOOL_CALL_END", "toolCallId": p.CallID})
	case turn.ToolResult:
		out = append(out, map[string]any{"type": "TOOL_CALL_RESULT", "messageId": p.MessageID, "toolCallId": p.CallID,
			"content": p.Text, "role": "tool"})
	case turn.End:
		out = tr.closeMessages(out)
		if tr.step != "" {
			out = append(out, map[string]any{"type": "STEP_FINISHED", "stepName": tr.step})
			tr.step = ""
		}
		if p.Error != "" || p.Reason == weft.StopBudgetExceeded {
			return append(out, map[string]any{"type": "RUN_ERROR", "message": orDefault(p.Error, "the thread reached its budget"),
				"code": string(p.Reason)})
		}
		return append(out, map[string]any{"type": "RUN_FINISHED", "threadId": tr.threadID, "runId": tr.runID,
			"result": map[string]any{"weftStopReason": string(p.Reason)}})
	}
	return out
}
