package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/weft-agents/weft/validate"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/schema"
)

// historyModel answers from the conversation it receives, so any number of threads can run at
// once: the reviewer approves; the assistant starts a background review and schedules a reminder
// on a new request, notes a report or a reminder, and otherwise answers "Done.".
var historyModel = weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
	if req.Prompt == "reviewer" {
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "approve", Arguments: `{"summary":"Approved."}`}}}, nil
	}
	// The user rows since the last assistant row are what is unanswered.
	var answers []string
	for i := len(req.Messages) - 1; i > 0 && req.Messages[i].Role == weft.RoleUser; i-- {
		text := req.Messages[i].Text()
		switch {
		case strings.HasPrefix(text, "Subagent (reference:"):
			answers = append(answers, "The review is back.")
		case strings.HasPrefix(text, "Reminder:"):
			answers = append(answers, "Reminder noted.")
		case strings.HasPrefix(text, "Review"):
			return &weft.Response{ToolCalls: []weft.ToolCall{
				{ID: weft.NewID("call_"), Name: "review", Arguments: `{"message":"Draft: x"}`},
				{ID: weft.NewID("call_"), Name: "remind", Arguments: `{}`},
			}}, nil
		}
	}
	if len(answers) > 0 {
		return &weft.Response{Text: strings.Join(answers, " ")}, nil
	}
	return &weft.Response{Text: "Done."}, nil
})

// backgroundRegistry offers the assistant a non-blocking review subagent and a tool scheduling a
// reminder effect due at once.
func backgroundRegistry() *weft.Registry {
	blocking := false
	reg := subagentRegistry(weft.ToolEntry{Blocking: &blocking}, nil)
	reg.AddEffect(&weft.Effect{Name: "reminder", Description: "Queue a reminder.", Run: func(ctx context.Context, st weft.State, _ []byte) error {
		_, err := st.QueueMessage(ctx, weft.NewMessage{Role: weft.RoleUser, Content: "Reminder: check the review."})
		return err
	}})
	reg.AddTool(&weft.Tool{Name: "remind", Description: "Schedule a reminder.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		if _, err := st.ScheduleEffect(ctx, "reminder", nil, 0); err != nil {
			return weft.ToolResult{}, err
		}
		return weft.Success("scheduled"), nil
	})})
	p, _ := reg.Prompt("assistant")
	p.Tools = append(p.Tools, weft.ToolEntry{Name: "remind"})
	return reg
}

func newEngine(t testing.TB, reg *weft.Registry, model weft.Provider, onEvent func(engine.Event)) (*engine.Engine, weft.Store) {
	t.Helper()
	if d := validate.Registry(reg); d.HasErrors() {
		t.Fatal(d.Err())
	}
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: model, OnEvent: onEvent})
	if err != nil {
		t.Fatal(err)
	}
	return eng, st
}

// TestConverse: one call takes a message and yields the events of the thread's tree until it is
// quiet — the first run, the background child's run, its report's run and the reminder effect's
// run included — and Ask returns the thread's stops.
func TestConverse(t *testing.T) {
	eng, st := newEngine(t, backgroundRegistry(), historyModel, nil)
	ctx := context.Background()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	stops := map[string]int{}
	for ev, err := range eng.Converse(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Review my draft."}}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.RootID != th.ID {
			t.Errorf("event %s of thread %s has root %q", ev.Type, ev.ThreadID, ev.RootID)
		}
		if ev.ThreadID == th.ID {
			types = append(types, ev.Type)
		}
		if ev.Type == "run_stopped" {
			stops[ev.ThreadID]++
		}
	}
	if len(types) == 0 || types[0] != "run_started" || types[len(types)-1] != "run_stopped" {
		t.Errorf("root events: %v", types)
	}
	child := childOf(t, &harness{t: t, store: st}, th.ID)
	// The request's run, the report's run and the reminder's run (the last two may merge when
	// both messages are queued before a run starts).
	if stops[child.ID] != 1 || stops[th.ID] < 2 {
		t.Errorf("stops: %v", stops)
	}
	msgs, err := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, m := range msgs {
		if m.Role == weft.RoleAssistant && m.Content != "" {
			answers = append(answers, m.Content)
		}
	}
	if got := strings.Join(answers, "|"); !strings.Contains(got, "The review is back.") || !strings.Contains(got, "Reminder noted.") {
		t.Errorf("answers: %s", got)
	}
	q, _ := st.Queued(ctx, th.ID)
	if len(q) != 0 {
		t.Errorf("%d messages left queued", len(q))
	}

	// Ask: a follow-up message on the same thread, outcome only.
	res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Thanks."}})
	if err != nil || len(res.Stops) != 1 || res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("Ask: %+v %v", res, err)
	}
}

