package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/openai"
	"github.com/weft-agents/weft/providertest"
)

// capture serves fixed responses and keeps the last request.
type capture struct {
	mu     sync.Mutex
	body   []byte
	header http.Header
	path   string
}

func newServer(t testing.TB, status int, hdr map[string]string, ct, resp string) (*httptest.Server, *capture) {
	c := &capture{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.body, c.header, c.path = b, r.Header.Clone(), r.URL.Path
		c.mu.Unlock()
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, resp)
	}))
	t.Cleanup(srv.Close)
	return srv, c
}

func noStream() *weft.Model {
	f := false
	return &weft.Model{Name: "m", Provider: "openai", Model: "gpt-test", Capabilities: weft.Capabilities{SupportsStreaming: &f}}
}

const okJSON = `{"id":"x","model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":0},"cost":0.0012}}`

func TestRequestMapping(t *testing.T) {
	srv, c := newServer(t, 200, nil, "application/json", okJSON)
	m := noStream()
	m.ProviderOptions = map[string]any{"baseUrl": srv.URL + "/v1", "headers": map[string]any{"X-Title": "weft"}, "user": "u1", "temperature": 0.5}
	p := openai.New(openai.Options{BaseURL: "http://127.0.0.1:1/v1", Headers: map[string]string{"X-Base": "b"}})
	params := &weft.Schema{}
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"q":{"type":"string"}}}`), params)
	req := &weft.Request{Model: m, APIKey: "sk-abc",
		Options: map[string]any{"temperature": 0.2, "maxOutputTokens": 99, "topP": 0.9, "stop": []any{"END"}, "seed": 7},
		Messages: []weft.LLMMessage{
			{Role: weft.RoleDeveloper, Content: "dev"},
			{Role: weft.RoleUser, Parts: []weft.ContentPart{{Type: weft.PartText, Text: "look"}, {Type: weft.PartImage, URL: "https://x/y.png", Options: map[string]any{"detail": "low"}},
				{Type: weft.PartFile, URL: "data:application/pdf;base64,QUJD", Description: "a.pdf"}}},
			{Role: weft.RoleAssistant, ToolCalls: []weft.ToolCall{{ID: "c1", Name: "web.search", Arguments: `{"q":"x"}`}}},
			{Role: weft.RoleTool, ToolCallID: "c1", Name: "web.search", Parts: []weft.ContentPart{{Type: weft.PartText, Text: "res"}, {Type: weft.PartText, Text: "ult"}}},
		},
		Tools:      []weft.ToolSpec{{Name: "web.search", Description: "d", Parameters: params}, {Name: "plain", Description: "p"}},
		ToolChoice: weft.ToolChoiceRequired, Reasoning: &weft.Reasoning{Effort: "high"},
	}
	resp, err := p.Call(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	_ = json.Unmarshal(c.body, &body)
	wire := openai.WireToolName("web.search")
	want := fmt.Sprintf(`{"max_completion_tokens":99,"messages":[{"content":"dev","role":"developer"},{"content":[{"text":"look","type":"text"},{"image_url":{"detail":"low","url":"https://x/y.png"},"type":"image_url"},{"file":{"file_data":"data:application/pdf;base64,QUJD","filename":"a.pdf"},"type":"file"}],"role":"user"},{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"q\":\"x\"}","name":%[1]q},"id":"c1","type":"function"}]},{"content":"result","role":"tool","tool_call_id":"c1"}],"model":"gpt-test","parallel_tool_calls":false,"reasoning_effort":"high","seed":7,"stop":["END"],"temperature":0.2,"tool_choice":"required","tools":[{"function":{"description":"d","name":%[1]q,"parameters":{"properties":{"q":{"type":"string"}},"type":"object"}},"type":"function"},{"function":{"description":"p","name":"plain","parameters":{"properties":{},"type":"object"}},"type":"function"}],"top_p":0.9,"user":"u1"}`, wire)
	if got, _ := json.Marshal(body); string(got) != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
	if c.header.Get("X-Title") != "weft" || c.header.Get("X-Base") != "b" || c.header.Get("Authorization") != "Bearer sk-abc" || c.path != "/v1/chat/completions" {
		t.Errorf("headers %v path %s", c.header, c.path)
	}
	if resp.Usage.CachedTokens != 2 || resp.Usage.Cost == nil || *resp.Usage.Cost != 0.0012 {
		t.Errorf("usage %+v", resp.Usage)
	}
}

func TestToolNameRoundTripAndBadArguments(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, n := range []string{"ok_name-1", "web.search", "ünï", long, ""} {
		w := openai.WireToolName(n)
		if len(w) == 0 || len(w) > 64 || strings.ContainsFunc(w, func(r rune) bool {
			return !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		}) || w != openai.WireToolName(n) {
			t.Errorf("WireToolName(%q) = %q", n, w)
		}
	}
	wire := openai.WireToolName("web.search")
	resp := fmt.Sprintf(`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"k1","type":"function","function":{"name":%q,"arguments":"{not json"}}]},"finish_reason":"tool_calls"}]}`, wire)
	srv, _ := newServer(t, 200, nil, "application/json", resp)
	p := openai.New(openai.Options{BaseURL: srv.URL + "/v1"})
	out, err := p.Call(context.Background(), &weft.Request{Model: noStream(), Tools: []weft.ToolSpec{{Name: "web.search"}},
		Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "q"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.ToolCalls) != 1 || out.ToolCalls[0] != (weft.ToolCall{ID: "k1", Name: "web.search", Arguments: "{not json"}) || out.FinishReason != "tool_calls" {
		t.Errorf("tool calls %+v finish %q", out.ToolCalls, out.FinishReason)
	}
}

func TestFailures(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	cases := []struct {
		name   string
		status int
		hdr    map[string]string
		ct     string
		body   string
		typ    weft.ErrorType
		retry  time.Duration
		msg    string
	}{
		{"retry_after_ms", 429, map[string]string{"retry-after-ms": "1500"}, "application/json", `{"error":{"message":"slow down"}}`, weft.ErrRateLimit, 1500 * time.Millisecond, "slow down"},
		{"retry_after_date", 503, map[string]string{"Retry-After": date}, "application/json", `{"error":"busy"}`, weft.ErrServer, 90 * time.Second, "busy"},
		{"403_text", 403, nil, "text/plain", `forbidden for sk-secret-1234`, weft.ErrAuth, 0, "forbidden for [redacted]"},
		{"404", 404, nil, "application/json", `{"error":{"message":"model not found"}}`, weft.ErrInvalidRequest, 0, "model not found"},
		{"408", 408, nil, "application/json", `{}`, weft.ErrTimeout, 0, "Request Timeout"},
		{"422", 422, nil, "application/json", `{"detail":"bad"}`, weft.ErrInvalidRequest, 0, "bad"},
		// OpenAI's documented shape for a request past the model's window.
		{"context_length", 400, nil, "application/json", `{"error":{"message":"This model's maximum context length is 2000 tokens. However, your messages resulted in 2137 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, weft.ErrContextLength, 0, "maximum context length is 2000"},
		{"empty_choices", 200, nil, "application/json", `{"choices":[]}`, weft.ErrUnknown, 0, "no choices"},
		{"in_band_error", 200, nil, "application/json", `{"error":{"message":"upstream down","code":502}}`, weft.ErrServer, 0, "upstream down"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newServer(t, tc.status, tc.hdr, tc.ct, tc.body)
			p := openai.New(openai.Options{BaseURL: srv.URL + "/v1"})
			_, err := p.Call(context.Background(), &weft.Request{Model: noStream(), APIKey: "sk-secret-1234",
				Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "q"}}}, nil)
			var pe *weft.ProviderError
			if !asProviderError(err, &pe) {
				t.Fatalf("err %v", err)
			}
			if pe.Type != tc.typ || !strings.Contains(pe.Message, tc.msg) || strings.Contains(err.Error(), "sk-secret-1234") {
				t.Errorf("got %v, want %s %q", pe, tc.typ, tc.msg)
			}
			if d := pe.RetryAfter - tc.retry; d < -2*time.Second || d > 2*time.Second {
				t.Errorf("RetryAfter %v, want %v", pe.RetryAfter, tc.retry)
			}
		})
	}
}

