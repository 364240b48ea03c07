package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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

var errCrashed = errors.New("process crashed")

// crashStore lets n write transactions commit, then fails every write as if the process had died
// at that point (the lease is not released).
type crashStore struct {
	weft.Store
	mu       sync.Mutex // child threads' runs commit concurrently
	n, after int
}

// deathClock is a store's clock that a test moves past a dead process's leases instead of
// sleeping until they lapse. The dying process runs with leases of deadTTL, which a loaded machine
// (a parallel -race run) never lets lapse while the process is alive: a 30 ms lease did, once in
// CI, so that a live child's write was refused as if another node had taken it.
type deathClock struct{ skew atomic.Int64 }

// deadTTL is the lease TTL of a process that is to die.
const deadTTL = time.Minute

func (c *deathClock) now() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }

// expire moves the clock past every lease taken so far: the dead process's have lapsed.
func (c *deathClock) expire() { c.skew.Add(int64(2 * deadTTL)) }

// newDeathStore returns a memory store on a deathClock.
func newDeathStore() (*memstore.Store, *deathClock) {
	c := &deathClock{}
	mem, _ := memstore.New(memstore.Options{Now: c.now})
	return mem, c
}

func (s *crashStore) dead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n >= s.after
}

func (s *crashStore) Tx(ctx context.Context, id string, f *weft.Fence, fn func(weft.Tx) error) error {
	if f == nil {
		return s.Store.Tx(ctx, id, f, fn)
	}
	if s.dead() {
		return errCrashed
	}
	if err := s.Store.Tx(ctx, id, f, fn); err != nil {
		return err
	}
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	return nil
}
func (s *crashStore) RenewLease(ctx context.Context, f weft.Fence, ttl time.Duration) error {
	if s.dead() {
		return errCrashed
	}
	return s.Store.RenewLease(ctx, f, ttl)
}
func (s *crashStore) ReleaseLease(ctx context.Context, f weft.Fence) error {
	if s.dead() {
		return errCrashed
	}
	return s.Store.ReleaseLease(ctx, f)
}

// modelByHistory calls both tools after a user message and answers once it sees their results.
var modelByHistory = weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
	if last := req.Messages[len(req.Messages)-1]; last.Role == weft.RoleUser {
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "charge", Arguments: `{}`}, {ID: "c2", Name: "lookup", Arguments: `{}`}}}, nil
	}
	var results []string
	for _, m := range req.Messages {
		if m.Role == weft.RoleTool {
			results = append(results, m.Content)
		}
	}
	return &weft.Response{Text: "final: " + strings.Join(results, " | ")}, nil
})

