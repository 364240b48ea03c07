// Package aguiapi serves the AG-UI protocol at POST /api/agents/{agent}/ag-ui: a RunAgentInput
// in, the AG-UI event stream out (RUN_STARTED, STATE_SNAPSHOT, MESSAGES_SNAPSHOT, STEP_*,
// REASONING_*, TEXT_MESSAGE_*, TOOL_CALL_*, RUN_FINISHED or RUN_ERROR). A threadId names a thread
// of the caller's, created on first use. The input's tools are the thread's client tools: the
// model may call them, the run then waits durably for the client, and the client's next input
// carries each call's result as a tool message. GET /api/agents/{agent}/ag-ui/{threadId}/stream
// resumes a run still going. It translates the protocol-neutral parts of package turn; the engine
// knows nothing of AG-UI. docs/ag-ui.md describes the mapping.
package aguiapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/turn"
)

// threadTag tags the thread of an AG-UI threadId.
const threadTag = "ag-ui-thread:"

// messageIDKey is the metadata key of a message's AG-UI id: the id the client gave a message it
// sent, which a MESSAGES_SNAPSHOT gives it back under.
const messageIDKey = "ag_ui_message_id"

// Handler serves the routes.
type Handler struct {
	api  *httpapi.Server
	ping time.Duration
}

// Register mounts the routes on the API server.
func Register(api *httpapi.Server) *Handler {
	h := &Handler{api: api, ping: 15 * time.Second}
	api.Mount("POST /api/agents/{agent}/ag-ui", turn.Route(api, h.run))
	api.Mount("GET /api/agents/{agent}/ag-ui/{thread}/stream", turn.Route(api, h.resume))
	return h
}

// runInput is a RunAgentInput: the fields Weft reads. Its state, context and forwardedProps are
// not read: the thread's own state is what STATE_SNAPSHOT sends.
type runInput struct {
	ThreadID string              `json:"threadId"`
	RunID    string              `json:"runId"`
	Messages []runMessage        `json:"messages"`
	Tools    []engine.ClientTool `json:"tools"`
}