// TestAskOnCallersGoroutine: Ask runs the thread's first run on the caller's goroutine (its events
// are emitted there), and returns the stops of the thread's later runs too, which other goroutines
// run (the background child's report, the reminder), as Converse yields them for the same
// conversation on another thread.
func TestAskOnCallersGoroutine(t *testing.T) {
	var mu sync.Mutex
	started := map[string]uint64{} // thread -> goroutine of its first run_started
	eng, _ := newEngine(t, backgroundRegistry(), historyModel, func(ev engine.Event) {
		if ev.Type == "run_started" {
			mu.Lock()
			if _, ok := started[ev.ThreadID]; !ok {
				started[ev.ThreadID] = goroutineID()
			}
			mu.Unlock()
		}
	})
	ctx := context.Background()
	msg := engine.Input{Message: &weft.NewMessage{Content: "Review my draft."}}
	viaConverse, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	want := 0
	for ev, err := range eng.Converse(ctx, viaConverse.ID, msg) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "run_stopped" && ev.ThreadID == viaConverse.ID {
			want++
		}
	}
	viaAsk, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	res, err := eng.Ask(ctx, viaAsk.ID, msg)
	if err != nil {
		t.Fatal(err)
	}
	// The request's run, the report's and the reminder's: two or three stops (the last two merge
	// when both messages are queued before a run starts), as Converse yields.
	if n := len(res.Stops); n < 2 || n > 3 || want < 2 || want > 3 {
		t.Errorf("Ask returned %d stops, Converse yielded %d for the same conversation (want 2 or 3 each)", n, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if me := goroutineID(); started[viaAsk.ID] != me {
		t.Errorf("Ask's run started on goroutine %d, the caller is %d", started[viaAsk.ID], me)
	}
	if started[viaConverse.ID] == goroutineID() {
		t.Errorf("Converse's run started on the caller's goroutine; the test cannot tell them apart")
	}
}

// goroutineID reads the calling goroutine's number from its stack header ("goroutine 7 [running]").
func goroutineID() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := strings.Fields(string(buf))
	if len(f) < 2 {
		return 0
	}
	id, _ := strconv.ParseUint(f[1], 10, 64)
	return id
}

// TestConverseRefused: a message a thread refuses is the sequence's error, and nothing runs.
func TestConverseRefused(t *testing.T) {
	eng, _ := newEngine(t, registry(nil, nil), historyModel, nil)
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err := eng.Terminate(ctx, th.ID); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		threadID string
		in       engine.Input
		want     error
	}{
		{"terminated", th.ID, engine.Input{Message: &weft.NewMessage{Content: "Hi"}}, weft.ErrTerminated},
		{"terminated_continue", th.ID, engine.Input{}, weft.ErrTerminated},
		{"unknown_thread", "thr_missing", engine.Input{Message: &weft.NewMessage{Content: "Hi"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var events int
			var last error
			for _, err := range eng.Converse(ctx, tc.threadID, tc.in) {
				if err != nil {
					last = err
					continue
				}
				events++
			}
			if last == nil || events != 0 || (tc.want != nil && !errors.Is(last, tc.want)) {
				t.Fatalf("events %d, error %v", events, last)
			}
		})
	}
}

