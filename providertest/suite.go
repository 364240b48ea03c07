package providertest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// Reply is a provider-neutral model reply that a Fake encodes in its wire format.
type Reply struct {
	// Model is the upstream model id the reply reports.
	Model string
	// Chunks are the text and reasoning deltas in order; a non-streaming encoding concatenates them
	// (all reasoning, then all text). Each chunk has either Text or Reasoning set.
	Chunks []weft.Chunk
	// ToolCalls are the calls the model makes, in order. A streaming encoding should split each
	// call's Arguments over at least two deltas and send the id and name only in the first.
	ToolCalls []weft.ToolCall
	// FinishReason is in weft terms: stop, tool_calls or length.
	FinishReason string
	// Usage is the token usage to report (input, output, cached and reasoning tokens).
	Usage weft.Usage
}

// Text returns the concatenated text of the reply's chunks.
func (r Reply) Text() string {
	var b strings.Builder
	for _, c := range r.Chunks {
		b.WriteString(c.Text)
	}
	return b.String()
}

// Reasoning returns the concatenated reasoning of the reply's chunks.
func (r Reply) Reasoning() string {
	var b strings.Builder
	for _, c := range r.Chunks {
		b.WriteString(c.Reasoning)
	}
	return b.String()
}

// Fake encodes replies and errors in a provider's wire format for the conformance suite; the
// suite owns the HTTP server and the connection (statuses, resets, stalls, truncation).
type Fake interface {
	// Encode returns the content type and the complete HTTP body of a successful reply: a JSON
	// body, or when stream is true the whole event stream (one event per delta, terminated the
	// way the provider terminates a stream).
	Encode(reply Reply, stream bool) (contentType string, body []byte)
	// EncodeError returns the content type and body the provider sends with an error status,
	// carrying message as the provider's error message.
	EncodeError(status int, message string) (contentType string, body []byte)
}

// RequestChecker is implemented by the fakes of providers whose requests have a shape of their own
// beyond the body (Azure OpenAI: the deployment path, the api-version query, the api-key header):
// the suites call CheckRequest with every request the adapter sends.
type RequestChecker interface {
	CheckRequest(t *testing.T, r *http.Request)
}

// ReasoningInOutput is implemented by the fakes of providers that count reasoning tokens inside
// the output tokens without reporting them apart (Anthropic): the suite then expects
// Usage.ReasoningTokens to be 0 instead of the reply's value.
type ReasoningInOutput interface{ ReasoningInOutput() bool }

// APIKey is the key the suite passes in weft.Request.APIKey; it must never appear in an error.
const APIKey = "sk-providertest-SECRET-key"

// ImageBase64 is the base64 payload of the image the image scenario sends as a data: URI; the
// request body must contain it.
const ImageBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

type scenario struct {
	name   string
	stream bool
	req    func(*weft.Request)
	// serve writes the response; fake bodies are available through f.
	serve func(t *testing.T, f Fake, w http.ResponseWriter, r *http.Request, body []byte)
	// ctxTimeout bounds the call (0 = 10s).
	ctxTimeout time.Duration
	check      func(t *testing.T, resp *weft.Response, chunks []weft.Chunk, err error, body []byte)
}

func textReply() Reply {
	return Reply{Model: "fake-model-1", Chunks: []weft.Chunk{{Text: "Hello"}, {Text: ", "}, {Text: "world"}, {Text: "!"}, {Text: " How"}, {Text: " are"}, {Text: " you?"}},
		FinishReason: "stop", Usage: weft.Usage{InputTokens: 12, OutputTokens: 7, CachedTokens: 4}}
}

