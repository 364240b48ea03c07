package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// appendModel calls the stop tool `append` (non-idempotent) after a user message, and again for
// anything else: asked again after the stop tool succeeded, it would append a second time.
var appendModel = weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
	n := 0
	for _, m := range req.Messages {
		n += len(m.ToolCalls)
	}
	return &weft.Response{ToolCalls: []weft.ToolCall{{ID: fmt.Sprint("call_", n+1), Name: "append", Arguments: `{}`}}}, nil
})

// TestStopToolNotRunAgainAfterCrash: the process dies at each write of a turn that ends with a
// non-idempotent stop tool. Once the stop tool's result is committed, the turn is over: the
// recovered run stops (stopTool) without asking the model again, so the tool never runs twice
// (issue 47, row 2: the model was asked again and its call_3 appended a second time).
func TestStopToolNotRunAgainAfterCrash(t *testing.T) {
	for after := 0; after <= 5; after++ {
		t.Run(fmt.Sprint("crash_after_commit_", after), func(t *testing.T) {
			var appends atomic.Int32
			reg := registry([]*weft.Tool{countTool("append", &appends)}, nil)
			a, _ := reg.Agent("assistant")
			a.SideA.StopTool = "append"
			mem, clock := newDeathStore()
			cs := &crashStore{Store: mem, after: after}
			ctx := context.Background()
			first, _ := engine.New(engine.Options{Registry: reg, Store: cs, Override: appendModel, LeaseTTL: deadTTL})
			th, _ := first.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			if _, err := first.Send(ctx, th.ID, weft.NewMessage{Content: "add a line"}); err != nil {
				t.Fatal(err)
			}
			_, _ = first.Run(ctx, th.ID) // dies after `after` commits
			committed := false
			before, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
			for _, m := range before {
				committed = committed || m.Role == weft.RoleTool && m.ToolStatus == weft.ToolSuccess
			}
			clock.expire()
			second, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: appendModel})
			if tt, _ := mem.Thread(ctx, th.ID); tt.Status == weft.ThreadRunning {
				if _, err := second.Continue(ctx, th.ID, ""); err != nil {
					t.Fatal(err)
				}
			}
			if q, _ := mem.Queued(ctx, th.ID); len(q) > 0 {
				if _, err := second.Run(ctx, th.ID); err != nil {
					t.Fatal(err)
				}
			}
			tt, _ := mem.Thread(ctx, th.ID)
			if committed && appends.Load() != 1 {
				t.Fatalf("the stop tool's result was committed, yet it ran %d times", appends.Load())
			}
			if tt.Status != weft.ThreadAwaitingHuman {
				t.Fatalf("thread %s after recovery, want awaiting_human", tt.Status)
			}
		})
	}
}