// runMessage is an AG-UI message; content is a string, or a list of parts for a user's.
type runMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"toolCallId"`
	Error      string          `json:"error"`
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

// key names a message the way a thread's rows are compared with the client's: a tool result by
// its call, others by id.
func key(role, id, callID string) string {
	if role == "tool" {
		return "tool:" + callID
	}
	return id
}

// request is a RunAgentInput read.
type request struct {
	runInput
	// history is a new thread's history: the messages before the last, tool results left out.
	history []weft.NewMessage
	// post is the user's new message, posted; nil when the input ends with tool results, which
	// answer calls of the thread's client tools.
	post *weft.NewMessage
	// results are the input's tool results by call id; resultIDs their message ids.
	results   map[string]weft.ToolResult
	resultIDs map[string]string
	// last is the call id of the last message when it is a tool result.
	last string
	// keys are the messages the client holds.
	keys map[string]bool
}

func invalid(format string, args ...any) error { return weft.Errorf(weft.EInvalid, format, args...) }

// read decodes and checks the input: it ends with the user's new message, or with tool results.
func read(w http.ResponseWriter, r *http.Request) (*request, error) {
	rq := &request{results: map[string]weft.ToolResult{}, resultIDs: map[string]string{}, keys: map[string]bool{}}
	if err := turn.ReadJSON(w, r, &rq.runInput, "a RunAgentInput"); err != nil {
		return nil, err
	}
	if rq.ThreadID == "" || rq.RunID == "" {
		return nil, invalid("threadId and runId are required")
	}
	if len(rq.Messages) == 0 {
		return nil, invalid("messages: at least one message is required")
	}
	if err := engine.CheckClientTools(rq.Tools); err != nil {
		return nil, err
	}
	for i, m := range rq.Messages {
		var role weft.Role
		switch m.Role {
		case "user":
			role = weft.RoleUser
		case "assistant":
			role = weft.RoleAssistant
		case "system", "developer":
			role = weft.RoleSystem
		case "tool":
			if m.ToolCallID == "" {
				return nil, invalid("messages[%d].toolCallId: a tool message names the call it answers", i)
			}
			res := weft.Success(m.text())
			if m.Error != "" {
				res = weft.Failure(m.Error)
			}
			rq.results[m.ToolCallID], rq.resultIDs[m.ToolCallID] = res, m.ID
			rq.keys[key(m.Role, m.ID, m.ToolCallID)] = true
			if i == len(rq.Messages)-1 {
				rq.last = m.ToolCallID
			}
			continue
		case "reasoning", "activity":
			continue // what the agent's own run produced, or the client's own
		default:
			return nil, invalid("messages[%d].role: unknown role %q", i, m.Role)
		}
		rq.keys[key(m.Role, m.ID, "")] = true
		text := m.text()
		meta := map[string]any{messageIDKey: m.ID}
		if i == len(rq.Messages)-1 {
			if role != weft.RoleUser || text == "" {
				return nil, invalid("messages[%d]: the last message must be the user's, with text, or a tool's result", i)
			}
			rq.post = &weft.NewMessage{Role: role, Content: text, Metadata: meta}
			break
		}
		if text != "" {
			rq.history = append(rq.history, weft.NewMessage{Role: role, Content: text, Metadata: meta})
		}
	}
	return rq, nil
}

// run posts the input's new message to the thread, or delivers the results of its client's
// tool calls, and streams the run as AG-UI events.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, c httpapi.Caller) error {
	rq, err := read(w, r)
	if err != nil {
		return err
	}
	agent := r.PathValue("agent")
	var tr *translator
	if rq.post != nil {
		t, err := turn.Start(r, h.api, c, turn.Input{Agent: agent, Tag: threadTag + rq.ThreadID,
			History: rq.history, Message: *rq.post, Label: "ag-ui " + rq.ThreadID,
			Before: func(t *weft.Thread) (err error) {
				tr, _, err = h.prepare(r.Context(), t, rq)
				return err
			}})
		if err != nil {
			return err
		}
		defer t.Close()
		h.stream(w, t.Feed, t.Reader(), tr)
		return nil
	}
	// Tool results: the thread's waiting calls go on with them.
	if _, ok := h.api.Engine().Registry().Agent(agent); !ok {
		return weft.Errorf(weft.ENotFound, "no agent named %q", agent)
	}
	t, err := turn.Tagged(r.Context(), h.api, c, agent, threadTag+rq.ThreadID)
	if err != nil {
		return err
	}
	if t == nil {
		return weft.Errorf(weft.ENotFound, "no AG-UI thread %q of agent %q to give tool results to", rq.ThreadID, agent)
	}
	cursor, err := h.api.LastEventSeq(r.Context(), t.ID)
	if err != nil {
		return err
	}
	f, err := turn.Open(r, h.api, t.ID, cursor)
	if err != nil {
		return err
	}
	defer f.Close()
	tr, ready, err := h.prepare(r.Context(), t, rq)
	if err != nil {
		return err
	}
	if !ready {
		// Calls still wait (another client tool's, or a person's decision): the run stays parked.
		s := turn.NewSSE(w)
		_ = turn.DataAll(s, append(tr.start(), tr.read(turn.Part{Kind: turn.End, Reason: weft.StopAwaitingApproval})...))
		return nil
	}
	h.stream(w, f, &turn.Reader{}, tr)
	return nil
}

// prepare readies a thread for an input: the thread's waiting client calls get their results (a
// call the input does not answer, when it brings a new message instead, gets an error result),
// the input's tools become the thread's client tools, and the translator of the stream is made,
// with a MESSAGES_SNAPSHOT when the thread holds messages the client does not. ready reports that
// the calls answered let the run go on.
func (h *Handler) prepare(ctx context.Context, t *weft.Thread, rq *request) (tr *translator, ready bool, err error) {
	eng := h.api.Engine()
	// The calls waiting are of the tools the thread had: an input may offer others.
	tr = h.translator(ctx, t.ID, rq.ThreadID, rq.RunID, append(engine.ClientTools(t), rq.Tools...))
	// Read before the calls answered let the run go on, which adds to the thread.
	if tr.messages, err = h.snapshot(ctx, t.ID, rq); err != nil {
		return nil, false, err
	}
	var waiting []weft.ToolCallRecord
	if t.Status == weft.ThreadAwaitingApproval {
		if waiting, err = eng.PendingApprovals(ctx, t.ID); err != nil {
			return nil, false, err
		}
	}
	var convo []map[string]any
	for _, rec := range waiting {
		if rec.ThreadID != t.ID || !tr.clientTools[rec.Name] {
			continue
		}
		res, ok := rq.results[rec.CallID]
		switch {
		case ok:
			tr.delivered[rec.CallID] = true
			convo = append(convo, map[string]any{"id": rq.resultIDs[rec.CallID], "role": "tool", "toolCallId": rec.CallID,
				"content": orDefault(res.Result, res.Error)})
		case rq.post != nil:
			res = weft.Failure("The user sent a new message instead of a result of this call.")
		default:
			tr.pending = append(tr.pending, rec.CallID)
			continue
		}
		if ready, err = eng.DeliverToolResult(ctx, t.ID, rec.CallID, res, t.UserID); err != nil {
			return nil, false, err
		}
	}
	if rq.post == nil && len(tr.delivered) == 0 {
		// The input answers no waiting call: say why (unknown, answered already, not a client tool's).
		if _, err := eng.DeliverToolResult(ctx, t.ID, rq.last, rq.results[rq.last], t.UserID); err != nil {
			return nil, false, err
		}
		return nil, false, weft.Errorf(weft.EConflict, "tool call %s does not wait for a result", rq.last)
	}
	if turn.Encode(engine.ClientTools(t)) != turn.Encode(rq.Tools) {
		if err := eng.SetClientTools(ctx, t.ID, rq.Tools); err != nil {
			return nil, false, err
		}
	}
	if tr.messages != nil {
		// The client's new messages end it: its results, then its new message.
		tr.messages = append(tr.messages, convo...)
		if rq.post != nil {
			tr.messages = append(tr.messages, map[string]any{"id": rq.post.Metadata[messageIDKey], "role": "user", "content": rq.post.Content})
		}
	}
	return tr, ready, nil
}

// recent is how many of a thread's newest messages are compared with the client's: a client that
// holds those holds the older ones too.
const recent = 20

// snapshot returns the thread's conversation when the thread holds messages the client does not
// (another device, a lost stream), else nil.
func (h *Handler) snapshot(ctx context.Context, threadID string, rq *request) ([]map[string]any, error) {
	newest, err := h.api.Engine().Store().Messages(ctx, threadID, weft.MessageQuery{Limit: recent, Desc: true, ExcludeSilent: true})
	if err != nil {
		return nil, err
	}
	slices.Reverse(newest)
	_, keys := h.asMessages(newest, "", func(s string) string { return s })
	for k := range keys {
		if !rq.keys[k] {
			convo, _, err := h.conversation(ctx, threadID, "")
			return convo, err
		}
	}
	return nil, nil
}

// translator makes the translator of a stream of the thread.
func (h *Handler) translator(ctx context.Context, threadID, aguiThread, runID string, tools []engine.ClientTool) *translator {
	tr := &translator{threadID: aguiThread, runID: runID, clientTools: map[string]bool{}, delivered: map[string]bool{}}
	for _, ct := range tools {
		tr.clientTools[ct.Name] = true
	}
	tr.state = func() any {
		kv, err := h.api.Engine().Store().ListKV(ctx, threadID)
		red, rerr := h.api.Redactor(ctx, threadID)
		if err != nil || rerr != nil {
			return nil
		}
		state := make(map[string]any, len(kv))
		for k, v := range kv {
			state[k] = json.RawMessage(red(string(v)))
		}
		return state
	}
	tr.conversation = func(runID string) []map[string]any {
		convo, err := h.conversationOfRun(ctx, threadID, runID)
		if err != nil {
			return nil
		}
		return convo
	}
	return tr
}

// conversationOfRun lists the thread's conversation through the last row the run runID wrote:
// what the thread holds once that run stopped, without what the runs after it added.
func (h *Handler) conversationOfRun(ctx context.Context, threadID, runID string) ([]map[string]any, error) {
	msgs, err := h.api.Engine().Store().Messages(ctx, threadID, weft.MessageQuery{Limit: -1, ExcludeSilent: true})
	if err != nil {
		return nil, err
	}
	red, err := h.api.Redactor(ctx, threadID)
	if err != nil {
		return nil, err
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].RunID == runID {
			msgs = msgs[:i+1]
			break
		}
	}
	out, _ := h.asMessages(msgs, "", red)
	return out, nil
}

// conversation lists the thread's top-level messages as AG-UI messages, up to and including the
// row upTo ("" = all), with their keys. A message the client sent keeps the client's id.
func (h *Handler) conversation(ctx context.Context, threadID, upTo string) ([]map[string]any, map[string]bool, error) {
	msgs, err := h.api.Engine().Store().Messages(ctx, threadID, weft.MessageQuery{Limit: -1, ExcludeSilent: true})
	if err != nil {
		return nil, nil, err
	}
	red, err := h.api.Redactor(ctx, threadID)
	if err != nil {
		return nil, nil, err
	}
	out, keys := h.asMessages(msgs, upTo, red)
	return out, keys, nil
}

// asMessages turns rows into AG-UI messages (up to and including upTo, "" = all), redacted, with
// their keys.
func (h *Handler) asMessages(msgs []weft.Message, upTo string, red func(string) string) ([]map[string]any, map[string]bool) {
	out, keys := []map[string]any{}, map[string]bool{}
	for _, m := range msgs {
		id, sent := m.Metadata[messageIDKey].(string)
		if !sent || id == "" {
			id = m.ID
		}
		var am map[string]any
		switch m.Role {
		case weft.RoleUser:
			am = map[string]any{"id": id, "role": "user", "content": red(m.Content)}
		case weft.RoleSystem:
			if sent {
				am = map[string]any{"id": id, "role": "system", "content": red(m.Content)}
			}
		case weft.RoleAssistant:
			if (m.Status != "" && m.Status != weft.MessageCompleted) || (m.Content == "" && len(m.ToolCalls) == 0) {
				break
			}
			am = map[string]any{"id": id, "role": "assistant", "content": red(m.Content)}
			if len(m.ToolCalls) > 0 {
				calls := make([]map[string]any, len(m.ToolCalls))
				for i, c := range m.ToolCalls {
					calls[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": red(c.Arguments)}}
				}
				am["toolCalls"] = calls
			}
		case weft.RoleTool:
			if m.ToolCallID != "" && m.Status != weft.MessagePending {
				am = map[string]any{"id": id, "role": "tool", "toolCallId": m.ToolCallID, "content": red(m.Content)}
			}
		}
		if am != nil && m.Depth == 0 {
			out = append(out, am)
			keys[key(am["role"].(string), id, m.ToolCallID)] = true
		}
		if m.ID == upTo {
			break
		}
	}
	return out, keys
}

// resume streams the thread's running turn from its start (204 when none runs), as run does,
// after a MESSAGES_SNAPSHOT of the conversation up to the turn's message: AG-UI leaves resumption
// to the server. The turn goes through a wait for a client tool's result to the run that went on
// after it.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, c httpapi.Caller) error {
	id := r.PathValue("thread")
	rs, err := turn.Resume(w, r, h.api, c, r.PathValue("agent"), threadTag+id, "AG-UI thread "+strconv.Quote(id))
	if err != nil || rs == nil {
		return err
	}
	defer rs.Close()
	tr := h.translator(r.Context(), rs.Thread.ID, id, orDefault(r.URL.Query().Get("runId"), rs.Input.RunID), engine.ClientTools(rs.Thread))
	if tr.messages, _, err = h.conversation(r.Context(), rs.Thread.ID, rs.Input.ID); err != nil {
		return err
	}
	h.stream(w, rs.Feed, rs.Reader(), tr)
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// stream writes the turn as AG-UI events over SSE.
func (h *Handler) stream(w http.ResponseWriter, f *turn.Feed, rd *turn.Reader, tr *translator) {
	_ = turn.StreamData(turn.NewSSE(w), f, rd, tr.start(), tr.read, h.ping)
}

// translator turns a turn's parts into AG-UI events.
type translator struct {
	threadID, runID string
	// messages, when not nil, is sent as a MESSAGES_SNAPSHOT at the start.
	messages []map[string]any
	// state, when set, gives the thread's state: sent as a STATE_SNAPSHOT at the start, and at
	// the end when it changed.
	state func() any
	// conversation, when set, gives the thread's conversation through the rows of the run
	// runID: a run a new message interrupted ends with it as a MESSAGES_SNAPSHOT.
	conversation func(runID string) []map[string]any
	// clientTools are the names of the thread's client tools; delivered the calls whose results
	// the client gave in this input (no TOOL_CALL_RESULT: it holds them); pending the client's
	// calls left unanswered, which RUN_FINISHED names.
	clientTools map[string]bool
	delivered   map[string]bool
	pending     []string

	startState string // the state sent at the start
	text       string // the text message open
	reasoning  string // the reasoning message open
	step       string // the step open
}

func (tr *translator) start() []map[string]any {
	out := []map[string]any{{"type": "RUN_STARTED", "threadId": tr.threadID, "runId": tr.runID}}
	if tr.state != nil {
		if st := tr.state(); st != nil {
			tr.startState = turn.Encode(st)
			out = append(out, map[string]any{"type": "STATE_SNAPSHOT", "snapshot": st})
		}
	}
	if tr.messages != nil {
		out = append(out, map[string]any{"type": "MESSAGES_SNAPSHOT", "messages": tr.messages})
	}
	return out
}

// interrupted ends a run that a new message interrupted (if_busy interrupt or rollback): a
// CUSTOM weft.run_interrupted event with the interrupting message and the rows a rollback
// removed; a MESSAGES_SNAPSHOT of the thread as the stop left it, so that the client drops the
// text of the cancelled model call and the messages a rollback removed; and RUN_FINISHED with
// the outcome cancelled (stopped before it completed, not failed; the next run is a new one).
func (tr *translator) interrupted(p turn.Part) []map[string]any {
	removed := p.Interrupt.Removed
	if removed == nil {
		removed = []string{}
	}
	out := []map[string]any{{"type": "CUSTOM", "name": InterruptedEvent, "value": map[string]any{"runId": p.RunID,
		"interruptedBy": p.Interrupt.By, "rollback": p.Interrupt.Rollback, "removedMessageIds": removed}}}
	if tr.conversation != nil {
		if convo := tr.conversation(p.RunID); convo != nil {
			out = append(out, map[string]any{"type": "MESSAGES_SNAPSHOT", "messages": convo})
		}
	}
	return append(out, map[string]any{"type": "RUN_FINISHED", "threadId": tr.threadID, "runId": tr.runID,
		"outcome": map[string]any{"type": "cancelled"}})
}

// InterruptedEvent is the name of the CUSTOM event that ends a run a new message interrupted.
const InterruptedEvent = "weft.run_interrupted"

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
		if tr.step != "" {
			out = append(out, map[string]any{"type": "STEP_FINISHED", "stepName": tr.step})
		}
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
		if tr.clientTools[p.Name] {
			tr.pending = append(tr.pending, p.CallID)
		}
	case turn.ToolResult:
		tr.pending = slices.DeleteFunc(tr.pending, func(id string) bool { return id == p.CallID })
		if tr.delivered[p.CallID] {
			break // the client's own result, which it holds
		}
		out = append(out, map[string]any{"type": "TOOL_CALL_RESULT", "messageId": p.MessageID, "toolCallId": p.CallID,
			"content": p.Text, "role": "tool"})
	case turn.End:
		out = tr.closeMessages(out)
		if tr.step != "" {
			out = append(out, map[string]any{"type": "STEP_FINISHED", "stepName": tr.step})
			tr.step = ""
		}
		if tr.state != nil {
			if st := tr.state(); st != nil && turn.Encode(st) != tr.startState {
				out = append(out, map[string]any{"type": "STATE_SNAPSHOT", "snapshot": st})
			}
		}
		if p.Interrupt != nil {
			return append(out, tr.interrupted(p)...)
		}
		if p.Error != "" || p.Reason == weft.StopBudgetExceeded {
			return append(out, map[string]any{"type": "RUN_ERROR", "message": orDefault(p.Error, "the thread reached its budget"),
				"code": string(p.Reason)})
		}
		fin := map[string]any{"type": "RUN_FINISHED", "threadId": tr.threadID, "runId": tr.runID,
			"result": map[string]any{"weftStopReason": string(p.Reason)}}
		if p.Reason == weft.StopAwaitingApproval && len(tr.pending) > 0 {
			// The run waits for the client: the calls it is to answer in its next input.
			fin["outcome"] = map[string]any{"type": "success", "pendingToolCallIds": tr.pending}
		}
		return append(out, fin)
	}
	return out
}
