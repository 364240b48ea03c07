package bench

import (
	"context"
	"errors"
	"os"
	"testing"
)

// TestHonesty checks that every runner really does the turn (Check): the answer, the model and
// tool calls, what is stored, and that arguments outside the schema never reach the tool.
func TestHonesty(t *testing.T) {
	pg := os.Getenv("WEFT_TEST_POSTGRES_URL")
	for _, def := range Runners() {
		t.Run(def.Name, func(t *testing.T) {
			err := Check(context.Background(), def, t.TempDir(), pg)
			if errors.Is(err, ErrNoPostgres) {
				t.Skip("WEFT_TEST_POSTGRES_URL is not set: the PostgreSQL runners are skipped. Run them with WEFT_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test")
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFakeRefusesOtherConversations: the fake model fails a runner that skips a step.
func TestFakeRefusesOtherConversations(t *testing.T) {
	cases := []struct {
		n          int
		role, text string
		call, ok   bool
	}{
		{Prior + 2, "user", Question, true, true},
		{Prior + 4, "tool", Result, false, true},
		{Prior + 1, "user", Question, false, false}, // history lost
		{Prior + 2, "user", "something else", false, false},
		{Prior + 3, "tool", Result, false, false}, // the tool call was not recorded
	}
	for _, c := range cases {
		var counts Counts
		call, err := counts.Reply(c.n, c.role, c.text)
		if (err == nil) != c.ok || call != c.call {
			t.Errorf("Reply(%d, %s, %.20q) = %v, %v", c.n, c.role, c.text, call, err)
		}
	}
}

func TestDecodeArgs(t *testing.T) {
	cases := []struct {
		in   string
		want int
		ok   bool
	}{
		{`{"order_id":42}`, 42, true},
		{`{"order_id":"42"}`, 0, false},
		{`{"order_id":4.2}`, 0, false},
		{`{}`, 0, false},
		{`{"order_id":42,"x":1}`, 0, false},
		{`[`, 0, false},
	}
	for _, c := range cases {
		a, err := decodeArgs(c.in)
		if (err == nil) != c.ok || a.OrderID != c.want {
			t.Errorf("decodeArgs(%s) = %v, %v", c.in, a, err)
		}
	}
}

// BenchmarkTurn times the turn through each runner, for profiling one of them
// (go test -run '^$' -bench 'Turn/weft-memstore' -cpuprofile cpu.out); the table command is what
// compares them.
func BenchmarkTurn(b *testing.B) {
	pg := os.Getenv("WEFT_TEST_POSTGRES_URL")
	ctx := context.Background()
	for _, def := range Runners() {
		b.Run(def.Name, func(b *testing.B) {
			r, err := def.New(Config{Counts: &Counts{}, Dir: b.TempDir(), PostgresURL: pg})
			if errors.Is(err, ErrNoPostgres) {
				b.Skip(err)
			}
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			if err := Turns(ctx, b, r); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// TestScaleRunners: the group-commit floor does the whole turn as the other runners must, and
// many threads at once all get their answer.
func TestScaleRunners(t *testing.T) {
	for _, def := range ScaleRunners() {
		t.Run(def.Name, func(t *testing.T) {
			ctx := context.Background()
			if err := Check(ctx, def, t.TempDir(), ""); err != nil {
				t.Fatal(err)
			}
			counts := &Counts{}
			r, err := def.New(Config{Counts: counts, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			const n = 64
			rate, err := Concurrent(ctx, r, n)
			if err != nil || rate <= 0 {
				t.Fatalf("%v turns/s, %v", rate, err)
			}
			if got := counts.ToolRuns.Load(); got != n {
				t.Errorf("the tool ran %d times in %d turns", got, n)
			}
			p := r.(persister)
			for i := range n {
				if got, err := p.Added(ctx, i); err != nil || got != 4 {
					t.Fatalf("thread %d gained %d stored messages (%v), want 4", i, got, err)
				}
			}
		})
	}
}

// TestIdleThreadsHoldNoGoroutines: once their turns are over, Weft's threads hold no goroutine on
// either store (the target), and the heap they hold is reported.
func TestIdleThreadsHoldNoGoroutines(t *testing.T) {
	for _, def := range Runners() {
		if def.Name != "weft-memstore" && def.Name != "weft-sqlite" {
			continue
		}
		t.Run(def.Name, func(t *testing.T) {
			f, err := Idle(context.Background(), def, Config{Counts: &Counts{}, Dir: t.TempDir()}, 200)
			if err != nil {
				t.Fatal(err)
			}
			if f.Goroutines > 0 {
				t.Errorf("%d idle threads hold %d goroutines", f.Threads, f.Goroutines)
			}
			t.Logf("%d idle threads: %d goroutines, %.0f heap bytes per thread", f.Threads, f.Goroutines, f.BytesPerThread())
		})
	}
}

// BenchmarkConcurrent runs 1,000 threads' turns at once through each scale runner, for profiling
// (go test -run '^$' -bench 'Concurrent/weft-sqlite' -benchtime 3x -cpuprofile cpu.out); the
// table command (-scale) is what compares them.
func BenchmarkConcurrent(b *testing.B) {
	ctx := context.Background()
	for _, def := range ScaleRunners() {
		b.Run(def.Name, func(b *testing.B) {
			var rate float64
			for range b.N {
				b.StopTimer()
				r, err := def.New(Config{Counts: &Counts{}, Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				got, err := Concurrent(ctx, r, 1000)
				b.StopTimer()
				r.Close()
				if err != nil {
					b.Fatal(err)
				}
				rate += got
			}
			b.ReportMetric(rate/float64(b.N), "turns/s")
		})
	}
}

// TestLongThread: a long conversation's logs read back the request bodies the model reported,
// and store a turn's in far fewer bytes than the body (which holds the whole conversation).
func TestLongThread(t *testing.T) {
	rows, err := LongThread(t.Context(), t.TempDir(), 60, 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d windows, want 3", len(rows))
	}
	last := rows[len(rows)-1]
	if last.RequestSize < 20_000 || last.LogGrowth <= 0 || last.LogGrowth*10 > int64(last.RequestSize) {
		t.Errorf("at %d turns: request body %d bytes, logs grew %d bytes a turn", last.Turns, last.RequestSize, last.LogGrowth)
	}
}
