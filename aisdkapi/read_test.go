package aisdkapi

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// FuzzRead: any body is a chat request with a user's last message, or an EInvalid error.
func FuzzRead(f *testing.F) {
	f.Add(`{"id":"c","messages":[{"id":"u","role":"user","parts":[{"type":"text","text":"hi"}]}]}`)
	f.Add(`{"id":"c","trigger":"regenerate-message","messages":[]}`)
	f.Add(`{"id":"c","messages":[{"role":"assistant","parts":[{"type":"text","text":"a"}]},{"role":"user","parts":[{"type":"file"}]}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/api/agents/a/chat", strings.NewReader(body))
		b, history, last, err := read(httptest.NewRecorder(), r)
		if err != nil {
			if weft.ErrorCode(err) != weft.EInvalid {
				t.Fatalf("error %v", err)
			}
			return
		}
		if b.ID == "" || last.Role != weft.RoleUser || last.Content == "" || len(history) >= len(b.Messages) {
			t.Fatalf("%+v %+v %+v", b, history, last)
		}
	})
}
