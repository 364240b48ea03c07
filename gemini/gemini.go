// Package gemini is Weft's adapter for the Google Gemini API (generateContent and
// streamGenerateContent over REST), written on net/http and encoding/json. It makes exactly one
// attempt per Call (the engine owns retries and fallbacks) and classifies every
// failure as a *weft.ProviderError.
//
// Built-in tools, which Gemini runs itself: a weft.ToolSpec whose Provider is "google" is sent as one of
// Gemini's own tools: google_search (or its alias web_search) as googleSearch, code_execution as
// codeExecution, url_context as urlContext, any other name in lowerCamelCase; a map-valued request
// option named after the tool gives its settings. Gemini runs them itself. Code execution comes
// back as executableCode and codeExecutionResult parts, Google Search as the candidate's
// groundingMetadata, URL context as its urlContextMetadata: each becomes a Response.ToolCalls entry
// and a Response.ProviderResults entry whose Raw keeps the parts (or the metadata) verbatim.
//
// Gemini has no strict mode for function declarations: the strictTools option that other adapters
// honour is ignored here, and never sent.
package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/weft-agents/weft"
)

// DefaultBaseURL is the Gemini API base URL, version included.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// Options configure a Provider.
type Options struct {
	// BaseURL is the API base including the version (…/v1beta); default DefaultBaseURL. A model's
	// providerOptions.baseUrl overrides it. The adapter appends /models/{model}:generateContent.
	BaseURL string
	// Headers are sent with every request; a model's providerOptions.headers add to and override them.
	Headers map[string]string
	// HTTPClient sends the requests; nil uses a client without timeout (ctx bounds each call).
	HTTPClient *http.Client
}

// Provider is a weft.Provider for the Gemini API. It is safe for concurrent use.
type Provider struct {
	baseURL string
	headers map[string]string
	client  *http.Client
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
	return &Provider{baseURL: strings.TrimRight(base, "/"), headers: opts.Headers, client: hc}
}

// Call sends one generateContent request (streamGenerateContent?alt=sse when the model streams)
// and returns the reply; failures are *weft.ProviderError. Gemini gives function calls no ids, so
// ToolCalls carry an empty ID unless the reply has one; the engine assigns fresh ids. Calls of
// built-in tools get ids made from the response id, which their ProviderResults answer.
func (p *Provider) Call(ctx context.Context, req *weft.Request, onChunk func(weft.Chunk)) (*weft.Response, error) {
	if req == nil || req.Model == nil {
		return nil, &weft.ProviderError{Type: weft.ErrInvalidRequest, Message: "gemini: request has no model"}
	}
	if req.Model.Model == "" {
		return nil, &weft.ProviderError{Type: weft.ErrInvalidRequest, Message: "gemini: model " + strconv.Quote(req.Model.Name) + " has no upstream model id"}
	}
	stream := req.Model.Capabilities.Streaming()
	if v, ok := req.Option("stream").(bool); ok {
		stream = v
	}
	bt := offeredBuiltins(req)
	body, err := buildRequest(req, bt)
	if err != nil {
		return nil, &weft.ProviderError{Type: weft.ErrInvalidRequest, Message: "gemini: " + err.Error(), Err: err}
	}
	resp, err := p.do(ctx, req, body, stream, bt, onChunk)
	if err != nil {
		return nil, classify(ctx, err, req.APIKey)
	}
	resp.RequestBody = body
	return resp, nil
}

// endpoint returns the URL of the model's generate method.
func (p *Provider) endpoint(req *weft.Request, stream bool) string {
	base := p.baseURL
	if b, ok := req.Option("baseUrl").(string); ok && b != "" {
		base = strings.TrimRight(b, "/")
	}
	model := req.Model.Model
	if !strings.Contains(model, "/") {
		model = "models/" + model // tunedModels/… and models/… are used as given
	}
	if stream {
		return base + "/" + model + ":streamGenerateContent?alt=sse"
	}
	return base + "/" + model + ":generateContent"
}

// do sends the request and reads the reply.
func (p *Provider) do(ctx context.Context, req *weft.Request, body []byte, stream bool, bt *builtins, onChunk func(weft.Chunk)) (*weft.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint(req, stream), bytes.NewReader(body))
	if err != nil {
		return nil, &callError{typ: weft.ErrInvalidRequest, message: "gemini: bad request URL: " + err.Error()}
	}
	hr.Header.Set("Content-Type", "application/json")
	if stream {
		hr.Header.Set("Accept", "text/event-stream")
	}
	for k, v := range p.headers {
		hr.Header.Set(k, v)
	}
	switch h := req.Option("headers").(type) {
	case map[string]string:
		for k, v := range h {
			hr.Header.Set(k, v)
		}
	case map[string]any:
		for k, v := range h {
			hr.Header.Set(k, fmt.Sprint(v))
		}
	}
	if req.APIKey != "" {
		hr.Header.Set("x-goog-api-key", req.APIKey)
	}
	res, err := p.client.Do(hr)
	if err != nil {
		return nil, err
	}
	res.Body = weft.LimitReply(res.Body, req.Model.ReplyLimit())
	// Closing the body on cancellation unblocks a read of a stalled stream.
	stopClose := context.AfterFunc(ctx, func() { _ = res.Body.Close() })
	defer stopClose()
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode >= 400 {
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return nil, statusError(res.StatusCode, res.Header, raw)
	}
	if stream && !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		return readStream(ctx, res.Body, bt, onChunk)
	}
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, readErr(ctx, err)
	}
	if stream {
		// A plain JSON reply to a streaming request: a whole response, or a JSON array of chunks.
		return parseJSONStream(raw, bt, onChunk)
	}
	return parseResponse(raw, bt)
}