func toolReply(n int) Reply {
	calls := []weft.ToolCall{
		{ID: "call_weather_1", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`},
		{ID: "call_time_2", Name: "get_time", Arguments: `{"zone":"Europe/Paris"}`},
		{ID: "call_weather_3", Name: "get_weather", Arguments: `{"city":"Tokyo","unit":"celsius"}`},
	}
	return Reply{Model: "fake-model-1", ToolCalls: calls[:n], FinishReason: "tool_calls",
		Usage: weft.Usage{InputTokens: 40, OutputTokens: 25}}
}

// reasoningReplyFor is reasoningReply with the usage the provider can report.
func reasoningReplyFor(f Fake) Reply {
	r := reasoningReply()
	if ro, ok := f.(ReasoningInOutput); ok && ro.ReasoningInOutput() {
		r.Usage.ReasoningTokens = 0
	}
	return r
}

func reasoningReply() Reply {
	return Reply{Model: "fake-model-1", Chunks: []weft.Chunk{{Reasoning: "Two plus two "}, {Reasoning: "is four."}, {Text: "The answer"}, {Text: " is 4."}},
		FinishReason: "stop", Usage: weft.Usage{InputTokens: 20, OutputTokens: 30, ReasoningTokens: 18}}
}

func serveReply(reply Reply, stream bool) func(t *testing.T, f Fake, w http.ResponseWriter, r *http.Request, body []byte) {
	return func(t *testing.T, f Fake, w http.ResponseWriter, r *http.Request, body []byte) {
		ct, b := f.Encode(reply, stream)
		w.Header().Set("Content-Type", ct)
		if !stream {
			_, _ = w.Write(b)
			return
		}
		// Write event by event with flushes so the adapter sees a real stream.
		fl, _ := w.(http.Flusher)
		for _, ev := range splitEvents(b) {
			_, _ = w.Write(ev)
			if fl != nil {
				fl.Flush()
			}
		}
	}
}

// splitEvents splits an event stream after each blank line, keeping the bytes intact.
func splitEvents(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.Index(b, []byte("\n\n"))
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i+2])
		b = b[i+2:]
	}
	return out
}

func serveError(status int, msg string, hdr map[string]string) func(t *testing.T, f Fake, w http.ResponseWriter, r *http.Request, body []byte) {
	return func(t *testing.T, f Fake, w http.ResponseWriter, r *http.Request, body []byte) {
		ct, b := f.EncodeError(status, msg)
		w.Header().Set("Content-Type", ct)
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}
}

func checkReply(want Reply, stream bool) func(t *testing.T, resp *weft.Response, chunks []weft.Chunk, err error, body []byte) {
	return func(t *testing.T, resp *weft.Response, chunks []weft.Chunk, err error, body []byte) {
		t.Helper()
		if err != nil {
			t.Fatalf("Call: unexpected error %v", err)
		}
		if resp == nil {
			t.Fatal("Call returned nil response and nil error")
		}
		if resp.Text != want.Text() {
			t.Errorf("Text = %q, want %q", resp.Text, want.Text())
		}
		if resp.Reasoning != want.Reasoning() {
			t.Errorf("Reasoning = %q, want %q", resp.Reasoning, want.Reasoning())
		}
		if resp.FinishReason != want.FinishReason {
			t.Errorf("FinishReason = %q, want %q", resp.FinishReason, want.FinishReason)
		}
		if len(resp.ToolCalls) != len(want.ToolCalls) {
			t.Errorf("ToolCalls = %+v, want %+v", resp.ToolCalls, want.ToolCalls)
		} else {
			for i := range want.ToolCalls {
				if resp.ToolCalls[i] != want.ToolCalls[i] {
					t.Errorf("ToolCalls[%d] = %+v, want %+v", i, resp.ToolCalls[i], want.ToolCalls[i])
				}
			}
		}
		u := resp.Usage
		if u.InputTokens != want.Usage.InputTokens || u.OutputTokens != want.Usage.OutputTokens ||
			u.CachedTokens != want.Usage.CachedTokens || u.ReasoningTokens != want.Usage.ReasoningTokens {
			t.Errorf("Usage = %+v, want %+v", u, want.Usage)
		}
		if len(resp.RequestBody) == 0 || len(resp.ResponseBody) == 0 {
			t.Errorf("RequestBody/ResponseBody not set (%d/%d bytes)", len(resp.RequestBody), len(resp.ResponseBody))
		}
		if bytes.Contains(resp.RequestBody, []byte(APIKey)) {
			t.Error("RequestBody contains the API key")
		}
		if stream {
			var text, reasoning strings.Builder
			for _, c := range chunks {
				text.WriteString(c.Text)
				reasoning.WriteString(c.Reasoning)
			}
			if text.String() != want.Text() || reasoning.String() != want.Reasoning() {
				t.Errorf("streamed chunks text %q reasoning %q, want %q / %q", text.String(), reasoning.String(), want.Text(), want.Reasoning())
			}
			if want.Text() != "" && len(chunks) < 2 {
				t.Errorf("got %d chunks, want the deltas streamed separately", len(chunks))
			}
		} else if len(chunks) > 0 {
			// Chunks are allowed for non-streaming calls only if they add up to the reply.
			var text strings.Builder
			for _, c := range chunks {
				text.WriteString(c.Text)
			}
			if text.String() != want.Text() {
				t.Errorf("non-streaming chunks add up to %q, want %q", text.String(), want.Text())
			}
		}
	}
}

func checkError(typ weft.ErrorType, status int, msg string, retryAfter time.Duration) func(t *testing.T, resp *weft.Response, chunks []weft.Chunk, err error, body []byte) {
	return func(t *testing.T, resp *weft.Response, chunks []weft.Chunk, err error, body []byte) {
		t.Helper()
		pe := providerError(t, err)
		if pe == nil {
			return
		}
		if pe.Type != typ {
			t.Errorf("Type = %q, want %q (%v)", pe.Type, typ, pe)
		}
		if pe.Status != status {
			t.Errorf("Status = %d, want %d", pe.Status, status)
		}
		if msg != "" && !strings.Contains(pe.Message, msg) {
			t.Errorf("Message = %q, want it to contain the provider's message %q", pe.Message, msg)
		}
		if pe.RetryAfter != retryAfter {
			t.Errorf("RetryAfter = %v, want %v", pe.RetryAfter, retryAfter)
		}
	}
}

// providerError asserts err is a *weft.ProviderError free of the API key.
func providerError(t *testing.T, err error) *weft.ProviderError {
	t.Helper()
	if err == nil {
		t.Fatal("Call succeeded, want an error")
	}
	if strings.Contains(err.Error(), APIKey) {
		t.Errorf("error leaks the API key: %v", err)
	}
	var pe *weft.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %T %v is not a *weft.ProviderError", err, err)
		return nil
	}
	if pe.Message == "" {
		t.Errorf("ProviderError has an empty Message: %v", pe)
	}
	if strings.Contains(pe.Message, APIKey) {
		t.Errorf("ProviderError message leaks the API key: %q", pe.Message)
	}
	return pe
}

// checkBroken accepts a readable unknown or server_error ProviderError.
func checkBroken(t *testing.T, resp *weft.Response, chunks []weft.Chunk, err error, body []byte) {
	t.Helper()
	pe := providerError(t, err)
	if pe == nil {
		return
	}
	if pe.Type != weft.ErrUnknown && pe.Type != weft.ErrServer {
		t.Errorf("Type = %q, want unknown or server_error (%v)", pe.Type, pe)
	}
}

func weatherTools() []weft.ToolSpec {
	obj := func(props string) *weft.Schema {
		s := &weft.Schema{}
		if err := s.UnmarshalJSON([]byte(props)); err != nil {
			panic(err)
		}
		return s
	}
	return []weft.ToolSpec{
		{Name: "get_weather", Description: "Current weather of a city.", Parameters: obj(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}`)},
		{Name: "get_time", Description: "Current time in a zone.", Parameters: obj(`{"type":"object","properties":{"zone":{"type":"string"}},"required":["zone"]}`)},
	}
}

