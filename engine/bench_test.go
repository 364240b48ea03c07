package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/postgres"
	"github.com/weft-agents/weft/sqlite"
)

// benchModel is an in-process scripted model: a tool call when the last message is the user's (in
// tool mode), else a short text.
func benchModel(toolMode bool) weft.Provider {
	return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if toolMode && last.Role == weft.RoleUser {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "call_lookup_1", Name: "lookup", Arguments: `{"order_id":42}`}},
				FinishReason: "tool_calls", Usage: weft.Usage{InputTokens: 1200, OutputTokens: 12}}, nil
		}
		return &weft.Response{Text: "Your order 42 has shipped and should arrive tomorrow (tracking PC123456789).",
			FinishReason: "stop", Usage: weft.Usage{InputTokens: 1300, OutputTokens: 20}}, nil
	})
}

func benchRegistry() *weft.Registry {
	type lookupArgs struct {
		OrderID int `json:"order_id" jsonschema:"description=Numeric id of the order"`
	}
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fast", Provider: "test", Model: "bench"})
	reg.AddTool(weft.NewTool("lookup", "Look up the current status of an order by its numeric id.",
		func(ctx context.Context, st weft.State, a lookupArgs) (weft.ToolResult, error) {
			return weft.Success("order 42: shipped 2 days ago via ParcelCo, tracking PC123456789, expected delivery tomorrow"), nil
		}))
	reg.AddPrompt(&weft.Prompt{Name: "support", ToolDescription: "Order support.", Model: "fast", IncludeChat: true,
		Prompt: weft.Text("You are the order-support assistant for an online shop. Answer briefly."),
		Tools:  []weft.ToolEntry{{Name: "lookup"}}})
	reg.AddAgent(&weft.Agent{Name: "support", SideA: weft.AgentSide{Prompt: "support"}})
	return reg
}

// timedStore measures the time spent inside the store.
type timedStore struct {
	weft.Store
	ns atomic.Int64
}

func (s *timedStore) since(t time.Time) { s.ns.Add(int64(time.Since(t))) }

func (s *timedStore) Tx(ctx context.Context, id string, f *weft.Fence, fn func(weft.Tx) error) error {
	defer s.since(time.Now())
	return s.Store.Tx(ctx, id, f, fn)
}
func (s *timedStore) Messages(ctx context.Context, id string, q weft.MessageQuery) ([]weft.Message, error) {
	defer s.since(time.Now())
	return s.Store.Messages(ctx, id, q)
}
func (s *timedStore) Thread(ctx context.Context, id string) (*weft.Thread, error) {
	defer s.since(time.Now())
	return s.Store.Thread(ctx, id)
}
func (s *timedStore) ExecState(ctx context.Context, id string) (map[string]json.RawMessage, error) {
	defer s.since(time.Now())
	return s.Store.ExecState(ctx, id)
}
func (s *timedStore) Queued(ctx context.Context, id string) ([]weft.QueuedMessage, error) {
	defer s.since(time.Now())
	return s.Store.Queued(ctx, id)
}
func (s *timedStore) PushQueue(ctx context.Context, q *weft.QueuedMessage) error {
	defer s.since(time.Now())
	return s.Store.PushQueue(ctx, q)
}
func (s *timedStore) Env(ctx context.Context, sc weft.EnvScope, o string) ([]weft.EnvValue, error) {
	defer s.since(time.Now())
	return s.Store.Env(ctx, sc, o)
}
func (s *timedStore) AcquireLease(ctx context.Context, id, node string, ttl time.Duration) (weft.Fence, error) {
	defer s.since(time.Now())
	return s.Store.AcquireLease(ctx, id, node, ttl)
}
func (s *timedStore) BeginRun(ctx context.Context, id, node string, ttl time.Duration, push *weft.QueuedMessage) (weft.Fence, *weft.RunStart, error) {
	defer s.since(time.Now())
	return s.Store.BeginRun(ctx, id, node, ttl, push)
}
func (s *timedStore) ReleaseLease(ctx context.Context, f weft.Fence) error {
	defer s.since(time.Now())
	return s.Store.ReleaseLease(ctx, f)
}

