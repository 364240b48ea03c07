package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/sqlite"
)

// faultyStore fails write transactions with an I/O fault while it is on: SQLite's errors when the
// disk is full or a write or fsync fails (the store itself stays usable once the fault clears).
type faultyStore struct {
	weft.Store
	fault  atomic.Pointer[error]
	writes atomic.Int32 // fenced transactions committed
	after  int32        // the fault starts after this many
}

func (s *faultyStore) Tx(ctx context.Context, id string, f *weft.Fence, fn func(weft.Tx) error) error {
	if p := s.fault.Load(); p != nil && f != nil && s.writes.Load() >= s.after {
		return *p
	}
	err := s.Store.Tx(ctx, id, f, fn)
	if err == nil && f != nil {
		s.writes.Add(1)
	}
	return err
}

// countTool is a non-idempotent tool counting its runs.
func countTool(name string, n *atomic.Int32) *weft.Tool {
	return &weft.Tool{Name: name, Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		n.Add(1)
		return weft.Success(name + " ok"), nil
	})}
}

// TestWriteFaults: the disk fills up, or a write or fsync fails, at each step boundary of a
// conversation with a non-idempotent tool. The run stops with step_error naming the fault; what
// was committed before stays; once the fault clears, continuing the thread finishes it, and the
// tool has run at most once.
func TestWriteFaults(t *testing.T) {
	faults := map[string]error{
		"disk_full":  errors.New("sqlite: database or disk is full (13)"),
		"io_error":   errors.New("sqlite: disk I/O error (10)"),
		"fsync_fail": errors.New("sqlite: disk I/O error (4874): fsync"),
	}
	for name, fault := range faults {
		for after := int32(0); after <= 3; after++ {
			t.Run(fmt.Sprintf("%s_after_%d", name, after), func(t *testing.T) {
				var charges atomic.Int32
				reg := registry([]*weft.Tool{countTool("charge", &charges), countTool("lookup", new(atomic.Int32))}, nil)
				db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "w.db"), sqlite.Options{Key: make([]byte, 32)})
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				fs := &faultyStore{Store: db, after: after}
				fs.fault.Store(&fault)
				ctx := context.Background()
				eng, _ := engine.New(engine.Options{Registry: reg, Store: fs, Override: modelByHistory, LeaseTTL: time.Second})
				th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
				res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "pay"}})
				if err == nil && res.Last().Reason != weft.StopStepError {
					t.Fatalf("under the fault: %+v", res.Last())
				}
				if err == nil && !strings.Contains(res.Last().Error, strings.TrimPrefix(fault.Error(), "sqlite: ")) {
					t.Errorf("the stop does not name the fault: %q", res.Last().Error)
				}
				before, _ := db.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
				fs.fault.Store(nil)
				time.Sleep(10 * time.Millisecond)
				res, err = eng.Ask(ctx, th.ID, engine.Input{})
				if err != nil {
					t.Fatalf("after the fault cleared: %v", err)
				}
				after, _ := db.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
				kept := map[string]bool{}
				for _, m := range after {
					kept[m.ID] = true
				}
				for _, m := range before {
					if !kept[m.ID] {
						t.Errorf("committed message lost: %+v", m)
					}
				}
				if last := after[len(after)-1]; !strings.HasPrefix(last.Content, "final: ") || charges.Load() > 1 {
					t.Fatalf("not finished (%+v, last %q) or the tool ran %d times", res.Last(), last.Content, charges.Load())
				}
			})
		}
	}
}

// tmpfs mounts an 8 MiB tmpfs on a fresh directory for the test. Mounting needs root: elsewhere the
// test skips saying so, except when WEFT_TEST_FS_FAULTS is set (.ci/run sets it; CI runs as
// root), where a failed mount fails the test rather than hide the check.
func tmpfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", dir).CombinedOutput(); err != nil {
		if os.Getenv("WEFT_TEST_FS_FAULTS") != "" {
			t.Fatalf("WEFT_TEST_FS_FAULTS is set but mounting a tmpfs failed (these tests need root): %v %s", err, out)
		}
		t.Skipf("mounting a tmpfs needs root: run as root (set WEFT_TEST_FS_FAULTS=1 to require it, as .ci/run does): %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	return dir
}

