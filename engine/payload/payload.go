// Package payload defines the data events carry (Event.Data in package engine): a type per event
// every run emits, Fields for the rest, their JSON as the event log and the HTTP API carry it
// (AppendJSON writes it without reflection for the hot ones) and Decode, which reads it back.
// Package engine re-exports each name, so consumers write engine.Chunk as before.
package payload

import (
	"encoding/json"

	"github.com/weft-agents/weft"
)

// Payload is an event's data (Event.Data). The events every run emits carry a type of their own,
// named after the event: RunStarted, StepStarted, StepCompleted, ModelRequest, ModelResponse,
// MessageData (message), Chunk (message_chunk and reasoning_chunk), ToolStarted, ToolCompleted
// and RunStopped. Every other event (approvals, effects, files, handoffs, subagents, custom
// events, …) carries Fields. Each marshals to the JSON object the event log and the HTTP API
// carry, and Decode reads that object back into the same type.
//
// A consumer switches on the payload's type:
//
//	switch d := ev.Data.(type) {
//	case payload.Chunk:
//		fmt.Print(d.Delta)
//	case payload.MessageData:
//		fmt.Println(d.Message.Role, d.Message.Content)
//	}
type Payload interface{ isPayload() }

// Fields is the payload of the events without a type of their own: their fields by JSON name.
// Decoded from JSON, numbers are float64, as encoding/json gives them.
type Fields map[string]any

// RunStarted is run_started's payload.
type RunStarted struct {
	RunID string `json:"run_id"`
	// Side is the side that acts first.
	Side weft.Side `json:"side"`
	// Trigger is what started the run: "message", "resume" or "continue".
	Trigger string `json:"trigger"`
}

// RunStopped is run_stopped's payload.
type RunStopped struct {
	// Error is the error text of a stop that is not OK ("" otherwise).
	Error string `json:"error"`
	// LastLineRedactions counts the final lines the run held back for redaction.
	LastLineRedactions int             `json:"last_line_redactions,omitempty"`
	Reason             weft.StopReason `json:"reason"`
	RunID              string          `json:"run_id"`
	// Seq numbers the thread's stops (weft.StopInfo.Seq).
	Seq   int       `json:"seq"`
	Side  weft.Side `json:"side"`
	Steps int       `json:"steps"`
}

// StepStarted is step_started's payload.
type StepStarted struct {
	Depth  int       `json:"depth"`
	Prompt string    `json:"prompt"`
	RunID  string    `json:"run_id"`
	Side   weft.Side `json:"side"`
	Step   int       `json:"step"`
}

// StepCompleted is step_completed's payload.
type StepCompleted struct {
	Depth     int       `json:"depth"`
	Prompt    string    `json:"prompt"`
	RunID     string    `json:"run_id"`
	Side      weft.Side `json:"side"`
	Step      int       `json:"step"`
	ToolCalls int       `json:"tool_calls"`
}

// ModelRequest is llm_request's payload: a call to a model is about to be sent.
type ModelRequest struct {
	Attempt  int    `json:"attempt"`
	LogID    string `json:"log_id"`
	Model    string `json:"model"`
	Provider string `json:"provider"`
}

// ModelResponse is llm_response's payload. Status is "ok" or "error"; an error carries Error and
// no usage, and marshals without the usage fields.
type ModelResponse struct {
	// CostTotal is nil when the cost is unknown.
	CostTotal    *float64 `json:"cost_total"`
	Error        string   `json:"error,omitempty"`
	InputTokens  int      `json:"input_tokens"`
	LatencyMS    int64    `json:"latency_ms"`
	LogID        string   `json:"log_id"`
	OutputTokens int      `json:"output_tokens"`
	Status       string   `json:"status"`
}

// MarshalJSON writes an error response as {log_id, status, error}, an answer with its usage.
func (m ModelResponse) MarshalJSON() ([]byte, error) {
	if m.Status == "error" {
		return json.Marshal(struct {
			Error  string `json:"error"`
			LogID  string `json:"log_id"`
			Status string `json:"status"`
		}{m.Error, m.LogID, m.Status})
	}
	type plain ModelResponse
	return json.Marshal(plain(m))
}

// MessageData is message's payload: a message stored in the thread (its content redacted).
type MessageData struct {
	Message weft.Message `json:"message"`
}

// Chunk is the payload of message_chunk and reasoning_chunk: streamed text of the message the
// model is writing, whose message event carries it whole.
type Chunk struct {
	Delta     string `json:"delta"`
	Depth     int    `json:"depth"`
	MessageID string `json:"message_id"`
}

// ToolStarted is tool_started's payload.
type ToolStarted struct {
	CallID string `json:"call_id"`
	Depth  int    `json:"depth"`
	Name   string `json:"name"`
}

// ToolCompleted is tool_completed's payload.
type ToolCompleted struct {
	CallID string          `json:"call_id"`
	Depth  int             `json:"depth"`
	Name   string          `json:"name"`
	Status weft.ToolStatus `json:"status"`
}

func (Fields) isPayload()        {}
func (RunStarted) isPayload()    {}
func (RunStopped) isPayload()    {}
func (StepStarted) isPayload()   {}
func (StepCompleted) isPayload() {}
func (ModelRequest) isPayload()  {}
func (ModelResponse) isPayload() {}
func (MessageData) isPayload()   {}
func (Chunk) isPayload()         {}
func (ToolStarted) isPayload()   {}
func (ToolCompleted) isPayload() {}

// Decode reads the JSON payload of an event of type typ (as the event log and the HTTP
// API carry it) into the type the engine emits it with: Fields for the events without a type
// of their own, and for any payload its type cannot hold (nothing is dropped). Empty raw is a
// nil payload.
func Decode(typ string, raw []byte) (Payload, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if decode, ok := typedPayloads[typ]; ok {
		if p, err := decode(raw); err == nil {
			return p, nil
		}
	}
	return decodeFields(raw)
}

// typedPayloads decodes the payload of each event type that has a type of its own.
var typedPayloads = map[string]func([]byte) (Payload, error){
	"run_started":     decodeAs[RunStarted],
	"run_stopped":     decodeAs[RunStopped],
	"step_started":    decodeAs[StepStarted],
	"step_completed":  decodeAs[StepCompleted],
	"llm_request":     decodeAs[ModelRequest],
	"llm_response":    decodeAs[ModelResponse],
	"message":         decodeAs[MessageData],
	"message_chunk":   decodeAs[Chunk],
	"reasoning_chunk": decodeAs[Chunk],
	"tool_started":    decodeAs[ToolStarted],
	"tool_completed":  decodeAs[ToolCompleted],
}

func decodeFields(raw []byte) (Payload, error) {
	var f Fields
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	return f, nil
}

func decodeAs[T Payload](raw []byte) (Payload, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}
