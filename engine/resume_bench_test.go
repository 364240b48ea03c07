package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/postgres"
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
			reg, model := resumeAgent()
			st, err := sqlite.Open(ctx, path, sqlite.Options{Key: key})
			if err != nil {
				b.Fatal(err)
			}
			eng, _ := engine.New(engine.Options{Registry: reg, Store: st, Override: model})
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "a"})
			if err != nil {
				b.Fatal(err)
			}
			seedHistory(b, st, th.ID, n)
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

// resumeAgent is the agent the resume benchmarks run: a prompt without the chat history, a model
// that answers "ok".
func resumeAgent() (*weft.Registry, weft.Provider) {
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fast", Provider: "test"})
	reg.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "d", Model: "fast", Prompt: weft.Text("Be brief.")})
	reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
	return reg, weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		return &weft.Response{Text: "ok"}, nil
	})
}

// resumeThread makes a thread of the resume agent on st with n messages, and returns the agent's
// registry and model and the thread's id.
func resumeThread(b *testing.B, st weft.Store, n int) (*weft.Registry, weft.Provider, string) {
	reg, model := resumeAgent()
	eng, _ := engine.New(engine.Options{Registry: reg, Store: st, Override: model})
	th, err := eng.CreateThread(context.Background(), engine.NewThread{Agent: "a"})
	if err != nil {
		b.Fatal(err)
	}
	seedHistory(b, st, th.ID, n)
	return reg, model, th.ID
}

// seedHistory stores n messages of a conversation in the thread.
func seedHistory(b *testing.B, st weft.Store, threadID string, n int) {
	for done := 0; done < n; done += 500 {
		err := st.Tx(context.Background(), threadID, nil, func(tx weft.Tx) error {
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
}

// BenchmarkResumePostgres: a new engine on a PostgreSQL store takes the lease of a thread of
// 10,000 messages, loads it and runs its first step (the store and its pool stay open, and keep no
// history: a node that picks up another's thread).
func BenchmarkResumePostgres(b *testing.B) {
	ctx := context.Background()
	_, dsn := pgtest.Schema(b)
	st, err := postgres.Open(ctx, dsn, postgres.Options{Key: make([]byte, 32), HistoryCache: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	reg, model, id := resumeThread(b, st, 10000)
	b.ReportAllocs()
	for b.Loop() {
		eng, _ := engine.New(engine.Options{Registry: reg, Store: st, Override: model})
		if res, err := eng.Continue(ctx, id, weft.SideA); err != nil || res.Steps != 1 {
			b.Fatalf("%v %+v", err, res)
		}
	}
}

// BenchmarkLongThreadTurn measures a turn (a user message and the model's answer, through Ask) on
// a thread already 1,000 messages long, on each store, by one engine that keeps serving it: what
// every turn of a long conversation pays, where BenchmarkResume is what a fresh process pays once.
// The PostgreSQL case runs when WEFT_TEST_POSTGRES_URL is set.
func BenchmarkLongThreadTurn(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) weft.Store
	}{
		{"sqlite", func(b *testing.B) weft.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "weft.db"), sqlite.Options{Key: make([]byte, 32)})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		}},
		{"postgres", func(b *testing.B) weft.Store {
			_, dsn := pgtest.Schema(b)
			return openPostgres(b, dsn)
		}},
	}
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			ctx := context.Background()
			st := s.open(b)
			reg, model, id := resumeThread(b, st, 1000)
			eng, _ := engine.New(engine.Options{Registry: reg, Store: st, Override: model})
			b.ReportAllocs()
			for b.Loop() {
				res, err := eng.Ask(ctx, id, engine.Input{Message: &weft.NewMessage{Content: "one more question"}})
				if err != nil || res.Reply == nil {
					b.Fatalf("%v %+v", err, res)
				}
			}
		})
	}
}

// BenchmarkBudgetedTurn: a turn (a user message and the answer, through Ask) on a SQLite thread
// whose 2,000 earlier model calls each left a log row, with and without a budget, whose check
// before each model call adds up the thread's spend.
func BenchmarkBudgetedTurn(b *testing.B) {
	for _, budget := range []bool{false, true} {
		b.Run(fmt.Sprint("budget=", budget), func(b *testing.B) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "weft.db"), sqlite.Options{Key: make([]byte, 32)})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			reg, model, id := resumeThread(b, st, 100)
			eng, _ := engine.New(engine.Options{Registry: reg, Store: st, Override: model})
			cost := 0.0001
			for done := 0; done < 2000; done += 500 {
				if err := st.Tx(ctx, id, nil, func(tx weft.Tx) error {
					for range 500 {
						if err := tx.PutLog(&weft.LogEntry{ID: weft.NewID("log_"), Kind: "llm", Model: "fast", InputTokens: 900,
							OutputTokens: 100, CostTotal: &cost, CreatedAt: time.Now()}); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
			if budget {
				if err := eng.SetBudget(ctx, id, weft.Budget{MaxCostUSD: 1000}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := eng.Ask(ctx, id, engine.Input{Message: &weft.NewMessage{Content: "one more question"}})
				if err != nil || res.Reply == nil {
					b.Fatalf("%v %+v", err, res)
				}
			}
		})
	}
}