// TestConverseBreakStopsRun: a consumer that stops reading stops the run (aborted, lease released)
// and leaves no goroutine behind.
func TestConverseBreakStopsRun(t *testing.T) {
	release := make(chan struct{})
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &weft.Response{Text: "late"}, nil
	})
	eng, st := newEngine(t, registry(nil, nil), model, nil)
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	before := runtime.NumGoroutine()
	for ev, err := range eng.Converse(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Hi"}}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "llm_request" {
			break
		}
	}
	close(release)
	eng.Wait()
	got, _ := st.Thread(ctx, th.ID)
	if got.Status == weft.ThreadRunning || got.StopReason != weft.StopAborted {
		t.Errorf("thread after break: %s %s", got.Status, got.StopReason)
	}
	if _, err := st.AcquireLease(ctx, th.ID, "other", time.Minute); err != nil {
		t.Errorf("lease not released: %v", err)
	}
	waitGoroutines(t, before)
}

// waitGoroutines fails unless the goroutine count comes back to at most n (+2 for the runtime's
// own) within a few seconds.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n+2 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want ≤ %d:\n%s", runtime.NumGoroutine(), n+2, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServe: while the engine serves, a message posted with Send runs with no other call, a
// continue runs through ContinueAsync, and a scheduled effect runs when due.
func TestServe(t *testing.T) {
	var mu sync.Mutex
	continued := map[string]int{} // runs a continue started that have stopped, by thread
	inContinue := map[string]bool{}
	stoppedCh := make(chan string, 64)
	eng, st := newEngine(t, backgroundRegistry(), historyModel, func(ev engine.Event) {
		switch ev.Type {
		case "run_started":
			mu.Lock()
			inContinue[ev.ThreadID] = ev.Data.(engine.RunStarted).Trigger == "continue"
			mu.Unlock()
		case "run_stopped":
			mu.Lock()
			if inContinue[ev.ThreadID] {
				continued[ev.ThreadID]++
			}
			mu.Unlock()
			stoppedCh <- ev.ThreadID
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- eng.Serve(ctx, engine.ServeOptions{Workers: 4}) }()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "Review my draft."}); err != nil {
		t.Fatal(err)
	}
	// The request's run, the child's run, then the report's and the reminder's (maybe merged).
	waitFor(t, stoppedCh, func() bool {
		msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: 100})
		var review, reminder bool
		for _, m := range msgs {
			review = review || strings.Contains(m.Content, "The review is back.")
			reminder = reminder || strings.Contains(m.Content, "Reminder noted.")
		}
		if !review || !reminder {
			for _, m := range msgs {
				t.Logf("%s %q %v", m.Role, m.Content, m.ToolCalls)
			}
		}
		return review && reminder
	})
	if err := eng.ContinueAsync(ctx, th.ID, ""); err != nil {
		t.Fatal(err)
	}
	// The continue's own run, however fast it is over: a count read after ContinueAsync returned
	// may already include it.
	waitFor(t, stoppedCh, func() bool { mu.Lock(); defer mu.Unlock(); return continued[th.ID] == 1 })
	if err := eng.ContinueAsync(ctx, "thr_missing", ""); weft.ErrorCode(err) != weft.ENotFound {
		t.Errorf("continue of an unknown thread: %v", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, ch <-chan string, done func() bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for !done() {
		select {
		case <-ch:
		case <-timeout:
			t.Fatal("timed out")
		}
	}
}

// TestServeShutdownSuspends: a shutdown interrupts a run without stopping it (its status stays
// running, its lease is released), and the next Serve resumes and finishes it.
func TestServeShutdownSuspends(t *testing.T) {
	entered := make(chan struct{}, 1)
	var calls atomic.Int32
	slow := &weft.Tool{Name: "slow", Description: "Takes a while.", Idempotent: true, Args: schema.Object(),
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			calls.Add(1)
			select {
			case entered <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return weft.ToolResult{}, ctx.Err()
		})}
	var resumed atomic.Bool
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == weft.RoleTool {
			return &weft.Response{Text: "Finished after the restart."}, nil
		}
		if resumed.Load() {
			return &weft.Response{Text: "unexpected"}, nil
		}
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "slow", Arguments: "{}"}}}, nil
	})
	reg := registry([]*weft.Tool{slow}, nil)
	eng, st := newEngine(t, reg, model, nil)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- eng.Serve(ctx, engine.ServeOptions{DrainTimeout: 50 * time.Millisecond}) }()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "Go"}); err != nil {
		t.Fatal(err)
	}
	<-entered
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	got, _ := st.Thread(context.Background(), th.ID)
	if got.Status != weft.ThreadRunning {
		t.Fatalf("status after shutdown: %s (%s)", got.Status, got.StopReason)
	}
	if _, err := st.AcquireLease(context.Background(), th.ID, "probe", time.Millisecond); err != nil {
		t.Fatalf("lease after shutdown: %v", err)
	}
	time.Sleep(5 * time.Millisecond) // the probe's lease expires

	// A new engine on the same store resumes the run at start: the idempotent call runs again.
	resumed.Store(true)
	slow.Execute = weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		calls.Add(1)
		return weft.Success("done"), nil
	})
	eng2, err := engine.New(engine.Options{Registry: reg, Store: st, Override: model})
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	served2 := make(chan error, 1)
	go func() { served2 <- eng2.Serve(ctx2, engine.ServeOptions{}) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ = st.Thread(context.Background(), th.ID)
		if got.Status != weft.ThreadRunning || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel2()
	<-served2
	if got.Status != weft.ThreadAwaitingHuman || got.StopReason != weft.StopOnResponse || calls.Load() != 2 {
		msgs, _ := st.Messages(context.Background(), th.ID, weft.MessageQuery{Limit: 100})
		for _, m := range msgs {
			t.Logf("%s %q %v", m.Role, m.Content, m.ToolCalls)
		}
		t.Fatalf("after resume: %s %s, %d tool calls", got.Status, got.StopReason, calls.Load())
	}
	msgs, _ := st.Messages(context.Background(), th.ID, weft.MessageQuery{Limit: 100})
	if last := msgs[len(msgs)-1]; last.Content != "Finished after the restart." {
		t.Errorf("last message %q", last.Content)
	}
}