// benchStores are the stores the engine benchmarks run on.
var benchStores = []string{"memory", "sqlite", "postgres"}

func openBenchStore(b testing.TB, kind string) weft.Store {
	var st weft.Store
	var err error
	switch kind {
	case "memory":
		st, err = memstore.New(memstore.Options{})
	case "sqlite":
		st, err = sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "weft.db"), sqlite.Options{Key: make([]byte, 32)})
	case "postgres": // skipped unless WEFT_TEST_POSTGRES_URL is set
		_, dsn := pgtest.Schema(b)
		return openPostgres(b, dsn)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// seed creates n threads that each already hold 21 messages (a system note and 20 alternating
// user/assistant messages of ~200 bytes).
func seed(b testing.TB, eng *engine.Engine, st weft.Store, n int) []string {
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "support"})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = th.ID
		err = st.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
			if err := tx.InsertMessage(&weft.Message{Role: weft.RoleSystem, Content: "Conversation imported.", Status: weft.MessageCompleted}); err != nil {
				return err
			}
			for j := range 20 {
				role, side := weft.RoleUser, weft.SideB
				if j%2 == 1 {
					role, side = weft.RoleAssistant, weft.SideA
				}
				text := strings.Repeat(fmt.Sprintf("[%s %02d] the parcel left the warehouse on monday. ", role, j), 5)[:200]
				if err := tx.InsertMessage(&weft.Message{Role: role, Side: side, Content: text, Status: weft.MessageCompleted, Prompt: map[bool]string{true: "support"}[role == weft.RoleAssistant]}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

// benchTurns runs one turn (Send + Run until quiet) per iteration, each on a fresh thread holding
// 21 messages; threads are seeded in batches outside the timer.
func benchTurns(b *testing.B, kind string, toolMode bool) {
	ts := &timedStore{Store: openBenchStore(b, kind)}
	eng, err := engine.New(engine.Options{Registry: benchRegistry(), Store: ts, Override: benchModel(toolMode)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const batch = 512
	var ids, used []string
	var steps int
	b.ReportAllocs()
	b.ResetTimer()
	ts.ns.Store(0)
	start := time.Now()
	var paused time.Duration
	for i := 0; i < b.N; i++ {
		if len(ids) == 0 {
			b.StopTimer()
			p := time.Now()
			saved := ts.ns.Load()
			// Keep the heap at one batch of threads: the measure is the turn, not GC over a
			// store that grows with b.N.
			for _, u := range used {
				if err := ts.Store.DeleteThread(ctx, u); err != nil {
					b.Fatal(err)
				}
			}
			used = used[:0]
			ids = seed(b, eng, ts.Store, min(batch, b.N-i))
			ts.ns.Store(saved)
			paused += time.Since(p)
			b.StartTimer()
		}
		id := ids[0]
		ids = ids[1:]
		used = append(used, id)
		if _, err := eng.Send(ctx, id, weft.NewMessage{Content: "Where is my order 42? It was supposed to arrive yesterday."}); err != nil {
			b.Fatal(err)
		}
		res, err := eng.Run(ctx, id)
		if err != nil || res.Last().Reason != weft.StopOnResponse {
			b.Fatalf("%v %+v", err, res.Last())
		}
		steps += res.Steps
	}
	elapsed := time.Since(start) - paused
	b.ReportMetric(float64(ts.ns.Load())/float64(elapsed)*100, "%store")
	b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
}

// BenchmarkStep is one step: a user message and a text reply, persisted.
func BenchmarkStep(b *testing.B) {
	for _, kind := range benchStores {
		b.Run(kind, func(b *testing.B) { benchTurns(b, kind, false) })
	}
}

// BenchmarkToolTurn is the peers' turn: model call → validated args → tool → result → model reply.
func BenchmarkToolTurn(b *testing.B) {
	for _, kind := range benchStores {
		b.Run(kind, func(b *testing.B) { benchTurns(b, kind, true) })
	}
}

// threeSteps answers two tool calls, then text: a 3-step conversation.
func threeSteps() weft.Provider {
	return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		tools := 0
		for _, m := range req.Messages {
			if m.Role == weft.RoleTool {
				tools++
			}
		}
		if tools < 2 {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: fmt.Sprintf("call_%d", tools+1), Name: "lookup", Arguments: `{"order_id":42}`}}}, nil
		}
		return &weft.Response{Text: "done"}, nil
	})
}

