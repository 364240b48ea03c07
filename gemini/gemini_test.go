package gemini

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

const testKey = "AIza-SECRET-test-key"

// server is a loopback fake that records the last request and answers with handler.
func server(t testing.TB, handler func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, func() (*http.Request, []byte)) {
	var mu sync.Mutex
	var last *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last, body = r.Clone(context.Background()), b
		mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() (*http.Request, []byte) { mu.Lock(); defer mu.Unlock(); return last, body }
}

func jsonReply(status int, body string, hdr ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func sseReply(events ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			_, _ = io.WriteString(w, "data: "+e+"\r\n\r\n")
			w.(http.Flusher).Flush()
		}
	}
}

func baseReq(stream bool) *weft.Request {
	return &weft.Request{
		Model:    &weft.Model{Name: "m", Provider: "google", Model: "gemini-test", Capabilities: weft.Capabilities{SupportsStreaming: &stream}},
		Messages: []weft.LLMMessage{{Role: weft.RoleSystem, Content: "Be brief."}, {Role: weft.RoleUser, Content: "Hi"}},
		APIKey:   testKey,
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("bad JSON %v: %s", err, b)
	}
	return m
}

func schema(t testing.TB, s string) *weft.Schema {
	t.Helper()
	var sc weft.Schema
	if err := json.Unmarshal([]byte(s), &sc); err != nil {
		t.Fatal(err)
	}
	return &sc
}

const okReply = `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1},"modelVersion":"gemini-test-001"}`

