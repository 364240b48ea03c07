package openaiapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/turn"
)

// interruptedEnd is the End of a run that message msg_new rolled back (or, rollback false,
// interrupted).
func interruptedEnd(rollback bool) turn.Part {
	in := &turn.Interrupt{By: "msg_new", Rollback: rollback}
	if rollback {
		in.Removed = []string{"msg_call", "msg_result"}
	}
	return turn.Part{Kind: turn.End, Reason: weft.StopInterrupted, RunID: "run_1", Interrupt: in}
}

// TestChatInterrupted: a chat completion whose run a new message stopped finishes "stop" (chat
// completions have no other finish_reason for it) with weft_stop_reason interrupted and the
// weft_interrupted_by, weft_rolled_back and weft_removed_message_ids of the stop, streamed and
// whole; the whole completion's content is what the thread holds.
func TestChatInterrupted(t *testing.T) {
	for _, rollback := range []bool{false, true} {
		cc := &chatTranslator{id: "chatcmpl-1", model: "a"}
		cc.read(turn.Part{Kind: turn.TextDelta, MessageID: "msg_call", Text: "Let me check."})
		cc.read(turn.Part{Kind: turn.TextEnd, MessageID: "msg_call", Text: "Let me check."})
		cc.read(turn.Part{Kind: turn.TextDelta, MessageID: "msg_cut", Text: "Once"})
		chunks := cc.read(interruptedEnd(rollback))
		// The whole completion holds what the thread holds: not the cut text, nor a rolled-back reply.
		if got, want := cc.completion(turn.Usage{})["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"],
			map[bool]string{false: "Let me check.", true: ""}[rollback]; got != want {
			t.Errorf("rollback %v: content %q, want %q", rollback, got, want)
		}
		if len(chunks) != 1 {
			t.Fatalf("chunks %v", chunks)
		}
		removed := `[]`
		if rollback {
			removed = `["msg_call","msg_result"]`
		}
		for what, choice := range map[string]any{"chunk": chunks[0]["choices"].([]any)[0], "completion": cc.completion(turn.Usage{})["choices"].([]any)[0]} {
			raw, _ := json.Marshal(choice)
			for _, want := range []string{`"finish_reason":"stop"`, `"weft_stop_reason":"interrupted"`, `"weft_interrupted_by":"msg_new"`,
				`"weft_rolled_back":` + map[bool]string{false: "false", true: "true"}[rollback], `"weft_removed_message_ids":` + removed} {
				if !strings.Contains(string(raw), want) {
					t.Errorf("rollback %v, %s: %s lacks %s", rollback, what, raw, want)
				}
			}
		}
	}
	// Any other end says nothing of an interrupt.
	cc := &chatTranslator{}
	raw, _ := json.Marshal(cc.read(turn.Part{Kind: turn.End, Reason: weft.StopOnResponse}))
	if strings.Contains(string(raw), "weft_interrupted_by") {
		t.Errorf("an answered turn: %s", raw)
	}
}

// TestResponseInterrupted: a response whose run a new message stopped ends with
// response.incomplete, its status cancelled, with the weft_* fields of the stop; the message item
// of the cut model call is incomplete.
func TestResponseInterrupted(t *testing.T) {
	var types []string
	var last any
	rb := &responseBuilder{resp: newResponse("resp_1", "a", "thr_1", 1), emit: func(typ string, v any) error {
		types, last = append(types, typ), v
		return nil
	}}
	_ = rb.read(turn.Part{Kind: turn.TextDelta, MessageID: "msg_cut", Text: "Once"}, turn.Usage{})
	_ = rb.read(interruptedEnd(true), turn.Usage{})
	raw, _ := json.Marshal(last)
	if types[len(types)-1] != "response.incomplete" || rb.resp.Status != "cancelled" {
		t.Fatalf("events %v, status %s", types, rb.resp.Status)
	}
	if item := rb.resp.Output[0]; item.Status != "incomplete" || item.Content[0].Text != "Once" {
		t.Errorf("the cut message's item: %s %q", item.Status, item.Content[0].Text)
	}
	for _, want := range []string{`"status":"cancelled"`, `"weft_stop_reason":"interrupted"`, `"weft_interrupted_by":"msg_new"`,
		`"weft_rolled_back":true`, `"weft_removed_message_ids":["msg_call","msg_result"]`, `"incomplete_details":null`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s lacks %s", raw, want)
		}
	}
}