// TestFilesystemFaults runs a conversation on a SQLite file on a tmpfs and, once its message is
// queued, takes the disk away: filled up (SQLite's own ENOSPC path, not an injected error) or
// remounted read-only. The run fails with an error naming the fault; once the fault clears,
// continuing the thread finishes it, with nothing committed lost and the tool run at most once.
// It mounts a tmpfs (root, as in CI); elsewhere it skips, saying so.
func TestFilesystemFaults(t *testing.T) {
	for _, tc := range []struct {
		name        string
		want        string
		fault, heal func(t *testing.T, dir string)
	}{
		{"disk_full", "full", func(t *testing.T, dir string) {
			f, err := os.Create(filepath.Join(dir, "filler"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			block := make([]byte, 4096)
			for {
				if _, err := f.Write(block); err != nil {
					return
				}
			}
		}, func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tmpfs(t)
			ctx := context.Background()
			db, err := sqlite.Open(ctx, filepath.Join(dir, "w.db"), sqlite.Options{Key: make([]byte, 32)})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var charges atomic.Int32
			reg := registry([]*weft.Tool{countTool("charge", &charges), countTool("lookup", new(atomic.Int32))}, nil)
			eng, _ := engine.New(engine.Options{Registry: reg, Store: db, Override: modelByHistory, LeaseTTL: time.Second})
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "pay"}); err != nil {
				t.Fatal(err)
			}
			tc.fault(t, dir)
			res, err := eng.Ask(ctx, th.ID, engine.Input{})
			got := ""
			if err != nil {
				got = err.Error()
			} else if res.Last().Reason == weft.StopStepError {
				got = res.Last().Error
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("under the fault: %+v, %v (want an error naming %q)", res.Last(), err, tc.want)
			}
			before, _ := db.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
			tc.heal(t, dir)
			res, err = eng.Ask(ctx, th.ID, engine.Input{})
			if err != nil {
				t.Fatalf("once the fault cleared: %v", err)
			}
			after, _ := db.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
			kept := map[string]bool{}
			for _, m := range after {
				kept[m.ID] = true
			}
			for _, m := range before {
				if !kept[m.ID] {
					t.Errorf("committed message lost: %+v", m)
				}
			}
			if len(after) == 0 || !strings.HasPrefix(after[len(after)-1].Content, "final: ") || charges.Load() > 1 {
				t.Fatalf("not finished (%+v) or the tool ran %d times", res.Last(), charges.Load())
			}
		})
	}
}

// TestReadOnlyDatabase: a database on a filesystem that went read-only (as the kernel does on disk
// errors) is refused at open with a clear error and is left as it was; once the filesystem is
// writable again, the queued message is answered. Mounts a tmpfs (root, as in CI); else skips.
func TestReadOnlyDatabase(t *testing.T) {
	dir := tmpfs(t)
	ctx := context.Background()
	path := filepath.Join(dir, "w.db")
	key := make([]byte, 32)
	db, err := sqlite.Open(ctx, path, sqlite.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	var charges atomic.Int32
	reg := registry([]*weft.Tool{countTool("charge", &charges), countTool("lookup", new(atomic.Int32))}, nil)
	eng, _ := engine.New(engine.Options{Registry: reg, Store: db, Override: modelByHistory})
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "pay"}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount ro: %v %s", err, out)
	}
	if _, err := sqlite.Open(ctx, path, sqlite.Options{Key: key}); err == nil || !strings.Contains(err.Error(), "read-only file system") {
		t.Fatalf("opening on a read-only filesystem: %v", err)
	}
	if out, err := exec.Command("mount", "-o", "remount,rw", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount rw: %v %s", err, out)
	}
	db, err = sqlite.Open(ctx, path, sqlite.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	eng, _ = engine.New(engine.Options{Registry: reg, Store: db, Override: modelByHistory})
	res, err := eng.Ask(ctx, th.ID, engine.Input{})
	msgs, _ := db.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	if err != nil || len(msgs) == 0 || !strings.HasPrefix(msgs[len(msgs)-1].Content, "final: ") || charges.Load() != 1 {
		t.Fatalf("once writable: %+v %v, ran %d", res.Last(), err, charges.Load())
	}
}

// jumpClock is a store clock a test moves by hand: a wall clock that jumps.
type jumpClock struct{ off atomic.Int64 }

func (c *jumpClock) now() time.Time       { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *jumpClock) jump(d time.Duration) { c.off.Add(int64(d)) }

// TestClockJumps: while a run executes a non-idempotent tool, the clock jumps. Forward past the
// lease's expiry, another process takes the thread over: fencing refuses the first run's next
// write (it stops), the second answers the running call as interrupted rather than run it again,
// and the thread finishes with the tool run once. Backward, the lease only seems to last longer:
// the run finishes as if nothing happened.
func TestClockJumps(t *testing.T) {
	for _, tc := range []struct {
		name string
		jump time.Duration
	}{{"forward", time.Hour}, {"backward", -time.Hour}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &jumpClock{}
			mem, _ := memstore.New(memstore.Options{Now: clock.now})
			var charges atomic.Int32
			started, release := make(chan struct{}), make(chan struct{})
			charge := &weft.Tool{Name: "charge", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
				charges.Add(1)
				close(started)
				<-release
				return weft.Success("charge ok"), nil
			})}
			reg := registry([]*weft.Tool{charge, countTool("lookup", new(atomic.Int32))}, nil)
			ctx := context.Background()
			first, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: modelByHistory, LeaseTTL: time.Minute})
			th, _ := first.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			if _, err := first.Send(ctx, th.ID, weft.NewMessage{Content: "pay"}); err != nil {
				t.Fatal(err)
			}
			done := make(chan *engine.RunResult, 1)
			go func() {
				res, _ := first.Run(ctx, th.ID)
				done <- res
			}()
			<-started
			clock.jump(tc.jump)
			second, _ := engine.New(engine.Options{Registry: reg, Store: mem, Override: modelByHistory, LeaseTTL: time.Minute})
			res2, err := second.Continue(ctx, th.ID, "")
			switch {
			case tc.jump > 0 && (err != nil || res2.Last().Reason != weft.StopOnResponse):
				t.Fatalf("the takeover after the jump: %+v %v", res2, err)
			case tc.jump < 0 && !errors.Is(err, weft.ErrLeaseHeld):
				t.Fatalf("a takeover while the lease is live: %+v %v", res2, err)
			}
			close(release)
			res1 := <-done
			msgs, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
			results := map[string]int{}
			for _, m := range msgs {
				if m.Role == weft.RoleTool {
					results[m.ToolCallID]++
				}
			}
			last := msgs[len(msgs)-1]
			if charges.Load() != 1 || results["c1"] != 1 || results["c2"] != 1 || !strings.HasPrefix(last.Content, "final: ") {
				t.Fatalf("charges %d, results %v, last %q, first run %+v", charges.Load(), results, last.Content, res1.Last())
			}
			if tc.jump > 0 && !strings.Contains(last.Content, "interrupted") {
				t.Errorf("the taken-over call was not answered as interrupted: %q", last.Content)
			}
		})
	}
}