func TestResumeAfterCrash(t *testing.T) {
	for after := 0; after <= 4; after++ {
		t.Run(fmt.Sprint("crash_after_commit_", after), func(t *testing.T) {
			var charges, lookups atomic.Int64
			count := func(name string, n *atomic.Int64, idempotent bool) *weft.Tool {
				return &weft.Tool{Name: name, Description: "d", Idempotent: idempotent, Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
					n.Add(1)
					return weft.Success(name + " ok"), nil
				})}
			}
			reg := registry([]*weft.Tool{count("charge", &charges, false), count("lookup", &lookups, true)}, nil)
			mem, clock := newDeathStore()
			cs := &crashStore{Store: mem, after: after}
			ctx := context.Background()
			first, _ := engine.New(engine.Options{Registry: reg, Store: cs, Override: modelByHistory, LeaseTTL: deadTTL})
			th, _ := first.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			if _, err := first.Send(ctx, th.ID, weft.NewMessage{Content: "pay"}); err != nil {
				t.Fatal(err)
			}
			first.Run(ctx, th.ID) // dies after `after` commits
			before, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})

			// A fresh process takes over once the dead one's lease has expired.
			clock.expire()
			second, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: modelByHistory})
			res, err := second.Continue(ctx, th.ID, "")
			if err != nil {
				t.Fatal(err)
			}
			if q, _ := mem.Queued(ctx, th.ID); len(q) > 0 {
				res, err = second.Run(ctx, th.ID)
				if err != nil {
					t.Fatal(err)
				}
			}
			after, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
			ids := map[string]bool{}
			for i, m := range after {
				if ids[m.ID] || m.Seq != int64(i+1) {
					t.Fatalf("duplicate or gap at %d: %+v", i, m)
				}
				ids[m.ID] = true
			}
			for _, m := range before {
				if !ids[m.ID] {
					t.Errorf("persisted message lost: %+v", m)
				}
			}
			if charges.Load() > 1 {
				t.Errorf("the non-idempotent tool ran %d times", charges.Load())
			}
			last := after[len(after)-1]
			if ok := res.Last().Reason == weft.StopOnResponse || res.Last().Reason == weft.StopAwaitingHuman; !ok || !strings.HasPrefix(last.Content, "final: ") {
				t.Fatalf("thread did not finish: %+v last %q", res.Last(), last.Content)
			}
			// Every call has exactly one result.
			results := map[string]int{}
			for _, m := range after {
				if m.Role == weft.RoleTool {
					results[m.ToolCallID]++
				}
			}
			if results["c1"] != 1 || results["c2"] != 1 {
				t.Errorf("results per call: %v", results)
			}
			if charges.Load() == 0 && !strings.Contains(last.Content, "interrupted by a restart") && !strings.Contains(last.Content, "charge ok") {
				t.Errorf("final answer %q", last.Content)
			}
			if lookups.Load() > 2 {
				t.Errorf("the idempotent tool ran %d times", lookups.Load())
			}
			// Each call ends done; the non-idempotent one, marked running before it ran (in
			// whichever process), keeps that start time through the resume.
			recs, _ := mem.ToolCalls(ctx, th.ID)
			for _, rec := range recs {
				if rec.Status != weft.CallDone || rec.FinishedAt == nil || rec.ResultMessageID == "" ||
					(rec.Name == "charge" && rec.StartedAt == nil) {
					t.Errorf("call record after the resume: %+v", rec)
				}
			}
		})
	}
}

// subagentModel: the coordinator calls review once and answers with its result; the reviewer
// approves at once.
var subagentModel = weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	switch {
	case req.Prompt == "reviewer":
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "a1", Name: "approve", Arguments: `{"summary":"approved"}`}}}, nil
	case last.Role == weft.RoleUser:
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "review", Arguments: `{"message":"Draft: x"}`}}}, nil
	default:
		return &weft.Response{Text: "final: " + last.Content}, nil
	}
})

// TestSubagentResumeAfterCrash kills the process after every possible commit of a parent waiting
// on a blocking child: the new process re-attaches to the recorded child, never creates a second
// one, loses no message and answers the call exactly once.
func TestSubagentResumeAfterCrash(t *testing.T) {
	for after := 0; after <= 10; after++ {
		t.Run(fmt.Sprint("crash_after_commit_", after), func(t *testing.T) {
			reg := subagentRegistry(weft.ToolEntry{}, nil)
			mem, clock := newDeathStore()
			cs := &deadStore{&crashStore{Store: mem, after: after}}
			ctx := context.Background()
			second, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: subagentModel})
			th, _ := second.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			second.Send(ctx, th.ID, weft.NewMessage{Content: "review it"})
			first, _ := engine.New(engine.Options{Registry: reg, Store: cs, Override: subagentModel, LeaseTTL: deadTTL})
			first.Run(ctx, th.ID) // dies after `after` commits
			before, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
			if after == 10 && cs.dead() {
				t.Fatal("the sweep must reach a run that completes without a crash")
			}

			// A fresh process takes over once the dead one's leases have expired.
			clock.expire()
			if _, err := second.Continue(ctx, th.ID, ""); err != nil {
				t.Fatal(err)
			}
			if q, _ := mem.Queued(ctx, th.ID); len(q) > 0 {
				if _, err := second.Run(ctx, th.ID); err != nil {
					t.Fatal(err)
				}
			}
			got, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
			wantKept(t, before, got)
			kids, _, _ := mem.Threads(ctx, weft.ThreadQuery{ParentID: th.ID})
			if len(kids) > 1 {
				t.Fatalf("%d children created", len(kids))
			}
			results := 0
			for _, m := range got {
				if m.Role == weft.RoleTool && m.ToolCallID == "c1" {
					results++
				}
			}
			last := got[len(got)-1].Content
			if results != 1 || !strings.HasPrefix(last, "final: ") {
				t.Fatalf("results for the call: %d, last %q", results, last)
			}
			if len(kids) == 1 && last != "final: approved" {
				t.Errorf("a recorded child's result should answer the call: %q", last)
			}
			// The finished call keeps the child reference recorded before the child existed.
			if recs, _ := mem.ToolCalls(ctx, th.ID); len(kids) == 1 &&
				(len(recs) != 1 || recs[0].Status != weft.CallDone || !strings.Contains(string(recs[0].Meta), kids[0].ID)) {
				t.Errorf("call record %+v, want done with child %s in its meta", recs, kids[0].ID)
			}
		})
	}
}

