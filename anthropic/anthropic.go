// Package anthropic is Weft's adapter for the Anthropic Messages API, built on the official
// anthropic-sdk-go client with its retries turned off: one Call is one attempt, the engine owns
// retries and fallbacks.
//
// Server tools, which Anthropic runs itself: a weft.ToolSpec whose Provider is "anthropic" is sent as one
// of Anthropic's own tools (web_search, code_execution, web_fetch, or any other type by name; a
// map-valued request option named after the tool adds its settings, such as max_uses). Anthropic
// runs the calls itself: each comes back as a Response.ToolCalls entry and a
// Response.ProviderResults entry whose Raw keeps the server_tool_use block and its result block
// verbatim, and later requests send those blocks back unchanged.
//
// Strict tools: the request option strictTools: true sends every function tool with strict: true
// and its input schema closed (schema.Strict with schema.Closed), so that Anthropic guarantees
// calls that match it. The option itself never reaches the request body.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"
	"github.com/weft-agents/weft"
)

// DefaultBaseURL is the Anthropic API base URL, version included.
const DefaultBaseURL = "https://api.anthropic.com/v1"

// DefaultMaxTokens is sent as max_tokens when neither modelOptions.maxOutputTokens nor the model's
// maxOutputTokens capability says otherwise (Anthropic requires max_tokens).
const DefaultMaxTokens = 4096

// Options configure a Provider.
type Options struct {
	// BaseURL includes the API version (default https://api.anthropic.com/v1); the adapter appends
	// only /messages.
	BaseURL string
	// Headers are sent with every request (e.g. anthropic-beta).
	Headers map[string]string
	// HTTPClient sends the requests; nil uses a client without timeouts (streams are long-lived;
	// the engine's context bounds each call).
	HTTPClient *http.Client
}

// Provider is a weft.Provider for the Anthropic Messages API. It is safe for concurrent use.
type Provider struct {
	client  sdk.Client
	baseURL string
	headers map[string]string
}

var _ weft.Provider = (*Provider)(nil)

// New returns a Provider for opts.
func New(opts Options) *Provider {
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	p := &Provider{baseURL: base, headers: opts.Headers}
	p.client = sdk.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithMaxRetries(0),
		option.WithHTTPClient(hc),
		option.WithBaseURL(base),
	)
	return p
}

// errCapture keeps the status, headers and body of an error response, whatever the SDK makes of it.
type errCapture struct {
	status int
	header http.Header
	body   []byte
}

// Call sends one Messages request and returns the reply; failures are *weft.ProviderError.
func (p *Provider) Call(ctx context.Context, req *weft.Request, onChunk func(weft.Chunk)) (*weft.Response, error) {
	if req == nil || req.Model == nil {
		return nil, &weft.ProviderError{Type: weft.ErrInvalidRequest, Message: "anthropic: request has no model"}
	}
	stream := req.Model.Capabilities.Streaming()
	if v, ok := req.Option("stream").(bool); ok {
		stream = v
	}
	b, err := buildRequest(req, stream)
	if err != nil {
		return nil, &weft.ProviderError{Type: weft.ErrInvalidRequest, Message: "anthropic: " + err.Error(), Err: err}
	}

	capt := &errCapture{}
	opts := make([]option.RequestOption, 0, 8)
	if base, ok := req.Option("baseUrl").(string); ok && base != "" {
		opts = append(opts, option.WithBaseURL(base))
	}
	if req.APIKey != "" {
		opts = append(opts, option.WithAPIKey(req.APIKey))
	}
	for k, v := range p.headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	if hs := req.Option("headers"); hs != nil {
		switch h := hs.(type) {
		case map[string]string:
			for k, v := range h {
				opts = append(opts, option.WithHeader(k, v))
			}
		case map[string]any:
			for k, v := range h {
				opts = append(opts, option.WithHeader(k, fmt.Sprint(v)))
			}
		}
	}
	if stream {
		opts = append(opts, option.WithHeader("Accept", "text/event-stream"))
	}
	opts = append(opts, option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if err == nil && res != nil && res.StatusCode >= 400 {
			body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
			_ = res.Body.Close()
			res.Body = io.NopCloser(bytes.NewReader(body))
			capt.status, capt.header, capt.body = res.StatusCode, res.Header, body
		} else if err == nil && res != nil && res.Body != nil {
			res.Body = weft.LimitReply(res.Body, req.Model.ReplyLimit())
		}
		return res, err
	}))

	var resp *weft.Response
	if stream {
		var raw *http.Response
		err = p.client.Post(ctx, "messages", b.body, &raw, opts...)
		if err == nil {
			resp, err = readStream(ctx, raw, b.names, onChunk)
		}
	} else {
		var raw []byte
		err = p.client.Post(ctx, "messages", b.body, &raw, opts...)
		if err == nil {
			resp, err = parseMessage(raw, b.names)
		}
	}
	if err != nil {
		return nil, classify(ctx, err, capt, req.APIKey)
	}
	resp.RequestBody = b.body
	return resp, nil
}

