// Package hooks runs the hooks of a run's points. The hooks of a point run in the order their
// prompt or agent lists them, each seeing what the one before it returned; what each point's hooks
// may change is theirs to say (a system message's text, the rows a request is built from, the final
// message list, a tool's result, a row about to be stored). A hook that returns an error or
// panics is skipped and reported to the run; only prefilter_llm_history can stop it, with
// weft.BlockedError.
//
// Which hooks apply where, and the State they get, are the caller's (a Set): Select picks a point's
// hooks among the ids of a prompt or an agent.
package hooks

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/redact"
)

// Select returns the hooks among ids (a prompt's or an agent's `hooks`, in listed order) that run
// at point.
func Select(reg *weft.Registry, ids []string, point weft.HookPoint) []*weft.Hook {
	var out []*weft.Hook
	for _, id := range ids {
		if h, ok := reg.Hook(id); ok && h.Point == point {
			out = append(out, h)
		}
	}
	return out
}

// Applying returns the ids of the hooks that apply in a prompt: the prompt's own `hooks` when set
// (even empty), else its agent's.
func Applying(prompt, agent []string) []string {
	if prompt != nil {
		return prompt
	}
	return agent
}

// Call runs fn, turning a panic into an error.
func Call(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("hook panicked: %v", p)
		}
	}()
	return fn()
}

// Set is the hooks of a point that apply where they run, in order, and the State they get (nil
// when there are no hooks).
type Set struct {
	// Hooks are the point's hooks, in order.
	Hooks []*weft.Hook
	// State is the State the hooks get.
	State weft.State
}

// Host is the run hooks run for.
type Host interface {
	// Failed reports a hook that returned an error or panicked; the hook was skipped.
	Failed(h *weft.Hook, err error)
}

// Runner runs one run's hooks, with the run's context.
type Runner struct {
	// ctx is the run's context, which the hooks get.
	ctx context.Context
	// host is told of the hooks that failed.
	host Host
}

// NewRunner returns the runner of a run's hooks.
func NewRunner(ctx context.Context, host Host) Runner { return Runner{ctx: ctx, host: host} }

// ToolCallStarted runs tool_call_started; the hooks only observe.
func (x Runner) ToolCallStarted(set Set, c weft.ToolCall) {
	for _, h := range set.Hooks {
		f, _ := weft.HookFunc[weft.ToolCallFunc](*h)
		if err := Call(func() error { return f(x.ctx, set.State, c) }); err != nil {
			x.host.Failed(h, err)
		}
	}
}

// ToolCallDone runs tool_call_done; the hooks only observe.
func (x Runner) ToolCallDone(set Set, c weft.ToolCall, res weft.ToolResult) {
	for _, h := range set.Hooks {
		f, _ := weft.HookFunc[weft.ToolCallDoneFunc](*h)
		if err := Call(func() error { return f(x.ctx, set.State, c, res) }); err != nil {
			x.host.Failed(h, err)
		}
	}
}

// AfterToolCall runs after_tool_call_success or _failure (set's hooks are those of
// AfterToolCallPoint); keep is false when a hook returned nil (the call is removed and no tool
// message stored).
func (x Runner) AfterToolCall(set Set, c weft.ToolCall, res weft.ToolResult) (_ weft.ToolResult, keep bool) {
	for _, h := range set.Hooks {
		f, _ := weft.HookFunc[weft.ToolResultFunc](*h)
		var out *weft.ToolResult
		if err := Call(func() (err error) { out, err = f(x.ctx, set.State, c, res); return }); err != nil {
			x.host.Failed(h, err)
			continue
		}
		if out == nil {
			return res, false
		}
		res = *out
	}
	return res, true
}

// AfterToolCallPoint is the point of the hooks that see a tool's result: after_tool_call_success
// or after_tool_call_failure.
func AfterToolCallPoint(res weft.ToolResult) weft.HookPoint {
	if res.Status == weft.ToolError {
		return weft.HookAfterToolCallFailure
	}
	return weft.HookAfterToolCallSuccess
}

// BeforeStore runs before_store_tool_result: the hooks may change the result stored.
func (x Runner) BeforeStore(set Set, c weft.ToolCall, res weft.ToolResult) weft.ToolResult {
	for _, h := range set.Hooks {
		f, _ := weft.HookFunc[weft.StoreToolResultFunc](*h)
		var out weft.ToolResult
		if err := Call(func() (err error) { out, err = f(x.ctx, set.State, c, res); return }); err != nil {
			x.host.Failed(h, err)
			continue
		}
		res = out
	}
	return res
}

// RunStopped runs after_run_stopped with ctx (the run's, which may be cancelled by now, without
// its cancellation).
func (x Runner) RunStopped(ctx context.Context, set Set, info weft.StopInfo) {
	for _, h := range set.Hooks {
		f, _ := weft.HookFunc[weft.RunStoppedFunc](*h)
		if err := Call(func() error { return f(ctx, set.State, info) }); err != nil {
			x.host.Failed(h, err)
		}
	}
}

