package aguiapi

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// FuzzRead: any body is a RunAgentInput with a user's last message, or an EInvalid error.
func FuzzRead(f *testing.F) {
	f.Add(`{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"hi"}]}`)
	f.Add(`{"threadId":"t","runId":"r","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"tools":[{"name":"a"}]}`)
	f.Add(`{"threadId":"t","runId":"r","messages":[{"role":"tool","content":"x"}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/api/agents/a/ag-ui", strings.NewReader(body))
		in, history, last, err := read(httptest.NewRecorder(), r)
		if err != nil {
			if weft.ErrorCode(err) != weft.EInvalid {
				t.Fatalf("error %v", err)
			}
			return
		}
		if in.ThreadID == "" || in.RunID == "" || last.Role != weft.RoleUser || last.Content == "" || len(history) >= len(in.Messages) {
			t.Fatalf("%+v %+v %+v", in, history, last)
		}
	})
}
