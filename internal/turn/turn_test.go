package turn_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/internal/turn"
	"github.com/weft-agents/weft/internal/turn/turntest"
)

// describe writes parts one a line: kind, message or call, text.
func describe(parts []turn.Part) string {
	names := map[turn.Kind]string{turn.StepStart: "step_start", turn.ReasoningDelta: "reasoning", turn.TextDelta: "text",
		turn.TextEnd: "text_end", turn.ToolCall: "tool_call", turn.ToolResult: "tool_result", turn.StepEnd: "step_end", turn.End: "end"}
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "%s %s%s%s %q%s\n", names[p.Kind], p.MessageID, p.CallID, p.Reason, p.Text, map[bool]string{true: " failed"}[p.Failed])
	}
	return b.String()
}

func read(rd *turn.Reader, evs []engine.Event) []turn.Part {
	var out []turn.Part
	for _, ev := range evs {
		out = rd.Read(ev, out)
	}
	return out
}

// TestReader: a turn read live, from the event log alone, resumed after its deltas passed, by a
// reader waiting for another message, and from the log of a thread with earlier turns.
func TestReader(t *testing.T) {
	live := `step_start  ""
reasoning msg_first "The user wants "
reasoning msg_first "an order."
text msg_first "Let me "
text msg_first "check. "
text_end msg_first "Let me check. "
tool_call msg_firstcall_1 "{\"order_id\":42}"
tool_result msg_resultcall_1 "{\"status\":\"shipped\"}"
step_end  ""
step_start  ""
text msg_final "Order 42 "
text msg_final "shipped."
text_end msg_final "Order 42 shipped."
step_end  ""
end stop_on_response ""
`
	whole := `step_start  ""
reasoning msg_first "The user wants an order."
text msg_first "Let me check. "
text_end msg_first "Let me check. "
tool_call msg_firstcall_1 "{\"order_id\":42}"
tool_result msg_resultcall_1 "{\"status\":\"shipped\"}"
step_end  ""
step_start  ""
text msg_final "Order 42 shipped."
text_end msg_final "Order 42 shipped."
step_end  ""
end stop_on_response ""
`
	// Resumed before the second call started (its llm_request is event 13): the first message
	// comes whole, the second streams. Resumed after it started: both come whole.
	resumedBefore := strings.Replace(whole, "text msg_final \"Order 42 shipped.\"\n", "text msg_final \"Order 42 \"\ntext msg_final \"shipped.\"\n", 1)
	cases := []struct {
		name   string
		reader turn.Reader
		events []engine.Event
		want   string
		done   bool
	}{
		{"live", turn.Reader{Input: turntest.Input}, turntest.Events(), live, true},
		{"any run", turn.Reader{}, turntest.Events(), live, true},
		{"recorded", turn.Reader{Input: turntest.Input}, turntest.Recorded(), whole, true},
		{"resumed before a call", turn.Reader{Input: turntest.Input, ResumeAt: 12}, turntest.Events(), resumedBefore, true},
		{"resumed during a call", turn.Reader{Input: turntest.Input, ResumeAt: 13}, turntest.Events(), whole, true},
		{"another message", turn.Reader{Input: "msg_other"}, turntest.Events(), strings.TrimSuffix(live, "end stop_on_response \"\"\n"), false},
		{"after input", turn.Reader{Input: turntest.Input, AfterInput: true}, turntest.Events(), live, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rd := c.reader
			got := describe(read(&rd, c.events))
			if got != c.want {
				t.Errorf("parts\n%s\nwant\n%s", got, c.want)
			}
			if rd.Done() != c.done {
				t.Errorf("done %v", rd.Done())
			}
			if c.done && (rd.Usage.InputTokens != 42 || rd.Usage.OutputTokens != 12) {
				t.Errorf("usage %+v", rd.Usage)
			}
		})
	}
}

// TestReaderAfterInputSkipsEarlierTurns: reading a thread's log from its start, the parts of the
// turns before the message are not given.
func TestReaderAfterInputSkipsEarlierTurns(t *testing.T) {
	prev := turntest.Recorded()
	for i := range prev {
		if d, ok := prev[i].Data.(engine.MessageData); ok && d.Message.ID == turntest.Input {
			d.Message.ID = "msg_earlier"
			prev[i].Data = d
		}
	}
	rd := turn.Reader{Input: turntest.Input, AfterInput: true}
	parts := read(&rd, append(prev, turntest.Recorded()...))
	if n := strings.Count(describe(parts), "text_end"); n != 2 || !rd.Done() {
		t.Errorf("parts of %d messages (want the 2 of the second turn):\n%s", n, describe(parts))
	}
}

