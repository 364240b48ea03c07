package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/schema"
	"github.com/weft-agents/weft/scripted"
)

func TestRetriesAndFallbacks(t *testing.T) {
	// cli.md §4's retry and fallback script: a 429 with retry_after 2 s, a 503, then the fallback.
	reg := registry(nil, nil)
	m, _ := reg.Model("fast")
	m.Fallbacks = []string{"backup"}
	reg.AddModel(&weft.Model{Name: "backup", Provider: "test", Model: "b"})
	h := newHarness(t, reg, `
- {match: {model: fast}, error: {status: 429, retry_after: 2}}
- {match: {model: fast}, error: {status: 503}}
- {match: {model: backup}, text: Answer from the fallback.}
`)
	start := h.script.Clock().Now()
	th, res := h.run("assistant", "go", nil)
	if res.Last().Reason != weft.StopOnResponse || h.transcript(th.ID)[1] != "assistant: Answer from the fallback." {
		t.Fatalf("%+v", res.Last())
	}
	// Virtual time: the retry waited max(base delay, retry_after) = 2 s without sleeping.
	if waited := h.script.Clock().Now().Sub(start); waited < 2*time.Second || waited > 3*time.Second {
		t.Errorf("virtual wait %s", waited)
	}
	logs, _ := h.store.Logs(context.Background(), th.ID, weft.LogQuery{Limit: 10})
	var got []string
	for _, l := range logs {
		got = append(got, fmt.Sprintf("%s %s %d %v", l.Model, l.ErrorType, l.StatusCode, l.IsComplete))
	}
	if strings.Join(got, "; ") != "fast rate_limit 429 false; fast server_error 503 false; backup  0 true" {
		t.Errorf("one log row per attempt: %v", got)
	}
	if logs[1].RetryOfLogID != logs[0].ID || logs[2].RetryOfLogID != logs[1].ID {
		t.Error("attempts are linked")
	}
	t.Run("exhausted", func(t *testing.T) {
		h := newHarness(t, registry(nil, nil), "- {error: {status: 500}}\n- {error: {status: 502, message: bad gateway}}\n")
		_, res := h.run("assistant", "go", nil)
		if res.Last().Reason != weft.StopStepError || res.Last().Error != "All retry attempts exhausted for model fast and 0 fallbacks: server_error (502): bad gateway" {
			t.Errorf("%+v", res.Last())
		}
	})
	t.Run("auth_skips_retries", func(t *testing.T) {
		h := newHarness(t, registry(nil, nil), "- {error: {status: 401, message: bad key}}\n")
		_, res := h.run("assistant", "go", nil)
		if res.Last().Reason != weft.StopStepError || h.script.Remaining() != 0 {
			t.Errorf("%+v", res.Last())
		}
	})
}

func TestHTTPTool(t *testing.T) {
	var gotQuery, gotAuth string
	var gotBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			gotAuth = r.Header.Get("Authorization")
			gotQuery = r.URL.RawQuery
			if r.URL.Query().Get("id") == "404" {
				http.Error(w, "no such order", http.StatusNotFound)
				return
			}
			fmt.Fprint(w, `{"status":"success","result":"order found"}`)
		case http.MethodPost:
			gotBody, _ = io.ReadAll(r.Body)
			fmt.Fprint(w, "  created  ")
		}
	}))
	defer srv.Close()
	vars := []weft.VariableDefinition{{Name: "TOKEN", Type: weft.VarSecret, Required: true, Description: "t"}}
	get := &weft.Tool{Name: "get_order", Description: "d", Variables: vars, Args: schema.Object(schema.Field("id", schema.Integer())),
		HTTP: &weft.HTTPSpec{URL: srv.URL + "/orders", Method: "GET", Headers: map[string]string{"Authorization": "Bearer ${env:TOKEN}"}}}
	post := &weft.Tool{Name: "create", Description: "d", Args: schema.Object(schema.Field("title", schema.String())), HTTP: &weft.HTTPSpec{URL: srv.URL + "/items"}}
	h := newHarness(t, registry([]*weft.Tool{get, post}, nil), `
- tool_calls: [{name: get_order, arguments: {id: 7}}, {name: get_order, arguments: {id: 404}}, {name: create, arguments: {title: x}}]
- expect: {not_contains: s3cr3t-token}
  text: ok
`)
	th, _ := h.run("assistant", "go", map[string]string{"TOKEN": "s3cr3t-token"})
	wantTranscript(t, h.transcript(th.ID)[2:5],
		"tool:get_order: order found",
		"tool:get_order: Failed to execute tool: HTTP 404: no such order",
		"tool:create: created")
	if gotAuth != "Bearer s3cr3t-token" || gotQuery != "id=404" || string(gotBody) != `{"title":"x"}` {
		t.Errorf("auth %q query %q body %s", gotAuth, gotQuery, gotBody)
	}
}

