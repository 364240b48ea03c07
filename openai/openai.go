// Package openai is the Weft model provider adapter for the OpenAI chat-completions wire, used by
// the providers openai, openrouter, groq, xai, deepinfra, cerebras, ollama and openai-compatible,
// and by azure_openai (NewAzure: openai-go's Azure support — deployment path, api-version, api-key
// or Entra ID token), and for the OpenAI Responses wire (request option useResponsesApi), which adds provider-executed
// tools (web search, code interpreter, …) and replayable encrypted reasoning. It makes exactly one
// attempt per Call (the engine owns retries) and classifies every failure as a *weft.ProviderError.
package openai

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

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/weft-agents/weft"
)

// DefaultBaseURL is the OpenAI API base URL, version included.
const DefaultBaseURL = "https://api.openai.com/v1"

// Options configure a Provider.
type Options struct {
	// BaseURL is the API base including the version (…/v1); default DefaultBaseURL. A model's
	// providerOptions.baseUrl overrides it.
	BaseURL string
	// Headers are sent with every request; a model's providerOptions.headers add to and override them.
	Headers map[string]string
	// HTTPClient sends the requests; nil uses a client without timeout (ctx bounds each call).
	HTTPClient *http.Client
	// Name is the provider name used in messages and to pick dialect details (developer role for
	// openai, the reasoning object and reasoning_details replay for openrouter); default "openai".
	Name string
}

// Provider is a weft.Provider speaking the OpenAI chat-completions wire, or the Responses wire for
// requests whose option useResponsesApi is true. It is safe for concurrent use.
type Provider struct {
	opts   Options
	client sdk.Client
	// azure is set for Azure OpenAI (NewAzure).
	azure *azureConfig
}

var _ weft.Provider = (*Provider)(nil)

// New returns a Provider for opts. The SDK's own retries are off: one Call is one attempt.
func New(opts Options) *Provider {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	if opts.Name == "" {
		opts.Name = "openai"
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	client := sdk.NewClient(
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		option.WithBaseURL(opts.BaseURL),
		// Keys and account headers come from the request, never from the process environment.
		option.WithAPIKey(""),
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
	)
	return &Provider{opts: opts, client: client}
}

// Call sends one chat-completions request — a Responses request when the option useResponsesApi
// is true — streamed when the model's capabilities allow, and returns the assembled reply, or a
// *weft.ProviderError.
func (p *Provider) Call(ctx context.Context, req *weft.Request, onChunk func(weft.Chunk)) (*weft.Response, error) {
	if req == nil || req.Model == nil {
		return nil, &weft.ProviderError{Type: weft.ErrInvalidRequest, Message: p.opts.Name + ": request has no model"}
	}
	if req.Option("useResponsesApi") == true {
		return p.callResponses(ctx, req, onChunk)
	}
	stream := req.Model.Capabilities.Streaming()
	body, names, err := p.buildBody(req, stream)
	if err != nil {
		return nil, &weft.ProviderError{Type: weft.ErrInvalidRequest, Message: p.opts.Name + ": " + err.Error(), Err: err}
	}

	res, err := p.post(ctx, req, "chat/completions", body, stream)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	res.Body = weft.LimitReply(res.Body, req.Model.ReplyLimit())
	var out *weft.Response
	if stream && isEventStream(res) {
		out, err = p.readStream(ctx, req, res, names, onChunk)
	} else {
		out, err = p.readJSON(ctx, req, res, names, onChunk)
	}
	if err != nil {
		return nil, err
	}
	out.RequestBody = body
	return out, nil
}

// post sends body to path (relative to the base URL) with the request's key and headers, one
// attempt, and returns the open 2xx response or a classified *weft.ProviderError. The caller closes
// the body.
func (p *Provider) post(ctx context.Context, req *weft.Request, path string, body []byte, stream bool) (*http.Response, error) {
	// The SDK turns an error status into its own error type and drains the body; the middleware
	// keeps a copy so the provider's message and headers can be classified here.
	var errBody []byte
	capture := func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if err == nil && res != nil && res.StatusCode >= 400 && res.Body != nil {
			errBody, _ = io.ReadAll(io.LimitReader(res.Body, 1<<20))
			res.Body.Close()
			res.Body = io.NopCloser(bytes.NewReader(errBody))
		}
		return res, err
	}
	var reqOpts []option.RequestOption
	if p.azure != nil {
		az, err := p.azureRequestOptions(req)
		if err != nil {
			return nil, err
		}
		reqOpts = append(az, option.WithMiddleware(capture))
	} else {
		reqOpts = []option.RequestOption{option.WithAPIKey(req.APIKey), option.WithMiddleware(capture)}
		if u := p.baseURL(req); u != p.opts.BaseURL {
			reqOpts = append(reqOpts, option.WithBaseURL(u))
		}
	}
	for k, v := range p.headers(req) {
		reqOpts = append(reqOpts, option.WithHeader(k, v))
	}
	if stream {
		reqOpts = append(reqOpts, option.WithHeader("Accept", "text/event-stream"))
	}

	var res *http.Response
	err := p.client.Post(ctx, path, body, &res, reqOpts...)
	if err != nil {
		if res != nil && res.Body != nil && res.StatusCode < 400 {
			res.Body.Close()
		}
		return nil, p.callError(ctx, req, res, errBody, err)
	}
	if res == nil || res.Body == nil {
		return nil, p.fail(weft.ErrUnknown, 0, "no response", nil)
	}
	if res.StatusCode >= 400 { // not reached with the SDK, kept for safety
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
		return nil, p.statusError(req, res, b, nil)
	}
	return res, nil
}

