package weft

import (
	"context"
	"fmt"
	"reflect"
)

// HookPoint names where in a run a hook fires.
type HookPoint string

// The hook points.
const (
	HookAfterThreadCreated    HookPoint = "after_thread_created"
	HookAfterSubagentCreated  HookPoint = "after_subagent_created"
	HookAfterSystemMessage    HookPoint = "after_system_message"
	HookFilterMessages        HookPoint = "filter_messages"
	HookPrefilterLLMHistory   HookPoint = "prefilter_llm_history"
	HookBeforeCreateMessage   HookPoint = "before_create_message"
	HookAfterCreateMessage    HookPoint = "after_create_message"
	HookBeforeUpdateMessage   HookPoint = "before_update_message"
	HookAfterUpdateMessage    HookPoint = "after_update_message"
	HookToolCallStarted       HookPoint = "tool_call_started"
	HookToolCallDone          HookPoint = "tool_call_done"
	HookAfterToolCallSuccess  HookPoint = "after_tool_call_success"
	HookAfterToolCallFailure  HookPoint = "after_tool_call_failure"
	HookBeforeStoreToolResult HookPoint = "before_store_tool_result"
	HookAfterRunStopped       HookPoint = "after_run_stopped"
)

// The function type of each hook point.
type (
	ThreadCreatedFunc       func(ctx context.Context, st State) error
	SubagentCreatedFunc     func(ctx context.Context, st State, child State) error
	SystemMessageFunc       func(ctx context.Context, st State, text string) (string, error)
	FilterMessagesFunc      func(ctx context.Context, st State, msgs []Message) ([]Message, error)
	PrefilterHistoryFunc    func(ctx context.Context, st State, msgs []LLMMessage) ([]LLMMessage, error)
	BeforeCreateMessageFunc func(ctx context.Context, st State, m *NewMessage) error
	MessageFunc             func(ctx context.Context, st State, m Message) error
	BeforeUpdateMessageFunc func(ctx context.Context, st State, id string, u *MessageUpdate) error
	ToolCallFunc            func(ctx context.Context, st State, call ToolCall) error
	ToolCallDoneFunc        func(ctx context.Context, st State, call ToolCall, res ToolResult) error
	// ToolResultFunc may replace the result; returning nil removes the call from the assistant
	// message and stores no tool message.
	ToolResultFunc      func(ctx context.Context, st State, call ToolCall, res ToolResult) (*ToolResult, error)
	StoreToolResultFunc func(ctx context.Context, st State, call ToolCall, res ToolResult) (ToolResult, error)
	RunStoppedFunc      func(ctx context.Context, st State, info StopInfo) error
)

// hookFuncTypes maps each hook point to the function type its Fn must have.
var hookFuncTypes = map[HookPoint]reflect.Type{
	HookAfterThreadCreated:    reflect.TypeFor[ThreadCreatedFunc](),
	HookAfterSubagentCreated:  reflect.TypeFor[SubagentCreatedFunc](),
	HookAfterSystemMessage:    reflect.TypeFor[SystemMessageFunc](),
	HookFilterMessages:        reflect.TypeFor[FilterMessagesFunc](),
	HookPrefilterLLMHistory:   reflect.TypeFor[PrefilterHistoryFunc](),
	HookBeforeCreateMessage:   reflect.TypeFor[BeforeCreateMessageFunc](),
	HookAfterCreateMessage:    reflect.TypeFor[MessageFunc](),
	HookBeforeUpdateMessage:   reflect.TypeFor[BeforeUpdateMessageFunc](),
	HookAfterUpdateMessage:    reflect.TypeFor[MessageFunc](),
	HookToolCallStarted:       reflect.TypeFor[ToolCallFunc](),
	HookToolCallDone:          reflect.TypeFor[ToolCallDoneFunc](),
	HookAfterToolCallSuccess:  reflect.TypeFor[ToolResultFunc](),
	HookAfterToolCallFailure:  reflect.TypeFor[ToolResultFunc](),
	HookBeforeStoreToolResult: reflect.TypeFor[StoreToolResultFunc](),
	HookAfterRunStopped:       reflect.TypeFor[RunStoppedFunc](),
}

// Hook is a Go function run at a point of a thread's life. Prompts and agents reference hooks by ID.
type Hook struct {
	// ID is what prompts and agents list in `hooks`.
	ID string
	// Point is where the hook fires.
	Point HookPoint
	// Fn is the function; its type must be the one for Point (e.g. SystemMessageFunc for
	// after_system_message). Plain func literals of the right signature are accepted.
	Fn any
}

// CheckFn reports whether Fn has the function type required by Point.
func (h Hook) CheckFn() error {
	want, ok := hookFuncTypes[h.Point]
	if !ok {
		return fmt.Errorf("unknown hook point %q", h.Point)
	}
	if h.Fn == nil {
		return fmt.Errorf("hook function is nil")
	}
	got := reflect.TypeOf(h.Fn)
	if got == want || (got.Kind() == reflect.Func && got.ConvertibleTo(want)) {
		return nil
	}
	return fmt.Errorf("hook function for %s must be %s, got %s", h.Point, want, got)
}

// HookFunc returns h.Fn converted to the function type F of the hook's point, or false when it is not one.
func HookFunc[F any](h Hook) (F, bool) {
	var zero F
	if f, ok := h.Fn.(F); ok {
		return f, true
	}
	v := reflect.ValueOf(h.Fn)
	want := reflect.TypeFor[F]()
	if !v.IsValid() || !v.Type().ConvertibleTo(want) {
		return zero, false
	}
	return v.Convert(want).Interface().(F), true
}

// Block returns the error a prefilter_llm_history hook uses to stop the run with hook_blocked; the
// reason becomes the assistant message.
func Block(reason string) error { return &BlockedError{Reason: reason} }

// BlockedError is returned by a hook that blocks the run.
type BlockedError struct {
	// Reason is shown as the assistant message.
	Reason string
}

// Error returns the reason.
func (e *BlockedError) Error() string { return "blocked by hook: " + e.Reason }

// Effect is a named, durable piece of deferred work a tool or hook schedules with
// State.ScheduleEffect; it runs later, even after a restart.
type Effect struct {
	// Name is what ScheduleEffect refers to.
	Name string
	// Description documents the effect.
	Description string
	// Args validates the arguments when the effect runs; nil = no arguments.
	Args *Schema
	// MaxAttempts > 1 retries failures; 0 or 1 runs once.
	MaxAttempts int
	// Run performs the work; it has a State without Execution().
	Run func(ctx context.Context, st State, args []byte) error
}

// Handler drives an agent side with Go code instead of a model; each message reaches Fn at most once.
type Handler struct {
	// Name is what agent sides refer to.
	Name string
	// Fn receives each completed message of the other side.
	Fn func(ctx context.Context, st State, msg Message) error
}
