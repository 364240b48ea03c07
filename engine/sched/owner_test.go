package sched

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/memstore"
)

// fakeHost counts the runs a scheduler asks for.
type fakeHost struct {
	runs    atomic.Int32
	block   chan struct{} // when not nil, RunThread waits on it
	started chan string   // when not nil, RunThread sends its trigger
}

func (h *fakeHost) RunThread(ctx context.Context, threadID, trigger string, side weft.Side, push *weft.QueuedMessage, queued func(error)) error {
	h.runs.Add(1)
	if queued != nil {
		queued(nil)
	}
	if h.started != nil {
		h.started <- trigger
	}
	if h.block != nil {
		<-h.block
	}
	return nil
}

func (h *fakeHost) RunDueEffects(context.Context) ([]string, error) { return nil, nil }
func (h *fakeHost) RecoverAll(context.Context) error                { return nil }
func (h *fakeHost) InterruptFromStore(context.Context, string)      {}
func (h *fakeHost) Poke(string)                                     {}

func newScheduler(t *testing.T, h Host) (*Scheduler, *memstore.Store) {
	t.Helper()
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := &Scheduler{}
	s.Init(Config{Store: st, Host: h, Clock: weft.SystemClock{}, Log: slog.New(slog.DiscardHandler), Node: "n", LeaseTTL: time.Second})
	return s, st
}

// fakeRun is a registered run that notes being told of a queued message.
type fakeRun struct{ queued *atomic.Bool }

func (fakeRun) Cancel(error) {}

func (r fakeRun) Queued() { r.queued.Store(true) }

// TestOwnerTurn: one goroutine holds a thread's turn; TryAcquire gives up while it is held, a
// context holding the turn cannot acquire it again, and the owner is forgotten once released.
func TestOwnerTurn(t *testing.T) {
	s, _ := newScheduler(t, &fakeHost{})
	ctx := context.Background()
	held, release, err := s.Acquire(ctx, "thr_1")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := s.TryAcquire(ctx, "thr_1"); ok || err != nil {
		t.Fatalf("TryAcquire of a held turn: ok %v, err %v", ok, err)
	}
	if _, _, err := s.Acquire(held, "thr_1"); !errors.Is(err, errReentrant) {
		t.Fatalf("Acquire by the holder: %v, want errReentrant", err)
	}
	waited := make(chan struct{})
	go func() {
		_, release, err := s.Acquire(ctx, "thr_1")
		if err == nil {
			release()
		}
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("a second Acquire did not wait for the turn")
	case <-time.After(20 * time.Millisecond):
	}
	release()
	<-waited
	s.mu.Lock()
	n := len(s.owners)
	s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d owners left after every turn was given back, want 0", n)
	}
}

// TestOwnerQueued: a message queued while a run is registered is told to the run; one with an
// interrupt policy queued while none is marks the owner for the next run to register.
func TestOwnerQueued(t *testing.T) {
	s, _ := newScheduler(t, &fakeHost{})
	if run, here := s.Queued("thr_1", true); run != nil || here {
		t.Fatalf("Queued with no owner: %v, %v", run, here)
	}
	_, release, _ := s.Acquire(context.Background(), "thr_1")
	defer release()
	if _, here := s.Queued("thr_1", true); !here {
		t.Fatal("Queued: the owner is not here")
	}
	r := fakeRun{queued: &atomic.Bool{}}
	if !s.Register("thr_1", r) {
		t.Fatal("Register: checkInterrupts not set by a message queued before it")
	}
	if run, _ := s.Queued("thr_1", false); run != r || !r.queued.Load() {
		t.Fatalf("Queued with a run registered: %v, told %v", run, r.queued.Load())
	}
	s.Unregister("thr_1")
	if s.Running("thr_1") != nil {
		t.Fatal("a run is still registered")
	}
}

// TestOwnerWakeCoalesces: wake-ups during a worker's pass cost one more pass, not one each.
func TestOwnerWakeCoalesces(t *testing.T) {
	h := &fakeHost{block: make(chan struct{}), started: make(chan string, 16)}
	s, st := newScheduler(t, h)
	ctx := context.Background()
	th := &weft.Thread{ID: "thr_1", RootID: "thr_1", Agent: "a", Status: weft.ThreadIdle}
	if err := st.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s.Continue(ctx, "thr_1", "thr_1", "")
	}
	<-h.started
	for range 5 {
		s.Continue(ctx, "thr_1", "thr_1", "")
	}
	close(h.block)
	<-h.started
	s.Wait()
	select {
	case <-s.Quiet("thr_1"):
	default:
		t.Fatal("the tree is not quiet once the worker ended")
	}
	if n := h.runs.Load(); n != 2 {
		t.Fatalf("%d runs for 8 wake-ups in two bursts, want 2", n)
	}
}

// TestTransferRefusedWhenBusy: Send's message goes to a new worker only when nothing of the
// process works on the thread.
func TestTransferRefusedWhenBusy(t *testing.T) {
	s, _ := newScheduler(t, &fakeHost{})
	ctx := context.Background()
	_, release, _ := s.Acquire(ctx, "thr_1")
	if s.Transfer(ctx, &weft.QueuedMessage{ID: "msg_1", ThreadID: "thr_1"}) != nil {
		t.Fatal("Transfer to a thread whose turn is held")
	}
	release()
	done := s.Transfer(ctx, &weft.QueuedMessage{ID: "msg_1", ThreadID: "thr_1"})
	if done == nil {
		t.Fatal("Transfer to an idle thread refused")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.Wait()
}

// TestBackgroundWait: Wait returns once every counted goroutine has, even while others start.
func TestBackgroundWait(t *testing.T) {
	s, _ := newScheduler(t, &fakeHost{})
	var wg sync.WaitGroup
	var n atomic.Int32
	for range 10 {
		wg.Add(1)
		s.Go(func() {
			defer wg.Done()
			time.Sleep(time.Millisecond)
			n.Add(1)
		})
	}
	s.Wait()
	if n.Load() != 10 {
		t.Fatalf("Wait returned with %d of 10 done", n.Load())
	}
	wg.Wait()
}