// retryStore runs the function of every fenced transaction twice, as weft.Store.Tx allows a store
// to: the first time in a transaction it then rolls back, the second for real.
type retryStore struct {
	weft.Store
	retried atomic.Int32
}

var errRetry = errors.New("retry")

func (s *retryStore) Tx(ctx context.Context, id string, f *weft.Fence, fn func(weft.Tx) error) error {
	if f == nil {
		return s.Store.Tx(ctx, id, f, fn)
	}
	if err := s.Store.Tx(ctx, id, f, func(tx weft.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errRetry
	}); !errors.Is(err, errRetry) {
		return err
	}
	s.retried.Add(1)
	return s.Store.Tx(ctx, id, f, fn)
}

// TestRetriedTransactionsChangeStateOnce: a store that runs every transaction's function a second
// time (weft.Store.Tx allows it) changes nothing a run keeps: each stop is counted once in the
// stored run state and in run_stopped's Seq, a stop stored with the step's reply and one stored by
// a transaction of its own alike; the tool runs once a turn; and the answer reads each result once.
func TestRetriedTransactionsChangeStateOnce(t *testing.T) {
	for _, approval := range []bool{false, true} {
		t.Run(fmt.Sprintf("approval=%v", approval), func(t *testing.T) {
			var charges atomic.Int32
			charge := countTool("charge", &charges)
			if approval {
				charge.Approval = weft.ApprovalRequired
			}
			reg := registry([]*weft.Tool{charge, countTool("lookup", new(atomic.Int32))}, nil)
			mem, err := memstore.New(memstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer mem.Close()
			st := &retryStore{Store: mem}
			var mu sync.Mutex
			var seqs []int
			eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: modelByHistory, OnEvent: func(ev engine.Event) {
				if d, ok := ev.Data.(engine.RunStopped); ok {
					mu.Lock()
					seqs = append(seqs, d.Seq)
					mu.Unlock()
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			const turns = 3
			for i := range turns {
				res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: fmt.Sprint("pay ", i)}})
				if err != nil {
					t.Fatal(err)
				}
				if approval {
					if res.Last().Reason != weft.StopAwaitingApproval {
						t.Fatalf("turn %d: %+v", i, res.Last())
					}
					pending, _ := eng.PendingApprovals(ctx, th.ID)
					if len(pending) != 1 {
						t.Fatalf("turn %d: pending %+v", i, pending)
					}
					if _, err := eng.Decide(ctx, th.ID, pending[0].CallID, engine.Decision{Approve: true}); err != nil {
						t.Fatal(err)
					}
					if res, err = eng.Ask(ctx, th.ID, engine.Input{}); err != nil {
						t.Fatal(err)
					}
				}
				if got := lastText(t, st, th.ID); res.Last().Reason != weft.StopOnResponse || got != "final: charge ok | lookup ok" {
					t.Fatalf("turn %d: %+v, answer %q", i, res.Last(), got)
				}
			}
			stops := turns
			if approval {
				stops *= 2
			}
			docs, err := st.ExecState(ctx, th.ID)
			if err != nil {
				t.Fatal(err)
			}
			var state struct {
				Stops int `json:"stops"`
			}
			for _, doc := range docs {
				if err := json.Unmarshal(doc, &state); err == nil && state.Stops > 0 {
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			want := make([]int, stops)
			for i := range want {
				want[i] = i + 1
			}
			if state.Stops != stops || fmt.Sprint(seqs) != fmt.Sprint(want) || charges.Load() != turns || st.retried.Load() == 0 {
				t.Errorf("stored stops %d, run_stopped seqs %v (want %d stops), charged %d times in %d turns, %d transactions retried",
					state.Stops, seqs, stops, charges.Load(), turns, st.retried.Load())
			}
		})
	}
}
