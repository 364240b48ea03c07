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
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/sqlite"
)

// hooked is the lookup registry, its assistant with hook (when not nil) as its one hook.
func hooked(hook *weft.Hook) *weft.Registry {
	reg := lookupRegistry()
	if hook != nil {
		reg.AddHook(hook)
		a, _ := reg.Agent("assistant")
		a.Hooks = []string{hook.ID}
	}
	return reg
}

// recordingThread is an engine recording its events on a txLog, running reg's assistant against
// model, and a thread of it.
func recordingThread(t *testing.T, reg *weft.Registry, model weft.Provider) (*engine.Engine, *txLog, *weft.Thread) {
	t.Helper()
	st := newTxLog(t)
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: model, RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	th, err := eng.CreateThread(context.Background(), engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	return eng, st, th
}

// txLog is a store that notes what each fenced transaction it commits does: stores a stop,
// appends events, releases the lease.
type txLog struct {
	weft.Store
	mu  sync.Mutex
	txs []txNote
}

// newTxLog is a txLog on a SQLite file of the test's, closed with it.
func newTxLog(t *testing.T) *txLog {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "w.db"), sqlite.Options{Key: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &txLog{Store: db}
}

type txNote struct {
	stop     bool
	events   []string
	released bool
	roles    []weft.Role // of the messages it inserted
}

func (t notingTx) InsertMessage(m *weft.Message) error {
	t.note.roles = append(t.note.roles, m.Role)
	return t.Tx.InsertMessage(m)
}

type notingTx struct {
	weft.Tx
	note *txNote
}

func (t notingTx) UpdateThread(p weft.ThreadPatch) error {
	if p.StopReason != nil {
		t.note.stop = true
	}
	return t.Tx.UpdateThread(p)
}

func (t notingTx) AppendEvents(evs []weft.EventRecord) error {
	for _, e := range evs {
		t.note.events = append(t.note.events, e.Type)
	}
	return t.Tx.AppendEvents(evs)
}

func (t notingTx) ReleaseLease() error {
	t.note.released = true
	return t.Tx.ReleaseLease()
}

func (s *txLog) Tx(ctx context.Context, id string, f *weft.Fence, fn func(weft.Tx) error) error {
	if f == nil {
		return s.Store.Tx(ctx, id, f, fn)
	}
	var note txNote
	err := s.Store.Tx(ctx, id, f, func(tx weft.Tx) error {
		note = txNote{}
		return fn(notingTx{Tx: tx, note: &note})
	})
	if err == nil {
		s.mu.Lock()
		s.txs = append(s.txs, note)
		s.mu.Unlock()
	}
	return err
}

// TestRunEndInStopTx: a run that records its events records its last ones (its reply's message
// and run_stopped) and releases its lease in the transaction that stores its stop, a commit less
// a run, unless a hook can still write or emit after the stop (after_run_stopped, or
// after_create_message on the reply); then a transaction of its own follows the hooks. Either
// way the log holds the same events, in order, the subscriber saw them all, and the thread runs
// again.
func TestRunEndInStopTx(t *testing.T) {
	failing := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, chunk func(weft.Chunk)) (*weft.Response, error) {
		return nil, &weft.ProviderError{Type: weft.ErrInvalidRequest, Message: "bad request"}
	})
	for _, tc := range []struct {
		name   string
		hook   *weft.Hook
		model  weft.Provider
		inStop bool
		stop   weft.StopReason
	}{
		{name: "no hooks", model: lookupModel, inStop: true, stop: weft.StopOnResponse},
		{name: "a failed step", model: failing, inStop: true, stop: weft.StopStepError},
		{name: "after_run_stopped", model: lookupModel, stop: weft.StopOnResponse,
			hook: &weft.Hook{ID: "h", Point: weft.HookAfterRunStopped, Fn: weft.RunStoppedFunc(func(ctx context.Context, st weft.State, info weft.StopInfo) error {
				return st.SetValue(ctx, "hook", string(info.Reason))
			})}},
		{name: "after_create_message", model: lookupModel, stop: weft.StopOnResponse,
			hook: &weft.Hook{ID: "h", Point: weft.HookAfterCreateMessage, Fn: weft.MessageFunc(func(ctx context.Context, st weft.State, m weft.Message) error {
				if m.Role != weft.RoleAssistant || len(m.ToolCalls) > 0 {
					return nil
				}
				return st.SetValue(ctx, "hook", "reply")
			})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			eng, st, th := recordingThread(t, hooked(tc.hook), tc.model)
			live := collect(ctx, eng, th.ID, 1, -1)
			res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Where is order 42?"}})
			if err != nil || res.Last().Reason != tc.stop {
				t.Fatalf("%+v, %v", res, err)
			}
			got := describe(<-live)

			st.mu.Lock()
			txs := slices.Clone(st.txs)
			st.mu.Unlock()
			stopAt := slices.IndexFunc(txs, func(n txNote) bool { return n.stop })
			if stopAt < 0 {
				t.Fatalf("no transaction stored the stop: %+v", txs)
			}
			last := txs[len(txs)-1]
			if !last.released || !slices.Contains(last.events, "run_stopped") {
				t.Errorf("the run's last transaction %+v does not record run_stopped and release the lease", last)
			}
			if inStop := stopAt == len(txs)-1; inStop != tc.inStop {
				t.Errorf("the stop's transaction is the run's last: %v, want %v (%+v)", inStop, tc.inStop, txs)
			}
			if tc.inStop && tc.stop == weft.StopOnResponse && strings.Join(last.events, ",") != "llm_response,message,run_stopped" {
				t.Errorf("the stop's transaction recorded %v", last.events)
			}
			for i, n := range txs[:len(txs)-1] {
				if n.released || slices.Contains(n.events, "run_stopped") {
					t.Errorf("transaction %d of %d %+v", i+1, len(txs), n)
				}
			}

			recs, err := st.Events(ctx, th.ID, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			var stored []string
			for _, r := range recs {
				if stored = append(stored, r.Type); r.Type == "run_stopped" {
					break // (after_run_stopped's writes follow it)
				}
			}
			var gotTypes []string
			for _, g := range got {
				gotTypes = append(gotTypes, g[strings.Index(g, ":")+1:])
			}
			if strings.Join(gotTypes, " ") != strings.Join(stored, " ") || stored[len(stored)-1] != "run_stopped" {
				t.Errorf("the subscriber saw\n%v\nthe log holds\n%v", gotTypes, stored)
			}
			if tc.hook != nil {
				state, err := eng.State(ctx, th.ID)
				if err != nil {
					t.Fatal(err)
				}
				var v string
				if ok, err := state.GetValue(ctx, "hook", &v); !ok || err != nil {
					t.Errorf("the hook's write is not there: %v", err)
				}
			}
			// The lease is free: the thread runs again.
			if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "And order 43?"}}); err != nil && !errors.Is(err, weft.ErrLeaseLost) {
				t.Fatal(err)
			}
		})
	}
}