// boundaryStore cancels the run's context right after the n-th write transaction commits.
type boundaryStore struct {
	weft.Store
	n, at  int
	cancel context.CancelFunc
}

func (s *boundaryStore) Tx(ctx context.Context, id string, f *weft.Fence, fn func(weft.Tx) error) error {
	err := s.Store.Tx(ctx, id, f, fn)
	if f != nil {
		s.n++
		if s.n == s.at {
			s.cancel()
		}
	}
	return err
}

// TestCancelAtEveryStepBoundary kills a tool turn's run right after each of its transactions, then
// continues the thread: nothing persisted is lost or duplicated and the turn still completes.
func TestCancelAtEveryStepBoundary(t *testing.T) {
	script := "options: {on_exhausted: repeat_last}\nresponses:\n" +
		"- {match: {depth: 0}, expect: {last_role: user}, tool_calls: [{name: lookup, arguments: {id: 1}}]}\n"
	for at := 1; at <= 12; at++ {
		t.Run(fmt.Sprint("tx_", at), func(t *testing.T) {
			var calls []string
			reg := registry([]*weft.Tool{recorder("lookup", &calls, "found")}, nil)
			mem, _ := memstore.New(memstore.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			bs := &boundaryStore{Store: mem, at: at, cancel: cancel}
			sc, _ := scripted.Parse("s", []byte(script+"- {text: done}\n"))
			eng, _ := engine.New(engine.Options{Registry: reg, Store: bs, Override: scripted.New(sc)})
			th, _ := eng.CreateThread(context.Background(), engine.NewThread{Agent: "assistant"})
			eng.Send(context.Background(), th.ID, weft.NewMessage{Content: "go"})
			eng.Run(ctx, th.ID)
			before, _ := mem.Messages(context.Background(), th.ID, weft.MessageQuery{Limit: 100})
			// A fresh process (engine) continues the thread.
			sc2, _ := scripted.Parse("s2", []byte("options: {on_exhausted: repeat_last}\nresponses:\n- {text: done}\n"))
			eng2, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: scripted.New(sc2)})
			res, err := eng2.Continue(context.Background(), th.ID, weft.SideA)
			if err != nil {
				t.Fatal(err)
			}
			after, _ := mem.Messages(context.Background(), th.ID, weft.MessageQuery{Limit: 100})
			seen := map[string]bool{}
			for i, m := range after {
				if seen[m.ID] || m.Seq != int64(i+1) {
					t.Fatalf("duplicate or gap at %d: %+v", i, m)
				}
				seen[m.ID] = true
			}
			for _, m := range before {
				if !seen[m.ID] {
					t.Errorf("persisted message %s lost", m.ID)
				}
			}
			if len(calls) > 1 {
				t.Errorf("the tool ran %d times", len(calls))
			}
			if last := after[len(after)-1]; last.Content != "done" && res.Last().Reason != weft.StopOnResponse {
				t.Errorf("the thread did not complete: %+v %+v", res.Last(), last)
			}
		})
	}
}

// settledGoroutines returns the goroutine count once it has not moved for 100 ms (2 s at most):
// the goroutines that ran a conversation wait idleFor (50 ms) for another before they exit.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			break
		}
		n = m
	}
	return n
}

// TestIdleThreadHoldsNothing: after a run, no goroutine of the engine stays behind.
func TestIdleThreadHoldsNothing(t *testing.T) {
	h := newHarness(t, registry(nil, nil), "options: {on_exhausted: repeat_last}\nresponses:\n- {text: ok}\n")
	h.run("assistant", "warm up", nil)
	runtime.GC()
	before := settledGoroutines()
	for range 50 {
		h.run("assistant", "hello", nil)
	}
	if after := settledGoroutines(); after > before {
		t.Errorf("goroutines %d → %d after 50 idle threads", before, after)
	}
}

