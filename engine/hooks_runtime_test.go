package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// TestHooksAtRunTime runs the hooks no other test fires: after_subagent_created,
// after_create_message, before_update_message, after_update_message, after_tool_call_failure and
// filter_messages — each seen with the right arguments, and the ones that may change things
// changing them.
func TestHooksAtRunTime(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	note := func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() }
	var requests []string
	hooks := []*weft.Hook{
		{ID: "child", Point: weft.HookAfterSubagentCreated, Fn: weft.SubagentCreatedFunc(func(ctx context.Context, st, child weft.State) error {
			note("subagent_created " + child.AgentName() + " of " + st.AgentName())
			return nil
		})},
		{ID: "created", Point: weft.HookAfterCreateMessage, Fn: weft.MessageFunc(func(ctx context.Context, st weft.State, m weft.Message) error {
			note("created " + string(m.Role))
			return nil
		})},
		{ID: "before_update", Point: weft.HookBeforeUpdateMessage, Fn: weft.BeforeUpdateMessageFunc(func(ctx context.Context, st weft.State, id string, u *weft.MessageUpdate) error {
			if u.Content != nil {
				s := strings.ToUpper(*u.Content)
				u.Content = &s
			}
			return nil
		})},
		{ID: "after_update", Point: weft.HookAfterUpdateMessage, Fn: weft.MessageFunc(func(ctx context.Context, st weft.State, m weft.Message) error {
			note("updated " + m.Content)
			return nil
		})},
		{ID: "failure", Point: weft.HookAfterToolCallFailure, Fn: weft.ToolResultFunc(func(ctx context.Context, st weft.State, c weft.ToolCall, r weft.ToolResult) (*weft.ToolResult, error) {
			note("failure " + c.Name + ": " + r.Error)
			r.Error = "the inventory is offline; try later"
			return &r, nil
		})},
		{ID: "filter", Point: weft.HookFilterMessages, Fn: weft.FilterMessagesFunc(func(ctx context.Context, st weft.State, msgs []weft.Message) ([]weft.Message, error) {
			return slices.DeleteFunc(slices.Clone(msgs), func(m weft.Message) bool { return strings.Contains(m.Content, "(off the record)") }), nil
		})},
	}
	reg := subagentRegistry(weft.ToolEntry{}, nil)
	reg.AddTool(&weft.Tool{Name: "retitle", Description: "Rename the first message.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		msgs, err := st.Messages(ctx, weft.MessageQuery{Roles: []weft.Role{weft.RoleUser}, Limit: 1})
		if err != nil || len(msgs) == 0 {
			return weft.Failure("no message"), err
		}
		content := "renamed"
		_, err = st.UpdateMessage(ctx, msgs[0].ID, weft.MessageUpdate{Content: &content})
		return weft.Success("done"), err
	})})
	reg.AddTool(&weft.Tool{Name: "stock", Description: "Check stock.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		return weft.ToolResult{}, errors.New("connection refused")
	})})
	p, _ := reg.Prompt("assistant")
	p.Tools = append(p.Tools, weft.ToolEntry{Name: "retitle"}, weft.ToolEntry{Name: "stock"})
	for _, h := range hooks {
		reg.AddHook(h)
	}
	a, _ := reg.Agent("assistant")
	for _, h := range hooks {
		a.Hooks = append(a.Hooks, h.ID)
	}
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if req.Prompt == "reviewer" {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "approve", Arguments: `{"summary":"ok"}`}}}, nil
		}
		if req.Prompt == "assistant" {
			var texts []string
			for _, m := range req.Messages {
				texts = append(texts, m.Text())
			}
			mu.Lock()
			requests = append(requests, strings.Join(texts, " | "))
			mu.Unlock()
		}
		if last.Role == weft.RoleUser {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "retitle", Arguments: "{}"}, {ID: "c2", Name: "stock", Arguments: "{}"},
				{ID: "c3", Name: "review", Arguments: `{"message":"Draft"}`}}}, nil
		}
		return &weft.Response{Text: "All done."}, nil
	})
	eng, st := newEngine(t, reg, model, nil)
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "(off the record) an aside"}); err != nil {
		t.Fatal(err)
	}
	res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "hello"}})
	if err != nil || res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("%+v %v", res, err)
	}
	got := strings.Join(seen, "\n")
	for _, want := range []string{"subagent_created review of assistant", "created assistant", "created tool", "updated RENAMED",
		"failure stock: connection refused"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in hooks seen:\n%s", want, got)
		}
	}
	msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: 20})
	var stock, first string
	for _, m := range msgs {
		if m.Name == "stock" {
			stock = m.Content
		}
		if m.Role == weft.RoleUser && first == "" {
			first = m.Content
		}
	}
	if first != "RENAMED" || !strings.Contains(stock, "the inventory is offline") {
		t.Errorf("first message %q, stock result %q", first, stock)
	}
	// filter_messages kept the filtered row out of every request.
	for i, r := range requests {
		if strings.Contains(r, "(off the record)") {
			t.Errorf("request %d holds the filtered message: %s", i, r)
		}
	}
	if len(requests) < 2 {
		t.Errorf("%d requests", len(requests))
	}
}