// TestSchedulerThousandThreads: 1,000 threads, each with a background child and an effect, run
// through the serving scheduler to the end; afterwards no goroutine is left, and an idle serving
// engine does no work at all (its CPU time over 2 s stays near zero).
func TestSchedulerThousandThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 threads: skipped with -short")
	}
	n := 1000
	if v := os.Getenv("WEFT_TEST_THREADS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	done := make(chan string, 4*n)
	eng, st := newEngine(t, backgroundRegistry(), historyModel, func(ev engine.Event) {
		if ev.Type == "message" {
			if d, ok := ev.Data.(engine.MessageData); ok && d.Message.Role == weft.RoleAssistant {
				m := d.Message
				for _, a := range []string{"The review is back.", "Reminder noted."} {
					if strings.Contains(m.Content, a) {
						done <- ev.ThreadID + "|" + a
					}
				}
			}
		}
	})
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- eng.Serve(ctx, engine.ServeOptions{Workers: 16}) }()
	ids := make([]string, n)
	for i := range ids {
		th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = th.ID
		if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: fmt.Sprintf("Review draft %d.", i)}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	timeout := time.After(30 * time.Second)
	for len(seen) < 2*n {
		select {
		case k := <-done:
			seen[k] = true
		case <-timeout:
			for _, id := range ids {
				if seen[id+"|The review is back."] && seen[id+"|Reminder noted."] {
					continue
				}
				th, _ := st.Thread(ctx, id)
				q, _ := st.Queued(ctx, id)
				msgs, _ := st.Messages(ctx, id, weft.MessageQuery{Limit: 100})
				t.Logf("stuck %s: %s %s, %d queued, %d rows", id, th.Status, th.StopReason, len(q), len(msgs))
				for _, m := range msgs {
					t.Logf("   %s %q", m.Role, m.Content)
				}
				break
			}
			t.Fatalf("%d of %d answers after 120 s", len(seen), 2*n)
		}
	}
	// Quiet: every thread idle, nothing queued.
	eng.Wait()
	for _, id := range ids {
		th, _ := st.Thread(ctx, id)
		q, _ := st.Queued(ctx, id)
		if th.Status == weft.ThreadRunning || len(q) != 0 {
			t.Fatalf("thread %s: %s, %d queued", id, th.Status, len(q))
		}
	}
	// Idle: no goroutine per thread, and no wake-ups.
	runtime.GC()
	if g := settledGoroutines(); g > before+4 {
		t.Errorf("%d goroutines while idle, %d before serving", g, before)
	}
	cpu0 := cpuTime()
	time.Sleep(2 * time.Second)
	used := cpuTime() - cpu0
	if used > 100*time.Millisecond {
		t.Errorf("an idle serving engine used %v of CPU in 2 s", used)
	}
	t.Logf("%d threads with a child and an effect each: done; then idle for 2 s: %v of CPU, %d goroutines (%d before serving)",
		n, used, runtime.NumGoroutine(), before)
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, before)
}

