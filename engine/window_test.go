package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/tokens"
)

// windowServer is a model that refuses, as OpenAI does, a request past its window (counted as
// package tokens counts it), and otherwise answers from the request it received: on every fifth
// turn it first calls a tool, and each answer names the turn's fact so the next turns can be
// checked against what reached it.
type windowServer struct {
	t      *testing.T
	window int
	calls  int
	// refused counts the refusals; sizes the accepted requests' tokens.
	refused int
	sizes   []int
	// lastUser is the text of the newest user message of each accepted request.
	lastUser []string
}

func (w *windowServer) call(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
	w.calls++
	n := tokens.Tools(req.Tools)
	for _, m := range req.Messages {
		n += tokens.Message(m)
	}
	if n > w.window {
		w.refused++
		return nil, &weft.ProviderError{Type: weft.ErrInvalidRequest, Status: 400,
			Message: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens.", w.window, n)}
	}
	w.sizes = append(w.sizes, n)
	last := req.Messages[len(req.Messages)-1]
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == weft.RoleUser {
			w.lastUser = append(w.lastUser, req.Messages[i].Text())
			break
		}
	}
	switch {
	case last.Role == weft.RoleUser && strings.Contains(last.Text(), "(look it up)"):
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: fmt.Sprintf("call_%d", w.calls), Name: "lookup", Arguments: `{"q":"x"}`}}}, nil
	case last.Role == weft.RoleTool:
		// The newest call and its result are both in the request.
		prev := req.Messages[len(req.Messages)-2]
		if len(prev.ToolCalls) != 1 || prev.ToolCalls[0].ID != last.ToolCallID {
			w.t.Errorf("a tool result without its call: %+v then %+v", prev, last)
		}
		return &weft.Response{Text: "looked up: " + last.Text()}, nil
	}
	return &weft.Response{Text: "noted " + strings.Fields(last.Text())[0]}, nil
}

func windowRegistry(window int, strategy weft.ContextStrategy) *weft.Registry {
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "small", Provider: "test", Model: "scripted",
		Capabilities: weft.Capabilities{MaxContextTokens: window, MaxOutputTokens: 200}})
	reg.AddTool(&weft.Tool{Name: "lookup", Description: "Looks a thing up.",
		Execute: weft.ToolFunc(func(context.Context, weft.State, json.RawMessage) (weft.ToolResult, error) {
			return weft.Success("found it"), nil
		})})
	p := &weft.Prompt{Name: "assistant", ToolDescription: "Helps.", Model: "small", Prompt: weft.Text("You are a concise helper."),
		IncludeChat: true, IncludePastTools: true, Tools: []weft.ToolEntry{{Name: "lookup"}}}
	if strategy != "" {
		p.Context = &weft.ContextPolicy{Strategy: strategy}
	}
	reg.AddPrompt(p)
	reg.AddAgent(&weft.Agent{Name: "assistant", SideA: weft.AgentSide{Prompt: "assistant"}})
	return reg
}

// turnText is a user message of about 1,200 characters, its first word naming the turn.
func turnText(i int) string {
	s := fmt.Sprintf("fact%d: ", i) + strings.Repeat(fmt.Sprintf("the weather on day %d was mild and dry. ", i), 30)
	if i%5 == 0 {
		s += " (look it up)"
	}
	return s
}

// TestWindowKeepsThreadUsable: a thread that grows by ~1,200 characters a turn against a model
// whose window is 2,000 tokens keeps working for 50 turns: with the window declared every request
// fits before it is sent; with it undeclared the refusal makes the run leave older messages out
// and try once more. Every request holds the turn's own message, and a tool call with its result.
func TestWindowKeepsThreadUsable(t *testing.T) {
	for _, declared := range []bool{true, false} {
		t.Run(fmt.Sprintf("declared=%v", declared), func(t *testing.T) {
			const window = 2000
			srv := &windowServer{t: t, window: window}
			reg := windowRegistry(window, "")
			if !declared {
				m, _ := reg.Model("small")
				m.Capabilities.MaxContextTokens = 0
			}
			eng, err := engine.New(engine.Options{Registry: reg, Store: newMemStore(t), Override: weft.ProviderFunc(srv.call)})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 50; i++ {
				text := turnText(i)
				if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Role: weft.RoleUser, Content: text}); err != nil {
					t.Fatal(err)
				}
				before := len(srv.lastUser)
				res, err := eng.Run(ctx, th.ID)
				if err != nil {
					t.Fatal(err)
				}
				if stop := res.Last(); stop.Reason != weft.StopOnResponse {
					t.Fatalf("turn %d stopped %s: %s", i, stop.Reason, stop.Error)
				}
				for _, got := range srv.lastUser[before:] {
					if got != text {
						t.Fatalf("turn %d: the request's newest user message is %.40q, want the turn's own", i, got)
					}
				}
			}
			for i, n := range srv.sizes {
				if n > window {
					t.Errorf("accepted request %d has %d tokens, past the window", i, n)
				}
			}
			if declared && srv.refused != 0 {
				t.Errorf("%d requests refused although the window was declared", srv.refused)
			}
			if !declared && srv.refused == 0 {
				t.Error("no request was refused: the test did not reach the window")
			}
		})
	}
}

// TestContextNoneStops: under context.strategy none a refused request is neither retried nor made
// smaller; the run stops with context_too_long and says what to change.
func TestContextNoneStops(t *testing.T) {
	srv := &windowServer{t: t, window: 300}
	reg := windowRegistry(0, weft.ContextNone)
	eng, err := engine.New(engine.Options{Registry: reg, Store: newMemStore(t), Override: weft.ProviderFunc(srv.call)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Role: weft.RoleUser, Content: turnText(1)}); err != nil {
		t.Fatal(err)
	}
	res, err := eng.Run(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	stop := res.Last()
	if stop.Reason != weft.StopContextTooLong || !strings.Contains(stop.Error, "context.strategy: window") ||
		strings.Contains(stop.Error, "retry") {
		t.Errorf("stop %s: %q", stop.Reason, stop.Error)
	}
	if srv.calls != 1 {
		t.Errorf("%d model calls, want 1: a context-length error is not retried as it was", srv.calls)
	}
}

func newMemStore(t *testing.T) *memstore.Store {
	t.Helper()
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
