package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
)

// pushCounter counts the messages queued by PushQueue (not by BeginRun's push).
type pushCounter struct {
	weft.Store
	pushes atomic.Int32
}

func (s *pushCounter) PushQueue(ctx context.Context, q *weft.QueuedMessage) error {
	s.pushes.Add(1)
	return s.Store.PushQueue(ctx, q)
}

// TestServeSendStartsIdleThread: while serving, Send on an idle thread hands the message to a new
// worker whose run's first transaction queues it (no PushQueue of its own), and returns once it
// is queued; a terminated or unknown thread refuses it, a stopped one keeps it queued without
// running, and a thread whose worker is busy, or a full worker pool, gets it queued at once.
func TestServeSendStartsIdleThread(t *testing.T) {
	ctx := context.Background()
	mem, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	st := &pushCounter{Store: mem}
	gate := make(chan struct{})
	var gated atomic.Bool
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, chunk func(weft.Chunk)) (*weft.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == weft.RoleUser && last.Content == "wait" && gated.CompareAndSwap(false, true) {
			<-gate
		}
		return lookupModel(ctx, req, chunk)
	})
	stops := make(chan string, 64)
	eng, err := engine.New(engine.Options{Registry: lookupRegistry(), Store: st, Override: model, OnEvent: func(ev engine.Event) {
		if ev.Type == "run_stopped" {
			stops <- ev.ThreadID
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	started := make(chan struct{})
	go func() { served <- eng.Serve(sctx, engine.ServeOptions{Workers: 1, Started: func() { close(started) }}) }()
	<-started
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	newThread := func() string {
		th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
		if err != nil {
			t.Fatal(err)
		}
		return th.ID
	}
	waitStop := func(id string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case got := <-stops:
				if got == id {
					return
				}
			case <-timeout:
				t.Fatalf("no run of %s stopped", id)
			}
		}
	}
	answered := func(id string) int {
		msgs, err := st.Messages(ctx, id, weft.MessageQuery{Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range msgs {
			if m.Role == weft.RoleAssistant && m.Content == "Order 42 ships today." {
				n++
			}
		}
		return n
	}

	// Idle: handed off, queued by BeginRun.
	idle := newThread()
	id, err := eng.Send(ctx, idle, weft.NewMessage{Content: "Where is order 42?"})
	if err != nil || id == "" {
		t.Fatalf("Send: %q %v", id, err)
	}
	waitStop(idle)
	if n := st.pushes.Load(); n != 0 {
		t.Errorf("the message to an idle thread took %d PushQueue commits of its own", n)
	}
	if answered(idle) != 1 {
		t.Errorf("the idle thread was answered %d times", answered(idle))
	}

	// Refused: terminated and unknown threads; nothing queued.
	gone := newThread()
	if err := eng.Terminate(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Send(ctx, gone, weft.NewMessage{Content: "hello?"}); !errors.Is(err, weft.ErrTerminated) {
		t.Errorf("Send to a terminated thread: %v", err)
	}
	if q, _ := st.Queued(ctx, gone); len(q) != 0 {
		t.Errorf("a terminated thread queued %d", len(q))
	}
	if _, err := eng.Send(ctx, "thr_missing", weft.NewMessage{Content: "hello?"}); weft.ErrorCode(err) != weft.ENotFound {
		t.Errorf("Send to an unknown thread: %v", err)
	}

	// Stopped: queued, not run, the lease free.
	stopped := newThread()
	status := weft.ThreadStopped
	if err := st.Tx(ctx, stopped, nil, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Status: &status}) }); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Send(ctx, stopped, weft.NewMessage{Content: "Where is order 42?"}); err != nil {
		t.Fatal(err)
	}
	if q, _ := st.Queued(ctx, stopped); len(q) != 1 {
		t.Errorf("a stopped thread holds %d queued messages, want the one sent", len(q))
	}
	if f, err := st.AcquireLease(ctx, stopped, "test", time.Minute); err != nil {
		t.Errorf("the stopped thread's lease was kept: %v", err)
	} else {
		_ = st.ReleaseLease(ctx, f)
	}

	// Busy: the only worker slot runs a gated turn; a Send to another idle thread returns at once,
	// queued, and runs when the slot frees; a second Send to the busy thread is queued for its run.
	busy, other := newThread(), newThread()
	if _, err := eng.Send(ctx, busy, weft.NewMessage{Content: "wait"}); err != nil {
		t.Fatal(err)
	}
	for !gated.Load() {
		time.Sleep(time.Millisecond)
	}
	before := st.pushes.Load()
	sent := make(chan error, 2)
	go func() {
		_, err := eng.Send(ctx, other, weft.NewMessage{Content: "Where is order 42?"})
		sent <- err
	}()
	go func() {
		_, err := eng.Send(ctx, busy, weft.NewMessage{Content: "Where is order 42?"})
		sent <- err
	}()
	for range 2 {
		select {
		case err := <-sent:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Send waited for a busy worker pool")
		}
	}
	if n := st.pushes.Load() - before; n != 2 {
		t.Errorf("with the pool busy, %d of 2 messages were queued at once", n)
	}
	close(gate)
	waitStop(other)
	// The busy thread's run takes the second message at a boundary, or a run after it does.
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs, err := st.Messages(ctx, busy, weft.MessageQuery{Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		q, _ := st.Queued(ctx, busy)
		last := msgs[len(msgs)-1]
		if len(q) == 0 && msgs[len(msgs)-4].Content == "Where is order 42?" && last.Content == "Order 42 ships today." {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the busy thread's second message was not answered: %d queued, last %q", len(q), last.Content)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