// TestRunEndStoresQueuedMessage: a run whose stop's transaction also stores the message it took
// from the queue (a session at its turn cap stops at once) records that message's event before
// run_stopped, in that transaction, as it would have without the stop in it.
func TestRunEndStoresQueuedMessage(t *testing.T) {
	ctx := context.Background()
	reg := lookupRegistry()
	a, _ := reg.Agent("assistant")
	a.MaxSessionTurns = 1
	eng, st, th := recordingThread(t, reg, lookupModel)
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Where is order 42?"}}); err != nil {
		t.Fatal(err)
	}
	before, err := st.Events(ctx, th.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cursor := before[len(before)-1].Seq
	live := collect(ctx, eng, th.ID, cursor, -1)
	res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "And order 43?"}})
	if err != nil || res.Last().Reason != weft.StopMaxSessionTurn {
		t.Fatalf("%+v, %v", res, err)
	}
	st.mu.Lock()
	last := st.txs[len(st.txs)-1]
	st.mu.Unlock()
	if !last.stop || !last.released || strings.Join(last.events, ",") != "run_started,message,run_stopped" {
		t.Errorf("the stop's transaction %+v, want the stop, run_started, the message, run_stopped and the release", last)
	}
	recs, err := st.Events(ctx, th.ID, cursor, 0)
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, r := range recs {
		stored = append(stored, fmt.Sprintf("%d:%s", r.Seq, r.Type))
	}
	if len(recs) != 3 || !strings.Contains(string(recs[1].Data), "And order 43?") {
		t.Errorf("recorded %v", stored)
	}
	if got := describe(<-live); strings.Join(got, " ") != strings.Join(stored, " ") {
		t.Errorf("the subscriber saw %v, the log holds %v", got, stored)
	}
}

