package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/sqlite"
)

// busyWorld is a thread whose first run is held in a slow tool or a slow model stream while a
// second message is sent with a double-texting policy.
type busyWorld struct {
	// charges counts the runs of the non-idempotent tool charge, notes those of note.
	charges, notes atomic.Int32
	// toolStarted is told when charge starts; toolGo lets it finish.
	toolStarted, toolGo chan struct{}
	// modelStarted is told when the slow stream has sent its first chunk; modelGo lets it finish.
	// modelCause is the cause of its context's end, when it ended.
	modelStarted, modelGo chan struct{}
	modelCause            atomic.Value

	mu     sync.Mutex
	events []engine.Event
}

func newBusyWorld() *busyWorld {
	return &busyWorld{toolStarted: make(chan struct{}, 1), toolGo: make(chan struct{}),
		modelStarted: make(chan struct{}, 1), modelGo: make(chan struct{})}
}

// registry: charge (non-idempotent, held until toolGo) and note, offered to the assistant.
func (w *busyWorld) registry() *weft.Registry {
	charge := &weft.Tool{Name: "charge", Description: "Charge the card.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		w.charges.Add(1)
		w.toolStarted <- struct{}{}
		<-w.toolGo
		if ctx.Err() != nil {
			return weft.ToolResult{}, context.Cause(ctx) // would be recorded as a failure: the test sees it
		}
		return weft.Success("charged"), nil
	})}
	note := &weft.Tool{Name: "note", Description: "Note it.", Idempotent: true, Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		w.notes.Add(1)
		return weft.Success("noted"), nil
	})}
	return registry([]*weft.Tool{charge, note}, nil)
}

// model answers "charge" with the calls charge and note, then "done"; "stream" with a chunk, then
// waits for modelGo (a full answer) or its context's end; any other last user message with
// "answered: TEXT".
func (w *busyWorld) model() weft.Provider {
	return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, chunk func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == weft.RoleTool:
			return &weft.Response{Text: "done"}, nil
		case last.Text() == "charge":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "charge", Arguments: `{}`},
				{ID: weft.NewID("call_"), Name: "note", Arguments: `{}`}}}, nil
		case last.Text() == "stream":
			chunk(weft.Chunk{Text: "partial "})
			w.modelStarted <- struct{}{}
			select {
			case <-w.modelGo:
				return &weft.Response{Text: "partial and whole"}, nil
			case <-ctx.Done():
				w.modelCause.Store(context.Cause(ctx))
				return nil, ctx.Err()
			}
		}
		return &weft.Response{Text: "answered: " + last.Text()}, nil
	})
}

func (w *busyWorld) onEvent(ev engine.Event) {
	if ev.Type == "run_interrupted" || ev.Type == "run_stopped" || ev.Type == "run_started" || ev.Type == "message_deleted" {
		w.mu.Lock()
		w.events = append(w.events, ev)
		w.mu.Unlock()
	}
}

// runs lists the run events seen (run_started, run_stopped, run_interrupted) and message_deleted.
func (w *busyWorld) runs() []engine.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

// busyNodes are the engines of one test: run serves and runs the thread; send sends the second
// message (the same engine, or another node on the same store).
type busyNodes struct {
	run, send *engine.Engine
	store     weft.Store
	// remote: send is another process, which cannot tell the running run's id.
	remote bool
}

// serve runs e.Serve until the test ends.
func serve(t *testing.T, e *engine.Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	started := make(chan struct{})
	go func() { served <- e.Serve(ctx, engine.ServeOptions{Started: func() { close(started) }}) }()
	<-started
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
}

// busyStores opens, for each store the policies are tested on, the nodes of one test.
var busyStores = []struct {
	name string
	open func(t *testing.T, w *busyWorld) busyNodes
}{
	{"memstore", func(t *testing.T, w *busyWorld) busyNodes {
		st, err := memstore.New(memstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		e := busyEngine(t, w, st, "only")
		return busyNodes{run: e, send: e, store: st}
	}},
	{"sqlite", func(t *testing.T, w *busyWorld) busyNodes {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "weft.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		e := busyEngine(t, w, st, "only")
		return busyNodes{run: e, send: e, store: st}
	}},
	{"postgres_two_nodes", func(t *testing.T, w *busyWorld) busyNodes {
		_, dsn := pgtest.Schema(t)
		a, b := openPostgres(t, dsn), openPostgres(t, dsn)
		return busyNodes{run: busyEngine(t, w, a, "node-a"), send: busyEngine(t, w, b, "node-b"), store: a, remote: true}
	}},
}

func busyEngine(t *testing.T, w *busyWorld, st weft.Store, node string) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Options{Registry: w.registry(), Store: st, Override: w.model(), NodeID: node, RecordEvents: true,
		LeaseTTL: time.Hour, OnEvent: w.onEvent})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, e)
	return e
}

