package weft

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weft-agents/weft/internal/jsonstr"
)

// Role is who authored a message. Stored rows use system, user, assistant and tool; developer exists
// only in provider-neutral requests (a Prompty `developer:` block) for providers that know it.
type Role string

// The roles of messages.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
	RoleDeveloper Role = "developer"
)

// Side is one of an agent's two sides. In an ai_human agent side A is the AI and side B the human; in
// a dual_ai agent both are AI. Each side sees itself as assistant and the other as user.
type Side string

// The two sides of an agent.
const (
	SideA Side = "a"
	SideB Side = "b"
)

// Other returns the opposite side.
func (s Side) Other() Side {
	if s == SideA {
		return SideB
	}
	return SideA
}

// ToolStatus is the outcome of a tool call as stored on its tool message.
type ToolStatus string

// The outcomes of a tool call.
const (
	ToolSuccess ToolStatus = "success"
	ToolError   ToolStatus = "error"
)

// MessageStatus is the lifecycle state of a stored message: an assistant row is pending while it
// streams and completed once persisted whole; failed rows are never sent to a model.
type MessageStatus string

// The lifecycle states of a stored message.
const (
	MessagePending   MessageStatus = "pending"
	MessageCompleted MessageStatus = "completed"
	MessageFailed    MessageStatus = "failed"
)

// ToolCall is one call a model asked for.
type ToolCall struct {
	// ID is unique within the thread; it pairs the call with its tool message.
	ID string `json:"id"`
	// Name is the tool's name as offered to the model.
	Name string `json:"name"`
	// Arguments is the raw JSON text the model produced, kept verbatim even when it does not parse.
	Arguments string `json:"arguments"`
}

// PartType is the kind of a content part.
type PartType string

// The kinds of content parts.
const (
	PartText  PartType = "text"
	PartImage PartType = "image"
	PartFile  PartType = "file"
	PartAudio PartType = "audio"
)

// ContentPart is one piece of multi-part message content: text, or a media reference.
type ContentPart struct {
	// Type says which of the other fields apply.
	Type PartType `json:"type"`
	// Text is the text of a text part.
	Text string `json:"text,omitempty"`
	// URL locates a media part: http(s), a data: URI, or an absolute thread-filesystem path.
	URL string `json:"url,omitempty"`
	// MimeType is the media type when known.
	MimeType string `json:"mime_type,omitempty"`
	// Options carries provider hints such as quality or detail.
	Options map[string]any `json:"options,omitempty"`
	// Description is alternative text for the media (a Prompty title, an attachment description).
	Description string `json:"description,omitempty"`
}

// LLMMessage is the one provider-neutral message shape: what `weft render --json` prints, what the
// prefilter_llm_history hook sees, what model-script expectations read and what adapters translate.
// Its JSON has `content` as a string unless the message has media parts.
type LLMMessage struct {
	// Role of the message as sent (after the perspective flip for side B).
	Role Role
	// Content is the text when the message has no parts.
	Content string
	// Parts is the multi-part content; when non-empty it replaces Content.
	Parts []ContentPart
	// Name is an optional author name (a Prompty `name` attribute, the tool name of a tool result).
	Name string
	// ToolCalls are the calls of an assistant message.
	ToolCalls []ToolCall
	// ToolCallID pairs a tool message with its call.
	ToolCallID string
	// ToolStatus is the outcome carried by a tool message.
	ToolStatus ToolStatus
	// Metadata holds attributes that are not part of the wire message (Prompty marker attributes).
	Metadata map[string]any
}

// Text returns the message's text: Content, or the text parts joined.
func (m LLMMessage) Text() string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var b bytes.Buffer
	for _, p := range m.Parts {
		if p.Type == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

type llmMessageJSON struct {
	Role       Role            `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolStatus ToolStatus      `json:"tool_status,omitempty"`
	Metadata   map[string]any  `json:"metadata,omitempty"`
}

// MarshalJSON writes the provider-neutral message JSON: content is a string unless the message has
// media parts, then a list of parts.
func (m LLMMessage) MarshalJSON() ([]byte, error) {
	return m.appendJSON(make([]byte, 0, m.jsonSizeHint()))
}

// appendJSON appends what MarshalJSON writes (llmMessageJSON's fields, byte for byte as
// json.Marshal writes them) to b. The text is quoted straight into b: through encoding/json a
// message of 20 MiB was copied five times over (quoted, copied out, compacted into the message
// object, copied out, compacted into the request's).
func (m *LLMMessage) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"role":`...)
	b = jsonstr.AppendHTMLSafe(b, string(m.Role))
	b = append(b, `,"content":`...)
	if len(m.Parts) > 0 {
		parts, err := json.Marshal(m.Parts)
		if err != nil {
			return nil, err
		}
		b = append(b, parts...)
	} else {
		b = jsonstr.AppendHTMLSafe(b, m.Content)
	}
	if m.Name != "" {
		b = append(b, `,"name":`...)
		b = jsonstr.AppendHTMLSafe(b, m.Name)
	}
	if len(m.ToolCalls) > 0 {
		calls, err := json.Marshal(m.ToolCalls)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"tool_calls":`...), calls...)
	}
	if m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = jsonstr.AppendHTMLSafe(b, m.ToolCallID)
	}
	if m.ToolStatus != "" {
		b = append(b, `,"tool_status":`...)
		b = jsonstr.AppendHTMLSafe(b, string(m.ToolStatus))
	}
	if len(m.Metadata) > 0 {
		md, err := json.Marshal(m.Metadata)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"metadata":`...), md...)
	}
	return append(b, '}'), nil
}

