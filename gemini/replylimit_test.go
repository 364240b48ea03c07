package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// TestReplyLimit: a streamed reply past the model's maxReplyBytes fails as reply_too_large.
func TestReplyLimit(t *testing.T) {
	chunk := fmt.Sprintf(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":%q}]}}]}`+"\r\n\r\n", strings.Repeat("x", 1000))
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 4<<20/len(chunk); i++ {
			if _, err := w.Write([]byte(chunk)); err != nil {
				return
			}
		}
	})
	req := baseReq(true)
	req.Model.MaxReplyBytes = 64 << 10
	_, err := New(Options{BaseURL: srv.URL + "/v1beta/"}).Call(context.Background(), req, nil)
	var pe *weft.ProviderError
	if !errors.As(err, &pe) || pe.Type != weft.ErrReplyTooLarge {
		t.Fatalf("error %v", err)
	}
}