// ThreadCreated runs after_thread_created outside any run, with ctx: set's State is the new
// thread's. failed is told of each hook that fails; the others still run.
func ThreadCreated(ctx context.Context, set Set, failed func(h *weft.Hook, err error)) {
	for _, h := range set.Hooks {
		f, _ := weft.HookFunc[weft.ThreadCreatedFunc](*h)
		if err := Call(func() error { return f(ctx, set.State) }); err != nil {
			failed(h, err)
		}
	}
}

// SubagentCreated runs after_subagent_created with ctx: set's State is the run's thread's, child
// the new thread's.
func (x Runner) SubagentCreated(ctx context.Context, set Set, child weft.State) {
	for _, h := range set.Hooks {
		f, _ := weft.HookFunc[weft.SubagentCreatedFunc](*h)
		if err := Call(func() error { return f(ctx, set.State, child) }); err != nil {
			x.host.Failed(h, err)
		}
	}
}

// BeforeInsert runs before_create_message on a row the engine is about to store; the hooks may
// change its content (redacted with red afterwards), silence and metadata. Their errors are
// reported, not returned: only inserts by tools and the API can be refused.
func (x Runner) BeforeInsert(set Set, m *weft.Message, red *redact.Redactor) {
	if len(set.Hooks) == 0 {
		return
	}
	nm := weft.NewMessage{Role: m.Role, Content: m.Content, Silent: m.Silent, Metadata: m.Metadata}
	for _, h := range set.Hooks {
		f, _ := weft.HookFunc[weft.BeforeCreateMessageFunc](*h)
		if err := Call(func() error { return f(x.ctx, set.State, &nm) }); err != nil {
			x.host.Failed(h, err)
		}
	}
	m.Content, m.Silent, m.Metadata = red.String(nm.Content), nm.Silent, nm.Metadata
}

// AfterInsert runs after_create_message on stored rows.
func (x Runner) AfterInsert(set Set, msgs ...*weft.Message) {
	for _, h := range set.Hooks {
		f, _ := weft.HookFunc[weft.MessageFunc](*h)
		for _, m := range msgs {
			if err := Call(func() error { return f(x.ctx, set.State, *m) }); err != nil {
				x.host.Failed(h, err)
			}
		}
	}
}

// SystemMessage runs after_system_message on a request's system text.
func (x Runner) SystemMessage(set Set, text string) string {
	for _, h := range set.Hooks {
		f, _ := weft.HookFunc[weft.SystemMessageFunc](*h)
		var out string
		if err := Call(func() (err error) { out, err = f(x.ctx, set.State, text); return }); err != nil {
			x.host.Failed(h, err)
			continue
		}
		text = out
	}
	return text
}

// FilterMessages runs filter_messages on the rows a request is built from. The hooks get copies
// they may change: the rows may be shared with the store's cache.
func (x Runner) FilterMessages(set Set, rows []*weft.Message) []*weft.Message {
	if len(set.Hooks) == 0 {
		return rows
	}
	vals := make([]weft.Message, len(rows))
	for i, m := range rows {
		vals[i] = *m
		vals[i].ToolCalls = slices.Clone(m.ToolCalls)
		vals[i].Attachments = slices.Clone(m.Attachments)
		if m.Metadata != nil {
			vals[i].Metadata, _ = CloneJSON(m.Metadata).(map[string]any)
		}
	}
	for _, h := range set.Hooks {
		f, _ := weft.HookFunc[weft.FilterMessagesFunc](*h)
		var out []weft.Message
		if err := Call(func() (err error) { out, err = f(x.ctx, set.State, vals); return }); err != nil {
			x.host.Failed(h, err)
			continue
		}
		vals = out
	}
	rows = make([]*weft.Message, len(vals))
	for i := range vals {
		rows[i] = &vals[i]
	}
	return rows
}

// Prefilter runs prefilter_llm_history on a request's final message list; a hook's
// weft.BlockedError stops the run and is returned.
func (x Runner) Prefilter(set Set, msgs []weft.LLMMessage) ([]weft.LLMMessage, error) {
	for _, h := range set.Hooks {
		f, _ := weft.HookFunc[weft.PrefilterHistoryFunc](*h)
		var out []weft.LLMMessage
		err := Call(func() (err error) { out, err = f(x.ctx, set.State, msgs); return })
		var be *weft.BlockedError
		switch {
		case errors.As(err, &be):
			return nil, be
		case err != nil:
			x.host.Failed(h, err)
			continue
		}
		msgs = out
	}
	return msgs, nil
}

// CloneJSON deep-copies a decoded JSON value (maps and lists; other values are immutable).
func CloneJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = CloneJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = CloneJSON(e)
		}
		return out
	}
	return v
}
