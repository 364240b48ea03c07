package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// fanOutModel: the coordinator starts n reviews, in replies of at most weft.MaxToolCallsPerReply
// calls (a longer reply is refused), and acknowledges each report; every reviewer approves at once.
func fanOutModel(n int) weft.Provider {
	return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if req.Prompt == "reviewer" {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "a", Name: "approve", Arguments: `{"summary":"approved"}`}}}, nil
		}
		started, asked := 0, false
		for _, m := range req.Messages {
			asked = asked || m.Role == weft.RoleUser && strings.HasPrefix(m.Content, "Review")
			for _, c := range m.ToolCalls {
				if c.Name == "review" {
					started++
				}
			}
		}
		if asked && started < n {
			calls := make([]weft.ToolCall, min(n-started, weft.MaxToolCallsPerReply))
			for i := range calls {
				id := started + i
				calls[i] = weft.ToolCall{ID: fmt.Sprint("c", id), Name: "review", Arguments: fmt.Sprintf(`{"message":"Draft %d"}`, id)}
			}
			return &weft.Response{ToolCalls: calls}, nil
		}
		return &weft.Response{Text: "noted"}, nil
	})
}

// BenchmarkNonBlockingChildren creates and completes 1,000 short non-blocking children from one
// parent: each child takes a model step and a session-stop tool call, reports to the parent and is
// terminated; the parent acknowledges the reports. It reports children/s and the peak heap.
func BenchmarkNonBlockingChildren(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite"} {
		b.Run(kind, func(b *testing.B) {
			const children = 1000
			blocking := false
			reg := subagentRegistry(weft.ToolEntry{Blocking: &blocking}, nil)
			st := openBenchStore(b, kind)
			eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: fanOutModel(children), LeaseTTL: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var peak atomic.Uint64
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				var ms runtime.MemStats
				for {
					runtime.ReadMemStats(&ms)
					if ms.HeapInuse > peak.Load() {
						peak.Store(ms.HeapInuse)
					}
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			var total time.Duration
			done := 0
			for b.Loop() {
				th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "Review these drafts."}); err != nil {
					b.Fatal(err)
				}
				if _, err := eng.Run(ctx, th.ID); err != nil {
					b.Fatal(err)
				}
				eng.Wait()
				total += time.Since(start)
				kids, n, err := st.Threads(ctx, weft.ThreadQuery{ParentID: th.ID, Status: weft.ThreadTerminated, Limit: 1})
				if err != nil || n != children || len(kids) != 1 {
					b.Fatalf("terminated children: %d (%v)", n, err)
				}
				reports, err := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1, Roles: []weft.Role{weft.RoleUser}})
				if err != nil || len(reports) != children+1 {
					b.Fatalf("parent saw %d user rows, want %d reports + 1 (%v)", len(reports), children+1, err)
				}
				done += children
			}
			close(stop)
			<-sampled
			b.ReportMetric(float64(done)/total.Seconds(), "children/s")
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		})
	}
}