// TestMessagePostedDuringRun: a message queued while the run executes a tool joins the thread at
// the next step boundary, after the tool result, exactly once, and the model sees it.
func TestMessagePostedDuringRun(t *testing.T) {
	var h *harness
	var threadID string
	poster := &weft.Tool{Name: "poster", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		if _, err := h.eng.Send(ctx, threadID, weft.NewMessage{Content: "also: cancel order 7"}); err != nil {
			return weft.ToolResult{}, err
		}
		return weft.Success("posted"), nil
	})}
	h = newHarness(t, registry([]*weft.Tool{poster}, nil), `
- tool_calls: [{name: poster}]
- expect: {last_contains: "also: cancel order 7", roles: [user, assistant, tool, user]}
  text: Noted both.
`)
	th, err := h.eng.CreateThread(context.Background(), engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	threadID = th.ID
	res := h.send(th.ID, "first question")
	if res.Last().Reason != weft.StopOnResponse || len(res.Stops) != 1 {
		t.Fatalf("%+v", res.Stops)
	}
	wantTranscript(t, h.transcript(th.ID), "user: first question", "assistant:  [poster {}]", "tool:poster: posted",
		"user: also: cancel order 7", "assistant: Noted both.")
	if q, _ := h.store.Queued(context.Background(), th.ID); len(q) != 0 {
		t.Errorf("queue not empty: %+v", q)
	}
}

// TestMessagesQueuedDuringRunAreTaken: a message queued while a run works is never left behind,
// whether this engine's Send queued it or another process wrote it to the store: queued during a
// tool, it joins at the next step boundary; queued during the last model call, the run is followed
// by another one within the same Run. A store whose transactions miss a push (one landing between
// the transaction's read and its commit) still has Send's mark on the run.
func TestMessagesQueuedDuringRunAreTaken(t *testing.T) {
	for _, kind := range []string{"memory", "sqlite", "late reads"} {
		for _, via := range []string{"send", "store"} {
			for _, during := range []string{"tool", "final call"} {
				if kind == "late reads" && via == "store" {
					continue // only Send can mark the run
				}
				t.Run(kind+"/"+via+"/"+during, func(t *testing.T) {
					ctx := context.Background()
					var st weft.Store
					if kind == "late reads" {
						st = missedPushes{openBenchStore(t, "memory")}
					} else {
						st = openBenchStore(t, kind)
					}
					var eng *engine.Engine
					var threadID string
					pushed := false
					push := func() error {
						pushed = true
						if via == "send" {
							_, err := eng.Send(ctx, threadID, weft.NewMessage{Content: "also: cancel order 7"})
							return err
						}
						return st.PushQueue(ctx, &weft.QueuedMessage{ThreadID: threadID, Role: weft.RoleUser, Content: "also: cancel order 7"})
					}
					poster := &weft.Tool{Name: "poster", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, _ weft.State, _ json.RawMessage) (weft.ToolResult, error) {
						if during == "tool" {
							if err := push(); err != nil {
								return weft.ToolResult{}, err
							}
						}
						return weft.Success("posted"), nil
					})}
					model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
						last := req.Messages[len(req.Messages)-1]
						switch {
						case last.Role == weft.RoleUser && last.Content == "first question":
							return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "poster", Arguments: "{}"}}}, nil
						case last.Role == weft.RoleTool && during == "final call" && !pushed:
							if err := push(); err != nil {
								return nil, err
							}
							return &weft.Response{Text: "Posted."}, nil
						}
						return &weft.Response{Text: "Noted: " + last.Content}, nil
					})
					var err error
					eng, err = engine.New(engine.Options{Registry: registry([]*weft.Tool{poster}, func(p *weft.Prompt) { p.IncludeChat = true }), Store: st, Override: model})
					if err != nil {
						t.Fatal(err)
					}
					th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
					if err != nil {
						t.Fatal(err)
					}
					threadID = th.ID
					if _, err := eng.Send(ctx, threadID, weft.NewMessage{Content: "first question"}); err != nil {
						t.Fatal(err)
					}
					res, err := eng.Run(ctx, threadID)
					if err != nil {
						t.Fatal(err)
					}
					h := &harness{t: t, store: st}
					want := []string{"user: first question", "assistant:  [poster {}]", "tool:poster: posted",
						"user: also: cancel order 7", "assistant: Noted: also: cancel order 7"}
					runs := 1
					if during == "final call" {
						want = slices.Insert(want, 3, "assistant: Posted.")
						runs = 2
					}
					wantTranscript(t, h.transcript(threadID), want...)
					if len(res.Stops) != runs || res.Last().Reason != weft.StopOnResponse {
						t.Errorf("stops %+v, want %d ending on a response", res.Stops, runs)
					}
					if q, _ := st.Queued(ctx, threadID); len(q) != 0 {
						t.Errorf("queue not empty: %+v", q)
					}
				})
			}
		}
	}
}

