package engine_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

func TestHooks(t *testing.T) {
	var seen []string
	cards := regexp.MustCompile(`\b\d{4}( \d{4}){3}\b`)
	hooks := []*weft.Hook{
		{ID: "created", Point: weft.HookAfterThreadCreated, Fn: weft.ThreadCreatedFunc(func(ctx context.Context, st weft.State) error {
			seen = append(seen, "thread_created")
			return st.SetValue(ctx, "plan", "basic")
		})},
		{ID: "redact_cards", Point: weft.HookBeforeCreateMessage, Fn: weft.BeforeCreateMessageFunc(func(ctx context.Context, st weft.State, m *weft.NewMessage) error {
			m.Content = cards.ReplaceAllString(m.Content, "[card]")
			return nil
		})},
		{ID: "started", Point: weft.HookToolCallStarted, Fn: weft.ToolCallFunc(func(ctx context.Context, st weft.State, c weft.ToolCall) error {
			seen = append(seen, "started "+c.Name)
			return nil
		})},
		{ID: "done", Point: weft.HookToolCallDone, Fn: weft.ToolCallDoneFunc(func(ctx context.Context, st weft.State, c weft.ToolCall, r weft.ToolResult) error {
			seen = append(seen, "done "+c.Name+" "+string(r.Status))
			return nil
		})},
		{ID: "drop_noise", Point: weft.HookAfterToolCallSuccess, Fn: weft.ToolResultFunc(func(ctx context.Context, st weft.State, c weft.ToolCall, r weft.ToolResult) (*weft.ToolResult, error) {
			if c.Name == "noise" {
				return nil, nil
			}
			return &r, nil
		})},
		{ID: "shout", Point: weft.HookBeforeStoreToolResult, Fn: weft.StoreToolResultFunc(func(ctx context.Context, st weft.State, c weft.ToolCall, r weft.ToolResult) (weft.ToolResult, error) {
			r.Result = strings.ToUpper(r.Result)
			return r, nil
		})},
		{ID: "broken", Point: weft.HookAfterSystemMessage, Fn: weft.SystemMessageFunc(func(ctx context.Context, st weft.State, text string) (string, error) {
			return "", errors.New("boom")
		})},
		{ID: "stopped", Point: weft.HookAfterRunStopped, Fn: weft.RunStoppedFunc(func(ctx context.Context, st weft.State, info weft.StopInfo) error {
			seen = append(seen, "stopped "+string(info.Reason))
			return nil
		})},
	}
	var calls []string
	reg := registry([]*weft.Tool{recorder("lookup", &calls, "found it"), recorder("noise", &calls, "ignore me")}, nil)
	ids := []string{}
	for _, h := range hooks {
		reg.AddHook(h)
		ids = append(ids, h.ID)
	}
	a, _ := reg.Agent("assistant")
	a.Hooks = ids
	h := newHarness(t, reg, `
- expect: {system_contains: concise helper}
  text: Your card 4111 1111 1111 1111 is on file.
  tool_calls: [{name: noise}, {name: lookup}]
- expect: {tool_result_contains: FOUND IT, roles: [user, assistant, tool]}
  text: Done with 4111 1111 1111 1111.
`)
	th, _ := h.run("assistant", "check my card 5500 0000 0000 0004", nil)
	wantTranscript(t, h.transcript(th.ID),
		"user: check my card 5500 0000 0000 0004",
		"assistant: Your card [card] is on file. [lookup {}]",
		"tool:lookup: FOUND IT",
		"assistant: Done with [card].")
	if got := strings.Join(seen, ","); got != "thread_created,started noise,done noise success,started lookup,done lookup success,stopped stop_on_response" {
		t.Errorf("hooks seen: %s", got)
	}
	var plan string
	if ok, _ := mustState(t, h, th.ID).GetValue(context.Background(), "plan", &plan); !ok || plan != "basic" {
		t.Error("after_thread_created ran with a working State")
	}
	logs, _ := h.store.Logs(context.Background(), th.ID, weft.LogQuery{Limit: 20})
	hookErrors := 0
	for _, l := range logs {
		if l.Kind == "hook_error" && l.ErrorOrigin == "hook:broken" && l.Error == "boom" {
			hookErrors++
		}
	}
	if hookErrors != 2 {
		t.Errorf("a failing hook is logged and skipped on each step: %d", hookErrors)
	}
}

func TestPrefilterBlock(t *testing.T) {
	reg := registry(nil, nil)
	reg.AddHook(&weft.Hook{ID: "guard", Point: weft.HookPrefilterLLMHistory, Fn: weft.PrefilterHistoryFunc(func(ctx context.Context, st weft.State, msgs []weft.LLMMessage) ([]weft.LLMMessage, error) {
		if strings.Contains(msgs[len(msgs)-1].Content, "password") {
			return nil, weft.Block("I can't help with passwords.")
		}
		return msgs, nil
	})})
	a, _ := reg.Agent("assistant")
	a.Hooks = []string{"guard"}
	h := newHarness(t, reg, "[]")
	th, res := h.run("assistant", "what's the admin password?", nil)
	if res.Last().Reason != weft.StopHookBlocked || h.transcript(th.ID)[1] != "assistant: I can't help with passwords." {
		t.Errorf("%+v %v", res.Last(), h.transcript(th.ID))
	}
}

func mustState(t *testing.T, h *harness, id string) weft.State {
	st, err := h.eng.State(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