// TestToolStartedInReplyTx: a run that records its events records a reply's one call's
// tool_started, after the reply's message event, in the transaction that stores the reply, when nothing can act between that commit and the tool (no hook, no approval, valid
// arguments): the tool runs without a commit of its own before it. Otherwise they wait for that
// commit (Journal.Flush). Either way the log holds the same events in the same order, the
// subscriber saw what the log holds, and bad arguments never get a tool_started.
func TestToolStartedInReplyTx(t *testing.T) {
	badArgs := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, chunk func(weft.Chunk)) (*weft.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == weft.RoleTool {
			return &weft.Response{Text: "Sorry."}, nil
		}
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "lookup", Arguments: `{"order_id":"x"}`}}}, nil
	})
	twoCalls := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, chunk func(weft.Chunk)) (*weft.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == weft.RoleTool {
			return &weft.Response{Text: "Both ship today."}, nil
		}
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "lookup", Arguments: `{"order_id":42}`},
			{ID: weft.NewID("call_"), Name: "lookup", Arguments: `{"order_id":43}`}}}, nil
	})
	noop := &weft.Hook{ID: "h", Point: weft.HookAfterCreateMessage, Fn: weft.MessageFunc(func(context.Context, weft.State, weft.Message) error { return nil })}
	const turn = "run_started step_started llm_request message llm_response message tool_started message tool_completed " +
		"step_completed step_started llm_request llm_response message run_stopped"
	two := strings.Replace(turn, "tool_completed", "tool_completed tool_started message tool_completed", 1)
	for _, tc := range []struct {
		name    string
		model   weft.Provider
		hook    *weft.Hook
		inReply bool   // the reply's transaction records tool_started
		inFirst bool   // the first call's result's transaction records the second's tool_started
		types   string // the run's recorded events, in order
	}{
		{name: "no hooks", model: lookupModel, inReply: true, types: turn},
		{name: "a hook", model: lookupModel, hook: noop, types: turn},
		{name: "bad arguments", model: badArgs, types: strings.Replace(turn, " tool_started", "", 1)},
		{name: "two calls", model: twoCalls, inFirst: true, types: two},
		{name: "two calls, a hook", model: twoCalls, hook: noop, types: two},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			eng, st, th := recordingThread(t, hooked(tc.hook), tc.model)
			live := collect(ctx, eng, th.ID, 1, -1)
			if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Where is order 42?"}}); err != nil {
				t.Fatal(err)
			}
			got := describe(<-live)

			recs, err := st.Events(ctx, th.ID, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			var stored []string
			for _, r := range recs {
				stored = append(stored, r.Type)
			}
			if strings.Join(stored, " ") != tc.types {
				t.Errorf("the log holds\n%v\nwant\n%v", stored, tc.types)
			}
			var gotTypes []string
			for _, g := range got {
				gotTypes = append(gotTypes, g[strings.Index(g, ":")+1:])
			}
			if !slices.Equal(gotTypes, stored) {
				t.Errorf("the subscriber saw\n%v\nthe log holds\n%v", gotTypes, stored)
			}

			st.mu.Lock()
			txs := slices.Clone(st.txs)
			st.mu.Unlock()
			reply := slices.IndexFunc(txs, func(n txNote) bool { return slices.Contains(n.events, "llm_response") })
			if reply < 0 {
				t.Fatalf("no transaction recorded the reply: %+v", txs)
			}
			inReply := strings.HasSuffix(strings.Join(txs[reply].events, ","), "message,tool_started")
			if inReply != tc.inReply {
				t.Errorf("the reply's transaction recorded %v; its tool_started in it: %v, want %v", txs[reply].events, inReply, tc.inReply)
			}
			if tc.inReply && (reply+1 >= len(txs) || !slices.Contains(txs[reply+1].roles, weft.RoleTool)) {
				t.Errorf("a transaction came between the reply's and the tool result's: %+v", txs[reply+1:])
			}
			if strings.HasPrefix(tc.name, "two calls") {
				// The transaction after the first result's: the second's result, or (when the first's
				// did not record it) the second's tool_started alone.
				first := slices.IndexFunc(txs, func(n txNote) bool { return slices.Contains(n.roles, weft.RoleTool) })
				inFirst := first >= 0 && strings.Join(txs[first].events, ",") == "message,tool_completed,tool_started"
				if inFirst != tc.inFirst || first+1 >= len(txs) {
					t.Fatalf("the first result's transaction recorded %v; the second's tool_started in it: %v, want %v", txs[first].events, inFirst, tc.inFirst)
				}
				next := txs[first+1]
				if tc.inFirst && !slices.Contains(next.roles, weft.RoleTool) ||
					!tc.inFirst && (len(next.roles) > 0 || strings.Join(next.events, ",") != "tool_completed,tool_started") {
					t.Errorf("the transaction after the first result's: %+v", next)
				}
			}
		})
	}
}

