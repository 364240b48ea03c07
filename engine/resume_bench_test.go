package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/sqlite"
)

// BenchmarkResume measures what a fresh process pays to resume a thread: open the SQLite file,
// build the engine, take the lease, load the thread and run its first step (a model call with a
// text reply, includeChat false). Threads hold 10, 1,000 and 10,000 messages.
func BenchmarkResume(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprint(n, "_messages"), func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "weft.db")
			key := make([]byte, 32)
			reg := weft.NewRegistry()
			reg.AddModel(&weft.Model{Name: "fast", Provider: "test"})
			reg.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "d", Model: "fast", Prompt: weft.Text("Be brief.")})
			reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
			model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
				return &weft.Response{Text: "ok"}, nil
			})
			st, err := sqlite.Open(ctx, path, sqlite.Options{Key: key})
			if err != nil {
				b.Fatal(err)
			}
			eng, _ := engine.New(engine.Options{Registry: reg, Store: st, Override: model})
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "a"})
			if err != nil {
				b.Fatal(err)
			}
			for done := 0; done < n; done += 500 {
				err := st.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
					for i := done; i < min(done+500, n); i++ {
						role, side := weft.RoleUser, weft.SideB
						if i%2 == 1 {
							role, side = weft.RoleAssistant, weft.SideA
						}
						if err := tx.InsertMessage(&weft.Message{Role: role, Side: side, Content: fmt.Sprintf("message %d of a long conversation about orders and parcels", i), Status: weft.MessageCompleted}); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			st.Close()
			b.ResetTimer()
			for b.Loop() {
				st, err := sqlite.Open(ctx, path, sqlite.Options{Key: key})
				if err != nil {
					b.Fatal(err)
				}
				eng, _ := engine.New(engine.Options{Registry: reg, Store: st, Override: model})
				res, err := eng.Continue(ctx, th.ID, weft.SideA)
				if err != nil || res.Steps != 1 {
					b.Fatalf("%v %+v", err, res)
				}
				b.StopTimer()
				st.Close()
				b.StartTimer()
			}
		})
	}
}
