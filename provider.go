package weft

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/weft-agents/weft/schema"
)

// Provider talks to a model service. One Call is one model attempt; the engine owns retries,
// fallbacks and timeouts. Implementations must be safe for concurrent use.
type Provider interface {
	// Call sends the request and returns the complete response. Streamed text and reasoning are
	// reported through onChunk as they arrive (onChunk may be nil). A failure is returned as a
	// *ProviderError so the engine can classify it; ctx cancellation aborts the call. req is
	// read-only (its tool specs are shared by every request of its prompt), and Call must not keep
	// it, or anything it references, after returning: the engine reuses its buffers.
	Call(ctx context.Context, req *Request, onChunk func(Chunk)) (*Response, error)
}

// ProviderFunc adapts a function to a Provider.
type ProviderFunc func(ctx context.Context, req *Request, onChunk func(Chunk)) (*Response, error)

// Call calls f.
func (f ProviderFunc) Call(ctx context.Context, req *Request, onChunk func(Chunk)) (*Response, error) {
	return f(ctx, req, onChunk)
}

// Request is one provider-neutral model call.
type Request struct {
	// Model is the definition being attempted (a fallback's during fallback).
	Model *Model
	// Messages are system first, then the assembled context.
	Messages []LLMMessage
	// Tools are offered to the model; empty sends none (toolChoice none sends none either).
	Tools []ToolSpec
	// ToolChoice is auto, none or required as sent.
	ToolChoice ToolChoice
	// ParallelToolCalls lets the model return several calls in one reply.
	ParallelToolCalls bool
	// Reasoning configures extended thinking; nil sends none.
	Reasoning *Reasoning
	// Options are the model's providerOptions overlaid by the prompt's modelOptions.
	Options map[string]any
	// Timeouts are the model's effective timeouts (providers with virtual time honour them).
	Timeouts Timeouts
	// APIKey is the resolved key for the provider ("" when none is needed); never logged.
	APIKey string
	// Output, when set, asks for a structured final answer: a JSON object matching the schema.
	// Adapters send their provider's native form (or an instruction where there is none); the
	// engine validates the answer either way.
	Output *OutputSpec
	// Prompt, Agent, Side and Depth say who is calling: the prompt of this request, the thread's
	// current agent, the acting side and the sub-prompt depth within the thread.
	Prompt string
	Agent  string
	Side   Side
	Depth  int
}

// OutputSpec is the shape a structured answer must have.
type OutputSpec struct {
	// Name names the shape (the prompt's name), for providers that want one.
	Name string `json:"name"`
	// Schema is the answer's object schema.
	Schema *schema.Schema `json:"schema"`
}

// OutputInstruction is the instruction that asks a model without a native structured-output
// form for the answer's shape.
func (o *OutputSpec) OutputInstruction() string {
	b, _ := json.Marshal(o.Schema)
	return "Answer with only a JSON object that matches this JSON Schema, with no other text:\n" + string(b)
}

// ToolSpec is a tool as offered to a model.
type ToolSpec struct {
	// Name is the tool name the model calls.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description"`
	// Parameters is the argument schema ({"type":"object","properties":{}} for none).
	Parameters *Schema `json:"parameters"`
	// Provider, when set, marks a provider-executed tool (web search, code interpreter) of that
	// provider.
	Provider string `json:"provider,omitempty"`
}

// Chunk is a streamed piece of a reply. Adapters also send an empty Chunk for streamed output
// that is not text (tool-call argument deltas): it reports progress, which resets the stall timeout.
type Chunk struct {
	// Text is a text delta.
	Text string
	// Reasoning is a reasoning delta.
	Reasoning string
}

// Response is a complete model reply.
type Response struct {
	// Text is the assistant text.
	Text string
	// Reasoning is the reasoning text, when the provider returns it.
	Reasoning string
	// ReasoningBlocks are provider reasoning blocks kept verbatim for replay (e.g. Anthropic thinking
	// with signatures).
	ReasoningBlocks json.RawMessage
	// ToolCalls are the calls the model made, in order, provider-executed ones included (named as
	// offered, i.e. the Weft tool name).
	ToolCalls []ToolCall
	// ProviderResults are the outcomes of the provider-executed calls among ToolCalls: the engine
	// stores each as the call's tool message instead of running it locally.
	ProviderResults []ProviderToolResult
	// FinishReason is stop, tool_calls, length, content_filter or the provider's own word.
	FinishReason string
	// Usage counts tokens and, when the provider reports it, cost.
	Usage Usage
	// ModelID is the upstream model that answered, when reported.
	ModelID string
	// RequestBody and ResponseBody are the wire payloads for the log (redacted before storing).
	// The engine keeps them as they are when there is nothing to redact: a provider must not
	// change them after returning.
	RequestBody, ResponseBody json.RawMessage
}

