package weft

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Model names an upstream model behind a provider, with its prices, capabilities and failure policy.
// Prompts refer to models by Name.
type Model struct {
	// Name is what prompts refer to.
	Name string `json:"name"`
	// Provider names a built-in provider (openai, azure_openai, anthropic, google, openrouter, groq,
	// xai, deepinfra, cerebras, ollama, openai-compatible, test) or a custom provider definition.
	Provider string `json:"provider"`
	// Model is the upstream model id sent to the provider.
	Model string `json:"model"`
	// Fallbacks are other model names tried in order after this one fails (not recursive).
	Fallbacks []string `json:"fallbacks,omitempty"`
	// InputPrice, OutputPrice and CachedPrice are USD per million tokens; nil = unknown.
	// CachedPrice defaults to InputPrice.
	InputPrice  *float64 `json:"inputPrice,omitempty"`
	OutputPrice *float64 `json:"outputPrice,omitempty"`
	CachedPrice *float64 `json:"cachedPrice,omitempty"`
	// Capabilities says what the model supports; unset capabilities count as supported.
	Capabilities Capabilities `json:"capabilities"`
	// ProviderOptions are merged verbatim into the request body; baseUrl and headers override transport.
	ProviderOptions map[string]any `json:"providerOptions,omitempty"`
	// Timeouts bound a model call; a timeout is not retried in place but goes to the fallbacks.
	Timeouts Timeouts `json:"timeouts"`
	// Retry is the per-model retry policy.
	Retry RetryPolicy `json:"retry"`
	// MaxReplyBytes bounds one reply as it arrives from the provider (streamed or not); past it the
	// attempt fails reply_too_large. 0 = DefaultMaxReplyBytes.
	MaxReplyBytes int64 `json:"maxReplyBytes,omitempty"`
}

// DefaultMaxReplyBytes bounds a model's reply when its definition sets no MaxReplyBytes.
const DefaultMaxReplyBytes = 32 << 20

// ReplyLimit returns the model's reply bound.
func (m *Model) ReplyLimit() int64 {
	if m == nil || m.MaxReplyBytes <= 0 {
		return DefaultMaxReplyBytes
	}
	return m.MaxReplyBytes
}

// Capabilities describes what a model supports. A nil pointer means supported / unknown limit.
type Capabilities struct {
	SupportsImages    *bool `json:"supportsImages,omitempty"`
	SupportsToolCalls *bool `json:"supportsToolCalls,omitempty"`
	SupportsStreaming *bool `json:"supportsStreaming,omitempty"`
	SupportsJSONMode  *bool `json:"supportsJsonMode,omitempty"`
	// MaxContextTokens and MaxOutputTokens are limits; 0 = unknown.
	MaxContextTokens int `json:"maxContextTokens,omitempty"`
	MaxOutputTokens  int `json:"maxOutputTokens,omitempty"`
	// ReasoningLevels lists the reasoning efforts the model accepts.
	ReasoningLevels []string `json:"reasoningLevels,omitempty"`
}

// Images reports whether the model accepts image input.
func (c Capabilities) Images() bool { return c.SupportsImages == nil || *c.SupportsImages }

// ToolCalls reports whether the model can call tools.
func (c Capabilities) ToolCalls() bool { return c.SupportsToolCalls == nil || *c.SupportsToolCalls }

// Streaming reports whether the model streams.
func (c Capabilities) Streaming() bool { return c.SupportsStreaming == nil || *c.SupportsStreaming }

// Timeouts bound a model call. Zero values take the defaults of DefaultTimeouts.
type Timeouts struct {
	// FirstChunk is the longest wait for the first byte of output.
	FirstChunk Duration `json:"firstChunk,omitempty"`
	// Stall is the longest gap between chunks.
	Stall Duration `json:"stall,omitempty"`
	// Total bounds the whole call; 0 = none.
	Total Duration `json:"total,omitempty"`
}