// TestIfBusy: each double-texting policy, sent while the thread's run is in a slow tool (charge,
// the first of two calls of a reply) and while it is in a slow model stream, on each store — on
// PostgreSQL from another node than the one running the thread.
//   - queue: the run goes on and takes the message at its next step boundary;
//   - reject: the message is refused (weft.BusyError, with the run's id when the sender runs it)
//     and nothing of it is stored;
//   - interrupt: the started tool completes and is recorded once, the reply's other call is
//     answered without running; a model stream is cancelled and nothing of it stored; the run
//     stops interrupted (run_interrupted names it and the message) and a new run answers the
//     message with everything the stopped run stored.
func TestIfBusy(t *testing.T) {
	cases := []struct {
		policy weft.IfBusy
		slow   string // "tool" or "model"
		want   []string
	}{
		{weft.IfBusyQueue, "tool", []string{"user: charge", "assistant:  [charge {}] [note {}]", "tool:charge: charged", "tool:note: noted",
			"user: second", "assistant: answered: second"}},
		{weft.IfBusyReject, "tool", []string{"user: charge", "assistant:  [charge {}] [note {}]", "tool:charge: charged", "tool:note: noted",
			"assistant: done"}},
		{weft.IfBusyInterrupt, "tool", []string{"user: charge", "assistant:  [charge {}] [note {}]", "tool:charge: charged",
			"tool:note: Failed to execute tool: Not run: a new message from the user interrupted the run", "user: second", "assistant: answered: second"}},
		{weft.IfBusyRollback, "tool", []string{"user: charge", "user: second", "assistant: answered: second"}},
		{weft.IfBusyQueue, "model", []string{"user: stream", "assistant: partial and whole", "user: second", "assistant: answered: second"}},
		{weft.IfBusyReject, "model", []string{"user: stream", "assistant: partial and whole"}},
		{weft.IfBusyInterrupt, "model", []string{"user: stream", "user: second", "assistant: answered: second"}},
		{weft.IfBusyRollback, "model", []string{"user: stream", "user: second", "assistant: answered: second"}},
	}
	for _, sc := range busyStores {
		t.Run(sc.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(string(c.policy)+"_during_slow_"+c.slow, func(t *testing.T) {
					w := newBusyWorld()
					nodes := sc.open(t, w)
					ctx := t.Context()
					th, err := nodes.run.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
					if err != nil {
						t.Fatal(err)
					}
					first, started := "charge", w.toolStarted
					if c.slow == "model" {
						first, started = "stream", w.modelStarted
					}
					if _, err := nodes.run.Send(ctx, th.ID, weft.NewMessage{Content: first}); err != nil {
						t.Fatal(err)
					}
					waitSignal(t, started, "the slow "+c.slow+" to start")
					firstRun := runStartedID(t, w)

					_, sendErr := nodes.send.Send(ctx, th.ID, weft.NewMessage{Content: "second", IfBusy: c.policy})
					if c.policy.Interrupts() && c.slow == "tool" {
						// The tool is not cancelled: it completes when it completes.
						time.Sleep(50 * time.Millisecond)
					}
					if c.slow == "tool" {
						close(w.toolGo)
					} else if !c.policy.Interrupts() {
						close(w.modelGo)
					}
					var be *weft.BusyError
					switch {
					case c.policy == weft.IfBusyReject && !errors.As(sendErr, &be):
						t.Fatalf("a rejected message: %v, want a BusyError", sendErr)
					case c.policy == weft.IfBusyReject && !nodes.remote && be.RunID != firstRun:
						t.Errorf("the refusal names run %q, want the running %q", be.RunID, firstRun)
					case c.policy != weft.IfBusyReject && sendErr != nil:
						t.Fatalf("send: %v", sendErr)
					}
					got := waitTranscript(t, nodes.store, th.ID, c.want[len(c.want)-1])
					if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
						t.Errorf("transcript:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
					}
					if c.slow == "tool" {
						if n := w.charges.Load(); n != 1 {
							t.Errorf("charge ran %d times, want once", n)
						}
						wantNotes := int32(1)
						if c.policy.Interrupts() {
							wantNotes = 0 // not started when the interrupt came
						}
						if n := w.notes.Load(); n != wantNotes {
							t.Errorf("note ran %d times, want %d", n, wantNotes)
						}
						calls, err := nodes.store.ToolCalls(ctx, th.ID)
						if err != nil {
							t.Fatal(err)
						}
						for _, rec := range calls {
							if rec.Status != weft.CallDone {
								t.Errorf("call %s (%s) is %s, want done", rec.CallID, rec.Name, rec.Status)
							}
						}
					}
					if c.slow == "model" && c.policy.Interrupts() {
						if cause, _ := w.modelCause.Load().(error); cause == nil || !strings.Contains(cause.Error(), "interrupted") {
							t.Errorf("the model stream's context ended with %v, want the interrupt's cause", cause)
						}
					}
					checkRunEvents(t, w, c.policy, firstRun, th.ID, nodes.store)
					if c.policy == weft.IfBusyRollback && c.slow == "tool" {
						// The reply and its two results, each removed with its message_deleted.
						if n := countEvents(w, "message_deleted"); n != 3 {
							t.Errorf("%d message_deleted events, want 3", n)
						}
					}
				})
			}
		})
	}
}