// deadStore is a crashStore whose every write fails once it is dead, unfenced ones included: a dead
// process neither creates threads nor queues messages nor starts runs.
type deadStore struct{ *crashStore }

func (s *deadStore) Tx(ctx context.Context, id string, f *weft.Fence, fn func(weft.Tx) error) error {
	if s.dead() {
		return errCrashed
	}
	return s.crashStore.Tx(ctx, id, f, fn)
}
func (s *deadStore) CreateThread(ctx context.Context, t *weft.Thread, env []weft.EnvValue) error {
	if s.dead() {
		return errCrashed
	}
	return s.crashStore.CreateThread(ctx, t, env)
}
func (s *deadStore) PushQueue(ctx context.Context, q *weft.QueuedMessage) error {
	if s.dead() {
		return errCrashed
	}
	return s.crashStore.PushQueue(ctx, q)
}
func (s *deadStore) BeginRun(ctx context.Context, id, node string, ttl time.Duration, push *weft.QueuedMessage) (weft.Fence, *weft.RunStart, error) {
	if s.dead() {
		return weft.Fence{}, nil, errCrashed
	}
	return s.crashStore.BeginRun(ctx, id, node, ttl, push)
}

// TestNonBlockingSubagentRecoverAfterCrash kills the process after every commit of a parent that
// starts a non-blocking child: after Recover in a fresh process the child's outcome reaches the
// parent exactly once and nothing stored is lost.
func TestNonBlockingSubagentRecoverAfterCrash(t *testing.T) {
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case req.Prompt == "reviewer":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "a1", Name: "approve", Arguments: `{"summary":"approved"}`}}}, nil
		case strings.HasPrefix(last.Content, "Subagent (reference:"):
			return &weft.Response{Text: "final: " + last.Content[strings.LastIndex(last.Content, "\n")+1:]}, nil
		case last.Role == weft.RoleUser:
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "review", Arguments: `{"message":"Draft: x"}`}}}, nil
		default:
			return &weft.Response{Text: "started"}, nil
		}
	})
	// A blocking resumable instance started by an immediate entry reports on its own too: no call
	// awaits its first run.
	immediateModel := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case req.Prompt == "reviewer":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "a1", Name: "approve", Arguments: `{"summary":"approved"}`}}}, nil
		case strings.HasPrefix(last.Content, "Subagent (reference:"):
			return &weft.Response{Text: "final: " + last.Content[strings.LastIndex(last.Content, "\n")+1:]}, nil
		default:
			return &weft.Response{Text: "started"}, nil
		}
	})
	no, yes := false, true
	for _, tc := range []struct {
		name  string
		entry weft.ToolEntry
		model weft.Provider
	}{
		{"non_blocking", weft.ToolEntry{Blocking: &no}, model},
		{"immediate_blocking_resumable", weft.ToolEntry{Immediate: &yes, Resumable: &weft.Resumable{Enabled: true, ReceivesMessages: "side_a"}}, immediateModel},
	} {
		t.Run(tc.name, func(t *testing.T) { recoverSweep(t, tc.entry, tc.model) })
	}
}

