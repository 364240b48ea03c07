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
	"github.com/weft-agents/weft/schema"
)

// TestToolLimits: arguments over their size or depth limit, and a result over its size limit,
// become error results the model reads, naming the limit; nothing is cut and the tool does not run
// on refused arguments.
func TestToolLimits(t *testing.T) {
	big := `{"text":"` + strings.Repeat("x", weft.MaxToolArgumentsBytes) + `"}`
	deep := `{"text":"x","n":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`
	ran := 0
	echo := &weft.Tool{Name: "echo", Description: "Echo.", Args: schema.Object(schema.Field("text", schema.String())),
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
			ran++
			return weft.Success(strings.Repeat("y", weft.MaxToolResultBytes+1)), nil
		})}
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == weft.RoleUser {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "echo", Arguments: big}, {ID: "c2", Name: "echo", Arguments: deep},
				{ID: "c3", Name: "echo", Arguments: `{"text":"ok"}`}}}, nil
		}
		return &weft.Response{Text: "done"}, nil
	})
	eng, st := newEngine(t, registry([]*weft.Tool{echo}, nil), model, nil)
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "go"}}); err != nil {
		t.Fatal(err)
	}
	msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleTool}})
	if len(msgs) != 3 || ran != 1 {
		t.Fatalf("%d tool messages, tool ran %d times", len(msgs), ran)
	}
	for i, want := range []string{"Tool arguments are 1,048,587 bytes; the limit is 1 MiB", "Tool arguments nest 71 levels deep; the limit is 64",
		"The tool's result is 4,194,305 bytes; the limit is 4 MiB"} {
		if !strings.Contains(msgs[i].Content, want) || msgs[i].ToolStatus != weft.ToolError {
			t.Errorf("result %d: %.200q, want %q", i, msgs[i].Content, want)
		}
	}
}

// TestToolCallsPerReplyLimit: the calls of one reply past the limit are answered, in order, with
// an error result naming the limit, and never run.
func TestToolCallsPerReplyLimit(t *testing.T) {
	ran := 0
	count := &weft.Tool{Name: "count", Description: "Count.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		ran++
		return weft.Success("ok"), nil
	})}
	n := weft.MaxToolCallsPerReply + 3
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == weft.RoleUser {
			calls := make([]weft.ToolCall, n)
			for i := range calls {
				calls[i] = weft.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "count", Arguments: "{}"}
			}
			return &weft.Response{ToolCalls: calls}, nil
		}
		return &weft.Response{Text: "done"}, nil
	})
	eng, st := newEngine(t, registry([]*weft.Tool{count}, nil), model, nil)
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "go"}}); err != nil {
		t.Fatal(err)
	}
	msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleTool}, Limit: 1000})
	if ran != weft.MaxToolCallsPerReply || len(msgs) != n || !strings.Contains(msgs[n-1].Content, "may make 128 tool calls at most") {
		t.Errorf("ran %d, %d results, last %q", ran, len(msgs), msgs[len(msgs)-1].Content)
	}
}

// TestThreadLengthLimit: a message to a thread holding MaxThreadMessages messages is refused with
// an error naming the limit and how to raise it; nothing is queued; a negative limit turns it off.
func TestThreadLengthLimit(t *testing.T) {
	reg := registry(nil, nil)
	text := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		return &weft.Response{Text: "ok"}, nil
	})
	for _, tc := range []struct {
		limit   int
		refused bool
	}{{4, true}, {5, false}, {-1, false}} {
		st, _ := memstore.New(memstore.Options{})
		eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: text, MaxThreadMessages: tc.limit})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
		for i := range 2 {
			if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: fmt.Sprint("turn ", i)}}); err != nil {
				t.Fatalf("limit %d, turn %d: %v", tc.limit, i, err)
			}
		}
		_, err = eng.Send(ctx, th.ID, weft.NewMessage{Content: "one more"})
		if got := err != nil; got != tc.refused {
			t.Fatalf("limit %d: %v", tc.limit, err)
		}
		if tc.refused {
			if weft.ErrorCode(err) != weft.EInvalid || !strings.Contains(err.Error(), "holds 4 messages; the limit is 4") ||
				!strings.Contains(err.Error(), "MaxThreadMessages") {
				t.Errorf("refusal: %v", err)
			}
			// The same through Converse, whose run's first transaction queues the message.
			_, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "and one more"}})
			if weft.ErrorCode(err) != weft.EInvalid || !strings.Contains(err.Error(), "holds 4 messages; the limit is 4") {
				t.Errorf("refusal through Ask: %v", err)
			}
			if q, _ := st.Queued(ctx, th.ID); len(q) != 0 {
				t.Errorf("a refused message was queued: %+v", q)
			}
			if got, _ := st.Thread(ctx, th.ID); got.Status == weft.ThreadRunning {
				t.Errorf("a refused message left the thread %s", got.Status)
			}
		}
	}
}