func BenchmarkCall(b *testing.B) {
	f := fake{}
	reply := providertest.Reply{Model: "gpt-test", ToolCalls: []weft.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		FinishReason: "tool_calls", Usage: weft.Usage{InputTokens: 10, OutputTokens: 5}}
	for _, stream := range []bool{false, true} {
		ct, body := f.Encode(reply, stream)
		name := "json"
		if stream {
			name = "stream"
		}
		b.Run(name, func(b *testing.B) {
			srv, _ := newServer(b, 200, nil, ct, string(body))
			p := openai.New(openai.Options{BaseURL: srv.URL + "/v1"})
			s := stream
			req := &weft.Request{Model: &weft.Model{Name: "m", Model: "gpt-test", Capabilities: weft.Capabilities{SupportsStreaming: &s}},
				APIKey: "k", Messages: []weft.LLMMessage{{Role: weft.RoleSystem, Content: "sys"}, {Role: weft.RoleUser, Content: "weather in Paris?"}},
				Tools: []weft.ToolSpec{{Name: "get_weather", Description: "w"}}, ToolChoice: weft.ToolChoiceAuto}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				if _, err := p.Call(context.Background(), req, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/call")
		})
	}
}

// BenchmarkCallResponses is BenchmarkCall over the Responses wire: one function call returned as a
// JSON response object and as the event stream (output_item and argument delta events, then
// response.completed).
func BenchmarkCallResponses(b *testing.B) {
	f := respFake{}
	reply := providertest.Reply{Model: "gpt-test", ToolCalls: []weft.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		FinishReason: "tool_calls", Usage: weft.Usage{InputTokens: 10, OutputTokens: 5}}
	for _, stream := range []bool{false, true} {
		ct, body := f.Encode(reply, stream)
		name := "json"
		if stream {
			name = "stream"
		}
		b.Run(name, func(b *testing.B) {
			srv, _ := newServer(b, 200, nil, ct, string(body))
			p := openai.New(openai.Options{BaseURL: srv.URL + "/v1"})
			s := stream
			req := &weft.Request{Model: &weft.Model{Name: "m", Model: "gpt-test", Capabilities: weft.Capabilities{SupportsStreaming: &s},
				ProviderOptions: map[string]any{"useResponsesApi": true}},
				APIKey: "k", Messages: []weft.LLMMessage{{Role: weft.RoleSystem, Content: "sys"}, {Role: weft.RoleUser, Content: "weather in Paris?"}},
				Tools: []weft.ToolSpec{{Name: "get_weather", Description: "w"}}, ToolChoice: weft.ToolChoiceAuto}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				resp, err := p.Call(context.Background(), req, nil)
				if err != nil {
					b.Fatal(err)
				}
				if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Arguments != `{"city":"Paris"}` {
					b.Fatalf("tool calls %+v", resp.ToolCalls)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/call")
		})
	}
}
