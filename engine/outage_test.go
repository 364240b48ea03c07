package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/scripted"
)

// outageStore fails as a full disk does while down: starting a run (beginDown) or any write of
// a run and the release of its lease (writesDown).
type outageStore struct {
	*memstore.Store
	beginDown, writesDown atomic.Bool
	// refused counts the calls refused while down.
	refused atomic.Int64
}

var errFull = fmt.Errorf("database or disk is full: %w", weft.ErrUnavailable)

func (s *outageStore) BeginRun(ctx context.Context, threadID, node string, ttl time.Duration, push *weft.QueuedMessage) (weft.Fence, *weft.RunStart, error) {
	if s.beginDown.Load() {
		s.refused.Add(1)
		return weft.Fence{}, nil, errFull
	}
	return s.Store.BeginRun(ctx, threadID, node, ttl, push)
}

func (s *outageStore) Tx(ctx context.Context, threadID string, fence *weft.Fence, fn func(weft.Tx) error) error {
	if fence != nil && s.writesDown.Load() {
		s.refused.Add(1)
		return errFull
	}
	return s.Store.Tx(ctx, threadID, fence, fn)
}

func (s *outageStore) ReleaseLease(ctx context.Context, f weft.Fence) error {
	if s.writesDown.Load() {
		s.refused.Add(1)
		return errFull
	}
	return s.Store.ReleaseLease(ctx, f)
}

// TestRunStartFailureRetried: a message accepted while the store cannot start its run (a full
// disk) is run soon after the store answers again, without another message or a continue, and a
// run that failed gives its lease back at once, not after a lease period (issue 47, row 9: the
// thread sat idle with the message queued and this node holding the lease).
func TestRunStartFailureRetried(t *testing.T) {
	for _, c := range []string{"send refused first", "a run's writes fail"} {
		t.Run(c, func(t *testing.T) {
			reg := registry(nil, nil)
			sc, err := scripted.Parse("script.yaml", []byte("- text: Taken.\n- text: Taken.\n"))
			if err != nil {
				t.Fatal(err)
			}
			mem, err := memstore.New(memstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer mem.Close()
			st := &outageStore{Store: mem}
			eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: scripted.New(sc), LeaseTTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan struct{})
			started := make(chan struct{})
			go func() {
				defer close(served)
				_ = eng.Serve(ctx, engine.ServeOptions{Workers: 2, DrainTimeout: time.Second, Started: func() { close(started) }})
			}()
			defer func() { cancel(); <-served }()
			<-started
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			if err != nil {
				t.Fatal(err)
			}
			if c == "send refused first" {
				// The message and the run start are one transaction: the sender is told, nothing
				// is accepted (the API answers 503 store_unavailable).
				st.beginDown.Store(true)
				_, err := eng.Send(ctx, th.ID, weft.NewMessage{Role: weft.RoleUser, Content: "hello"})
				if weft.ErrorCode(err) != weft.EUnavailable {
					t.Fatalf("send while the run cannot start: %v, want an unavailable error", err)
				}
				if q, _ := mem.Queued(ctx, th.ID); len(q) != 0 {
					t.Fatalf("%d queued after a refused send", len(q))
				}
				st.beginDown.Store(false)
			}
			st.writesDown.Store(true)
			refused := st.refused.Load()
			if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Role: weft.RoleUser, Content: "hello"}); err != nil {
				t.Fatal(err)
			}
			// Passes fail meanwhile: two refused calls (the run's write, then the release of its lease
			// or a retry) are waited for, where a fixed 500 ms was slept.
			for down := time.Now(); st.refused.Load() < refused+2; time.Sleep(5 * time.Millisecond) {
				if time.Since(down) > 5*time.Second {
					t.Fatalf("%d calls refused in 5 s of outage, want 2", st.refused.Load()-refused)
				}
			}
			st.beginDown.Store(false)
			st.writesDown.Store(false)
			back := time.Now()
			for {
				msgs, err := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				if len(msgs) == 2 && msgs[1].Content == "Taken." {
					break
				}
				if time.Since(back) > 5*time.Second {
					tt, _ := mem.Thread(ctx, th.ID)
					q, _ := mem.Queued(ctx, th.ID)
					t.Fatalf("5 s after the store came back the message is still not run: %d rows, status %s, %d queued", len(msgs), tt.Status, len(q))
				}
				time.Sleep(20 * time.Millisecond)
			}
			// The lease is free for another node once the run is done.
			deadline := time.Now().Add(2 * time.Second)
			for {
				f, err := mem.AcquireLease(ctx, th.ID, "other-node", time.Second)
				if err == nil {
					_ = mem.ReleaseLease(ctx, f)
					break
				}
				if !errors.Is(err, weft.ErrLeaseHeld) || time.Now().After(deadline) {
					t.Fatalf("the lease is still held after the run: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
