package engine_test

import (
	"testing"

	"github.com/weft-agents/weft"
)

func TestToolTurn(t *testing.T) {
	var calls []string
	reg := registry([]*weft.Tool{recorder("lookup", &calls, "order 42 shipped")}, nil)
	h := newHarness(t, reg, `
- expect: {system_contains: concise helper, tools: [lookup], last_role: user, roles: [user]}
  text: Let me check.
  tool_calls: [{name: lookup, arguments: {id: 42}}]
- expect: {last_role: tool, tool_result_contains: shipped, roles: [user, assistant, tool]}
  text: Order 42 has shipped.
`)
	th, res := h.run("assistant", "Where is order 42?", nil)
	if res.Last().Reason != weft.StopOnResponse || res.Steps != 2 {
		t.Fatalf("stop %+v", res.Last())
	}
	wantTranscript(t, h.transcript(th.ID),
		"user: Where is order 42?",
		`assistant: Let me check. [lookup {"id":42}]`,
		"tool:lookup: order 42 shipped",
		"assistant: Order 42 has shipped.")
	if len(calls) != 1 || calls[0] != `lookup {"id":42}` {
		t.Errorf("tool calls %v", calls)
	}
}