// checkRunEvents: an interrupt stops the first run with run_interrupted (its run id and the
// message's id) then run_stopped "interrupted", and a second run follows; the other policies
// stop no run that way.
func checkRunEvents(t *testing.T, w *busyWorld, policy weft.IfBusy, firstRun, threadID string, st weft.Store) {
	t.Helper()
	var types []string
	var interrupted engine.Fields
	deleted := 0
	for _, ev := range w.runs() {
		typ := ev.Type
		if typ == "message_deleted" {
			deleted++
			continue
		}
		switch d := ev.Data.(type) {
		case engine.RunStopped:
			typ += ":" + string(d.Reason)
		case engine.Fields:
			if ev.Type == "run_interrupted" {
				interrupted = d
			}
		}
		types = append(types, typ)
	}
	if policy != weft.IfBusyRollback && deleted > 0 {
		t.Errorf("policy %s deleted %d rows", policy, deleted)
	}
	if !policy.Interrupts() {
		if slices.Contains(types, "run_interrupted") || slices.Contains(types, "run_stopped:interrupted") {
			t.Errorf("policy %s interrupted a run: %q", policy, types)
		}
		return
	}
	want := []string{"run_started", "run_interrupted", "run_stopped:interrupted", "run_started", "run_stopped:" + string(weft.StopOnResponse)}
	if !slices.Equal(types, want) {
		t.Errorf("run events %q, want %q", types, want)
	}
	queued, err := st.Messages(t.Context(), threadID, weft.MessageQuery{Roles: []weft.Role{weft.RoleUser}})
	if err != nil {
		t.Fatal(err)
	}
	if interrupted["run_id"] != firstRun || len(queued) == 0 || interrupted["message_id"] != queued[len(queued)-1].ID ||
		interrupted["rollback"] != (policy == weft.IfBusyRollback) {
		t.Errorf("run_interrupted %v, want run %s and the message %v", interrupted, firstRun, queued)
	}
}

// countEvents counts the events of a type seen.
func countEvents(w *busyWorld, typ string) int {
	n := 0
	for _, ev := range w.runs() {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// runStartedID returns the id of the first run_started seen.
func runStartedID(t *testing.T, w *busyWorld) string {
	t.Helper()
	for _, ev := range w.runs() {
		if d, ok := ev.Data.(engine.RunStarted); ok {
			return d.RunID
		}
	}
	t.Fatal("no run_started")
	return ""
}

func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("waited 20 s for %s", what)
	}
}