// TestSubagentAndDeletionEvents: a child's creation and end are subagent events of its parent;
// a message a tool deletes is a message_deleted event.
func TestSubagentAndDeletionEvents(t *testing.T) {
	eng, _ := newEngine(t, backgroundRegistry(), historyModel, nil)
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	var got []string
	for ev, err := range eng.Converse(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Review my draft."}}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "subagent" && ev.ThreadID == th.ID {
			d := ev.Data.(engine.Fields)
			got = append(got, fmt.Sprint(d["agent"], " ", d["status"]))
		}
	}
	if strings.Join(got, ",") != "review running,review terminated" {
		t.Errorf("subagent events %v", got)
	}

	var deleted []any
	reg := registry([]*weft.Tool{{Name: "forget", Description: "Forget the question.", Args: schema.Object(),
		Execute: weft.ToolFunc(func(ctx context.Context, s weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			msgs, err := s.Messages(ctx, weft.MessageQuery{Roles: []weft.Role{weft.RoleUser}})
			if err != nil || len(msgs) == 0 {
				return weft.Failure("nothing to forget"), nil
			}
			return weft.Success("forgotten"), s.DeleteMessage(ctx, msgs[0].ID)
		})}}, nil)
	forgetful := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == weft.RoleUser {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "f1", Name: "forget", Arguments: "{}"}}}, nil
		}
		return &weft.Response{Text: "done"}, nil
	})
	eng2, _ := newEngine(t, reg, forgetful, func(ev engine.Event) {
		if ev.Type == "message_deleted" {
			deleted = append(deleted, ev.Data.(engine.Fields)["message_id"])
		}
	})
	th2, _ := eng2.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := eng2.Ask(ctx, th2.ID, engine.Input{Message: &weft.NewMessage{Content: "secret question"}}); err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || deleted[0] == "" {
		t.Errorf("message_deleted events %v", deleted)
	}
}