// recoverSweep kills the process after every commit of parent and child until a run completes,
// then recovers in a fresh process: exactly one report, nothing persisted lost, the parent done.
func recoverSweep(t *testing.T, entry weft.ToolEntry, model weft.Provider) {
	completed := false
	for after := 0; !completed && after < 40; after++ {
		t.Run(fmt.Sprint("crash_after_commit_", after), func(t *testing.T) {
			reg := subagentRegistry(entry, nil)
			mem, clock := newDeathStore()
			cs := &deadStore{&crashStore{Store: mem, after: after}}
			ctx := context.Background()
			second, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: model})
			th, _ := second.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			second.Send(ctx, th.ID, weft.NewMessage{Content: "review it"})
			first, _ := engine.New(engine.Options{Registry: reg, Store: cs, Override: model, LeaseTTL: deadTTL})
			first.Run(ctx, th.ID)
			first.Wait() // the dead process's goroutines end (their writes fail)
			completed = !cs.dead()
			before, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})

			clock.expire()
			if pt, _ := mem.Thread(ctx, th.ID); pt.Status == weft.ThreadRunning {
				second.Continue(ctx, th.ID, "")
			}
			if q, _ := mem.Queued(ctx, th.ID); len(q) > 0 {
				second.Run(ctx, th.ID)
			}
			if err := second.Recover(ctx, th.ID); err != nil {
				t.Fatal(err)
			}
			second.Wait()

			got, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
			wantKept(t, before, got)
			kids, _, _ := mem.Threads(ctx, weft.ThreadQuery{ParentID: th.ID})
			if len(kids) > 1 {
				t.Fatalf("%d children", len(kids))
			}
			reports := 0
			for _, m := range got {
				if m.Metadata["kind"] == "subagent_result" {
					reports++
				}
			}
			q, _ := mem.Queued(ctx, th.ID)
			if len(kids) == 1 && (reports != 1 || len(q) != 0) {
				var lines []string
				for _, m := range got {
					lines = append(lines, string(m.Role)+": "+m.Content)
				}
				t.Fatalf("%d reports stored, %d queued:\n%s", reports, len(q), strings.Join(lines, "\n"))
			}
			if len(kids) == 1 && got[len(got)-1].Content != "final: approved" {
				t.Errorf("parent did not finish: last %q", got[len(got)-1].Content)
			}
		})
	}
	if !completed {
		t.Fatal("the sweep never reached a run that completes without a crash")
	}
}

// wantKept fails for every message of before that is missing from after.
func wantKept(t *testing.T, before, after []weft.Message) {
	t.Helper()
	ids := make(map[string]bool, len(after))
	for _, m := range after {
		ids[m.ID] = true
	}
	for _, m := range before {
		if !ids[m.ID] {
			t.Errorf("persisted message lost: %+v", m)
		}
	}
}

// gatedReports holds the first report pushed to a parent until released: the window between a
// child's stop and its report reaching the parent.
type gatedReports struct {
	weft.Store
	parent  string
	once    sync.Once
	holding chan struct{}
	release chan struct{}
}

func (s *gatedReports) PushQueue(ctx context.Context, q *weft.QueuedMessage) error {
	if q.ThreadID == s.parent && q.Metadata["kind"] == "subagent_result" {
		held := false
		s.once.Do(func() { held = true })
		if held {
			close(s.holding)
			<-s.release
		}
	}
	return s.Store.PushQueue(ctx, q)
}

// TestRecoverLeavesLiveDriversAlone: Recover called while this process's own driver is between a
// child's stop and its report (weft run calls Recover after its run) does not report the stop a
// second time: the live driver reports it.
func TestRecoverLeavesLiveDriversAlone(t *testing.T) {
	blocking := false
	reg := subagentRegistry(weft.ToolEntry{Blocking: &blocking}, nil)
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case req.Prompt == "reviewer":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "a1", Name: "approve", Arguments: `{"summary":"approved"}`}}}, nil
		case last.Role == weft.RoleUser && last.Content == "review it":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "review", Arguments: `{"message":"Draft: x"}`}}}, nil
		}
		return &weft.Response{Text: "ok"}, nil
	})
	mem, _ := memstore.New(memstore.Options{})
	gs := &gatedReports{Store: mem, holding: make(chan struct{}), release: make(chan struct{})}
	eng, _ := engine.New(engine.Options{Registry: reg, Store: gs, Override: model})
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	gs.parent = th.ID
	eng.Send(ctx, th.ID, weft.NewMessage{Content: "review it"})
	eng.Run(ctx, th.ID)
	<-gs.holding // the child stopped; its driver is delivering the report
	if err := eng.Recover(ctx, th.ID); err != nil {
		t.Fatal(err)
	}
	close(gs.release)
	eng.Wait()
	msgs, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	reports := 0
	for _, m := range msgs {
		if m.Metadata["kind"] == "subagent_result" {
			reports++
		}
	}
	if reports != 1 {
		t.Errorf("%d reports of one stop", reports)
	}
}