// jsonSizeHint is about how many bytes appendJSON writes for m: its texts, a sixteenth more for
// escapes, and room for the rest.
func (m *LLMMessage) jsonSizeHint() int {
	n := len(m.Content) + len(m.Name) + len(m.ToolCallID)
	for _, p := range m.Parts {
		n += len(p.Text) + len(p.URL) + len(p.Description)
	}
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	return 128 + n + n/16
}

// UnmarshalJSON reads the LLMMessage shape; content may be a string, a part list or null.
func (m *LLMMessage) UnmarshalJSON(data []byte) error {
	var raw llmMessageJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*m = LLMMessage{Role: raw.Role, Name: raw.Name, ToolCalls: raw.ToolCalls, ToolCallID: raw.ToolCallID,
		ToolStatus: raw.ToolStatus, Metadata: raw.Metadata}
	c := bytes.TrimSpace(raw.Content)
	switch {
	case len(c) == 0 || bytes.Equal(c, []byte("null")):
	case c[0] == '"':
		return json.Unmarshal(c, &m.Content)
	case c[0] == '[':
		return json.Unmarshal(c, &m.Parts)
	default:
		return fmt.Errorf("weft: message content must be a string or a list of parts")
	}
	return nil
}

// Attachment is a file linked to a stored message; the bytes live in the thread filesystem.
type Attachment struct {
	// ID identifies the attachment within the thread.
	ID string `json:"id"`
	// Path is the file's absolute path in the thread filesystem (new ones under /attachments/).
	Path string `json:"path"`
	// Name is the file name shown to people and models.
	Name string `json:"name"`
	// MimeType is the media type of the bytes.
	MimeType string `json:"mime_type"`
	// Size is the length in bytes.
	Size int64 `json:"size"`
	// Width and Height are pixel dimensions of images, when known.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// Description is a textual description used when the image leaves the recent-image window.
	Description string `json:"description,omitempty"`
}

// Message is a stored message row of a thread.
type Message struct {
	// ID is the message id (`msg_` + ULID).
	ID string `json:"id"`
	// ThreadID is the thread the row belongs to.
	ThreadID string `json:"thread_id"`
	// Seq is the per-thread, gap-free position; the only message order.
	Seq int64 `json:"seq"`
	// Role is the stored role (system, user, assistant or tool).
	Role Role `json:"role"`
	// Side is the side that authored or received the row; empty for system rows.
	Side Side `json:"side,omitempty"`
	// Content is the text of the message.
	Content string `json:"content"`
	// Name is the tool name of a tool row, or an author name.
	Name string `json:"name,omitempty"`
	// ToolCalls are the calls of an assistant row.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID pairs a tool row with its call.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolStatus is the outcome on a tool row.
	ToolStatus ToolStatus `json:"tool_status,omitempty"`
	// Status is pending while streaming, then completed or failed.
	Status MessageStatus `json:"status"`
	// Silent rows are sent to the model but hidden from default listings and UIs.
	Silent bool `json:"silent"`
	// Depth is 0 for top-level rows and n inside sub-prompts nested n levels.
	Depth int `json:"depth"`
	// ParentID links a sub-prompt's rows to the caller's tool message.
	ParentID string `json:"parent_id,omitempty"`
	// Prompt is the prompt that produced an assistant row.
	Prompt string `json:"prompt,omitempty"`
	// Reasoning is the model's reasoning text when kept (reasoning.exclude false).
	Reasoning string `json:"reasoning,omitempty"`
	// Attachments are files linked to the row.
	Attachments []Attachment `json:"attachments,omitempty"`
	// LogID links an assistant row to the log row of the model attempt that produced it.
	LogID string `json:"log_id,omitempty"`
	// RunID is the run that wrote the row.
	RunID string `json:"run_id,omitempty"`
	// Metadata holds runtime and user annotations (exclude_from_context, subagent_id, queued, …).
	Metadata map[string]any `json:"metadata,omitempty"`
	// CreatedAt is when the row was inserted.
	CreatedAt time.Time `json:"created_at"`
}

// WrittenBy is the side a stored row belongs to: its Side, else a user message's SideB and every
// other row's SideA (rows stored before sides were recorded).
func (m *Message) WrittenBy() Side {
	switch {
	case m.Side != "":
		return m.Side
	case m.Role == RoleUser:
		return SideB
	}
	return SideA
}

// MetadataJSON returns a metadata value as JSON text: raw JSON as it is (json.RawMessage, []byte,
// or a string holding JSON), any other value (one decoded from a store) marshalled. False when the
// value is absent or is not valid JSON. Adapters read verbatim provider blocks (reasoning_blocks,
// provider_raw) with it, whichever way the message reached them.
func MetadataJSON(v any) (json.RawMessage, bool) {
	var raw []byte
	switch x := v.(type) {
	case nil:
		return nil, false
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	case string:
		raw = []byte(x)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return nil, false
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || !json.Valid(raw) {
		return nil, false
	}
	return raw, true
}