func TestWireBasics(t *testing.T) {
	srv, last := server(t, jsonReply(200, okReply))
	resp, err := New(Options{BaseURL: srv.URL + "/v1beta/", Headers: map[string]string{"X-Extra": "1"}}).Call(context.Background(), baseReq(false), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := last()
	if r.URL.Path != "/v1beta/models/gemini-test:generateContent" || r.URL.RawQuery != "" {
		t.Errorf("URL = %s", r.URL)
	}
	if r.Header.Get("x-goog-api-key") != testKey || r.Header.Get("X-Extra") != "1" {
		t.Errorf("headers = %v", r.Header)
	}
	if resp.Text != "ok" || resp.FinishReason != "stop" || resp.ModelID != "gemini-test-001" || resp.Usage.InputTokens != 5 {
		t.Errorf("resp = %+v", resp)
	}

	srv2, last2 := server(t, sseReply(okReply))
	if _, err := New(Options{BaseURL: srv2.URL + "/v1beta"}).Call(context.Background(), baseReq(true), nil); err != nil {
		t.Fatal(err)
	}
	r, _ = last2()
	if r.URL.Path != "/v1beta/models/gemini-test:streamGenerateContent" || r.URL.RawQuery != "alt=sse" {
		t.Errorf("stream URL = %s", r.URL)
	}
	if strings.Contains(r.URL.String(), testKey) {
		t.Error("key in URL")
	}
}

func TestRequestMapping(t *testing.T) {
	img := "data:image/png;base64,AAAA"
	cases := []struct {
		name  string
		mod   func(r *weft.Request)
		check func(t *testing.T, body map[string]any)
	}{
		{"system_and_roles", func(r *weft.Request) {
			r.Messages = []weft.LLMMessage{
				{Role: weft.RoleSystem, Content: "S1"}, {Role: weft.RoleDeveloper, Content: "S2"},
				{Role: weft.RoleUser, Content: "u1"}, {Role: weft.RoleAssistant, Content: "a1"},
				{Role: weft.RoleSystem, Content: "late"}, {Role: weft.RoleUser, Content: "u2"},
			}
		}, func(t *testing.T, b map[string]any) {
			want := `{"parts":[{"text":"S1"},{"text":"S2"}]}`
			if got := js(b["systemInstruction"]); got != want {
				t.Errorf("systemInstruction = %s", got)
			}
			want = `[{"parts":[{"text":"u1"}],"role":"user"},{"parts":[{"text":"a1"}],"role":"model"},{"parts":[{"text":"System note: late"},{"text":"u2"}],"role":"user"}]`
			if got := js(b["contents"]); got != want {
				t.Errorf("contents = %s", got)
			}
			if _, ok := b["tools"]; ok {
				t.Error("tools sent without tools")
			}
		}},
		{"images", func(r *weft.Request) {
			r.Messages = []weft.LLMMessage{{Role: weft.RoleUser, Parts: []weft.ContentPart{
				{Type: weft.PartText, Text: "look"},
				{Type: weft.PartImage, URL: img},
				{Type: weft.PartImage, URL: "https://x.test/a.jpg", MimeType: "image/jpeg"},
				{Type: weft.PartImage, URL: "/attachments/a.png", Description: "a cat"},
			}}}
		}, func(t *testing.T, b map[string]any) {
			want := `[{"parts":[{"text":"look"},{"inlineData":{"data":"AAAA","mimeType":"image/png"}},{"fileData":{"fileUri":"https://x.test/a.jpg","mimeType":"image/jpeg"}},{"text":"[image: a cat]"}],"role":"user"}]`
			if got := js(b["contents"]); got != want {
				t.Errorf("contents = %s", got)
			}
		}},
		{"function_call_pairing", func(r *weft.Request) {
			r.Messages = []weft.LLMMessage{
				{Role: weft.RoleUser, Content: "weather?"},
				{Role: weft.RoleAssistant, Content: "checking", ToolCalls: []weft.ToolCall{
					{ID: "c1", Name: "get_weather", Arguments: `{"city": "Paris"}`},
					{ID: "c2", Name: "get_time", Arguments: `not json`}},
					Metadata: map[string]any{"reasoning_blocks": `[{"kind":"text","thoughtSignature":"sigT"},{"kind":"functionCall","thoughtSignature":"sig1"},{"kind":"functionCall","thoughtSignature":""}]`}},
				{Role: weft.RoleTool, ToolCallID: "c1", Name: "get_weather", Content: "sunny", ToolStatus: weft.ToolSuccess},
				{Role: weft.RoleTool, ToolCallID: "c2", Content: "boom", ToolStatus: weft.ToolError},
				{Role: weft.RoleAssistant, Content: "done"},
			}
		}, func(t *testing.T, b map[string]any) {
			want := `[{"parts":[{"text":"weather?"}],"role":"user"},` +
				`{"parts":[{"text":"checking","thoughtSignature":"sigT"},{"functionCall":{"args":{"city":"Paris"},"name":"get_weather"},"thoughtSignature":"sig1"},{"functionCall":{"args":{},"name":"get_time"}}],"role":"model"},` +
				`{"parts":[{"functionResponse":{"name":"get_weather","response":{"result":"sunny"}}},{"functionResponse":{"name":"get_time","response":{"error":"boom"}}}],"role":"user"},` +
				`{"parts":[{"text":"done"}],"role":"model"}]`
			if got := js(b["contents"]); got != want {
				t.Errorf("contents =\n%s\nwant\n%s", got, want)
			}
		}},
		{"tools_auto_and_schema", func(r *weft.Request) {
			r.Tools = []weft.ToolSpec{
				{Name: "f", Description: "d", Parameters: schema(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,
					"properties":{"a":{"type":["string","null"],"description":"A","minLength":1},
					"b":{"type":"array","items":{"type":"object","additionalProperties":false,"properties":{"x":{"type":"integer","enum":[1,2]}}}},
					"c":{"anyOf":[{"type":"string","enum":["p","q"]},{"type":"null"}]},
					"d":{"const":"k"}},
					"required":["a","zz"]}`)},
				{Name: "noargs", Parameters: schema(t, `{"type":"object","properties":{}}`)},
				{Name: "web", Provider: "openai"},
			}
			r.ToolChoice = weft.ToolChoiceAuto
		}, func(t *testing.T, b map[string]any) {
			want := `[{"functionDeclarations":[{"description":"d","name":"f","parameters":{"properties":{` +
				`"a":{"description":"A","minLength":1,"nullable":true,"type":"string"},` +
				`"b":{"items":{"properties":{"x":{"type":"integer"}},"type":"object"},"type":"array"},` +
				`"c":{"enum":["p","q"],"nullable":true,"type":"string"},` +
				`"d":{"enum":["k"],"type":"string"}},"required":["a"],"type":"object"}},{"name":"noargs"}]}]`
			if got := js(b["tools"]); got != want {
				t.Errorf("tools =\n%s\nwant\n%s", got, want)
			}
			if got := js(b["toolConfig"]); got != `{"functionCallingConfig":{"mode":"AUTO"}}` {
				t.Errorf("toolConfig = %s", got)
			}
		}},
		{"tool_choice_none", func(r *weft.Request) {
			r.Tools = []weft.ToolSpec{{Name: "f"}}
			r.ToolChoice = weft.ToolChoiceNone
		}, func(t *testing.T, b map[string]any) {
			if got := js(b["toolConfig"]); got != `{"functionCallingConfig":{"mode":"NONE"}}` {
				t.Errorf("toolConfig = %s", got)
			}
		}},
		{"tool_choice_required", func(r *weft.Request) {
			r.Tools = []weft.ToolSpec{{Name: "f"}}
			r.ToolChoice = weft.ToolChoiceRequired
		}, func(t *testing.T, b map[string]any) {
			if got := js(b["toolConfig"]); got != `{"functionCallingConfig":{"mode":"ANY"}}` {
				t.Errorf("toolConfig = %s", got)
			}
		}},
		{"thinking_budget", func(r *weft.Request) { r.Reasoning = &weft.Reasoning{MaxTokens: 3000, Effort: "high"} },
			func(t *testing.T, b map[string]any) {
				if got := js(b["generationConfig"]); got != `{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":3000}}` {
					t.Errorf("generationConfig = %s", got)
				}
			}},
		{"thinking_effort", func(r *weft.Request) { r.Reasoning = &weft.Reasoning{Effort: "high", Exclude: true} },
			func(t *testing.T, b map[string]any) {
				if got := js(b["generationConfig"]); got != `{"thinkingConfig":{"thinkingBudget":24576}}` {
					t.Errorf("generationConfig = %s", got)
				}
			}},
		{"options", func(r *weft.Request) {
			r.Reasoning = &weft.Reasoning{Effort: "low"}
			r.Options = map[string]any{"temperature": 0.5, "maxOutputTokens": 100, "topP": 0.9, "stop": "END", "seed": 7,
				"baseUrl": "ignored-here", "headers": map[string]any{"X-H": "v"},
				"generationConfig": map[string]any{"responseMimeType": "application/json"},
				"safetySettings":   []any{map[string]any{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}}}
		}, func(t *testing.T, b map[string]any) {
			want := `{"maxOutputTokens":100,"responseMimeType":"application/json","seed":7,"stopSequences":["END"],"temperature":0.5,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":1024},"topP":0.9}`
			if got := js(b["generationConfig"]); got != want {
				t.Errorf("generationConfig =\n%s\nwant\n%s", got, want)
			}
			if _, ok := b["safetySettings"]; !ok {
				t.Error("safetySettings not merged")
			}
			for _, k := range []string{"baseUrl", "headers", "temperature", "stop"} {
				if _, ok := b[k]; ok {
					t.Errorf("%s leaked into the body", k)
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, last := server(t, jsonReply(200, okReply))
			req := baseReq(false)
			tc.mod(req)
			base := srv.URL
			if req.Options["baseUrl"] != nil { // the option must win over Options.BaseURL
				req.Options["baseUrl"], base = srv.URL, "http://127.0.0.1:1/unused"
			}
			resp, err := New(Options{BaseURL: base}).Call(context.Background(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, body := last()
			if req.Options["headers"] != nil && r.Header.Get("X-H") != "v" {
				t.Error("providerOptions header not sent")
			}
			if string(resp.RequestBody) != string(body) {
				t.Error("RequestBody differs from the wire body")
			}
			tc.check(t, decode(t, body))
		})
	}
}

func TestResponseMapping(t *testing.T) {
	cases := []struct {
		name, body string
		check      func(t *testing.T, r *weft.Response, err error)
	}{
		{"thoughts_and_usage", `{"candidates":[{"content":{"role":"model","parts":[{"text":"hmm ","thought":true},{"text":"ok","thought":true},{"text":"Answer","thoughtSignature":"s0"}]},"finishReason":"STOP"}],
			"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3,"cachedContentTokenCount":4,"thoughtsTokenCount":7,"totalTokenCount":20}}`,
			func(t *testing.T, r *weft.Response, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if r.Reasoning != "hmm ok" || r.Text != "Answer" || r.FinishReason != "stop" {
					t.Errorf("resp = %+v", r)
				}
				if r.Usage != (weft.Usage{InputTokens: 10, OutputTokens: 10, CachedTokens: 4, ReasoningTokens: 7}) {
					t.Errorf("usage = %+v", r.Usage)
				}
				if string(r.ReasoningBlocks) != `[{"kind":"text","thoughtSignature":"s0"}]` {
					t.Errorf("ReasoningBlocks = %s", r.ReasoningBlocks)
				}
			}},
		{"function_calls", `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{ "a" : 1 }}},{"functionCall":{"name":"g"}}]},"finishReason":"STOP"}]}`,
			func(t *testing.T, r *weft.Response, err error) {
				if err != nil {
					t.Fatal(err)
				}
				want := []weft.ToolCall{{Name: "f", Arguments: `{"a":1}`}, {Name: "g", Arguments: `{}`}}
				if js(r.ToolCalls) != js(want) || r.FinishReason != "tool_calls" {
					t.Errorf("calls = %+v finish %q", r.ToolCalls, r.FinishReason)
				}
				if r.ReasoningBlocks != nil {
					t.Errorf("ReasoningBlocks without signatures = %s", r.ReasoningBlocks)
				}
			}},
		{"max_tokens", `{"candidates":[{"content":{"parts":[{"text":"cut"}]},"finishReason":"MAX_TOKENS"}]}`, finish("length")},
		{"safety", `{"candidates":[{"finishReason":"SAFETY"}]}`, finish("content_filter")},
		{"recitation", `{"candidates":[{"finishReason":"RECITATION"}]}`, finish("content_filter")},
		{"prohibited", `{"candidates":[{"finishReason":"PROHIBITED_CONTENT"}]}`, finish("content_filter")},
		{"other", `{"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL"}]}`, finish("malformed_function_call")},
		{"blocked_prompt", `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":3}}`,
			func(t *testing.T, r *weft.Response, err error) {
				pe := asPE(t, err)
				if pe.Type != weft.ErrInvalidRequest || !strings.Contains(pe.Message, "SAFETY") {
					t.Errorf("err = %v", pe)
				}
			}},
		{"no_candidates", `{}`, func(t *testing.T, r *weft.Response, err error) {
			if pe := asPE(t, err); pe.Type != weft.ErrServer {
				t.Errorf("err = %v", pe)
			}
		}},
		{"malformed", `{"candidates":[`, func(t *testing.T, r *weft.Response, err error) {
			if pe := asPE(t, err); pe.Type != weft.ErrServer || !strings.Contains(pe.Message, "malformed") {
				t.Errorf("err = %v", pe)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := server(t, jsonReply(200, tc.body))
			r, err := New(Options{BaseURL: srv.URL}).Call(context.Background(), baseReq(false), nil)
			tc.check(t, r, err)
		})
	}
}

func finish(want string) func(t *testing.T, r *weft.Response, err error) {
	return func(t *testing.T, r *weft.Response, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if r.FinishReason != want {
			t.Errorf("FinishReason = %q, want %q", r.FinishReason, want)
		}
	}
}

func asPE(t *testing.T, err error) *weft.ProviderError {
	t.Helper()
	var pe *weft.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %T %v, want *weft.ProviderError", err, err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error leaks the key: %v", err)
	}
	return pe
}

func TestErrorMapping(t *testing.T) {
	errBody := func(code int, status, msg, extra string) string {
		return `{"error":{"code":` + js(code) + `,"message":` + js(msg) + `,"status":"` + status + `"` + extra + `}}`
	}
	cases := []struct {
		status int
		body   string
		hdr    []string
		typ    weft.ErrorType
		msg    string
		retry  time.Duration
	}{
		{401, errBody(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.", ""), nil, weft.ErrAuth, "invalid authentication", 0},
		{400, errBody(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
			`,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]`), nil, weft.ErrAuth, "API key not valid", 0},
		{400, errBody(400, "INVALID_ARGUMENT", "Invalid JSON payload received.", ""), nil, weft.ErrInvalidRequest, "Invalid JSON payload", 0},
		// Gemini's answer to a request past the model's window.
		{400, errBody(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", ""), nil,
			weft.ErrContextLength, "exceeds the maximum number of tokens allowed", 0},
		{403, errBody(403, "PERMISSION_DENIED", "Permission denied "+testKey, ""), nil, weft.ErrAuth, "Permission denied [REDACTED]", 0},
		{404, errBody(404, "NOT_FOUND", "models/nope is not found", ""), nil, weft.ErrInvalidRequest, "is not found", 0},
		{429, errBody(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.",
			`,"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure"},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]`), nil, weft.ErrRateLimit, "exceeded your current quota", 7 * time.Second},
		{429, errBody(429, "RESOURCE_EXHAUSTED", "slow down", ""), []string{"Retry-After", "3"}, weft.ErrRateLimit, "slow down", 3 * time.Second},
		{500, errBody(500, "INTERNAL", "An internal error has occurred.", ""), nil, weft.ErrServer, "internal error", 0},
		{503, errBody(503, "UNAVAILABLE", "The model is overloaded.", ""), nil, weft.ErrServer, "overloaded", 0},
		{409, errBody(409, "RESOURCE_EXHAUSTED", "odd", ""), nil, weft.ErrRateLimit, "odd", 0},
		{502, `<html>bad gateway</html>`, nil, weft.ErrServer, "bad gateway", 0},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			srv, _ := server(t, jsonReply(tc.status, tc.body, tc.hdr...))
			_, err := New(Options{BaseURL: srv.URL}).Call(context.Background(), baseReq(stream), nil)
			pe := asPE(t, err)
			if pe.Type != tc.typ || pe.Status != tc.status || !strings.Contains(pe.Message, tc.msg) || pe.RetryAfter != tc.retry {
				t.Errorf("%d stream=%v: got %+v, want %s %q retry %v", tc.status, stream, pe, tc.typ, tc.msg, tc.retry)
			}
		}
	}
}

func TestStreamingAssembly(t *testing.T) {
	chunk := func(parts string, finish string, usage string) string {
		c := `{"content":{"role":"model","parts":` + parts + `}`
		if finish != "" {
			c += `,"finishReason":"` + finish + `"`
		}
		s := `{"candidates":[` + c + `}],"modelVersion":"gemini-x"`
		if usage != "" {
			s += `,"usageMetadata":` + usage
		}
		return s + "}"
	}
	srv, _ := server(t, sseReply(
		chunk(`[{"text":"think","thought":true}]`, "", `{"promptTokenCount":9,"candidatesTokenCount":1}`),
		chunk(`[{"text":"Hel"}]`, "", ""),
		chunk(`[{"text":"lo"},{"functionCall":{"name":"f","args":{"q":"x"}},"thoughtSignature":"sigF"}]`, "", ""),
		chunk(`[{"functionCall":{"name":"g","args":{}}}]`, "STOP", `{"promptTokenCount":9,"candidatesTokenCount":5,"thoughtsTokenCount":2}`),
	))
	var chunks []weft.Chunk
	r, err := New(Options{BaseURL: srv.URL}).Call(context.Background(), baseReq(true), func(c weft.Chunk) { chunks = append(chunks, c) })
	if err != nil {
		t.Fatal(err)
	}
	// The two function calls report progress as empty chunks (stall timer).
	if js(chunks) != `[{"Text":"","Reasoning":"think"},{"Text":"Hel","Reasoning":""},{"Text":"lo","Reasoning":""},{"Text":"","Reasoning":""},{"Text":"","Reasoning":""}]` {
		t.Errorf("chunks = %s", js(chunks))
	}
	if r.Text != "Hello" || r.Reasoning != "think" || r.FinishReason != "tool_calls" || r.ModelID != "gemini-x" {
		t.Errorf("resp = %+v", r)
	}
	if js(r.ToolCalls) != `[{"id":"","name":"f","arguments":"{\"q\":\"x\"}"},{"id":"","name":"g","arguments":"{}"}]` {
		t.Errorf("calls = %s", js(r.ToolCalls))
	}
	if r.Usage != (weft.Usage{InputTokens: 9, OutputTokens: 7, ReasoningTokens: 2}) {
		t.Errorf("usage = %+v", r.Usage)
	}
	if string(r.ReasoningBlocks) != `[{"kind":"functionCall","thoughtSignature":"sigF"},{"kind":"functionCall","thoughtSignature":""}]` {
		t.Errorf("ReasoningBlocks = %s", r.ReasoningBlocks)
	}
	body := decode(t, r.ResponseBody)
	if _, ok := body["candidates"]; !ok {
		t.Errorf("ResponseBody = %s", r.ResponseBody)
	}

	// Errors inside the stream, blocked prompts, truncation mid-event.
	for name, tc := range map[string]struct {
		serve func(w http.ResponseWriter, r *http.Request)
		typ   weft.ErrorType
	}{
		"error_event": {sseReply(chunk(`[{"text":"a"}]`, "", ""), `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}`), weft.ErrRateLimit},
		"blocked":     {sseReply(`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"}}`), weft.ErrInvalidRequest},
		"malformed":   {sseReply(`{"candidates":[`), weft.ErrServer},
		"no_finish":   {sseReply(chunk(`[{"text":"a"}]`, "", "")), weft.ErrServer},
		"mid_event": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: "+chunk(`[{"text":"a"}]`, "STOP", ""))
		}, weft.ErrServer},
	} {
		srv, _ := server(t, tc.serve)
		_, err := New(Options{BaseURL: srv.URL}).Call(context.Background(), baseReq(true), nil)
		if pe := asPE(t, err); pe.Type != tc.typ {
			t.Errorf("%s: got %v, want %s", name, pe, tc.typ)
		}
	}
}

func TestCancelAndConnectionErrors(t *testing.T) {
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	_, err := New(Options{BaseURL: srv.URL}).Call(ctx, baseReq(true), nil)
	if pe := asPE(t, err); !errors.Is(err, context.Canceled) || pe.Type != weft.ErrUnknown {
		t.Errorf("cancel: %v", err)
	}

	_, err = New(Options{BaseURL: "http://127.0.0.1:1"}).Call(context.Background(), baseReq(false), nil)
	if pe := asPE(t, err); pe.Type != weft.ErrServer {
		t.Errorf("refused: %v", pe)
	}
	_, err = New(Options{}).Call(context.Background(), &weft.Request{}, nil)
	if pe := asPE(t, err); pe.Type != weft.ErrInvalidRequest {
		t.Errorf("no model: %v", pe)
	}
}