// ProviderToolResult is the outcome of one provider-executed tool call (web search, code
// execution) returned inside a reply.
type ProviderToolResult struct {
	// CallID is the ToolCall.ID the result answers.
	CallID string `json:"call_id"`
	// Status is success or error.
	Status ToolStatus `json:"status"`
	// Content is the readable result text stored in the tool message (and shown to other
	// providers' models).
	Content string `json:"content"`
	// Raw is the provider's own representation of the call and its result, kept verbatim so the
	// same provider receives it back unchanged on later requests (metadata provider_raw).
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Usage counts the tokens of one model attempt.
type Usage struct {
	InputTokens     int `json:"input_tokens"`
	OutputTokens    int `json:"output_tokens"`
	CachedTokens    int `json:"cached_tokens"`
	ReasoningTokens int `json:"reasoning_tokens"`
	// Cost is the provider-reported cost in USD; nil when not reported.
	Cost *float64 `json:"cost,omitempty"`
}

// ErrorType classifies a provider failure; it decides retries and fallbacks.
type ErrorType string

// The provider error types.
const (
	ErrAuth              ErrorType = "auth_error"
	ErrInvalidRequest    ErrorType = "invalid_request"
	ErrRateLimit         ErrorType = "rate_limit"
	ErrServer            ErrorType = "server_error"
	ErrTimeout           ErrorType = "timeout"
	ErrUnknown           ErrorType = "unknown"
	ErrExpectationFailed ErrorType = "expectation_failed"
	ErrScriptExhausted   ErrorType = "script_exhausted"
	// ErrReplyTooLarge: the reply passed the model's MaxReplyBytes; not retried, fallbacks may run.
	ErrReplyTooLarge ErrorType = "reply_too_large"
	// ErrContextLength: the request did not fit the model's context window. Not retried as it was
	// sent: the run makes the request smaller once (its prompt's context strategy), and fallbacks
	// may run.
	ErrContextLength ErrorType = "context_length_exceeded"
)

// contextLengthPhrases are how providers say a request passed the model's window: OpenAI's
// (code context_length_exceeded, "This model's maximum context length is N tokens", and the
// Responses API's "exceeds the context window"), Anthropic's ("prompt is too long: N tokens > M
// maximum"), Gemini's ("The input token count (N) exceeds the maximum number of tokens allowed
// (M)") and those of common OpenAI-compatible servers (vLLM, llama.cpp, Ollama).
var contextLengthPhrases = []string{
	"context_length_exceeded",
	"maximum context length",
	"context window",
	"prompt is too long",
	"input token count",
	"exceeds the maximum number of tokens",
	"exceed_context_size",
	"context length",
	"too many tokens",
}

// ContextLengthMessage reports whether a provider's error message says the request passed the
// model's context window.
func ContextLengthMessage(msg string) bool {
	low := strings.ToLower(msg)
	for _, p := range contextLengthPhrases {
		if strings.Contains(low, p) {
			return true
		}
	}
	return false
}

// ClassifyContextLength marks an invalid-request failure (400, 413, or none) whose message says
// the request passed the model's window as ErrContextLength, and returns e.
func ClassifyContextLength(e *ProviderError) *ProviderError {
	if e == nil || e.Type == ErrContextLength {
		return e
	}
	if (e.Type == ErrInvalidRequest || e.Status == 413 || e.Type == ErrUnknown) && ContextLengthMessage(e.Message) {
		e.Type = ErrContextLength
	}
	return e
}

// ProviderError is a classified failure of one model attempt.
type ProviderError struct {
	// Type classifies the failure.
	Type ErrorType
	// Status is the HTTP status, 0 when there was none.
	Status int
	// Message is the provider's message, secret-free.
	Message string
	// RetryAfter is the provider's requested wait, 0 when none.
	RetryAfter time.Duration
	// Err is the underlying cause.
	Err error
}

// Error formats the failure with its type and status.
func (e *ProviderError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s (%d): %s", e.Type, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Type, e.Message)
}

// Unwrap returns the cause.
func (e *ProviderError) Unwrap() error { return e.Err }

// Retryable reports whether the same model may be tried again: auth and invalid request errors go
// straight to fallbacks, timeouts and stalls too; script failures never retry.
func (e *ProviderError) Retryable() bool {
	switch e.Type {
	case ErrRateLimit, ErrServer, ErrUnknown:
		return true
	}
	return false
}

// Fallible reports whether fallback models may be tried after this failure.
func (e *ProviderError) Fallible() bool {
	return e.Type != ErrExpectationFailed && e.Type != ErrScriptExhausted
}

// ErrorTypeForStatus classifies an HTTP status: 401/403 auth, 400/404/422 invalid request, 408
// timeout, 429 rate limit, ≥500 server error (529 overloaded included), else unknown.
func ErrorTypeForStatus(status int) ErrorType {
	switch {
	case status == 401 || status == 403:
		return ErrAuth
	case status == 400 || status == 404 || status == 422:
		return ErrInvalidRequest
	case status == 408:
		return ErrTimeout
	case status == 429:
		return ErrRateLimit
	case status >= 500:
		return ErrServer
	}
	return ErrUnknown
}

// Clock tells time and waits; the engine uses it for retries and backoff so that scripted runs can
// use virtual time.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits d or until ctx is done.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// traceLine is the JSON shape of a request in `--trace-requests` and in model-script expectations.
type traceLine struct {
	Model      string       `json:"model"`
	Prompt     string       `json:"prompt"`
	Agent      string       `json:"agent"`
	Side       Side         `json:"side"`
	Depth      int          `json:"depth"`
	ToolChoice ToolChoice   `json:"tool_choice"`
	Tools      []ToolSpec   `json:"tools"`
	Messages   []LLMMessage `json:"messages"`
	Output     *OutputSpec  `json:"output,omitempty"`
}

// TraceJSON serialises the request as one `--trace-requests` line: {model, prompt, agent, side,
// depth, tool_choice, tools, messages} with the model's definition name and LLMMessage messages.
func (r *Request) TraceJSON() []byte {
	t := traceLine{Prompt: r.Prompt, Agent: r.Agent, Side: r.Side, Depth: r.Depth, ToolChoice: r.ToolChoice,
		Tools: r.Tools, Messages: r.Messages, Output: r.Output}
	if r.Model != nil {
		t.Model = r.Model.Name
	}
	if t.ToolChoice == "" {
		t.ToolChoice = ToolChoiceAuto
	}
	if t.Tools == nil {
		t.Tools = []ToolSpec{}
	}
	// The messages, which hold the request's bulk, are appended to one buffer of about their size
	// after the rest (which ends with them, less the output); through encoding/json each message's
	// text was copied five times over.
	t.Messages, t.Output = []LLMMessage{}, nil
	head, err := json.Marshal(t)
	const tail = `[]}`
	if err != nil || !bytes.HasSuffix(head, []byte(tail)) {
		return []byte(`{}`)
	}
	size := len(head) + 64
	for i := range r.Messages {
		size += r.Messages[i].jsonSizeHint()
	}
	b := append(make([]byte, 0, size), head[:len(head)-len(tail)]...)
	b = append(b, '[')
	for i := range r.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = r.Messages[i].appendJSON(b); err != nil {
			return []byte(`{}`)
		}
	}
	b = append(b, ']')
	if r.Output != nil {
		out, err := json.Marshal(r.Output)
		if err != nil {
			return []byte(`{}`)
		}
		b = append(append(b, `,"output":`...), out...)
	}
	return append(b, '}')
}