// waitTranscript waits until the thread is idle with last as its newest row, and returns its
// transcript.
func waitTranscript(t *testing.T, st weft.Store, threadID, last string) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		msgs, err := st.Messages(t.Context(), threadID, weft.MessageQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			line := string(m.Role)
			if m.Name != "" {
				line += ":" + m.Name
			}
			line += ": " + m.Content
			for _, c := range m.ToolCalls {
				line += " [" + c.Name + " " + c.Arguments + "]"
			}
			out = append(out, line)
		}
		th, err := st.Thread(t.Context(), threadID)
		if err != nil {
			t.Fatal(err)
		}
		queued, err := st.Queued(t.Context(), threadID)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > 0 && out[len(out)-1] == last && th.Status != weft.ThreadRunning && len(queued) == 0 {
			time.Sleep(20 * time.Millisecond) // the run's last events
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thread did not end with %q in 20 s (status %s, queued %d):\n%s", last, th.Status, len(queued), strings.Join(out, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIfBusyIdleOrAsk: a thread with no run in progress takes a message whatever its policy, and
// none interrupts anything; Ask with reject while a run is in progress is refused the same way as
// Send (its message reaches the store's push, not the run's start); an unknown policy is refused.
func TestIfBusyIdleOrAsk(t *testing.T) {
	w := newBusyWorld()
	nodes := busyStores[0].open(t, w)
	ctx := t.Context()
	th, err := nodes.run.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.run.Send(ctx, th.ID, weft.NewMessage{Content: "x", IfBusy: "later"}); weft.ErrorCode(err) != weft.EInvalid {
		t.Errorf("an unknown policy: %v, want EInvalid", err)
	}
	for i, p := range []weft.IfBusy{weft.IfBusyReject, weft.IfBusyInterrupt, weft.IfBusyQueue} {
		text := "idle " + string(p)
		if _, err := nodes.run.Send(ctx, th.ID, weft.NewMessage{Content: text, IfBusy: p}); err != nil {
			t.Fatalf("%s to an idle thread: %v", p, err)
		}
		got := waitTranscript(t, nodes.store, th.ID, "assistant: answered: "+text)
		if len(got) != 2*(i+1) {
			t.Errorf("after %s: %q", p, got)
		}
	}
	if types := checkNoInterrupt(w); len(types) > 0 {
		t.Errorf("a message to an idle thread interrupted a run: %q", types)
	}
	if _, err := nodes.run.Send(ctx, th.ID, weft.NewMessage{Content: "charge"}); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, w.toolStarted, "the slow tool to start")
	_, err = nodes.run.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "asked", IfBusy: weft.IfBusyReject}})
	var be *weft.BusyError
	if !errors.As(err, &be) || be.RunID == "" {
		t.Errorf("Ask with reject during a run: %v, want a BusyError naming the run", err)
	}
	close(w.toolGo)
	got := waitTranscript(t, nodes.store, th.ID, "assistant: done")
	if slices.Contains(got, "user: asked") {
		t.Errorf("the refused message was stored: %q", got)
	}
}

// checkNoInterrupt returns the run events that say a run was interrupted.
func checkNoInterrupt(w *busyWorld) []string {
	var out []string
	for _, ev := range w.runs() {
		if d, ok := ev.Data.(engine.RunStopped); ev.Type == "run_interrupted" || ok && d.Reason == weft.StopInterrupted {
			out = append(out, ev.Type)
		}
	}
	return out
}

// TestIfBusyInterruptCrash: the process dies at each commit of a run that a message with
// if_busy interrupt or rollback stops while its non-idempotent tool runs. Once dead, the thread is in one of
// the two documented states — running (the interrupted run's stop not committed) or idle (it
// was) — with the interrupting message queued (or stored by the run that took it), never lost or
// doubled; after a restart the message is answered, and the tool has run at most once.
func TestIfBusyInterruptCrash(t *testing.T) {
	for _, policy := range []weft.IfBusy{weft.IfBusyInterrupt, weft.IfBusyRollback} {
		for after := 0; after <= 6; after++ {
			t.Run(fmt.Sprint(policy, "_crash_after_commit_", after), func(t *testing.T) { interruptCrash(t, policy, after) })
		}
	}
}