// callError is a classified failure found by the adapter (a status, a bad body, a stream error).
type callError struct {
	typ        weft.ErrorType
	status     int
	message    string
	retryAfter time.Duration
	err        error
}

func (e *callError) Error() string { return e.message }
func (e *callError) Unwrap() error { return e.err }

// classify turns any failure of a call into a secret-free *weft.ProviderError.
func classify(ctx context.Context, err error, key string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		t := weft.ErrUnknown
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			t = weft.ErrTimeout
		}
		return &weft.ProviderError{Type: t, Message: "gemini: call aborted: " + ctxErr.Error(), Err: ctxErr}
	}
	var ce *callError
	if errors.As(err, &ce) {
		msg := redact(ce.message, key)
		return weft.ClassifyContextLength(&weft.ProviderError{Type: ce.typ, Status: ce.status, Message: msg, RetryAfter: ce.retryAfter, Err: errors.New(msg)})
	}
	msg := redact("gemini: connection error: "+err.Error(), key)
	return &weft.ProviderError{Type: weft.ErrServer, Message: msg, Err: errors.New(msg)}
}

func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[REDACTED]")
}

// wireError is Gemini's (google.rpc.Status) error body.
type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Type       string `json:"@type"`
		Reason     string `json:"reason"`
		RetryDelay string `json:"retryDelay"`
	} `json:"details"`
}

// statusError classifies an error status with its body.
func statusError(status int, h http.Header, raw []byte) error {
	ce := &callError{typ: weft.ErrorTypeForStatus(status), status: status, retryAfter: retryAfter(h)}
	var we *wireError
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '[' { // streamGenerateContent without alt=sse wraps it in a list
		var list []struct {
			Error *wireError `json:"error"`
		}
		if json.Unmarshal(trimmed, &list) == nil && len(list) > 0 {
			we = list[0].Error
		}
	} else {
		var env struct {
			Error *wireError `json:"error"`
		}
		if json.Unmarshal(trimmed, &env) == nil {
			we = env.Error
		}
	}
	if we == nil || we.Message == "" {
		msg := strings.TrimSpace(string(raw))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		if msg == "" {
			msg = http.StatusText(status)
		}
		ce.message = msg
		return ce
	}
	ce.message = we.Message
	if ce.typ == weft.ErrUnknown {
		ce.typ = typeForStatus(we.Status)
	}
	for _, d := range we.Details {
		if d.Reason == "API_KEY_INVALID" {
			ce.typ = weft.ErrAuth // Gemini answers a bad key with 400 INVALID_ARGUMENT
		}
		if ce.retryAfter == 0 && d.RetryDelay != "" {
			if dur, err := time.ParseDuration(d.RetryDelay); err == nil && dur > 0 {
				ce.retryAfter = dur
			}
		}
	}
	return ce
}

// typeForStatus classifies a google.rpc status code name (for unusual HTTP statuses and stream
// errors).
func typeForStatus(s string) weft.ErrorType {
	switch s {
	case "UNAUTHENTICATED", "PERMISSION_DENIED":
		return weft.ErrAuth
	case "INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return weft.ErrInvalidRequest
	case "RESOURCE_EXHAUSTED":
		return weft.ErrRateLimit
	case "DEADLINE_EXCEEDED":
		return weft.ErrTimeout
	case "INTERNAL", "UNAVAILABLE", "UNKNOWN", "ABORTED", "DATA_LOSS":
		return weft.ErrServer
	}
	return weft.ErrUnknown
}

// retryAfter reads Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// readErr describes a failed read of the response body.
func readErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var pe *weft.ProviderError
	if errors.As(err, &pe) && pe.Type == weft.ErrReplyTooLarge {
		return &callError{typ: pe.Type, message: "gemini: " + pe.Message, err: err}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &callError{typ: weft.ErrServer, message: "gemini: response truncated: " + err.Error(), err: err}
	}
	return &callError{typ: weft.ErrServer, message: "gemini: reading response: " + err.Error(), err: err}
}
