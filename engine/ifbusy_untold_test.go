package engine_test

import (
	"context"
	"path/filepath"
	"slices"
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

// Interrupts that nothing tells the run at once: one queued between the transaction that starts
// the run and its registration, and one another process queues on a SQLite file.

// beginGate holds the first run that starts after hold is set just after its BeginRun committed
// (the thread running, its queue taken), before the engine has registered the run: begun is told,
// release lets it go on.
type beginGate struct {
	hold            atomic.Bool
	begun, released chan struct{}
}

func newBeginGate() *beginGate {
	return &beginGate{begun: make(chan struct{}, 1), released: make(chan struct{})}
}

func (g *beginGate) after(err error) {
	if err == nil && g.hold.CompareAndSwap(true, false) {
		g.begun <- struct{}{}
		<-g.released
	}
}

// gatedStore is a store whose BeginRun passes through a beginGate.
type gatedStore struct {
	weft.Store
	gate *beginGate
}

func (s gatedStore) BeginRun(ctx context.Context, threadID, node string, ttl time.Duration, push *weft.QueuedMessage) (weft.Fence, *weft.RunStart, error) {
	f, start, err := s.Store.BeginRun(ctx, threadID, node, ttl, push)
	s.gate.after(err)
	return f, start, err
}

// gatedPostgres is gatedStore for PostgreSQL, keeping the store's notifier and reclaimer.
type gatedPostgres struct {
	*postgres.Store
	gate *beginGate
}

func (s gatedPostgres) BeginRun(ctx context.Context, threadID, node string, ttl time.Duration, push *weft.QueuedMessage) (weft.Fence, *weft.RunStart, error) {
	f, start, err := s.Store.BeginRun(ctx, threadID, node, ttl, push)
	s.gate.after(err)
	return f, start, err
}

// TestIfBusyBeforeRegistration: a message with if_busy interrupt that arrives after the
// transaction starting a run committed (the thread is running: it is queued as the run's) but
// before the run is registered in its engine stops that run before it answers anything, on the
// node running the thread and from another node; a new run answers the two messages.
func TestIfBusyBeforeRegistration(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T, w *busyWorld, g *beginGate) busyNodes
	}{
		{"memstore", func(t *testing.T, w *busyWorld, g *beginGate) busyNodes {
			st, err := memstore.New(memstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			e := busyEngine(t, w, gatedStore{st, g}, "only")
			return busyNodes{run: e, send: e, store: st}
		}},
		{"sqlite", func(t *testing.T, w *busyWorld, g *beginGate) busyNodes {
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "weft.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			e := busyEngine(t, w, gatedStore{st, g}, "only")
			return busyNodes{run: e, send: e, store: st}
		}},
		{"postgres_two_nodes", func(t *testing.T, w *busyWorld, g *beginGate) busyNodes {
			_, dsn := pgtest.Schema(t)
			a, b := openPostgres(t, dsn), openPostgres(t, dsn)
			return busyNodes{run: busyEngine(t, w, gatedPostgres{a, g}, "node-a"), send: busyEngine(t, w, b, "node-b"), store: a, remote: true}
		}},
	}
	for _, s := range stores {
		for _, policy := range []weft.IfBusy{weft.IfBusyInterrupt, weft.IfBusyRollback} {
			t.Run(s.name+"_"+string(policy), func(t *testing.T) {
				w, g := newBusyWorld(), newBeginGate()
				nodes := s.open(t, w, g)
				ctx := t.Context()
				th, err := nodes.run.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
				if err != nil {
					t.Fatal(err)
				}
				g.hold.Store(true)
				sent := make(chan error, 1)
				go func() {
					_, err := nodes.run.Send(ctx, th.ID, weft.NewMessage{Content: "first"})
					sent <- err
				}()
				waitSignal(t, g.begun, "the run's start")
				if _, err := nodes.send.Send(ctx, th.ID, weft.NewMessage{Content: "second", IfBusy: policy}); err != nil {
					t.Fatal(err)
				}
				if nodes.remote {
					time.Sleep(200 * time.Millisecond) // the push's notice reaches node a while its run is held
				}
				close(g.released)
				if err := <-sent; err != nil {
					t.Fatal(err)
				}
				got := waitTranscript(t, nodes.store, th.ID, "assistant: answered: second")
				if want := []string{"user: first", "user: second", "assistant: answered: second"}; !slices.Equal(got, want) {
					t.Errorf("transcript %q, want %q: the run went on answering \"first\"", got, want)
				}
				var types []string
				for _, ev := range w.runs() {
					types = append(types, ev.Type)
				}
				if !slices.Contains(types, "run_interrupted") {
					t.Errorf("no run_interrupted; run events %q", types)
				}
			})
		}
	}
}

// TestIfBusyOtherProcessSQLite: SQLite has no notifier, so an interrupting message that another
// process queues on the same database file is not told to the running engine. The run finds it in
// the queue at its next step boundary (its transaction saw the queue grow) and stops there instead
// of taking it: interrupted (its tool's result kept) or rolled back (its reply and results gone),
// and a new run answers the message.
func TestIfBusyOtherProcessSQLite(t *testing.T) {
	for _, c := range []struct {
		policy weft.IfBusy
		want   []string
	}{
		{weft.IfBusyInterrupt, []string{"user: charge", "assistant:  [charge {}] [note {}]", "tool:charge: charged", "tool:note: noted", "user: second", "assistant: answered: second"}},
		{weft.IfBusyRollback, []string{"user: charge", "user: second", "assistant: answered: second"}},
	} {
		t.Run(string(c.policy), func(t *testing.T) {
			w := newBusyWorld()
			db := filepath.Join(t.TempDir(), "weft.db")
			key := make([]byte, 32)
			open := func() weft.Store {
				st, err := sqlite.Open(context.Background(), db, sqlite.Options{Key: key})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st
			}
			st, other := open(), open()
			runner := busyEngine(t, w, st, "server")
			cli, err := engine.New(engine.Options{Registry: w.registry(), Store: other, Override: w.model(), NodeID: "cli"})
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			th, err := runner.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := runner.Send(ctx, th.ID, weft.NewMessage{Content: "charge"}); err != nil {
				t.Fatal(err)
			}
			waitSignal(t, w.toolStarted, "the slow tool")
			if _, err := cli.Send(ctx, th.ID, weft.NewMessage{Content: "second", IfBusy: c.policy}); err != nil {
				t.Fatal(err)
			}
			close(w.toolGo)
			got := waitTranscript(t, st, th.ID, "assistant: answered: second")
			if !slices.Equal(got, c.want) {
				t.Errorf("transcript %q, want %q", got, c.want)
			}
			var types []string
			for _, ev := range w.runs() {
				types = append(types, ev.Type)
			}
			if !slices.Contains(types, "run_interrupted") {
				t.Errorf("no run_interrupted; run events %q", types)
			}
			if n := w.charges.Load(); n != 1 {
				t.Errorf("the non-idempotent tool ran %d times", n)
			}
		})
	}
}