// streamError is a failure found while reading a stream.
type streamError struct {
	typ     weft.ErrorType
	message string
	err     error
}

func (e *streamError) Error() string { return e.message }
func (e *streamError) Unwrap() error { return e.err }

// classify turns any failure of a call into a secret-free *weft.ProviderError.
func classify(ctx context.Context, err error, capt *errCapture, key string) error {
	var pe *weft.ProviderError
	if errors.As(err, &pe) {
		pe.Message = redact(pe.Message, key)
		return pe
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		t := weft.ErrUnknown
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			t = weft.ErrTimeout
		}
		return &weft.ProviderError{Type: t, Message: "anthropic: call aborted: " + ctxErr.Error(), Err: ctxErr}
	}
	if capt.status >= 400 {
		pe := &weft.ProviderError{Type: weft.ErrorTypeForStatus(capt.status), Status: capt.status,
			RetryAfter: retryAfter(capt.header), Err: err}
		var eb errorEnvelope
		if json.Unmarshal(capt.body, &eb) == nil && eb.Error.Message != "" {
			pe.Message = eb.Error.Message
			if pe.Type == weft.ErrUnknown {
				pe.Type = typeForError(eb.Error.Type)
			}
		} else {
			msg := strings.TrimSpace(string(capt.body))
			if len(msg) > 200 {
				msg = msg[:200] + "…"
			}
			if msg == "" {
				msg = http.StatusText(capt.status)
			}
			pe.Message = msg
		}
		pe.Message = redact(pe.Message, key)
		pe.Err = errors.New(pe.Message)
		return weft.ClassifyContextLength(pe)
	}
	var se *streamError
	if errors.As(err, &se) {
		return &weft.ProviderError{Type: se.typ, Message: redact(se.message, key), Err: se}
	}
	var ae *sdk.Error
	if errors.As(err, &ae) {
		return &weft.ProviderError{Type: weft.ErrorTypeForStatus(ae.StatusCode), Status: ae.StatusCode,
			Message: redact(ae.Error(), key), Err: errors.New(redact(ae.Error(), key))}
	}
	msg := redact("anthropic: connection error: "+err.Error(), key)
	return &weft.ProviderError{Type: weft.ErrServer, Message: msg, Err: errors.New(msg)}
}

func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[REDACTED]")
}

// errorEnvelope is Anthropic's error body and error event.
type errorEnvelope struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// typeForError classifies an Anthropic error type (used for stream error events and unusual statuses).
func typeForError(t string) weft.ErrorType {
	switch t {
	case "authentication_error", "permission_error":
		return weft.ErrAuth
	case "invalid_request_error", "not_found_error", "request_too_large":
		return weft.ErrInvalidRequest
	case "rate_limit_error":
		return weft.ErrRateLimit
	case "timeout_error":
		return weft.ErrTimeout
	}
	return weft.ErrServer
}

// finishReason maps Anthropic's stop_reason to Weft's words. pause_turn (Anthropic paused a long
// server tool turn, e.g. many web searches) is reported as stop: the reply is complete as far as
// the engine is concerned, its server tool calls carry their results, and the next request sends
// those blocks back so that the model can go on from there.
func finishReason(s string) string {
	switch s {
	case "end_turn", "pause_turn":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens":
		return "length"
	}
	return s
}

// sseDecoder wraps the SDK's event-stream decoder.
func sseDecoder(res *http.Response) ssestream.Decoder { return ssestream.NewDecoder(res) }
