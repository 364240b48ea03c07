package aguiapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/turn"
)

// TestInterruptedEvents: a run a new message stopped ends with CUSTOM weft.run_interrupted (the
// interrupting message, whether it rolled back, the rows removed), a MESSAGES_SNAPSHOT of the
// thread through the stopped run, and RUN_FINISHED with the outcome cancelled; the open text
// message is closed first.
func TestInterruptedEvents(t *testing.T) {
	var asked string
	tr := &translator{threadID: "t1", runID: "r2", clientTools: map[string]bool{}, delivered: map[string]bool{},
		conversation: func(runID string) []map[string]any {
			asked = runID
			return []map[string]any{{"id": "u1", "role": "user", "content": "tell a story"}}
		}}
	tr.read(turn.Part{Kind: turn.TextDelta, MessageID: "msg_cut", Text: "Once"})
	evs := tr.read(turn.Part{Kind: turn.End, Reason: weft.StopInterrupted, RunID: "run_1",
		Interrupt: &turn.Interrupt{By: "msg_new", Rollback: true, Removed: []string{"msg_call", "msg_result"}}})
	var types []string
	for _, e := range evs {
		types = append(types, e["type"].(string))
	}
	if got := strings.Join(types, " "); got != "TEXT_MESSAGE_END CUSTOM MESSAGES_SNAPSHOT RUN_FINISHED" {
		t.Fatalf("events %s", got)
	}
	raw, _ := json.Marshal(evs[1:])
	want := `[{"name":"weft.run_interrupted","type":"CUSTOM","value":{"interruptedBy":"msg_new","removedMessageIds":["msg_call","msg_result"],"rollback":true,"runId":"run_1"}},` +
		`{"messages":[{"content":"tell a story","id":"u1","role":"user"}],"type":"MESSAGES_SNAPSHOT"},` +
		`{"outcome":{"type":"cancelled"},"runId":"r2","threadId":"t1","type":"RUN_FINISHED"}]`
	if string(raw) != want || asked != "run_1" {
		t.Errorf("got  %s\nwant %s (conversation of %q)", raw, want, asked)
	}
}