// TestServeResumesAfterDeadLease: a serving engine started while a dead process's lease on a
// thread is still valid resumes the thread once that lease expires, with no other wake-up.
func TestServeResumesAfterDeadLease(t *testing.T) {
	st, _ := memstore.New(memstore.Options{})
	defer st.Close()
	reg := registry(nil, nil)
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		return &weft.Response{Text: "answered"}, nil
	})
	ttl := 150 * time.Millisecond
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: model, LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	// A process took the thread and died: its lease stays valid for ttl.
	if _, _, err := st.BeginRun(ctx, th.ID, "dead-node", ttl, nil); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go eng.Serve(sctx, engine.ServeOptions{})
	deadline := time.Now().Add(5 * time.Second)
	for {
		msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleAssistant}})
		if len(msgs) == 1 && msgs[0].Content == "answered" {
			return
		}
		if time.Now().After(deadline) {
			got, _ := st.Thread(ctx, th.ID)
			t.Fatalf("not resumed after the dead lease expired: status %s, %d replies", got.Status, len(msgs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// listCounter counts the thread listings that returned.
type listCounter struct {
	weft.Store
	n atomic.Int32
}

func (s *listCounter) Threads(ctx context.Context, q weft.ThreadQuery) ([]*weft.Thread, int, error) {
	time.Sleep(20 * time.Millisecond)
	defer s.n.Add(1)
	return s.Store.Threads(ctx, q)
}

// TestServeStartedAfterRecovery: ServeOptions.Started (a server's readiness) comes once the work a
// stopped process left has been looked for, not before.
func TestServeStartedAfterRecovery(t *testing.T) {
	ms, _ := memstore.New(memstore.Options{})
	st := &listCounter{Store: ms}
	eng, err := engine.New(engine.Options{Registry: backgroundRegistry(), Store: st, Override: historyModel})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan int32, 1)
	served := make(chan error, 1)
	go func() {
		served <- eng.Serve(ctx, engine.ServeOptions{Started: func() { started <- st.n.Load() }})
	}()
	select {
	case n := <-started:
		if n < 2 {
			t.Fatalf("Started after %d thread listings; RecoverAll lists running and queued threads first", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Started was not called")
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// askCounter counts the reads a conversation may skip: the thread's record, its children's list
// and effect claims.
type askCounter struct {
	weft.Store
	threads, children, claims atomic.Int32
}

func (s *askCounter) Thread(ctx context.Context, id string) (*weft.Thread, error) {
	s.threads.Add(1)
	return s.Store.Thread(ctx, id)
}

func (s *askCounter) Threads(ctx context.Context, q weft.ThreadQuery) ([]*weft.Thread, int, error) {
	if q.ParentID != "" {
		s.children.Add(1)
	}
	return s.Store.Threads(ctx, q)
}

func (s *askCounter) ClaimEffects(ctx context.Context, node string, limit int, ttl time.Duration) ([]weft.EffectRecord, error) {
	s.claims.Add(1)
	return s.Store.ClaimEffects(ctx, node, limit, ttl)
}

// TestConverseAsksOnlyWhenThereIsWork: a conversation reads neither the thread (its root is
// known) nor its children nor the effects when the run's start showed there are none; a child, an
// effect due, or a thread this engine never saw are each read, and the effect runs.
func TestConverseAsksOnlyWhenThereIsWork(t *testing.T) {
	ctx := t.Context()
	mem, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	st := &askCounter{Store: mem}
	open := func() *engine.Engine {
		eng, err := engine.New(engine.Options{Registry: lookupRegistry(), Store: st, Override: lookupModel})
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}
	eng := open()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	converse := func(eng *engine.Engine, what string, threads, children, claims bool) {
		t.Helper()
		st.threads.Store(0)
		st.children.Store(0)
		st.claims.Store(0)
		answered := false
		for ev, err := range eng.Converse(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Where is order 42?"}}) {
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			answered = answered || ev.Type == "run_stopped"
		}
		if !answered {
			t.Errorf("%s: no run stopped", what)
		}
		for _, c := range []struct {
			name string
			n    int32
			want bool
		}{{"thread reads", st.threads.Load(), threads}, {"children lists", st.children.Load(), children}, {"effect claims", st.claims.Load(), claims}} {
			if (c.n > 0) != c.want {
				t.Errorf("%s: %d %s, want them: %v", what, c.n, c.name, c.want)
			}
		}
	}
	converse(eng, "nothing around", false, false, false)

	due := &weft.EffectRecord{ThreadID: th.ID, Name: "remind", RunAt: time.Now().Add(-time.Minute), MaxAttempts: 1}
	if err := mem.ScheduleEffect(ctx, due); err != nil {
		t.Fatal(err)
	}
	converse(eng, "an effect due", true, false, true) // running it reads its thread
	if es, _ := mem.Effects(ctx, th.ID); len(es) != 1 || es[0].Status == weft.EffectPending {
		t.Errorf("the due effect was not claimed: %+v", es)
	}

	if err := mem.CreateThread(ctx, &weft.Thread{Agent: "assistant", ParentID: th.ID}, nil); err != nil {
		t.Fatal(err)
	}
	converse(eng, "a child", false, true, false)

	converse(open(), "another engine", true, true, false)
}
