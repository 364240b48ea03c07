// Package scripted is Weft's scripted model provider: it answers model calls from a model
// script — a YAML or JSON list of canned responses with optional `match` selectors and `expect`
// assertions — so that tests and offline demos drive the engine without a live model. Without a
// script it is the `test` provider, which answers every call with TestResponse.
package scripted

import (
	"strconv"
	"time"

	"github.com/weft-agents/weft"
)

// TestResponse is the reply of the test provider when no script is loaded.
const TestResponse = "Test response received."

// Script is a parsed model script.
type Script struct {
	// Name is the file the script came from, used in messages ("" for scripts built in Go).
	Name string
	// Options are the script-wide settings.
	Options Options
	// Responses are the entries in file order.
	Responses []Entry
}

// OnExhausted says what happens when a call finds no unconsumed entry.
type OnExhausted string

// The exhaustion policies.
const (
	// ExhaustError fails the call with a script_exhausted error (the default).
	ExhaustError OnExhausted = "error"
	// ExhaustRepeatLast answers with the entry consumed last, its expectations evaluated again.
	ExhaustRepeatLast OnExhausted = "repeat_last"
)

// Options are the script-wide settings of the map form of a script.
type Options struct {
	// Strict makes responses left over after a started `weft run` a mismatch (exit 5).
	Strict bool
	// OnExhausted is error ("" counts as error) or repeat_last.
	OnExhausted OnExhausted
	// RealTime makes delays, stalls and the provider's Clock real; by default they are virtual.
	RealTime bool
	// ChunkSize > 0 streams text and reasoning in chunks of that many runes; 0 sends one chunk each.
	ChunkSize int
	// ChunkDelay is the wait between two chunks (on the script's clock: real with RealTime), so
	// that a reply streams in as a model's would; 0 sends the chunks back to back.
	ChunkDelay time.Duration
}

// Entry is one scripted response.
type Entry struct {
	// Index is the 1-based position in the script (New numbers entries built in Go that leave it 0).
	Index int
	// Line is the source line of the entry, 0 when unknown.
	Line int
	// Match selects the calls this entry may answer; nil fits every call.
	Match *Match
	// Expect asserts on the request; it plays no part in selection.
	Expect *Expect
	// Text is the assistant text.
	Text string
	// ToolCalls are the calls of the reply, in order.
	ToolCalls []ToolCallSpec
	// Reasoning is the reasoning content.
	Reasoning string
	// Usage overrides the estimated token counts; nil estimates all of them.
	Usage *UsageSpec
	// FinishReason defaults to tool_calls when calls are present, else stop.
	FinishReason string
	// Error, when set, makes the attempt fail after Delay; nothing is streamed.
	Error *ErrorSpec
	// Delay is the wait before the first chunk; at or beyond the first-chunk timeout it is a timeout.
	Delay time.Duration
	// StallAfter, when set, sends that many chunks and then stalls until the stall timeout.
	StallAfter *int
}

// Match selects calls. Keys are ANDed; within a key any listed value fits; a nil key fits anything.
type Match struct {
	// Model is the model definition being attempted (the fallback's name during fallback).
	Model []string
	// Prompt is the prompt of the request.
	Prompt []string
	// Agent is the calling thread's current agent.
	Agent []string
	// Side is the acting side.
	Side []weft.Side
	// Depth is the sub-prompt nesting within the thread.
	Depth []int
}

// Expect holds assertions on a request. Every non-nil field must hold; for string lists every value
// must hold. Roles and Tools distinguish nil (not checked) from empty (none).
type Expect struct {
	// SystemContains must each occur in the system text.
	SystemContains []string
	// SystemNotContains must not occur in the system text.
	SystemNotContains []string
	// Contains must each occur in some non-system message's text.
	Contains []string
	// NotContains must not occur anywhere in the serialized request (Request.TraceJSON).
	NotContains []string
	// LastRole is the role of the last message.
	LastRole []weft.Role
	// LastContains must each occur in the last message's text.
	LastContains []string
	// ToolResultContains must each occur in some tool message.
	ToolResultContains []string
	// MessageCount is the number of non-system messages.
	MessageCount *int
	// Roles is the exact sequence of non-system roles.
	Roles []weft.Role
	// Tools is the exact set of offered tool names (empty: none sent).
	Tools []string
	// ToolsInclude must all be offered.
	ToolsInclude []string
	// ToolsExclude must not be offered.
	ToolsExclude []string
	// ToolChoice is the tool choice as sent (auto, none or required).
	ToolChoice []weft.ToolChoice
	// Model is the model definition of the call.
	Model []string
	// Prompt is the prompt of the call.
	Prompt []string
	// Images is the number of image parts in the request.
	Images *int
}

// ToolCallSpec is a scripted tool call.
type ToolCallSpec struct {
	// Name is the tool to call (required).
	Name string
	// Arguments is the JSON text of the arguments, sent verbatim ("" sends {}).
	Arguments string
	// ID is the call id; "" takes call_<k>, k counting the calls the provider emitted, from 1.
	ID string
}

// UsageSpec overrides token counts; nil fields keep the estimate (⌈chars/4⌉ for input and output,
// 0 for cached and reasoning) and a nil Cost leaves the cost to the model's prices.
type UsageSpec struct {
	// InputTokens counts prompt tokens.
	InputTokens *int
	// OutputTokens counts completion tokens.
	OutputTokens *int
	// CachedTokens counts prompt tokens read from cache.
	CachedTokens *int
	// ReasoningTokens counts reasoning tokens.
	ReasoningTokens *int
	// Cost is the reported cost in USD.
	Cost *float64
}

// ErrorSpec is a scripted failure.
type ErrorSpec struct {
	// Status is the HTTP status, 0 for none.
	Status int
	// Message is the provider's message.
	Message string
	// Type classifies the failure; "" derives it from Status (weft.ErrorTypeForStatus).
	Type weft.ErrorType
	// RetryAfter is the provider's requested wait.
	RetryAfter time.Duration
}

// prefix names an entry in messages: `model script entry 3 (line 14)`.
func (e *Entry) prefix() string {
	s := "model script entry " + strconv.Itoa(e.Index)
	if e.Line > 0 {
		s += " (line " + strconv.Itoa(e.Line) + ")"
	}
	return s
}
