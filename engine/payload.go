package engine

import "github.com/weft-agents/weft/engine/payload"

// The data events carry, defined in package payload; see payload.Payload for the list.
type (
	// Payload is an event's data (Event.Data): one of the types below, or Fields.
	Payload = payload.Payload
	// Fields is the payload of the events without a type of their own.
	Fields = payload.Fields
	// RunStarted is run_started's payload.
	RunStarted = payload.RunStarted
	// RunStopped is run_stopped's payload.
	RunStopped = payload.RunStopped
	// StepStarted is step_started's payload.
	StepStarted = payload.StepStarted
	// StepCompleted is step_completed's payload.
	StepCompleted = payload.StepCompleted
	// ModelRequest is llm_request's payload.
	ModelRequest = payload.ModelRequest
	// ModelResponse is llm_response's payload.
	ModelResponse = payload.ModelResponse
	// MessageData is message's payload: a message stored in the thread (its content redacted).
	MessageData = payload.MessageData
	// Chunk is the payload of message_chunk and reasoning_chunk.
	Chunk = payload.Chunk
	// ToolStarted is tool_started's payload.
	ToolStarted = payload.ToolStarted
	// ToolCompleted is tool_completed's payload.
	ToolCompleted = payload.ToolCompleted
)

// DecodePayload reads the JSON payload of an event of type typ into the type the engine emits it
// with (payload.Decode).
func DecodePayload(typ string, raw []byte) (Payload, error) { return payload.Decode(typ, raw) }

// AppendPayloadJSON appends a payload's JSON to b, byte for byte what json.Marshal writes
// (payload.AppendJSON).
func AppendPayloadJSON(b []byte, p Payload) ([]byte, error) { return payload.AppendJSON(b, p) }
