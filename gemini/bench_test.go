package gemini

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/weft-agents/weft"
)

const benchReply = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Checking."},{"functionCall":{"name":"get_weather","args":{"city":"Paris","unit":"celsius"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":25,"totalTokenCount":65},"modelVersion":"gemini-test"}`

const benchStream = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Check\"}]},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":40,\"candidatesTokenCount\":1},\"modelVersion\":\"gemini-test\"}\r\n\r\n" +
	"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"ing.\"}]},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":40,\"candidatesTokenCount\":2},\"modelVersion\":\"gemini-test\"}\r\n\r\n" +
	"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\",\"unit\":\"celsius\"}}}]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":40,\"candidatesTokenCount\":25},\"modelVersion\":\"gemini-test\"}\r\n\r\n"

// BenchmarkCall measures one Call with one function call against a loopback server, without and
// with streaming (the server's work and the HTTP round trip are included).
func BenchmarkCall(b *testing.B) {
	for _, stream := range []bool{false, true} {
		name := "generateContent"
		if stream {
			name = "streamGenerateContent"
		}
		b.Run(name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = io.WriteString(w, benchStream)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, benchReply)
			}))
			defer srv.Close()
			p := New(Options{BaseURL: srv.URL})
			req := baseReq(stream)
			req.Tools = []weft.ToolSpec{{Name: "get_weather", Description: "Weather of a city.", Parameters: schema(b,
				`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}`)}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				resp, err := p.Call(ctx, req, func(weft.Chunk) {})
				if err != nil || len(resp.ToolCalls) != 1 {
					b.Fatalf("Call: %v %+v", err, resp)
				}
			}
		})
	}
}
