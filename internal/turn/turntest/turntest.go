// Package turntest holds the engine events of a typical turn, which the protocol adapters'
// golden-transcript tests translate.
package turntest

import (
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// Thread, Input and the other ids the events use.
const (
	Thread  = "thr_golden"
	Input   = "msg_input"
	First   = "msg_first"  // the assistant message that calls the tool
	Result  = "msg_result" // the tool's result
	Final   = "msg_final"  // the answer
	Call    = "call_1"
	Answer1 = "Let me check. "
	Answer2 = "Order 42 shipped."
)

// Events is a turn, in the order the engine emits it: the run's first step starts and calls the
// model before the posted message is stored; then a step whose reply reasons, writes and calls a tool,
// a sub-prompt's row (depth 1, not shown), the tool's result, a second step streaming the
// answer, usage of both calls, and the stop. Deltas have Seq 0, as the engine streams them.
func Events() []engine.Event {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	msg := func(m weft.Message) engine.Payload {
		m.ThreadID, m.CreatedAt = Thread, at
		if m.Status == "" {
			m.Status = weft.MessageCompleted
		}
		return engine.MessageData{Message: m}
	}
	evs := []engine.Event{
		{Type: "run_started", Data: engine.RunStarted{RunID: "run_1", Side: weft.SideA, Trigger: "message"}},
		{Type: "step_started", Data: engine.StepStarted{RunID: "run_1", Step: 1, Prompt: "chat"}},
		{Type: "llm_request", Data: engine.ModelRequest{Attempt: 1, LogID: "log_1", Model: "fast"}},
		{Type: "message", Data: msg(weft.Message{ID: Input, Role: weft.RoleUser, Content: "Where is order 42?"})},
		{Type: "reasoning_chunk", Data: engine.Chunk{MessageID: First, Delta: "The user wants "}},
		{Type: "reasoning_chunk", Data: engine.Chunk{MessageID: First, Delta: "an order."}},
		{Type: "message_chunk", Data: engine.Chunk{MessageID: First, Delta: "Let me "}},
		{Type: "message_chunk", Data: engine.Chunk{MessageID: First, Delta: "check. "}},
		{Type: "llm_response", Data: engine.ModelResponse{LogID: "log_1", Status: "ok", InputTokens: 12, OutputTokens: 7}},
		{Type: "message", Data: msg(weft.Message{ID: First, Role: weft.RoleAssistant, Content: Answer1, Reasoning: "The user wants an order.",
			ToolCalls: []weft.ToolCall{{ID: Call, Name: "lookup", Arguments: `{"order_id":42}`}}})},
		{Type: "tool_started", Data: engine.ToolStarted{CallID: Call, Name: "lookup"}},
		{Type: "message", Data: msg(weft.Message{ID: "msg_sub", Role: weft.RoleAssistant, Depth: 1, Content: "sub-prompt text"})},
		{Type: "message", Data: msg(weft.Message{ID: Result, Role: weft.RoleTool, ToolCallID: Call, Name: "lookup",
			ToolStatus: weft.ToolSuccess, Content: `{"status":"shipped"}`})},
		{Type: "tool_completed", Data: engine.ToolCompleted{CallID: Call, Name: "lookup", Status: weft.ToolSuccess}},
		{Type: "step_completed", Data: engine.StepCompleted{RunID: "run_1", Step: 1, ToolCalls: 1}},
		{Type: "step_started", Data: engine.StepStarted{RunID: "run_1", Step: 2, Prompt: "chat"}},
		{Type: "llm_request", Data: engine.ModelRequest{Attempt: 1, LogID: "log_2", Model: "fast"}},
		{Type: "message_chunk", Data: engine.Chunk{MessageID: Final, Delta: "Order 42 "}},
		{Type: "message_chunk", Data: engine.Chunk{MessageID: Final, Delta: "shipped."}},
		{Type: "llm_response", Data: engine.ModelResponse{LogID: "log_2", Status: "ok", InputTokens: 30, OutputTokens: 5}},
		{Type: "message", Data: msg(weft.Message{ID: Final, Role: weft.RoleAssistant, Content: Answer2})},
		{Type: "step_completed", Data: engine.StepCompleted{RunID: "run_1", Step: 2}},
		{Type: "run_stopped", Data: engine.RunStopped{RunID: "run_1", Reason: weft.StopOnResponse, Side: weft.SideA, Steps: 2, Seq: 1}},
	}
	var seq int64
	for i := range evs {
		evs[i].ThreadID, evs[i].RootID = Thread, Thread
		if evs[i].Type != "message_chunk" && evs[i].Type != "reasoning_chunk" {
			seq++
			evs[i].Seq = seq
		}
	}
	return evs
}

// Recorded is Events less the deltas: what the event log holds (a stream resumed, a response
// read back).
func Recorded() []engine.Event {
	var out []engine.Event
	for _, ev := range Events() {
		if ev.Seq > 0 {
			out = append(out, ev)
		}
	}
	return out
}
