package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/schema"
	"github.com/weft-agents/weft/sqlite"
)

// lookupModel calls lookup once per user message, then answers with its result; the reply is
// streamed in two deltas.
var lookupModel = weft.ProviderFunc(func(ctx context.Context, req *weft.Request, chunk func(weft.Chunk)) (*weft.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == weft.RoleTool {
		if chunk != nil {
			chunk(weft.Chunk{Text: "Order 42 "})
			chunk(weft.Chunk{Text: "ships today."})
		}
		return &weft.Response{Text: "Order 42 ships today."}, nil
	}
	return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "lookup", Arguments: `{"order_id":42}`}}}, nil
})

func lookupRegistry() *weft.Registry {
	lookup := &weft.Tool{Name: "lookup", Description: "Look an order up.", Args: schema.Object(schema.Field("order_id", schema.Integer())),
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			return weft.Success("shipping today"), nil
		})}
	return registry([]*weft.Tool{lookup}, nil)
}

// collect reads a subscription in a goroutine until it has n recorded events (n < 0: until a
// run_stopped), or 10 s passed.
func collect(ctx context.Context, eng *engine.Engine, threadID string, after int64, n int) <-chan []engine.Event {
	return collectUntil(ctx, eng, threadID, after, func(recorded int, ev engine.Event) bool {
		return recorded == n || n < 0 && ev.Type == "run_stopped"
	})
}

// collectUntil reads a subscription in a goroutine until done says so, or 10 s passed. When it
// returns it is subscribed and has taken the recorded events there were, so that it follows the
// next ones live, deltas (which are not replayed) in their place, however late its goroutine runs.
func collectUntil(ctx context.Context, eng *engine.Engine, threadID string, after int64, done func(recorded int, ev engine.Event) bool) <-chan []engine.Event {
	out := make(chan []engine.Event, 1)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	f, err := eng.Follow(ctx, threadID, after)
	if err != nil {
		cancel()
		out <- nil
		return out
	}
	var got []engine.Event
	recorded := 0
	// take gives the events of one Next to got; it reports whether done said so or the feed failed.
	take := func() bool {
		batch, err := f.Next(ctx, nil)
		for _, ev := range batch {
			got = append(got, ev)
			if ev.Seq > 0 {
				recorded++
			}
			if done(recorded, ev) {
				return true
			}
		}
		return err != nil
	}
	<-f.Ready() // signalled by Follow: the first Next reads the recorded events (a page: enough here)
	if take() {
		f.Close()
		cancel()
		out <- got
		return out
	}
	go func() {
		defer cancel()
		defer f.Close()
		for {
			select {
			case <-f.Ready():
			case <-ctx.Done():
				out <- got
				return
			}
			if take() {
				out <- got
				return
			}
		}
	}()
	return out
}

func describe(evs []engine.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Seq > 0 {
			out = append(out, fmt.Sprintf("%d:%s", ev.Seq, ev.Type))
		}
	}
	return out
}

