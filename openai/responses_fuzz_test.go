package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/weft-agents/weft"
)

// FuzzResponsesReply feeds arbitrary bytes to both Responses readers, as a JSON body and as an
// event stream: they must return a response or a *weft.ProviderError, never panic or hang.
func FuzzResponsesReply(f *testing.F) {
	f.Add([]byte(`{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}`))
	f.Add([]byte(`{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"reasoning","summary":[{"text":"x"}]},{"type":"function_call","call_id":"c","name":"f","arguments":{"a":1}}]}`))
	f.Add([]byte(`{"output":[{"type":"web_search_call","id":"ws","status":"failed","action":"weird"},{"type":"code_interpreter_call","code":5,"outputs":"x"},{"type":"image_generation_call","action":{"x":1}}]}`))
	f.Add([]byte("data: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\ndata: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"x\",\"delta\":\"{\"}\n\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[]}}\n\n"))
	f.Add([]byte("data: {\"type\":\"error\",\"error\":[1]}\n\n"))
	f.Add([]byte("event: response.failed\ndata: {\"response\":{\"error\":\"x\"}}\n\n"))
	p := New(Options{})
	rt := responsesTools{names: toolNames{}, hosted: map[string]string{"web_search_call": "web_search"}}
	req := &weft.Request{Model: &weft.Model{Model: "m"}, APIKey: "key-1234"}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, stream := range []bool{false, true} {
			res := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
			var out *weft.Response
			var err error
			if stream {
				res.Header.Set("Content-Type", "text/event-stream")
				out, err = p.readResponsesStream(context.Background(), req, res, rt, func(weft.Chunk) {})
			} else {
				out, err = p.readResponsesJSON(context.Background(), req, res, rt, func(weft.Chunk) {})
			}
			if err != nil {
				if _, ok := err.(*weft.ProviderError); !ok {
					t.Fatalf("error %T %v", err, err)
				}
				continue
			}
			if out == nil || out.FinishReason == "" {
				t.Fatalf("response %+v", out)
			}
			for _, r := range out.ProviderResults {
				if !json.Valid(r.Raw) {
					t.Fatalf("raw %q", r.Raw)
				}
			}
			if out.ReasoningBlocks != nil && !json.Valid(out.ReasoningBlocks) {
				t.Fatalf("blocks %q", out.ReasoningBlocks)
			}
		}
	})
}