func scenarios(f Fake) []scenario {
	withTools := func(r *weft.Request) {
		r.Tools = weatherTools()
		r.ToolChoice = weft.ToolChoiceAuto
		r.ParallelToolCalls = true
	}
	cut := func(reset bool) func(t *testing.T, f Fake, w http.ResponseWriter, r *http.Request, body []byte) {
		return func(t *testing.T, f Fake, w http.ResponseWriter, r *http.Request, body []byte) {
			ct, b := f.Encode(textReply(), true)
			evs := splitEvents(b)
			w.Header().Set("Content-Type", ct)
			for _, ev := range evs[:len(evs)/2] {
				_, _ = w.Write(ev)
			}
			w.(http.Flusher).Flush()
			if !reset {
				return // the handler returns: the body ends cleanly but early
			}
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // close with RST
			}
			_ = conn.Close()
		}
	}
	return []scenario{
		{name: "text", req: nil, serve: serveReply(textReply(), false), check: checkReply(textReply(), false)},
		{name: "streamed_text", stream: true, serve: serveReply(textReply(), true), check: checkReply(textReply(), true)},
		{name: "tool_call", req: withTools, serve: serveReply(toolReply(1), false), check: checkReply(toolReply(1), false)},
		{name: "streamed_tool_calls", stream: true, req: withTools, serve: serveReply(toolReply(3), true), check: checkReply(toolReply(3), true)},
		{name: "image_input", req: func(r *weft.Request) {
			r.Messages = append(r.Messages, weft.LLMMessage{Role: weft.RoleUser, Parts: []weft.ContentPart{
				{Type: weft.PartText, Text: "What is in this image?"},
				{Type: weft.PartImage, URL: "data:image/png;base64," + ImageBase64, MimeType: "image/png"},
			}})
		}, serve: func(t *testing.T, f Fake, w http.ResponseWriter, r *http.Request, body []byte) {
			if !bytes.Contains(body, []byte(ImageBase64)) {
				t.Errorf("request body does not carry the image data: %s", body)
			}
			serveReply(textReply(), false)(t, f, w, r, body)
		}, check: checkReply(textReply(), false)},
		{name: "streamed_reasoning", stream: true, req: func(r *weft.Request) { r.Reasoning = &weft.Reasoning{Effort: "low", MaxTokens: 2048} },
			serve: serveReply(reasoningReply(), true), check: checkReply(reasoningReplyFor(f), true)},
		{name: "reasoning", req: func(r *weft.Request) { r.Reasoning = &weft.Reasoning{Effort: "low", MaxTokens: 2048} },
			serve: serveReply(reasoningReply(), false), check: checkReply(reasoningReplyFor(f), false)},
		{name: "error_401", serve: serveError(401, "Incorrect API key provided", nil), check: checkError(weft.ErrAuth, 401, "Incorrect API key provided", 0)},
		{name: "error_400", serve: serveError(400, "Invalid value for messages", nil), check: checkError(weft.ErrInvalidRequest, 400, "Invalid value for messages", 0)},
		{name: "error_429_retry_after", serve: serveError(429, "Rate limit reached", map[string]string{"Retry-After": "7"}), check: checkError(weft.ErrRateLimit, 429, "Rate limit reached", 7*time.Second)},
		{name: "error_500", serve: serveError(500, "The server had an error", nil), check: checkError(weft.ErrServer, 500, "The server had an error", 0)},
		{name: "error_529", serve: serveError(529, "Overloaded", nil), check: checkError(weft.ErrServer, 529, "Overloaded", 0)},
		{name: "streamed_error_500", stream: true, serve: serveError(500, "The server had an error", nil), check: checkError(weft.ErrServer, 500, "The server had an error", 0)},
		{name: "malformed_json", serve: func(t *testing.T, f Fake, w http.ResponseWriter, r *http.Request, body []byte) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id": "x", "choices": [ {"mess`))
		}, check: checkBroken},
		{name: "connection_reset_mid_stream", stream: true, serve: cut(true), check: checkBroken},
		{name: "truncated_stream", stream: true, serve: cut(false), check: checkBroken},
		{name: "stall", stream: true, ctxTimeout: 300 * time.Millisecond, serve: func(t *testing.T, f Fake, w http.ResponseWriter, r *http.Request, body []byte) {
			ct, _ := f.Encode(textReply(), true)
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, check: func(t *testing.T, resp *weft.Response, chunks []weft.Chunk, err error, body []byte) {
			if err == nil {
				t.Fatal("Call succeeded on a stalled stream")
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v does not wrap the context's error", err)
			}
			if strings.Contains(err.Error(), APIKey) {
				t.Errorf("error leaks the API key: %v", err)
			}
		}},
	}
}

// Run is the conformance suite: for each scenario it starts a loopback server whose responses
// f encodes, builds the adapter with newProvider(server URL + "/v1") and checks the Call outcome:
// text, streamed text, one tool call, several streamed tool calls, image input, reasoning
// (streamed and not), error statuses 401/400/429 (Retry-After: 7)/500/529, a malformed JSON body,
// a connection reset mid-stream, a truncated stream and a stall (the adapter must return an error
// wrapping the context's error once ctx expires). Requests carry APIKey, which must never appear
// in errors. Streaming scenarios use a model whose capabilities allow streaming; the others a
// model with supportsStreaming false.
func Run(t *testing.T, newProvider func(baseURL string) weft.Provider, f Fake) {
	for _, sc := range scenarios(f) {
		t.Run(sc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var buf bytes.Buffer
				_, _ = buf.ReadFrom(r.Body)
				mu.Lock()
				got = buf.Bytes()
				mu.Unlock()
				if rc, ok := f.(RequestChecker); ok {
					rc.CheckRequest(t, r)
				}
				sc.serve(t, f, w, r, buf.Bytes())
			}))
			defer srv.Close()
			p := newProvider(srv.URL + "/v1")
			stream := sc.stream
			req := &weft.Request{
				Model: &weft.Model{Name: "fake", Provider: "providertest", Model: "fake-model-1",
					Capabilities: weft.Capabilities{SupportsStreaming: &stream}},
				Messages: []weft.LLMMessage{
					{Role: weft.RoleSystem, Content: "You are a test assistant."},
					{Role: weft.RoleUser, Content: "Say hello."},
				},
				ToolChoice: weft.ToolChoiceAuto,
				APIKey:     APIKey,
				Prompt:     "main", Agent: "tester", Side: weft.SideA,
			}
			if sc.req != nil {
				sc.req(req)
			}
			timeout := sc.ctxTimeout
			if timeout == 0 {
				timeout = 10 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			var chunks []weft.Chunk
			start := time.Now()
			resp, err := p.Call(ctx, req, func(c weft.Chunk) { chunks = append(chunks, c) })
			if d := time.Since(start); d > timeout+5*time.Second {
				t.Errorf("Call took %v (timeout %v)", d, timeout)
			}
			mu.Lock()
			body := got
			mu.Unlock()
			sc.check(t, resp, chunks, err, body)
		})
	}
}
