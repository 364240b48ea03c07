package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/openai"
)

// TestReplyLimit: a streamed reply past the model's maxReplyBytes fails the attempt as
// reply_too_large instead of growing without bound (the fake would stream 4 MiB).
func TestReplyLimit(t *testing.T) {
	chunk := fmt.Sprintf(`data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`+"\n\n", strings.Repeat("x", 1000))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 4<<20/len(chunk); i++ {
			if _, err := w.Write([]byte(chunk)); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	m := &weft.Model{Name: "m", Provider: "openai", Model: "gpt-test", MaxReplyBytes: 64 << 10,
		ProviderOptions: map[string]any{"baseUrl": srv.URL + "/v1"}}
	var got int
	_, err := openai.New(openai.Options{}).Call(context.Background(), &weft.Request{Model: m, APIKey: "sk",
		Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "Talk forever."}}}, func(c weft.Chunk) { got += len(c.Text) })
	var pe *weft.ProviderError
	if !errors.As(err, &pe) || pe.Type != weft.ErrReplyTooLarge || !strings.Contains(pe.Message, "64 KiB") {
		t.Fatalf("error %v", err)
	}
	if got > 64<<10 {
		t.Errorf("%d bytes of text reached the engine", got)
	}
}