// TestHeldReportSurvivesRestart: a report held back for a blocking call is kept in the child's
// run state; when the process dies before the call ends, Recover sends it once and clears it.
func TestHeldReportSurvivesRestart(t *testing.T) {
	yes := true
	reg := subagentRegistry(weft.ToolEntry{Immediate: &yes, Resumable: &weft.Resumable{Enabled: true, ReceivesMessages: "side_a"}}, nil)
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if req.Prompt == "reviewer" {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "a1", Name: "approve", Arguments: `{"summary":"first"}`}}}, nil
		}
		return &weft.Response{Text: "ok"}, nil
	})
	mem, _ := memstore.New(memstore.Options{})
	eng, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: model})
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	eng.Send(ctx, th.ID, weft.NewMessage{Content: "go"})
	eng.Run(ctx, th.ID)
	eng.Wait()
	kids, _, _ := mem.Threads(ctx, weft.ThreadQuery{ParentID: th.ID})
	if len(kids) != 1 {
		t.Fatalf("children: %d", len(kids))
	}
	// What a process that died while holding the report of the child's stop 7 left behind.
	held := `{"owner":"a","out":{"status":"success","result":"held outcome"},"seq":7}`
	if err := mem.Tx(ctx, kids[0].ID, nil, func(tx weft.Tx) error { return tx.SetExecState("subagent_held/7", json.RawMessage(held)) }); err != nil {
		t.Fatal(err)
	}
	fresh, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: model})
	for range 2 {
		if err := fresh.Recover(ctx, th.ID); err != nil {
			t.Fatal(err)
		}
		fresh.Wait()
	}
	msgs, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	n := 0
	for _, m := range msgs {
		if strings.HasSuffix(m.Content, "has returned the following result:\n\nheld outcome") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("held report delivered %d times", n)
	}
	if docs, _ := mem.ExecState(ctx, kids[0].ID); docs["subagent_held/7"] != nil {
		t.Errorf("held report record left: %s", docs["subagent_held/7"])
	}
}

// TestResumeWithChangedDefinitions: the process dies after storing a reply with two calls; the
// next one starts with changed definitions — one tool removed, the other's schema now requiring an
// argument the call lacks. Neither call silently proceeds: each gets a tool result saying why it did
// not run, the model reads them, and the thread finishes.
func TestResumeWithChangedDefinitions(t *testing.T) {
	var ran atomic.Int64
	tool := func(name string, args *weft.Schema) *weft.Tool {
		return &weft.Tool{Name: name, Description: "d", Args: args, Idempotent: true, Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			ran.Add(1)
			return weft.Success(name + " ok"), nil
		})}
	}
	mem, clock := newDeathStore()
	ctx := context.Background()
	first, _ := engine.New(engine.Options{Registry: registry([]*weft.Tool{tool("charge", nil), tool("lookup", nil)}, nil),
		Store: &crashStore{Store: mem, after: 1}, Override: modelByHistory, LeaseTTL: deadTTL})
	th, _ := first.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := first.Send(ctx, th.ID, weft.NewMessage{Content: "pay"}); err != nil {
		t.Fatal(err)
	}
	first.Run(ctx, th.ID) // dies once the reply and its calls are stored, before any result is
	before := ran.Load()
	clock.expire()
	changed := registry([]*weft.Tool{tool("charge", schema.Object(schema.Field("amount", schema.Integer())))}, nil)
	second, _ := engine.New(engine.Options{Registry: changed, Store: mem, Override: modelByHistory})
	res, err := second.Continue(ctx, th.ID, "")
	if err != nil || res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("resume: %+v %v", res.Last(), err)
	}
	results := map[string]string{}
	msgs, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	for _, m := range msgs {
		if m.Role == weft.RoleTool {
			results[m.ToolCallID] = m.Content
		}
	}
	if !strings.Contains(results["c1"], `missing required property "amount"`) ||
		!strings.Contains(results["c2"], `Tool "lookup" is not available for this prompt`) || ran.Load() != before {
		t.Fatalf("results %q; tools run after the resume: %d", results, ran.Load()-before)
	}
}

