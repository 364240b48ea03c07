package httpapi_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/sqlite"
)

// benchModel answers a user message with one lookup call and the tool result with a short text:
// a one-tool turn, decided by the history so that any number of threads share it.
var benchModel = weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
	if req.Messages[len(req.Messages)-1].Role == weft.RoleUser {
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{}`}}, FinishReason: "tool_calls"}, nil
	}
	return &weft.Response{Text: "Order 42 shipped.", FinishReason: "stop"}, nil
})

func benchRegistry() *weft.Registry {
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "m", Provider: "test", Model: "m"})
	reg.AddTool(weft.NewTool("lookup", "Look an order up.", func(ctx context.Context, _ weft.State, _ struct{}) (weft.ToolResult, error) {
		return weft.Success("shipped"), nil
	}))
	reg.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "Support.", Model: "m", IncludeChat: true,
		Prompt: weft.Text("Answer order questions."), Tools: []weft.ToolEntry{{Name: "lookup"}}})
	reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
	return reg
}

// benchServer is the API over a serving engine on a SQLite file, on a loopback port.
type benchServer struct {
	eng   *engine.Engine
	store *sqlite.Store
	srv   *httptest.Server
	key   string
	// http posts; streams holds the SSE connections. Apart, as in a browser, so that a stream
	// the client ends (which closes its connection) never takes the connection posts reuse.
	http, streams *http.Client
}

func newBenchServer(b testing.TB) *benchServer {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "weft.db"), sqlite.Options{Key: make([]byte, 32)})
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(engine.Options{Registry: benchRegistry(), Store: st, Override: benchModel, RecordEvents: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = eng.Serve(ctx, engine.ServeOptions{Workers: 64})
	}()
	s := &benchServer{eng: eng, store: st, key: "wft_admin_key_for_benchmarks",
		http:    &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2048}},
		streams: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2048}}}
	api := httpapi.New(httpapi.Options{Engine: eng, Auth: st, AdminKey: s.key, Version: "bench"})
	api.SetReady(true)
	s.srv = httptest.NewServer(api.Handler())
	b.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
		cancel()
		<-served
		st.Close()
	})
	return s
}

func (s *benchServer) post(b *testing.B, path, body string) {
	req, _ := http.NewRequest("POST", s.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.key)
	resp, err := s.http.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	// Read to its end, as a client does, so that the connection is reused.
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		b.Fatalf("POST %s: %d", path, resp.StatusCode)
	}
}

// stream opens a thread's SSE stream and returns a channel that gets one value when run_stopped
// arrives. It returns once the stream has replayed the thread's first event (thread_created): a
// subscriber that is following the thread live, as a client that opened its stream earlier is.
func (s *benchServer) stream(b *testing.B, ctx context.Context, threadID string) <-chan struct{} {
	req, _ := http.NewRequestWithContext(ctx, "GET", s.srv.URL+"/api/threads/"+threadID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.key)
	resp, err := s.streams.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{}, 1)
	live := make(chan struct{})
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			switch sc.Text() {
			case "event: thread_created":
				close(live)
			case "event: run_stopped":
				done <- struct{}{}
				return
			}
		}
	}()
	<-live
	return done
}

func (s *benchServer) threads(b testing.TB, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		th, err := s.eng.CreateThread(context.Background(), engine.NewThread{Agent: "a"})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = th.ID
	}
	return ids
}

// BenchmarkTurn is a one-tool turn on a SQLite file, as a client of the server sees it — a
// posted message to its run_stopped event on the thread's SSE stream — and through the engine
// directly (Ask), in one run, so their ratio is the server's overhead.
func BenchmarkTurn(b *testing.B) {
	b.Run("engine", func(b *testing.B) {
		s := newBenchServer(b)
		ids := s.threads(b, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := s.eng.Ask(context.Background(), ids[i], engine.Input{Message: &weft.NewMessage{Content: "Where is order 42?"}}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/msg")
	})
	b.Run("server", func(b *testing.B) {
		s := newBenchServer(b)
		ids := s.threads(b, b.N)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// µs/msg is the span from the post to run_stopped; ns/op also holds opening the stream,
		// which a client does before it posts. The span is timed by hand: b.StopTimer and
		// b.StartTimer read the memory statistics, stopping the world, which on every turn cost
		// the turn after them about 0.1 ms.
		var turns time.Duration
		for i := 0; i < b.N; i++ {
			done := s.stream(b, ctx, ids[i])
			start := time.Now()
			s.post(b, "/api/threads/"+ids[i]+"/messages", `{"content":"Where is order 42?"}`)
			<-done
			turns += time.Since(start)
		}
		b.ReportMetric(float64(turns.Microseconds())/float64(b.N), "µs/msg")
	})
}

// BenchmarkConcurrentTurns is 1,000 threads' one-tool turns at once: through the server with
// 1,000 SSE subscribers (every message posted over HTTP, every run_stopped read from a stream),
// and through the engine directly. Reports messages/s.
func BenchmarkConcurrentTurns(b *testing.B) {
	const n = 1000
	for _, via := range []string{"engine", "server"} {
		b.Run(via, func(b *testing.B) {
			s := newBenchServer(b)
			var total time.Duration
			msgs := 0
			for b.Loop() {
				b.StopTimer()
				ids := s.threads(b, n)
				ctx, cancel := context.WithCancel(context.Background())
				var dones []<-chan struct{}
				if via == "server" {
					for _, id := range ids {
						dones = append(dones, s.stream(b, ctx, id))
					}
				}
				b.StartTimer()
				start := time.Now()
				var wg sync.WaitGroup
				errs := make(chan error, n)
				for i, id := range ids {
					wg.Go(func() {
						if via == "engine" {
							_, err := s.eng.Ask(context.Background(), id, engine.Input{Message: &weft.NewMessage{Content: "Where is order 42?"}})
							errs <- err
							return
						}
						s.post(b, "/api/threads/"+id+"/messages", `{"content":"Where is order 42?"}`)
						<-dones[i]
						errs <- nil
					})
				}
				wg.Wait()
				total += time.Since(start)
				msgs += n
				cancel()
				close(errs)
				for err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(msgs)/total.Seconds(), "msgs/s")
		})
	}
}

// BenchmarkTurnSetup is the work BenchmarkTurn does outside its timer — creating the threads, and
// for the server opening each thread's stream — so that instruction counts, which see everything,
// can subtract it (scripts/server-overhead.sh).
func BenchmarkTurnSetup(b *testing.B) {
	b.Run("threads", func(b *testing.B) {
		s := newBenchServer(b)
		s.threads(b, b.N)
	})
	b.Run("streams", func(b *testing.B) {
		s := newBenchServer(b)
		ids := s.threads(b, b.N)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for i := 0; i < b.N; i++ {
			s.stream(b, ctx, ids[i])
		}
	})
}

// BenchmarkLongThreadRead is what a client's view of a thread 10,000 messages and 2,000 model
// calls long costs the server: its newest page of messages, and the thread itself (with its
// message count and cost).
func BenchmarkLongThreadRead(b *testing.B) {
	s := newBenchServer(b)
	id := s.threads(b, 1)[0]
	cost := 0.001
	for done := 0; done < 10000; done += 500 {
		if err := s.store.Tx(context.Background(), id, nil, func(tx weft.Tx) error {
			for range 100 {
				if err := tx.PutLog(&weft.LogEntry{Kind: "llm", Model: "m", InputTokens: 900, OutputTokens: 100, CostTotal: &cost}); err != nil {
					return err
				}
			}
			for i := done; i < done+500; i++ {
				role := weft.RoleUser
				if i%2 == 1 {
					role = weft.RoleAssistant
				}
				if err := tx.InsertMessage(&weft.Message{Role: role, Side: weft.SideA, Status: weft.MessageCompleted,
					Content: "message of a long conversation about orders and parcels"}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct{ name, path string }{{"messages", "/messages?limit=100&order=desc"}, {"thread", ""}} {
		path := c.path
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest("GET", s.srv.URL+"/api/threads/"+id+path, nil)
				req.Header.Set("Authorization", "Bearer "+s.key)
				resp, err := s.http.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(body), `"total":10000`) && !strings.Contains(string(body), `"message_count":10000`) {
					b.Fatalf("GET %s: %d %.300s", path, resp.StatusCode, body)
				}
			}
		})
	}
}