// BenchmarkConcurrentThreads runs 1,000 threads' 3-step conversations at once and reports steps/s.
func BenchmarkConcurrentThreads(b *testing.B) {
	for _, kind := range benchStores {
		b.Run(kind, func(b *testing.B) {
			const threads = 1000
			st := openBenchStore(b, kind)
			eng, err := engine.New(engine.Options{Registry: benchRegistry(), Store: st, Override: threeSteps()})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var total time.Duration
			steps := 0
			for b.Loop() {
				b.StopTimer()
				ids := make([]string, threads)
				for i := range ids {
					th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "support"})
					if err != nil {
						b.Fatal(err)
					}
					ids[i] = th.ID
					if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "Where is my order 42?"}); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				start := time.Now()
				var done atomic.Int64
				errs := make(chan error, threads)
				for _, id := range ids {
					go func() {
						res, err := eng.Run(ctx, id)
						if err == nil && res.Last().Reason != weft.StopOnResponse {
							err = fmt.Errorf("stop %+v", res.Last())
						}
						if err == nil {
							done.Add(int64(res.Steps))
						}
						errs <- err
					}()
				}
				for range ids {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
				total += time.Since(start)
				steps += int(done.Load())
			}
			b.ReportMetric(float64(steps)/total.Seconds(), "steps/s")
		})
	}
}

// BenchmarkConcurrentNodes is BenchmarkConcurrentThreads on PostgreSQL with the threads spread over
// 1 or 3 engines, each with a store (a connection pool) of its own on the one database: nodes, as
// far as the database can tell, on this one machine. Reports steps/s.
func BenchmarkConcurrentNodes(b *testing.B) {
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			const threads = 999
			_, dsn := pgtest.Schema(b)
			engines := make([]*engine.Engine, nodes)
			for i := range engines {
				// The nodes share the database's connection budget (the default pool's 16), as nodes
				// sized for one database server would: on this machine more connections in all only
				// add context switches.
				st, err := postgres.Open(context.Background(), dsn, postgres.Options{Key: make([]byte, 32), MaxConns: int32(16 / nodes)})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { st.Close() })
				if engines[i], err = engine.New(engine.Options{Registry: benchRegistry(), Store: st, Override: threeSteps()}); err != nil {
					b.Fatal(err)
				}
			}
			ctx := context.Background()
			var total time.Duration
			steps := 0
			for b.Loop() {
				b.StopTimer()
				ids := make([]string, threads)
				for i := range ids {
					eng := engines[i%nodes]
					th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "support"})
					if err != nil {
						b.Fatal(err)
					}
					ids[i] = th.ID
					if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "Where is my order 42?"}); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				start := time.Now()
				var done atomic.Int64
				errs := make(chan error, threads)
				for i, id := range ids {
					go func() {
						res, err := engines[i%nodes].Run(ctx, id)
						if err == nil {
							done.Add(int64(res.Steps))
						}
						errs <- err
					}()
				}
				for range ids {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
				total += time.Since(start)
				steps += int(done.Load())
			}
			b.ReportMetric(float64(steps)/total.Seconds(), "steps/s")
		})
	}
}
