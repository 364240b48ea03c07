package aguiapi

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// FuzzRead: any body is a RunAgentInput ending with a user's message or a tool's result, or an
// EInvalid error.
func FuzzRead(f *testing.F) {
	f.Add(`{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"hi"}]}`)
	f.Add(`{"threadId":"t","runId":"r","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"tools":[{"name":"a"}]}`)
	f.Add(`{"threadId":"t","runId":"r","messages":[{"role":"tool","content":"x","toolCallId":"c"}]}`)
	f.Add(`{"threadId":"t","runId":"r","messages":[{"role":"tool","content":"x"}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/api/agents/a/ag-ui", strings.NewReader(body))
		rq, err := read(httptest.NewRecorder(), r)
		if err != nil {
			if weft.ErrorCode(err) != weft.EInvalid {
				t.Fatalf("error %v", err)
			}
			return
		}
		if rq.ThreadID == "" || rq.RunID == "" || len(rq.history) >= len(rq.Messages) {
			t.Fatalf("%+v", rq)
		}
		if rq.post == nil && (rq.last == "" || rq.results[rq.last].Status == "") ||
			rq.post != nil && (rq.post.Role != weft.RoleUser || rq.post.Content == "" || rq.last != "") {
			t.Fatalf("%+v", rq)
		}
	})
}
