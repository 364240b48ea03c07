package hooks_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
)

// failures records the hooks a Runner reported.
type failures []string

func (f *failures) Failed(h *weft.Hook, err error) { *f = append(*f, h.ID+": "+err.Error()) }

func TestCallTurnsAPanicIntoAnError(t *testing.T) {
	err := hooks.Call(func() error { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "hook panicked: boom") {
		t.Fatalf("err = %v", err)
	}
	want := errors.New("plain")
	if err := hooks.Call(func() error { return want }); err != want {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

// TestSystemMessageSkipsFailingHooks: the hooks run in order, each on what the one before returned;
// a failing or panicking hook is skipped and reported.
func TestSystemMessageSkipsFailingHooks(t *testing.T) {
	var failed failures
	x := hooks.NewRunner(context.Background(), &failed)
	set := hooks.Set{Hooks: []*weft.Hook{
		{ID: "a", Fn: func(_ context.Context, _ weft.State, s string) (string, error) { return s + " a", nil }},
		{ID: "fails", Fn: func(_ context.Context, _ weft.State, s string) (string, error) { return "lost", errors.New("no") }},
		{ID: "panics", Fn: func(_ context.Context, _ weft.State, s string) (string, error) { panic("oops") }},
		{ID: "b", Fn: func(_ context.Context, _ weft.State, s string) (string, error) { return s + " b", nil }},
	}}
	for _, h := range set.Hooks {
		h.Point = weft.HookAfterSystemMessage
	}
	if got := x.SystemMessage(set, "sys"); got != "sys a b" {
		t.Errorf("text = %q, want %q", got, "sys a b")
	}
	if len(failed) != 2 || failed[0] != "fails: no" || !strings.HasPrefix(failed[1], "panics: hook panicked") {
		t.Errorf("failed = %q", failed)
	}
}

// TestPrefilterBlocks: weft.Block stops the request; other errors skip the hook.
func TestPrefilterBlocks(t *testing.T) {
	var failed failures
	x := hooks.NewRunner(context.Background(), &failed)
	msgs := []weft.LLMMessage{{Role: weft.RoleUser, Content: "hi"}}
	set := hooks.Set{Hooks: []*weft.Hook{
		{ID: "fails", Fn: func(context.Context, weft.State, []weft.LLMMessage) ([]weft.LLMMessage, error) {
			return nil, errors.New("no")
		}},
		{ID: "blocks", Fn: func(context.Context, weft.State, []weft.LLMMessage) ([]weft.LLMMessage, error) {
			return nil, weft.Block("not now")
		}},
	}}
	_, err := x.Prefilter(set, msgs)
	var be *weft.BlockedError
	if !errors.As(err, &be) || be.Reason != "not now" {
		t.Fatalf("err = %v, want the block", err)
	}
	if len(failed) != 1 {
		t.Errorf("failed = %q", failed)
	}
}

// TestAfterToolCallRemoves: a hook returning nil removes the call; later hooks do not run.
func TestAfterToolCallRemoves(t *testing.T) {
	var failed failures
	x := hooks.NewRunner(context.Background(), &failed)
	ran := false
	set := hooks.Set{Hooks: []*weft.Hook{
		{ID: "drop", Fn: func(context.Context, weft.State, weft.ToolCall, weft.ToolResult) (*weft.ToolResult, error) {
			return nil, nil
		}},
		{ID: "later", Fn: func(context.Context, weft.State, weft.ToolCall, weft.ToolResult) (*weft.ToolResult, error) {
			ran = true
			return nil, nil
		}},
	}}
	if _, keep := x.AfterToolCall(set, weft.ToolCall{Name: "t"}, weft.ToolResult{Status: weft.ToolSuccess}); keep || ran {
		t.Errorf("keep = %v, later ran = %v", keep, ran)
	}
	if p := hooks.AfterToolCallPoint(weft.ToolResult{Status: weft.ToolError}); p != weft.HookAfterToolCallFailure {
		t.Errorf("point = %s", p)
	}
}

// TestFilterMessagesGetsCopies: the hooks change copies, never the rows they were given.
func TestFilterMessagesGetsCopies(t *testing.T) {
	var failed failures
	x := hooks.NewRunner(context.Background(), &failed)
	row := &weft.Message{ID: "m1", Content: "orig", Metadata: map[string]any{"k": []any{"v"}}}
	set := hooks.Set{Hooks: []*weft.Hook{{ID: "edit", Fn: func(_ context.Context, _ weft.State, ms []weft.Message) ([]weft.Message, error) {
		ms[0].Content = "changed"
		ms[0].Metadata["k"].([]any)[0] = "w"
		return ms, nil
	}}}}
	out := x.FilterMessages(set, []*weft.Message{row})
	if out[0].Content != "changed" || row.Content != "orig" || row.Metadata["k"].([]any)[0] != "v" {
		t.Errorf("out %q, row %q %v", out[0].Content, row.Content, row.Metadata)
	}
	if got := x.FilterMessages(hooks.Set{}, []*weft.Message{row}); got[0] != row {
		t.Error("without hooks the rows are returned as they are")
	}
}

// TestThreadCreatedRunsEveryHook: every after_thread_created hook runs; a failing one is reported
// and the next still runs.
func TestThreadCreatedRunsEveryHook(t *testing.T) {
	var ran []string
	var failed failures
	set := hooks.Set{Hooks: []*weft.Hook{
		{ID: "fails", Point: weft.HookAfterThreadCreated, Fn: weft.ThreadCreatedFunc(func(context.Context, weft.State) error {
			ran = append(ran, "fails")
			return errors.New("no")
		})},
		{ID: "b", Point: weft.HookAfterThreadCreated, Fn: weft.ThreadCreatedFunc(func(context.Context, weft.State) error {
			ran = append(ran, "b")
			return nil
		})},
	}}
	hooks.ThreadCreated(context.Background(), set, failed.Failed)
	if strings.Join(ran, ",") != "fails,b" || len(failed) != 1 || failed[0] != "fails: no" {
		t.Errorf("ran %q, failed %q", ran, failed)
	}
}

// TestApplying: a prompt's own hooks apply when set, even empty; else its agent's.
func TestApplying(t *testing.T) {
	agent := []string{"a"}
	if got := hooks.Applying(nil, agent); len(got) != 1 || got[0] != "a" {
		t.Errorf("unset = %q, want the agent's", got)
	}
	if got := hooks.Applying([]string{}, agent); got == nil || len(got) != 0 {
		t.Errorf("empty = %q, want none", got)
	}
	if got := hooks.Applying([]string{"p"}, agent); len(got) != 1 || got[0] != "p" {
		t.Errorf("set = %q, want the prompt's", got)
	}
}