// WithDefaults returns t with zero fields set to the defaults: first chunk 120s, stall 45s, total
// none.
func (t Timeouts) WithDefaults() Timeouts {
	if t.FirstChunk == 0 {
		t.FirstChunk = Duration(120 * time.Second)
	}
	if t.Stall == 0 {
		t.Stall = Duration(45 * time.Second)
	}
	return t
}

// RetryPolicy is how often and how patiently a model is retried before its fallbacks.
type RetryPolicy struct {
	// Attempts per model (including the first); 0 = default 2.
	Attempts int `json:"attempts,omitempty"`
	// BaseDelay doubles per retry; 0 = default 1s.
	BaseDelay Duration `json:"baseDelay,omitempty"`
	// MaxDelay caps a single wait; 0 = default 30s.
	MaxDelay Duration `json:"maxDelay,omitempty"`
	// MaxRetryAfter: a provider's retry-after above this skips to the next model; 0 = default 60s.
	MaxRetryAfter Duration `json:"maxRetryAfter,omitempty"`
}

// WithDefaults returns p with zero fields set to the defaults: 2 attempts, base delay 1s, max delay
// 30s, max retry-after 60s.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.Attempts == 0 {
		p.Attempts = 2
	}
	if p.BaseDelay == 0 {
		p.BaseDelay = Duration(time.Second)
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = Duration(30 * time.Second)
	}
	if p.MaxRetryAfter == 0 {
		p.MaxRetryAfter = Duration(60 * time.Second)
	}
	return p
}

// ProviderDef is a custom provider from providers/*.yaml: a built-in provider under another name with
// its own base URL, key variable and headers.
type ProviderDef struct {
	// Name is what models refer to.
	Name string `json:"name"`
	// Base names the built-in provider whose wire protocol is used.
	Base string `json:"base"`
	// BaseURL overrides the base URL (including the API version, e.g. …/v1).
	BaseURL string `json:"baseUrl,omitempty"`
	// APIKeyEnv names the variable holding the key.
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// Headers are sent with every request; values may use ${env:NAME}.
	Headers map[string]string `json:"headers,omitempty"`
	// Options are provider-specific settings.
	Options map[string]any `json:"options,omitempty"`
}

// Duration is a time.Duration that reads as a Go duration string ("30s") or integer milliseconds.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON accepts "30s", "250ms" or an integer number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	p, err := ParseDuration(v)
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// ParseDuration reads a duration from a decoded YAML/JSON value: a Go duration string, a string of
// digits, or a whole number of milliseconds. Negative durations are rejected.
func ParseDuration(v any) (Duration, error) {
	var ms float64
	switch x := v.(type) {
	case string:
		s := strings.TrimSpace(x)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			ms = float64(n)
			break
		}
		td, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q (want e.g. \"30s\", \"250ms\" or milliseconds)", x)
		}
		if td < 0 {
			return 0, fmt.Errorf("duration %q is negative", x)
		}
		return Duration(td), nil
	case int:
		ms = float64(x)
	case int64:
		ms = float64(x)
	case uint64:
		ms = float64(x)
	case float64:
		ms = x
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return 0, fmt.Errorf("invalid duration %s", x)
		}
		ms = f
	default:
		return 0, fmt.Errorf("invalid duration: want a string like \"30s\" or milliseconds")
	}
	if ms < 0 {
		return 0, fmt.Errorf("duration %v is negative", v)
	}
	if ms != float64(int64(ms)) {
		return 0, fmt.Errorf("duration %v ms is not a whole number", v)
	}
	return Duration(time.Duration(int64(ms)) * time.Millisecond), nil
}

// RoundUSD rounds an amount of US dollars to a millionth of a cent (1e-12 USD, far below any
// price's precision), so that a cost computed in floating point prints as the decimal it is:
// 0.00002355, not 0.000023549999999999996. Costs are rounded where computed and where summed.
func RoundUSD(x float64) float64 { return math.Round(x*1e12) / 1e12 }