// TestStopAfterCrashEmitsItsRows: a thread whose run died with calls unanswered, stopped by the
// user (Stop sets the flag for a run that died) and then recovered by a restart, stays stopped:
// no tool runs, the open calls get error results and a stop notice follows. A client following
// the thread's events sees every one of those rows as a message event, in the order they were
// stored (with RecordEvents in the event log; without, live).
func TestStopAfterCrashEmitsItsRows(t *testing.T) {
	for _, record := range []bool{true, false} {
		for after := 1; after <= 3; after++ {
			t.Run(fmt.Sprintf("record_%v_crash_after_commit_%d", record, after), func(t *testing.T) {
				var ran atomic.Int64
				reg := countingTools(&ran)
				ctx := context.Background()
				mem, clock, th := crashedThread(t, reg, after, false)
				before, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
				known := map[string]bool{}
				for _, m := range before {
					known[m.ID] = true
				}

				clock.expire()
				second, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: modelByHistory, RecordEvents: record})
				if err := second.Stop(ctx, th.ID); err != nil {
					t.Fatal(err)
				}
				ranBefore := ran.Load()
				f, err := second.Follow(ctx, th.ID, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				// A restart resumes the thread (RecoverAll), which honours the stop.
				if _, err := second.RecoverAll(ctx); err != nil {
					t.Fatal(err)
				}
				waitStatus(t, mem, th.ID, func(st weft.ThreadStatus) bool { return st == weft.ThreadStopped })
				// Until the resumed run's run_stopped, which comes after every row it stored.
				var events []engine.Event
				for deadline := time.After(10 * time.Second); !slices.ContainsFunc(events, func(ev engine.Event) bool { return ev.Type == "run_stopped" }); {
					select {
					case <-f.Ready():
						if events, err = f.Next(ctx, events); err != nil {
							t.Fatal(err)
						}
					case <-deadline:
						t.Fatalf("no run_stopped among %d events", len(events))
					}
				}
				var got []string
				for _, ev := range events {
					if md, ok := ev.Data.(engine.MessageData); ok && ev.Type == "message" && !known[md.Message.ID] {
						got = append(got, md.Message.ID+" "+string(md.Message.Status))
					}
				}
				stored, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
				var want []string
				for _, m := range stored {
					if !known[m.ID] {
						want = append(want, m.ID+" "+string(m.Status))
					}
				}
				// The notice, after an error result for each call left open (none when the crash came
				// after both results).
				if len(want) != 4-after || !strings.HasPrefix(want[len(want)-1], stored[len(stored)-1].ID) ||
					stored[len(stored)-1].Content != "Execution stopped by user." {
					t.Fatalf("the stop stored %d rows, want %d: %v", len(want), 4-after, stored)
				}
				if n := ran.Load() - ranBefore; n != 0 {
					t.Errorf("the stopped thread ran %d tools after the restart", n)
				}
				if !slices.Equal(got, want) {
					t.Errorf("message events of the rows the stop stored:\n got %v\nwant %v", got, want)
				}
			})
		}
	}
}

// TestCrashKeepsMessageEvents: a run that records its events and dies after any of its commits
// leaves, once a restart has finished the thread, a message event in the log for every message
// the thread holds: an event is recorded in the transaction that stores its row, never in a
// later one that a crash could prevent.
func TestCrashKeepsMessageEvents(t *testing.T) {
	for after := 1; after <= 8; after++ {
		t.Run(fmt.Sprint("crash_after_commit_", after), func(t *testing.T) {
			var ran atomic.Int64
			recoverRecorded(t, countingTools(&ran), after)
		})
	}
}

// TestCrashKeepsInjectedMessageEvents: a tool that stores a row through its State
// (InjectMessage) in a run that records its events; whichever commit the process dies after,
// every stored message has its event and seqs have no gaps once the thread is recovered.
func TestCrashKeepsInjectedMessageEvents(t *testing.T) {
	for after := 1; after <= 9; after++ {
		t.Run(fmt.Sprint("crash_after_commit_", after), func(t *testing.T) {
			var ran atomic.Int64
			reg := countingTools(&ran)
			charge, _ := reg.Tool("charge")
			charge.Execute = weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
				ran.Add(1)
				if _, err := st.InjectMessage(ctx, weft.NewMessage{Role: weft.RoleAssistant, Content: "Charging your card now."}); err != nil {
					return weft.ToolResult{}, err
				}
				return weft.Success("charge ok"), nil
			})
			recoverRecorded(t, reg, after)
		})
	}
}

