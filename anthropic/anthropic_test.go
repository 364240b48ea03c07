package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// server is a loopback fake that records request bodies and headers and answers with handler.
func server(t testing.TB, handler func(w http.ResponseWriter, body []byte)) (*httptest.Server, func() ([]byte, http.Header)) {
	var mu sync.Mutex
	var last []byte
	var hdr http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last, hdr = b, r.Header.Clone()
		mu.Unlock()
		if r.URL.Path != "/v1/messages" {
			http.Error(w, "bad path "+r.URL.Path, 404)
			return
		}
		handler(w, b)
	}))
	t.Cleanup(srv.Close)
	return srv, func() ([]byte, http.Header) { mu.Lock(); defer mu.Unlock(); return last, hdr }
}

func jsonReply(body string) func(w http.ResponseWriter, _ []byte) {
	return func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

func sseReply(events ...string) func(w http.ResponseWriter, _ []byte) {
	return func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			var m struct{ Type string }
			_ = json.Unmarshal([]byte(e), &m)
			_, _ = io.WriteString(w, "event: "+m.Type+"\ndata: "+e+"\n\n")
			w.(http.Flusher).Flush()
		}
	}
}

func baseReq(stream bool) *weft.Request {
	return &weft.Request{
		Model:    &weft.Model{Name: "m", Provider: "anthropic", Model: "claude-test", Capabilities: weft.Capabilities{SupportsStreaming: &stream}},
		Messages: []weft.LLMMessage{{Role: weft.RoleSystem, Content: "Be brief."}, {Role: weft.RoleUser, Content: "Hi"}},
		APIKey:   "sk-ant-SECRET",
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("bad JSON %v: %s", err, b)
	}
	return m
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

const okMessage = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":1}}`

func TestMessageMapping(t *testing.T) {
	srv, last := server(t, jsonReply(okMessage))
	req := baseReq(false)
	req.Messages = []weft.LLMMessage{
		{Role: weft.RoleSystem, Content: "Rule one."},
		{Role: weft.RoleSystem, Content: "Rule two."},
		{Role: weft.RoleUser, Content: "Look"},
		{Role: weft.RoleUser, Parts: []weft.ContentPart{{Type: weft.PartText, Text: "at"}, {Type: weft.PartImage, URL: "https://example.com/a.png"}}},
		{Role: weft.RoleAssistant, Content: "Calling.", ToolCalls: []weft.ToolCall{
			{ID: "toolu_1", Name: "fs.read", Arguments: `{"path":"/a"}`}, {ID: "toolu_2", Name: "get_time", Arguments: ``}}},
		{Role: weft.RoleTool, ToolCallID: "toolu_1", Content: "file body", ToolStatus: weft.ToolSuccess},
		{Role: weft.RoleTool, ToolCallID: "toolu_2", Content: "boom", ToolStatus: weft.ToolError},
		{Role: weft.RoleSystem, Content: "Hurry up."},
		{Role: weft.RoleAssistant, Content: ""},
	}
	req.Tools = []weft.ToolSpec{{Name: "fs.read", Description: "Read"}, {Name: "get_time"}}
	req.ToolChoice = weft.ToolChoiceRequired
	req.Options = map[string]any{"temperature": 0.5, "topP": 0.9, "stop": []any{"END"}, "seed": 3, "metadata": map[string]any{"user_id": "u1"}}
	req.Model.Capabilities.MaxOutputTokens = 1234
	if _, err := New(Options{BaseURL: srv.URL + "/v1"}).Call(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	body, hdr := last()
	m := decode(t, body)
	want := map[string]any{
		"model": "claude-test", "max_tokens": 1234.0, "system": "Rule one.\n\nRule two.",
		"temperature": 0.5, "top_p": 0.9, "stop_sequences": []any{"END"}, "metadata": map[string]any{"user_id": "u1"},
		"tool_choice": map[string]any{"type": "any", "disable_parallel_tool_use": true},
	}
	for k, v := range want {
		if js(m[k]) != js(v) {
			t.Errorf("%s = %s, want %s", k, js(m[k]), js(v))
		}
	}
	if _, ok := m["seed"]; ok {
		t.Error("seed sent (Anthropic has none)")
	}
	if _, ok := m["stream"]; ok {
		t.Error("stream sent on a non-streaming call")
	}
	wantMsgs := `[{"role":"user","content":[{"type":"text","text":"Look"},{"type":"text","text":"at"},{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"Calling."},{"type":"tool_use","id":"toolu_1","name":"fs_read","input":{"path":"/a"}},{"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"file body"},{"type":"tool_result","tool_use_id":"toolu_2","content":"boom","is_error":true},{"type":"text","text":"System note: Hurry up."}]}]`
	if got := js(m["messages"]); got != js(decodeAny([]byte(wantMsgs))) {
		t.Errorf("messages\n got  %s\n want %s", got, wantMsgs)
	}
	if got := js(m["tools"]); got != js(decodeAny([]byte(`[{"name":"fs_read","description":"Read","input_schema":{"type":"object","properties":{}}},{"name":"get_time","input_schema":{"type":"object","properties":{}}}]`))) {
		t.Errorf("tools = %s", got)
	}
	if hdr.Get("X-Api-Key") != "sk-ant-SECRET" || hdr.Get("Anthropic-Version") == "" {
		t.Errorf("headers %v", hdr)
	}
}

func TestToolNameMappedBack(t *testing.T) {
	srv, _ := server(t, jsonReply(`{"type":"message","model":"claude-test","content":[{"type":"tool_use","id":"toolu_9","name":"fs_read","input":{"path":"/x"}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":1}}`))
	req := baseReq(false)
	req.Tools = []weft.ToolSpec{{Name: "fs.read"}}
	resp, err := New(Options{BaseURL: srv.URL + "/v1"}).Call(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0] != (weft.ToolCall{ID: "toolu_9", Name: "fs.read", Arguments: `{"path":"/x"}`}) || resp.FinishReason != "tool_calls" {
		t.Errorf("resp = %+v", resp)
	}
}

func TestToolChoiceNoneAndProviderOptions(t *testing.T) {
	srv, last := server(t, jsonReply(okMessage))
	req := baseReq(false)
	req.Tools = []weft.ToolSpec{{Name: "t"}}
	req.ToolChoice = weft.ToolChoiceNone
	// baseUrl and headers from providerOptions override the transport; they never reach the body.
	req.Model.ProviderOptions = map[string]any{"baseUrl": srv.URL + "/v1", "headers": map[string]any{"anthropic-beta": "x-2025"}, "top_k": 5}
	req.Options = req.Model.ProviderOptions
	if _, err := New(Options{BaseURL: "http://127.0.0.1:1/v1"}).Call(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	body, hdr := last()
	m := decode(t, body)
	if _, ok := m["tools"]; ok {
		t.Error("tools sent with tool choice none")
	}
	if _, ok := m["baseUrl"]; ok {
		t.Error("baseUrl in body")
	}
	if _, ok := m["headers"]; ok {
		t.Error("headers in body")
	}
	if m["top_k"] != 5.0 || m["max_tokens"] != 4096.0 {
		t.Errorf("top_k %v max_tokens %v", m["top_k"], m["max_tokens"])
	}
	if hdr.Get("Anthropic-Beta") != "x-2025" {
		t.Errorf("anthropic-beta = %q", hdr.Get("Anthropic-Beta"))
	}
}

// Thinking blocks with signatures come back verbatim and are replayed identically.
func TestThinkingRoundTrip(t *testing.T) {
	const block = `{"type":"thinking","thinking":"Let me add: 2+2=4.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}`
	const redacted = `{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}`
	for _, stream := range []bool{false, true} {
		var srv *httptest.Server
		var last func() ([]byte, http.Header)
		if stream {
			srv, last = server(t, sseReply(
				`{"type":"message_start","message":{"type":"message","model":"claude-test","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}`,
				`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me add: "}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"2+2=4."}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"content_block_start","index":1,"content_block":`+redacted+`}`,
				`{"type":"content_block_stop","index":1}`,
				`{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
				`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"4"}}`,
				`{"type":"content_block_stop","index":2}`,
				`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":20}}`,
				`{"type":"message_stop"}`))
		} else {
			srv, last = server(t, jsonReply(`{"type":"message","model":"claude-test","content":[`+block+`,`+redacted+`,{"type":"text","text":"4"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":20}}`))
		}
		p := New(Options{BaseURL: srv.URL + "/v1"})
		req := baseReq(stream)
		req.Reasoning = &weft.Reasoning{Effort: "high"}
		var reasoning strings.Builder
		resp, err := p.Call(context.Background(), req, func(c weft.Chunk) { reasoning.WriteString(c.Reasoning) })
		if err != nil {
			t.Fatal(err)
		}
		body, _ := last()
		m := decode(t, body)
		if js(m["thinking"]) != `{"budget_tokens":16384,"type":"enabled"}` || m["max_tokens"].(float64) <= 16384 {
			t.Errorf("thinking %s max_tokens %v", js(m["thinking"]), m["max_tokens"])
		}
		if resp.Reasoning != "Let me add: 2+2=4." || resp.Text != "4" {
			t.Errorf("stream %v: reasoning %q text %q", stream, resp.Reasoning, resp.Text)
		}
		if stream && reasoning.String() != resp.Reasoning {
			t.Errorf("streamed reasoning %q", reasoning.String())
		}
		var blocks []json.RawMessage
		if err := json.Unmarshal(resp.ReasoningBlocks, &blocks); err != nil || len(blocks) != 2 {
			t.Fatalf("ReasoningBlocks %s", resp.ReasoningBlocks)
		}
		if js(decodeAny(blocks[0])) != js(decodeAny([]byte(block))) || js(decodeAny(blocks[1])) != js(decodeAny([]byte(redacted))) {
			t.Errorf("ReasoningBlocks %s", resp.ReasoningBlocks)
		}
		// Send it back.
		req.Messages = append(req.Messages, weft.LLMMessage{Role: weft.RoleAssistant, Content: resp.Text,
			Metadata: map[string]any{"reasoning_blocks": resp.ReasoningBlocks}}, weft.LLMMessage{Role: weft.RoleUser, Content: "And 3+3?"})
		if _, err := p.Call(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		body, _ = last()
		if !strings.Contains(string(body), `{"role":"assistant","content":[`+string(blocks[0])+`,`+string(blocks[1])+`,{"type":"text","text":"4"}]}`) {
			t.Errorf("replayed request does not carry the identical blocks:\n%s", body)
		}
	}
}

func decodeAny(b []byte) any { var v any; _ = json.Unmarshal(b, &v); return v }

func TestStreamUsageAndToolCalls(t *testing.T) {
	srv, _ := server(t, sseReply(
		`{"type":"message_start","message":{"type":"message","model":"claude-test","content":[],"usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_b","name":"get_time","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"zone\":"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"UTC\"}"}}`,
		`{"type":"ping"}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":10}}`,
		`{"type":"message_delta","delta":{},"usage":{"output_tokens":12}}`,
		`{"type":"message_stop"}`))
	resp, err := New(Options{BaseURL: srv.URL + "/v1"}).Call(context.Background(), baseReq(true), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []weft.ToolCall{{ID: "toolu_a", Name: "get_weather", Arguments: `{"city":"Paris"}`}, {ID: "toolu_b", Name: "get_time", Arguments: `{"zone":"UTC"}`}}
	if js(resp.ToolCalls) != js(want) || resp.FinishReason != "tool_calls" {
		t.Errorf("calls %+v finish %q", resp.ToolCalls, resp.FinishReason)
	}
	if resp.Usage.InputTokens != 10 || resp.Usage.CachedTokens != 3 || resp.Usage.OutputTokens != 12 {
		t.Errorf("usage %+v (output must be replaced, not added)", resp.Usage)
	}
}

func TestStreamErrorEvent(t *testing.T) {
	srv, _ := server(t, sseReply(
		`{"type":"message_start","message":{"type":"message","model":"claude-test","content":[],"usage":{"input_tokens":7,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	_, err := New(Options{BaseURL: srv.URL + "/v1"}).Call(context.Background(), baseReq(true), nil)
	var pe *weft.ProviderError
	if !errors.As(err, &pe) || pe.Type != weft.ErrServer || pe.Message != "Overloaded" {
		t.Fatalf("err = %#v", err)
	}
}

func TestErrorsNonStreaming(t *testing.T) {
	cases := []struct {
		status int
		hdr    map[string]string
		body   string
		typ    weft.ErrorType
		msg    string
		after  time.Duration
	}{
		{401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-ant-SECRET"}}`, weft.ErrAuth, "invalid x-api-key [REDACTED]", 0},
		{403, nil, `{"type":"error","error":{"type":"permission_error","message":"nope"}}`, weft.ErrAuth, "nope", 0},
		{404, nil, `{"type":"error","error":{"type":"not_found_error","message":"model: x"}}`, weft.ErrInvalidRequest, "model: x", 0},
		{413, nil, `{"type":"error","error":{"type":"request_too_large","message":"too big"}}`, weft.ErrInvalidRequest, "too big", 0},
		// Anthropic's answer to a prompt past the model's window.
		{400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, weft.ErrContextLength, "prompt is too long: 210000 tokens > 200000 maximum", 0},
		{429, map[string]string{"retry-after-ms": "1500", "retry-after": "2"}, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, weft.ErrRateLimit, "slow down", 1500 * time.Millisecond},
		{502, nil, `<html>bad gateway</html>`, weft.ErrServer, "<html>bad gateway</html>", 0},
		{529, map[string]string{"Retry-After": "3"}, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, weft.ErrServer, "Overloaded", 3 * time.Second},
	}
	for _, c := range cases {
		srv, _ := server(t, func(w http.ResponseWriter, _ []byte) {
			for k, v := range c.hdr {
				w.Header().Set(k, v)
			}
			w.WriteHeader(c.status)
			_, _ = io.WriteString(w, c.body)
		})
		for _, stream := range []bool{false, true} {
			_, err := New(Options{BaseURL: srv.URL + "/v1"}).Call(context.Background(), baseReq(stream), nil)
			var pe *weft.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("%d: err %T %v", c.status, err, err)
			}
			if pe.Type != c.typ || pe.Status != c.status || pe.Message != c.msg || pe.RetryAfter != c.after || strings.Contains(err.Error(), "sk-ant-SECRET") {
				t.Errorf("%d stream=%v: %+v", c.status, stream, pe)
			}
		}
	}
}

func TestNoRetries(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv, _ := server(t, func(w http.ResponseWriter, _ []byte) {
		mu.Lock()
		n++
		mu.Unlock()
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(500)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"x"}}`)
	})
	_, _ = New(Options{BaseURL: srv.URL + "/v1"}).Call(context.Background(), baseReq(false), nil)
	mu.Lock()
	defer mu.Unlock()
	if n != 1 {
		t.Errorf("server saw %d attempts, want 1 (retries are the engine's)", n)
	}
}

func TestCancelStalledStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := New(Options{BaseURL: srv.URL + "/v1"}).Call(ctx, baseReq(true), nil)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

func BenchmarkCall(b *testing.B) {
	const msg = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}],"stop_reason":"tool_use","usage":{"input_tokens":50,"output_tokens":20}}`
	events := []string{
		`{"type":"message_start","message":{"type":"message","model":"claude-test","content":[],"usage":{"input_tokens":50,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking."}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}`,
		`{"type":"message_stop"}`,
	}
	var sse strings.Builder
	for _, e := range events {
		var m struct{ Type string }
		_ = json.Unmarshal([]byte(e), &m)
		sse.WriteString("event: " + m.Type + "\ndata: " + e + "\n\n")
	}
	for _, stream := range []bool{false, true} {
		name := "nonstreaming"
		if stream {
			name = "streaming"
		}
		b.Run(name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = io.WriteString(w, sse.String())
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, msg)
			}))
			defer srv.Close()
			p := New(Options{BaseURL: srv.URL + "/v1"})
			req := baseReq(stream)
			req.Tools = []weft.ToolSpec{{Name: "get_weather", Description: "Weather"}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				resp, err := p.Call(context.Background(), req, func(weft.Chunk) {})
				if err != nil || len(resp.ToolCalls) != 1 {
					b.Fatalf("%v %+v", err, resp)
				}
			}
		})
	}
}