// Wires are the API protocols of the built-in providers' adapters.
const (
	// WireOpenAI is OpenAI's chat completions and responses API, which most hosted services copy.
	WireOpenAI = "openai"
	// WireAzureOpenAI is the OpenAI API as Azure OpenAI serves it: a resource endpoint, deployments
	// and an api-version.
	WireAzureOpenAI = "azure_openai"
	// WireAnthropic is Anthropic's messages API.
	WireAnthropic = "anthropic"
	// WireGemini is Google's Gemini API.
	WireGemini = "gemini"
	// WireScripted is the model-script provider of tests and offline demos.
	WireScripted = "scripted"
)

// ProviderInfo describes a built-in provider: the protocol its adapter speaks, where its API is and
// which variable holds its key. Custom providers (ProviderDef) reuse one under another name.
type ProviderInfo struct {
	// Name is what a model's provider field says.
	Name string
	// Wire is the protocol its adapter speaks (WireOpenAI, WireAnthropic, …).
	Wire string
	// KeyEnv names the variable holding its API key; "" when the key comes from configuration or
	// none is needed.
	KeyEnv string
	// AltKeyEnv names a second variable read when KeyEnv is unset (GEMINI_API_KEY for google).
	AltKeyEnv string
	// KeyOptional: a call may go without a key (a local server; Azure's Entra ID token).
	KeyOptional bool
	// DefaultBaseURL is its public API root, version included; "" when there is none to default to
	// (a deployment's own endpoint, an OpenAI-compatible server's URL).
	DefaultBaseURL string
	// BaseURLEnv names the variable its official SDK reads for the API root ("" when none).
	BaseURLEnv string
	// BaseURLVersion is the version path added to BaseURLEnv's value when that value has no path.
	BaseURLVersion string
}