// recoverRecorded runs a thread of reg's assistant in a process that records its events and dies
// after its after-th commit (crashedThread), recovers it in a second one, and checks the log: seqs
// without gaps, and one message event for every stored message.
func recoverRecorded(t *testing.T, reg *weft.Registry, after int) {
	t.Helper()
	ctx := context.Background()
	mem, clock, th := crashedThread(t, reg, after, true)
	clock.expire()
	second, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: modelByHistory, RecordEvents: true})
	if _, err := second.RecoverAll(ctx); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, mem, th.ID, func(st weft.ThreadStatus) bool { return st != weft.ThreadRunning })
	recs, err := mem.Events(ctx, th.ID, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, recs)
	evented := messageEvents(t, recs)
	msgs, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	for _, m := range msgs {
		if evented[m.ID] != 1 {
			t.Errorf("message %d (%s %q) has %d message events", m.Seq, m.Role, m.Content, evented[m.ID])
		}
	}
}

// checkSeqs fails unless the recorded events are numbered from 1 without gaps.
func checkSeqs(t *testing.T, recs []weft.EventRecord) {
	t.Helper()
	for i, rec := range recs {
		if rec.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, rec.Seq)
		}
	}
}

// countingTools is a registry whose assistant may call charge and lookup, which count their runs
// in ran and succeed.
func countingTools(ran *atomic.Int64) *weft.Registry {
	tool := func(name string) *weft.Tool {
		return &weft.Tool{Name: name, Description: "d", Execute: weft.ToolFunc(func(context.Context, weft.State, json.RawMessage) (weft.ToolResult, error) {
			ran.Add(1)
			return weft.Success(name + " ok"), nil
		})}
	}
	return registry([]*weft.Tool{tool("charge"), tool("lookup")}, nil)
}

// crashedThread runs a thread of reg's assistant on modelByHistory, from the message "pay",
// in a process that dies after its after-th commit (recording its events when record is set),
// and returns the store and its clock, which a test moves past the dead process's lease.
func crashedThread(t *testing.T, reg *weft.Registry, after int, record bool) (*memstore.Store, *deathClock, *weft.Thread) {
	t.Helper()
	ctx := context.Background()
	mem, clock := newDeathStore()
	first, _ := engine.New(engine.Options{Registry: reg, Store: &crashStore{Store: mem, after: after}, Override: modelByHistory,
		LeaseTTL: deadTTL, RecordEvents: record})
	th, _ := first.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := first.Send(ctx, th.ID, weft.NewMessage{Content: "pay"}); err != nil {
		t.Fatal(err)
	}
	first.Run(ctx, th.ID) // dies after `after` commits
	return mem, clock, th
}

// waitStatus waits, up to 10 s, until the thread's status is done with.
func waitStatus(t *testing.T, st weft.Store, threadID string, done func(weft.ThreadStatus) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		cur, err := st.Thread(context.Background(), threadID)
		if err != nil {
			t.Fatal(err)
		}
		if done(cur.Status) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread status %s after 10 s", cur.Status)
		}
	}
}

// messageEvents counts the recorded message events of each message id.
func messageEvents(t *testing.T, recs []weft.EventRecord) map[string]int {
	t.Helper()
	count := map[string]int{}
	for id, rows := range messageRows(t, recs) {
		count[id] = len(rows)
	}
	return count
}

// messageRows is the rows the recorded message events carry, by message id, in the log's order.
func messageRows(t *testing.T, recs []weft.EventRecord) map[string][]weft.Message {
	t.Helper()
	rows := map[string][]weft.Message{}
	for _, rec := range recs {
		if rec.Type != "message" {
			continue
		}
		p, err := engine.DecodePayload(rec.Type, rec.Data)
		if err != nil {
			t.Fatal(err)
		}
		m := p.(engine.MessageData).Message
		rows[m.ID] = append(rows[m.ID], m)
	}
	return rows
}