func isEventStream(res *http.Response) bool {
	return strings.HasPrefix(strings.ToLower(res.Header.Get("Content-Type")), "text/event-stream")
}

// baseURL is the transport base: providerOptions/options baseUrl, else the configured one.
func (p *Provider) baseURL(req *weft.Request) string {
	u := p.opts.BaseURL
	if s, ok := req.Model.ProviderOptions["baseUrl"].(string); ok && s != "" {
		u = s
	}
	if s, ok := req.Options["baseUrl"].(string); ok && s != "" {
		u = s
	}
	return u
}

// headers merges the configured headers with providerOptions.headers and options.headers.
func (p *Provider) headers(req *weft.Request) map[string]string {
	h := map[string]string{}
	for k, v := range p.opts.Headers {
		h[k] = v
	}
	for _, m := range []map[string]any{req.Model.ProviderOptions, req.Options} {
		switch x := m["headers"].(type) {
		case map[string]string:
			for k, v := range x {
				h[k] = v
			}
		case map[string]any:
			for k, v := range x {
				if s, ok := v.(string); ok {
					h[k] = s
				} else if v != nil {
					h[k] = fmt.Sprint(v)
				}
			}
		}
	}
	return h
}

// fail builds a ProviderError whose message names the provider.
func (p *Provider) fail(t weft.ErrorType, status int, msg string, err error) *weft.ProviderError {
	var pe *weft.ProviderError
	if errors.As(err, &pe) && pe.Type == weft.ErrReplyTooLarge {
		return &weft.ProviderError{Type: pe.Type, Status: status, Message: p.opts.Name + ": " + pe.Message, Err: err}
	}
	return weft.ClassifyContextLength(&weft.ProviderError{Type: t, Status: status, Message: p.opts.Name + ": " + msg, Err: err})
}

// callError classifies a failed SDK call: context end, HTTP status or transport failure.
func (p *Provider) callError(ctx context.Context, req *weft.Request, res *http.Response, errBody []byte, err error) error {
	if res != nil && res.StatusCode >= 400 {
		return p.statusError(req, res, errBody, nil)
	}
	if ce := ctx.Err(); ce != nil {
		return p.ctxError(ce)
	}
	return p.fail(weft.ErrUnknown, 0, "request failed: "+redact(err.Error(), req.APIKey), err)
}

func (p *Provider) ctxError(ce error) error {
	t := weft.ErrUnknown
	if errors.Is(ce, context.DeadlineExceeded) {
		t = weft.ErrTimeout
	}
	return p.fail(t, 0, ce.Error(), ce)
}

// statusError classifies an HTTP error status with the provider's message and Retry-After.
func (p *Provider) statusError(req *weft.Request, res *http.Response, body []byte, cause error) error {
	msg := errorMessage(body)
	if msg == "" {
		msg = http.StatusText(res.StatusCode)
	}
	if msg == "" {
		msg = "HTTP " + strconv.Itoa(res.StatusCode)
	}
	pe := p.fail(weft.ErrorTypeForStatus(res.StatusCode), res.StatusCode, redact(msg, req.APIKey), cause)
	pe.RetryAfter = retryAfter(res.Header, time.Now())
	return pe
}

// errorMessage extracts the provider's message from an error body: error.message, error (string),
// message or detail; else the body text, shortened.
func errorMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			return inner.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		case v.Detail != nil:
			if s, ok := v.Detail.(string); ok {
				return s
			}
			b, _ := json.Marshal(v.Detail)
			return string(b)
		}
		return ""
	}
	s := string(body)
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}

// retryAfter reads retry-after-ms (milliseconds) or Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}

// redact removes the key from a text that could echo it.
func redact(s, key string) string {
	if key == "" || len(key) < 4 {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}