// BaseURL is the provider's API root: BaseURLEnv's value when lookup finds it set (with http://
// added when it has no scheme, as OLLAMA_HOST's host:port has not, and BaseURLVersion when it has
// no path), else DefaultBaseURL. An explicit baseUrl (a custom provider's, a model's
// providerOptions) wins over both; applying it is the caller's part.
func (p ProviderInfo) BaseURL(lookup func(string) (string, bool)) string {
	if p.BaseURLEnv == "" {
		return p.DefaultBaseURL
	}
	v, ok := lookup(p.BaseURLEnv)
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return p.DefaultBaseURL
	}
	if !strings.Contains(v, "://") {
		v = "http://" + v
	}
	if u, err := url.Parse(v); err == nil && (u.Path == "" || u.Path == "/") && p.BaseURLVersion != "" {
		v = strings.TrimSuffix(v, "/") + p.BaseURLVersion
	}
	return v
}

// builtinProviders is the catalog of built-in providers, sorted by name; never written.
var builtinProviders = []ProviderInfo{
	{Name: "anthropic", Wire: WireAnthropic, KeyEnv: "ANTHROPIC_API_KEY", DefaultBaseURL: "https://api.anthropic.com/v1",
		BaseURLEnv: "ANTHROPIC_BASE_URL", BaseURLVersion: "/v1"},
	// Azure OpenAI's endpoint is the resource root; the adapter adds /openai/deployments/….
	{Name: "azure_openai", Wire: WireAzureOpenAI, KeyEnv: "AZURE_OPENAI_API_KEY", KeyOptional: true, BaseURLEnv: "AZURE_OPENAI_ENDPOINT"},
	{Name: "cerebras", Wire: WireOpenAI, KeyEnv: "CEREBRAS_API_KEY", DefaultBaseURL: "https://api.cerebras.ai/v1"},
	{Name: "deepinfra", Wire: WireOpenAI, KeyEnv: "DEEPINFRA_API_KEY", DefaultBaseURL: "https://api.deepinfra.com/v1/openai"},
	{Name: "google", Wire: WireGemini, KeyEnv: "GOOGLE_API_KEY", AltKeyEnv: "GEMINI_API_KEY",
		DefaultBaseURL: "https://generativelanguage.googleapis.com/v1beta", BaseURLEnv: "GOOGLE_GEMINI_BASE_URL", BaseURLVersion: "/v1beta"},
	{Name: "groq", Wire: WireOpenAI, KeyEnv: "GROQ_API_KEY", DefaultBaseURL: "https://api.groq.com/openai/v1"},
	{Name: "ollama", Wire: WireOpenAI, KeyEnv: "OLLAMA_API_KEY", KeyOptional: true, DefaultBaseURL: "http://localhost:11434/v1",
		BaseURLEnv: "OLLAMA_HOST", BaseURLVersion: "/v1"},
	{Name: "openai", Wire: WireOpenAI, KeyEnv: "OPENAI_API_KEY", DefaultBaseURL: "https://api.openai.com/v1",
		BaseURLEnv: "OPENAI_BASE_URL", BaseURLVersion: "/v1"},
	{Name: "openai-compatible", Wire: WireOpenAI},
	{Name: "openrouter", Wire: WireOpenAI, KeyEnv: "OPENROUTER_API_KEY", DefaultBaseURL: "https://openrouter.ai/api/v1",
		BaseURLEnv: "OPENROUTER_BASE_URL", BaseURLVersion: "/api/v1"},
	{Name: "test", Wire: WireScripted},
	{Name: "xai", Wire: WireOpenAI, KeyEnv: "XAI_API_KEY", DefaultBaseURL: "https://api.x.ai/v1"},
}

// Providers lists the built-in providers, sorted by name. The slice is the caller's to keep.
func Providers() []ProviderInfo {
	return slices.Clone(builtinProviders)
}

// LookupProvider returns the built-in provider of that name; false when there is none.
func LookupProvider(name string) (ProviderInfo, bool) {
	for _, p := range builtinProviders {
		if p.Name == name {
			return p, true
		}
	}
	return ProviderInfo{}, false
}

// ProviderKeyEnv returns the variable that holds the API key of a built-in provider ("" when the
// provider takes its key from configuration or needs none) and whether the provider is built in.
func ProviderKeyEnv(provider string) (string, bool) {
	p, ok := LookupProvider(provider)
	return p.KeyEnv, ok
}