func interruptCrash(t *testing.T, policy weft.IfBusy, after int) {
	{
		{
			w := newBusyWorld()
			mem, clock := newDeathStore()
			cs := &crashStore{Store: mem, after: after}
			ctx := context.Background()
			first, err := engine.New(engine.Options{Registry: w.registry(), Store: cs, Override: w.model(), LeaseTTL: deadTTL})
			if err != nil {
				t.Fatal(err)
			}
			th, err := first.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := first.Send(ctx, th.ID, weft.NewMessage{Content: "charge"}); err != nil {
				t.Fatal(err)
			}
			ran := make(chan struct{})
			go func() {
				defer close(ran)
				_, _ = first.Run(ctx, th.ID) // dies after `after` commits
			}()
			select {
			case <-w.toolStarted:
			case <-ran: // died before the tool started
			}
			if _, err := first.Send(ctx, th.ID, weft.NewMessage{Content: "second", IfBusy: policy}); err != nil {
				t.Fatal(err)
			}
			close(w.toolGo)
			<-ran

			tt, err := mem.Thread(ctx, th.ID)
			if err != nil {
				t.Fatal(err)
			}
			rows, queued := secondRows(t, mem, th.ID)
			switch {
			case rows+queued != 1:
				t.Fatalf("after the crash \"second\" is stored %d times and queued %d times, want once in all", rows, queued)
			case queued == 1 && tt.Status != weft.ThreadRunning && tt.Status != weft.ThreadIdle:
				t.Fatalf("after the crash the thread is %s with the message queued, want running or idle", tt.Status)
			}

			if policy == weft.IfBusyRollback && tt.Status == weft.ThreadIdle && queued == 1 && w.charges.Load() == 1 {
				// The rollback's stop committed: the reply and its results went with it.
				msgs, err := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range msgs {
					if m.Role != weft.RoleUser {
						t.Errorf("after the rollback's stop a %s row is left: %q", m.Role, m.Content)
					}
				}
			}
			t.Logf("after the crash: %s, \"second\" stored %d, queued %d; charge ran %d times", tt.Status, rows, queued, w.charges.Load())
			clock.expire()
			second, err := engine.New(engine.Options{Registry: w.registry(), Store: mem, Override: w.model()})
			if err != nil {
				t.Fatal(err)
			}
			if tt.Status == weft.ThreadRunning {
				if _, err := second.Continue(ctx, th.ID, ""); err != nil {
					t.Fatal(err)
				}
			}
			if q, _ := mem.Queued(ctx, th.ID); len(q) > 0 {
				if _, err := second.Run(ctx, th.ID); err != nil {
					t.Fatal(err)
				}
			}
			got := waitTranscript(t, mem, th.ID, "assistant: answered: second")
			if rows, queued := secondRows(t, mem, th.ID); rows != 1 || queued != 0 {
				t.Errorf("\"second\" stored %d times, queued %d: %q", rows, queued, got)
			}
			if n := w.charges.Load(); n > 1 {
				t.Errorf("the non-idempotent tool ran %d times", n)
			}
			calls, err := mem.ToolCalls(ctx, th.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range calls {
				if c.Status != weft.CallDone {
					t.Errorf("call %s is %s after the restart: %q", c.Name, c.Status, got)
				}
			}
		}
	}
}

// secondRows counts the rows and queued messages whose text is "second".
func secondRows(t *testing.T, st weft.Store, threadID string) (rows, queued int) {
	t.Helper()
	msgs, err := st.Messages(t.Context(), threadID, weft.MessageQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Role == weft.RoleUser && m.Content == "second" {
			rows++
		}
	}
	q, err := st.Queued(t.Context(), threadID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range q {
		if m.Content == "second" {
			queued++
		}
	}
	return rows, queued
}

// TestIfBusyInterruptsBackoff: a run waiting to retry a failed model call (a 30 s backoff) is
// interrupted at once, and the new run answers the message.
func TestIfBusyInterruptsBackoff(t *testing.T) {
	failed := make(chan struct{}, 4)
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1].Text()
		if last == "flaky" {
			failed <- struct{}{}
			return nil, &weft.ProviderError{Type: weft.ErrRateLimit, Status: 429, Message: "slow down"}
		}
		return &weft.Response{Text: "answered: " + last}, nil
	})
	reg := registry(nil, nil)
	m, _ := reg.Model("fast")
	m.Retry = weft.RetryPolicy{Attempts: 2, BaseDelay: weft.Duration(30 * time.Second)}
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: model})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, eng)
	ctx := t.Context()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "flaky"}); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, failed, "the first attempt")
	time.Sleep(50 * time.Millisecond) // into the backoff
	start := time.Now()
	if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "second", IfBusy: weft.IfBusyInterrupt}); err != nil {
		t.Fatal(err)
	}
	got := waitTranscript(t, st, th.ID, "assistant: answered: second")
	if want := []string{"user: flaky", "user: second", "assistant: answered: second"}; !slices.Equal(got, want) {
		t.Errorf("transcript %q, want %q", got, want)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the interrupt waited %s for the backoff", d)
	}
}