// TestSubscribeReplay: with RecordEvents every event but the deltas is numbered per thread in
// commit order; a subscriber resuming from any cursor receives exactly the events after it, in
// order — from the same engine, and from a new engine on the same database after a restart, where
// it then follows the live events of the next run.
func TestSubscribeReplay(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) (weft.Store, func() weft.Store)
	}{
		{"memory", func(t *testing.T) (weft.Store, func() weft.Store) {
			st, err := memstore.New(memstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return st, func() weft.Store { return st }
		}},
		{"sqlite", func(t *testing.T) (weft.Store, func() weft.Store) {
			path := filepath.Join(t.TempDir(), "weft.db")
			key := make([]byte, 32)
			open := func() weft.Store {
				st, err := sqlite.Open(context.Background(), path, sqlite.Options{Key: key})
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			return open(), open
		}},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			reg := lookupRegistry()
			st, reopen := sc.open(t)
			eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: lookupModel, RecordEvents: true})
			if err != nil {
				t.Fatal(err)
			}
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			if err != nil {
				t.Fatal(err)
			}
			// A live subscriber from the start: thread_created is event 1.
			live := collect(ctx, eng, th.ID, 0, -1)
			var conversed []string
			var deltas int
			for ev, err := range eng.Converse(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Where is order 42?"}}) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Seq > 0 {
					conversed = append(conversed, fmt.Sprintf("%d:%s", ev.Seq, ev.Type))
				}
				if ev.Type == "message_chunk" {
					deltas++
					if ev.Seq != 0 {
						t.Errorf("a delta was recorded: %+v", ev)
					}
				}
			}
			recs, err := st.Events(ctx, th.ID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var stored []string
			for i, rec := range recs {
				if rec.Seq != int64(i+1) {
					t.Fatalf("recorded seqs: %d at %d", rec.Seq, i)
				}
				stored = append(stored, fmt.Sprintf("%d:%s", rec.Seq, rec.Type))
			}
			for _, want := range []string{"thread_created", "run_started", "message", "step_started", "llm_request", "llm_response",
				"step_completed", "tool_started", "tool_completed", "run_stopped"} {
				if !strings.Contains(strings.Join(stored, " "), ":"+want) {
					t.Errorf("no %s recorded: %v", want, stored)
				}
			}
			if recs[len(recs)-1].Type != "run_stopped" || deltas != 2 {
				t.Errorf("last recorded %s, %d deltas", recs[len(recs)-1].Type, deltas)
			}
			// Converse saw the same recorded events (it joined after thread_created).
			if strings.Join(conversed, " ") != strings.Join(stored[1:], " ") {
				t.Errorf("Converse saw\n%v\nstored\n%v", conversed, stored)
			}
			// The live subscriber got them all, in order, with the deltas between.
			liveEvents := <-live
			if got := describe(liveEvents); strings.Join(got, " ") != strings.Join(stored, " ") {
				t.Errorf("the live subscriber got\n%v\nwant\n%v", got, stored)
			}
			var liveDeltas int
			for _, ev := range liveEvents {
				if ev.Type == "message_chunk" {
					liveDeltas++
				}
			}
			if liveDeltas != 2 {
				t.Errorf("the live subscriber got %d deltas", liveDeltas)
			}
			if got := describe(<-collect(ctx, eng, th.ID, 0, len(recs))); strings.Join(got, " ") != strings.Join(stored, " ") {
				t.Errorf("a subscriber from 0 after the run got\n%v\nwant\n%v", got, stored)
			}
			// Every cursor resumes exactly after itself.
			for _, after := range []int64{1, 5, int64(len(recs) - 1)} {
				got := describe(<-collect(ctx, eng, th.ID, after, len(recs)-int(after)))
				if strings.Join(got, " ") != strings.Join(stored[after:], " ") {
					t.Errorf("after %d: got %v", after, got)
				}
			}

			// Restart: a new engine on the same database replays, then follows the next run live.
			st.Close()
			st2 := reopen()
			defer st2.Close()
			eng2, err := engine.New(engine.Options{Registry: reg, Store: st2, Override: lookupModel, RecordEvents: true})
			if err != nil {
				t.Fatal(err)
			}
			if sc.name == "memory" {
				return // nothing survives a memory store's process
			}
			cursor := int64(len(recs) - 2)
			// The last two, replayed, then the next run's, live.
			resumed := collectUntil(ctx, eng2, th.ID, cursor, func(_ int, ev engine.Event) bool {
				return ev.Type == "run_stopped" && ev.Seq > cursor+2
			})
			if _, err := eng2.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "And order 43?"}}); err != nil {
				t.Fatal(err)
			}
			got := describe(<-resumed)
			recs2, _ := st2.Events(ctx, th.ID, cursor, 0)
			var want []string
			for _, rec := range recs2 {
				want = append(want, fmt.Sprintf("%d:%s", rec.Seq, rec.Type))
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("after the restart got\n%v\nwant\n%v", got, want)
			}
		})
	}
}

// TestFeedPagesAndLag: a Feed gives a long history a page at a time with Ready signalled until
// it is all given, and a consumer that stopped reading while thousands of events were published
// (its queue overflowed) still receives every recorded event once and in order, then live ones.
func TestFeedPagesAndLag(t *testing.T) {
	ctx := context.Background()
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Options{Registry: lookupRegistry(), Store: st, Override: lookupModel, RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	turns := func(n int) {
		t.Helper()
		for range n {
			if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Where is order 42?"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// drain takes batches while Ready is signalled and checks the cursors run on without a gap.
	drain := func(f *engine.Feed, last *int64) (batches int) {
		t.Helper()
		for {
			select {
			case <-f.Ready():
			default:
				return batches
			}
			evs, err := f.Next(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			batches++
			for _, ev := range evs {
				if ev.Seq == 0 {
					continue
				}
				if ev.Seq != *last+1 {
					t.Fatalf("event %d after %d", ev.Seq, *last)
				}
				*last = ev.Seq
			}
		}
	}
	recorded := func() (last int64) { // the newest event's seq, read a page at a time
		for {
			recs, err := st.Events(ctx, th.ID, last, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) == 0 {
				return last
			}
			last = recs[len(recs)-1].Seq
		}
	}

	turns(100) // over two pages of events
	total := recorded()
	if total <= 1000 {
		t.Fatalf("only %d events recorded", total)
	}
	f, err := eng.Follow(ctx, th.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	if n := drain(f, &last); last != total || n < 3 {
		t.Fatalf("replay gave up to %d of %d in %d batches", last, total, n)
	}
	// Not read while its queue overflows.
	turns(400)
	total = recorded()
	if total-last <= 4096 {
		t.Fatalf("only %d events behind", total-last)
	}
	drain(f, &last)
	if last != total {
		t.Fatalf("after the lag: up to %d of %d", last, total)
	}
	// Then live again.
	turns(1)
	drain(f, &last)
	if total = recorded(); last != total {
		t.Fatalf("live: up to %d of %d", last, total)
	}
	f.Close()
}
