package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// TestReplyLimit: a streamed reply past the model's maxReplyBytes fails as reply_too_large.
func TestReplyLimit(t *testing.T) {
	delta := fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, strings.Repeat("x", 1000))
	srv, _ := server(t, func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: "+`{"type":"message_start","message":{"type":"message","model":"claude-test","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}`+"\n\n")
		io.WriteString(w, "event: content_block_start\ndata: "+`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+"\n\n")
		for i := 0; i < 4<<20/len(delta); i++ {
			if _, err := io.WriteString(w, "event: content_block_delta\ndata: "+delta+"\n\n"); err != nil {
				return
			}
		}
	})
	req := baseReq(true)
	req.Model.MaxReplyBytes = 64 << 10
	_, err := New(Options{BaseURL: srv.URL + "/v1"}).Call(context.Background(), req, nil)
	var pe *weft.ProviderError
	if !errors.As(err, &pe) || pe.Type != weft.ErrReplyTooLarge {
		t.Fatalf("error %v", err)
	}
}