// TestToolStartedPastTheLimit: a reply with more calls than a reply may make runs the first
// weft.MaxToolCallsPerReply and answers the rest unrun; a call that does not run gets no
// tool_started, also when the previous call's result is recorded with the next call's start.
func TestToolStartedPastTheLimit(t *testing.T) {
	many := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, chunk func(weft.Chunk)) (*weft.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == weft.RoleTool {
			return &weft.Response{Text: "Done."}, nil
		}
		var calls []weft.ToolCall
		for i := range weft.MaxToolCallsPerReply + 2 {
			calls = append(calls, weft.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "lookup", Arguments: `{"order_id":42}`})
		}
		return &weft.Response{ToolCalls: calls}, nil
	})
	ctx := context.Background()
	eng, st, th := recordingThread(t, lookupRegistry(), many)
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Look them all up."}}); err != nil {
		t.Fatal(err)
	}
	recs, err := st.Events(ctx, th.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range recs {
		count[r.Type]++
	}
	if count["tool_started"] != weft.MaxToolCallsPerReply || count["tool_completed"] != weft.MaxToolCallsPerReply+2 {
		t.Errorf("tool_started %d, tool_completed %d; want %d and %d", count["tool_started"], count["tool_completed"],
			weft.MaxToolCallsPerReply, weft.MaxToolCallsPerReply+2)
	}
}

// TestLateEventRecorded: an event a tool's goroutine emits after its run has ended (State.Emit
// holds no lease) is recorded in the thread's log and published, outside the run, not lost in
// the ended run's outbox.
func TestLateEventRecorded(t *testing.T) {
	ctx := context.Background()
	late, emitted := make(chan struct{}), make(chan error, 1)
	reg := lookupRegistry()
	reg.AddTool(&weft.Tool{Name: "later", Description: "Reports later.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		go func() {
			<-late
			emitted <- st.Emit(context.Background(), "report", map[string]any{"done": true})
		}()
		return weft.Success("started"), nil
	})})
	p, _ := reg.Prompt("assistant")
	p.Tools = append(p.Tools, weft.ToolEntry{Name: "later"})
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == weft.RoleTool {
			return &weft.Response{Text: "It will report."}, nil
		}
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "later", Arguments: `{}`}}}, nil
	})
	eng, st, th := recordingThread(t, reg, model)
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Start it."}}); err != nil {
		t.Fatal(err)
	}
	before, err := st.Events(ctx, th.ID, 0, 0)
	if err != nil || len(before) == 0 || before[len(before)-1].Type != "run_stopped" {
		t.Fatalf("%v %v", before, err)
	}
	live := collectUntil(ctx, eng, th.ID, before[len(before)-1].Seq, func(_ int, ev engine.Event) bool { return ev.Type == "event" })
	close(late)
	if err := <-emitted; err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range <-live {
		got = append(got, ev.Type)
	}
	if !slices.Equal(got, []string{"event"}) {
		t.Errorf("the subscriber saw %v after the run, want the late event", got)
	}
	after, err := st.Events(ctx, th.ID, before[len(before)-1].Seq, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 1 || after[0].Type != "event" || after[0].Seq != before[len(before)-1].Seq+1 {
		t.Errorf("recorded after the run: %+v", after)
	}
}