// missedPushes is a store whose transactions never see a queued message.
type missedPushes struct{ weft.Store }

func (s missedPushes) Tx(ctx context.Context, id string, f *weft.Fence, fn func(weft.Tx) error) error {
	return s.Store.Tx(ctx, id, f, func(tx weft.Tx) error { return fn(missedPushesTx{tx}) })
}

type missedPushesTx struct{ weft.Tx }

func (missedPushesTx) QueueSeq() (int64, error) { return 0, nil }

// TestRecoverAll: a fresh process finds the work a crashed one left — a run that died after its
// reply committed (status running, lease left to expire) and a message queued but never run — and
// finishes both, leaving a finished thread alone.
func TestRecoverAll(t *testing.T) {
	var calls []string
	reg := registry([]*weft.Tool{recorder("lookup", &calls, "found")}, nil)
	mem, clock := newDeathStore()
	script := func() weft.Provider {
		return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
			if req.Messages[len(req.Messages)-1].Role == weft.RoleUser {
				return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"id":1}`}}}, nil
			}
			return &weft.Response{Text: "done"}, nil
		})
	}
	bg := context.Background()
	// Process 1: one thread finishes, one dies after its reply's commit, one only queues.
	cs := &crashStore{Store: mem, after: 1 << 30}
	eng1, _ := engine.New(engine.Options{Registry: reg, Store: cs, Override: script(), LeaseTTL: deadTTL})
	done, _ := eng1.CreateThread(bg, engine.NewThread{Agent: "assistant"})
	eng1.Send(bg, done.ID, weft.NewMessage{Content: "first"})
	eng1.Run(bg, done.ID)
	crashed, _ := eng1.CreateThread(bg, engine.NewThread{Agent: "assistant"})
	waiting, _ := eng1.CreateThread(bg, engine.NewThread{Agent: "assistant"})
	eng1.Send(bg, waiting.ID, weft.NewMessage{Content: "third"})
	eng1.Send(bg, crashed.ID, weft.NewMessage{Content: "second"})
	cs.mu.Lock()
	cs.after = cs.n + 1
	cs.mu.Unlock()
	eng1.Run(bg, crashed.ID) // dies after the reply's commit
	if th, _ := mem.Thread(bg, crashed.ID); th.Status != weft.ThreadRunning {
		t.Fatalf("the crash left status %s", th.Status)
	}
	before, _ := mem.Messages(bg, done.ID, weft.MessageQuery{Limit: 100})

	// Process 2 recovers everything at start, once the dead process's lease has expired.
	clock.expire()
	eng2, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: script()})
	rec, err := eng2.RecoverAll(bg)
	if err != nil {
		t.Fatal(err)
	}
	eng2.Wait()
	if !slices.Equal(rec.Continued, []string{crashed.ID}) || !slices.Equal(rec.Started, []string{waiting.ID}) {
		t.Errorf("recovered: %+v", rec)
	}
	for _, id := range []string{crashed.ID, waiting.ID} {
		th, _ := mem.Thread(bg, id)
		msgs, _ := mem.Messages(bg, id, weft.MessageQuery{Limit: 100})
		if th.Status == weft.ThreadRunning || len(msgs) == 0 || msgs[len(msgs)-1].Content != "done" {
			t.Errorf("thread %s not finished: status %s, %d messages", id, th.Status, len(msgs))
		}
		if q, _ := mem.Queued(bg, id); len(q) != 0 {
			t.Errorf("thread %s still has %d queued", id, len(q))
		}
	}
	if len(calls) != 3 {
		t.Errorf("lookup ran %d times, want once per thread", len(calls))
	}
	if after, _ := mem.Messages(bg, done.ID, weft.MessageQuery{Limit: 100}); len(after) != len(before) {
		t.Errorf("the finished thread changed: %d → %d messages", len(before), len(after))
	}
	// A second recovery finds nothing.
	if rec, _ := eng2.RecoverAll(bg); len(rec.Continued)+len(rec.Started)+len(rec.Trees) != 0 {
		t.Errorf("second recovery: %+v", rec)
	}
}

// TestIdleThreadsHoldNoMemory: the engine keeps nothing per thread once its run ends — thousands of
// threads run and then deleted (taking their rows with them) leave the live heap where it was.
func TestIdleThreadsHoldNoMemory(t *testing.T) {
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng, err := engine.New(engine.Options{Registry: benchRegistry(), Store: st, Override: benchModel(true)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	turns := func(n int) {
		for range n {
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "support"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "Where is my order 42?"}); err != nil {
				t.Fatal(err)
			}
			if res, err := eng.Run(ctx, th.ID); err != nil || res.Last().Reason != weft.StopOnResponse {
				t.Fatalf("%v %+v", err, res)
			}
			if err := st.DeleteThread(ctx, th.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	turns(200) // caches, pools and maps reach their working size
	before := heap()
	const n = 2000
	turns(n)
	after := heap()
	if after > before && (after-before)/n > 16 {
		t.Errorf("live heap grew %d B over %d finished threads (%d B each)", after-before, n, (after-before)/n)
	}
	t.Logf("live heap %d → %d B over %d finished threads", before, after, n)
}

// TestConcurrentRunsOwnTheirRequests: runs reuse request buffers (a request is dead once its step
// is stored), so concurrent runs must never see another thread's messages, nor a later step
// rewrite a request still in use.
func TestConcurrentRunsOwnTheirRequests(t *testing.T) {
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		var tag string
		for _, m := range req.Messages {
			if m.Role != weft.RoleUser {
				continue
			}
			if tag == "" {
				tag = m.Content[:strings.Index(m.Content, ":")]
			}
			if !strings.HasPrefix(m.Content, tag+":") {
				return nil, fmt.Errorf("a request mixes threads: %q and %q", tag, m.Content)
			}
		}
		before := fmt.Sprint(req.Messages)
		runtime.Gosched()
		if after := fmt.Sprint(req.Messages); after != before {
			return nil, fmt.Errorf("the request changed during the call")
		}
		if req.Messages[len(req.Messages)-1].Role == weft.RoleUser {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"order_id":42}`}}}, nil
		}
		return &weft.Response{Text: tag + ": done"}, nil
	})
	eng, err := engine.New(engine.Options{Registry: benchRegistry(), Store: st, Override: model})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "support"})
			if err != nil {
				errs <- err
				return
			}
			for i := range 20 {
				if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: fmt.Sprintf("t%d: question %d", g, i)}); err != nil {
					errs <- err
					return
				}
				res, err := eng.Run(ctx, th.ID)
				if err == nil && res.Last().Reason != weft.StopOnResponse {
					err = fmt.Errorf("stop %+v", res.Last())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestHTTPToolRedirects: a declared header (a secret key) never follows a redirect to another
// host — the call fails with an error saying why — while a redirect within the host is followed;
// a response over the limit is refused, not cut.
func TestHTTPToolRedirects(t *testing.T) {
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked = append(leaked, r.Header.Get("X-Api-Key"))
		fmt.Fprint(w, "elsewhere")
	}))
	defer other.Close()
	var same string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusMovedPermanently)
		case "/here":
			same = r.Header.Get("X-Api-Key")
			fmt.Fprint(w, "here")
		case "/huge":
			w.Write(bytes.Repeat([]byte("x"), 8<<20+1))
		}
	}))
	defer srv.Close()
	vars := []weft.VariableDefinition{{Name: "API_TOKEN", Type: weft.VarSecret, Required: true, Description: "t"}}
	tool := func(name, path string) *weft.Tool {
		return &weft.Tool{Name: name, Description: "d", Variables: vars, HTTP: &weft.HTTPSpec{URL: srv.URL + path, Method: "GET",
			Headers: map[string]string{"X-Api-Key": "${env:API_TOKEN}"}}}
	}
	h := newHarness(t, registry([]*weft.Tool{tool("away", "/away"), tool("moved", "/moved"), tool("huge", "/huge")}, nil), `
- tool_calls: [{name: away, arguments: {}}, {name: moved, arguments: {}}, {name: huge, arguments: {}}]
- text: ok
`)
	th, _ := h.run("assistant", "go", map[string]string{"API_TOKEN": "s3cr3t-key"})
	got := h.transcript(th.ID)[2:5]
	if len(leaked) != 0 || same != "s3cr3t-key" {
		t.Errorf("other host saw %q; same host saw %q", leaked, same)
	}
	if !strings.Contains(got[0], "redirected from http://127.0.0.1") || !strings.Contains(got[0], "only within its own host") ||
		got[1] != "tool:moved: here" || !strings.Contains(got[2], "over the 8 MiB limit") {
		t.Errorf("results:\n%s", strings.Join(got, "\n"))
	}
}