// TestReaderInterrupted: a run that a message with if_busy interrupt stopped ends the turn of the
// message it was answering (its End says interrupted; the deltas of its cancelled model call are
// never completed by a stored message), and run_interrupted gives no part; the turn of the
// interrupting message is the next run's.
func TestReaderInterrupted(t *testing.T) {
	user := func(id, text string) engine.Payload {
		return engine.MessageData{Message: weft.Message{ID: id, Role: weft.RoleUser, Content: text, Status: weft.MessageCompleted}}
	}
	evs := []engine.Event{
		{Type: "run_started", Data: engine.RunStarted{RunID: "run_1", Trigger: "message"}},
		{Type: "step_started", Data: engine.StepStarted{RunID: "run_1", Step: 1}},
		{Type: "message", Data: user("msg_first", "Write a long essay.")},
		{Type: "llm_request", Data: engine.ModelRequest{Attempt: 1, LogID: "log_1"}},
		{Type: "message_chunk", Data: engine.Chunk{MessageID: "msg_cut", Delta: "Once upon "}},
		{Type: "llm_response", Data: engine.ModelResponse{LogID: "log_1", Status: "error", Error: "interrupted by a new message"}},
		{Type: "run_interrupted", Data: engine.Fields{"run_id": "run_1", "message_id": "msg_second"}},
		{Type: "run_stopped", Data: engine.RunStopped{RunID: "run_1", Reason: weft.StopInterrupted}},
		{Type: "run_started", Data: engine.RunStarted{RunID: "run_2", Trigger: "message"}},
		{Type: "step_started", Data: engine.StepStarted{RunID: "run_2", Step: 1}},
		{Type: "message", Data: user("msg_second", "Just a haiku.")},
		{Type: "llm_request", Data: engine.ModelRequest{Attempt: 1, LogID: "log_2"}},
		{Type: "message", Data: engine.MessageData{Message: weft.Message{ID: "msg_haiku", Role: weft.RoleAssistant, Content: "Short.", Status: weft.MessageCompleted}}},
		{Type: "step_completed", Data: engine.StepCompleted{RunID: "run_2", Step: 1}},
		{Type: "run_stopped", Data: engine.RunStopped{RunID: "run_2", Reason: weft.StopOnResponse}},
	}
	first := turn.Reader{Input: "msg_first"}
	if got, want := describe(read(&first, evs)), "step_start  \"\"\ntext msg_cut \"Once upon \"\nend interrupted \"\"\n"; got != want || !first.Done() {
		t.Errorf("the interrupted turn:\n%s\nwant\n%s", got, want)
	}
	// (Posted with if_busy interrupt: turn.Turn.Reader reads after the message is stored.)
	second := turn.Reader{Input: "msg_second", AfterInput: true}
	if got, want := describe(read(&second, evs)), "step_start  \"\"\ntext msg_haiku \"Short.\"\ntext_end msg_haiku \"Short.\"\nstep_end  \"\"\nend stop_on_response \"\"\n"; got != want || !second.Done() {
		t.Errorf("the interrupting message's turn:\n%s\nwant\n%s", got, want)
	}
}

// TestReaderRollback: the End of a run a rollback stopped carries the interrupting message and
// the rows it removed (run_interrupted, message_deleted); the interrupting message's own turn
// carries nothing of them.
func TestReaderRollback(t *testing.T) {
	evs := []engine.Event{
		{Type: "run_started", Data: engine.RunStarted{RunID: "run_1", Trigger: "message"}},
		{Type: "step_started", Data: engine.StepStarted{RunID: "run_1", Step: 1}},
		{Type: "message", Data: engine.MessageData{Message: weft.Message{ID: "msg_first", Role: weft.RoleUser, Content: "Look it up.", Status: weft.MessageCompleted}}},
		{Type: "message", Data: engine.MessageData{Message: weft.Message{ID: "msg_call", Role: weft.RoleAssistant, Status: weft.MessageCompleted,
			ToolCalls: []weft.ToolCall{{ID: "call_1", Name: "search", Arguments: "{}"}}}}},
		{Type: "message", Data: engine.MessageData{Message: weft.Message{ID: "msg_result", Role: weft.RoleTool, ToolCallID: "call_1", Name: "search", Content: "found", Status: weft.MessageCompleted}}},
		{Type: "run_interrupted", Data: engine.Fields{"run_id": "run_1", "message_id": "msg_second", "rollback": true}},
		{Type: "message_deleted", Data: engine.Fields{"message_id": "msg_call"}},
		{Type: "message_deleted", Data: engine.Fields{"message_id": "msg_result"}},
		{Type: "run_stopped", Data: engine.RunStopped{RunID: "run_1", Reason: weft.StopInterrupted}},
		{Type: "run_started", Data: engine.RunStarted{RunID: "run_2", Trigger: "message"}},
		{Type: "message", Data: engine.MessageData{Message: weft.Message{ID: "msg_second", Role: weft.RoleUser, Content: "Never mind.", Status: weft.MessageCompleted}}},
		{Type: "run_stopped", Data: engine.RunStopped{RunID: "run_2", Reason: weft.StopOnResponse}},
	}
	first := turn.Reader{Input: "msg_first"}
	parts := read(&first, evs)
	end := parts[len(parts)-1]
	want := &turn.Interrupt{By: "msg_second", Rollback: true, Removed: []string{"msg_call", "msg_result"}}
	if end.Kind != turn.End || end.RunID != "run_1" || end.Interrupt == nil || fmt.Sprint(*end.Interrupt) != fmt.Sprint(*want) {
		t.Errorf("the rolled-back turn's end: %+v (interrupt %+v), want interrupt %+v", end, end.Interrupt, want)
	}
	second := turn.Reader{Input: "msg_second", AfterInput: true}
	parts = read(&second, evs)
	if end := parts[len(parts)-1]; end.Kind != turn.End || end.Interrupt != nil || end.RunID != "run_2" {
		t.Errorf("the interrupting message's end: %+v", end)
	}
	// A run interrupted without a rollback: its End says by whom, and removed nothing.
	plain := turn.Reader{Input: "msg_first"}
	evs[5].Data = engine.Fields{"run_id": "run_1", "message_id": "msg_second", "rollback": false}
	parts = read(&plain, append(evs[:6:6], evs[8]))
	if end := parts[len(parts)-1]; end.Interrupt == nil || end.Interrupt.By != "msg_second" || end.Interrupt.Rollback || len(end.Interrupt.Removed) != 0 {
		t.Errorf("the interrupted turn's end: %+v", end.Interrupt)
	}
}
