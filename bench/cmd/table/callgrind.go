package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"text/tabwriter"

	"github.com/weft-agents/weft/bench"
)

// Instruction counts do not depend on the machine's load. Each runner runs twice under callgrind
// with the same threads prepared, once with no turns and once with turnsCounted turns; the
// difference over turnsCounted is its instructions per turn, setup excluded.
const (
	threadsCounted = 2000
	turnsCounted   = 2000
)

var collected = regexp.MustCompile(`Collected : (\d+)`)

// callgrind prints each in-process runner's instructions per turn. noGC runs the children with the
// collector off: the count is then the turn's own work, which a change moves alone (with the
// collector on, when it happens to run moves a runner's count by ±10 % between builds that do the
// same work).
func callgrind(defs []bench.Def, noGC bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	count := func(name string, turns int) (int64, error) {
		return countChild(self, noGC, name, "-threads", strconv.Itoa(threadsCounted), "-turns", strconv.Itoa(turns))
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "runner\tstore\tinstructions/turn\t× its floor\t× eino-react\t\n")
	floors := map[bench.Kind]float64{}
	var eino float64
	for _, d := range defs {
		if d.Kind == bench.Postgres {
			continue // most of its work is in the server, which callgrind does not see
		}
		base, err := count(d.Name, 0)
		if err != nil {
			return err
		}
		total, err := count(d.Name, turnsCounted)
		if err != nil {
			return err
		}
		per := float64(total-base) / turnsCounted
		vs, ve := "", ""
		if d.Floor {
			floors[d.Kind] = per
		} else if f := floors[d.Kind]; f > 0 {
			vs = fmt.Sprintf("%.2f", per/f)
		}
		if d.Name == "eino-react" {
			eino = per
		} else if eino > 0 {
			ve = fmt.Sprintf("%.2f", per/eino)
		}
		fmt.Fprintf(os.Stderr, "%s: %.0f instructions/turn\n", d.Name, per)
		fmt.Fprintf(w, "%s\t%s\t%.0f\t%s\t%s\t\n", d.Name, d.Kind, per, vs, ve)
	}
	gc := ""
	if noGC {
		gc = ", the collector off"
	}
	fmt.Printf("Instructions per turn under callgrind (%d turns less none, %d threads prepared in both%s)\n\n", turnsCounted, threadsCounted, gc)
	return w.Flush()
}

// countChild runs this program as a child with args under callgrind and returns the instructions
// it ran.
func countChild(self string, noGC bool, name string, args ...string) (int64, error) {
	cmd := exec.Command("valgrind", append([]string{"--tool=callgrind", "--callgrind-out-file=/dev/null", self, "-child", name}, args...)...)
	// One P, no preemption signals (callgrind mishandles them): the same schedule every time. The
	// runtime reads the clock with RDTSCP where the CPU has it, which valgrind 3.19 cannot run
	// (SIGILL on AMD Zen 5): cpu.rdtscp=off makes it use RDTSC.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off")
	if noGC {
		cmd.Env = append(cmd.Env, "GOGC=off")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s under callgrind: %v\n%s", name, err, stderr.String())
	}
	m := collected.FindSubmatch(stderr.Bytes())
	if m == nil {
		return 0, fmt.Errorf("%s: no instruction count in callgrind's output:\n%s", name, stderr.String())
	}
	return strconv.ParseInt(string(m[1]), 10, 64)
}

// callgrindScale prints the scale figure in instructions: each scale runner prepares
// concurrentThreads threads and runs one turn on each, all at once, under callgrind; less a run
// that only prepares them, over the turns. With one P the runs interleave at the points where
// they wait, so a group commit still gathers the writes that wait for it.
func callgrindScale(ctx context.Context, dir string, noGC bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "runner\tinstructions/turn\t× the floor\t\n")
	var floor float64
	for _, d := range bench.ScaleRunners() {
		if err := bench.Check(ctx, d, dir, ""); err != nil {
			return err
		}
		n := strconv.Itoa(concurrentThreads)
		base, err := countChild(self, noGC, d.Name, "-concurrent", "-threads", n, "-turns", "0")
		if err != nil {
			return err
		}
		total, err := countChild(self, noGC, d.Name, "-concurrent", "-threads", n, "-turns", n)
		if err != nil {
			return err
		}
		per := float64(total-base) / concurrentThreads
		ratio := ""
		if d.Floor {
			floor = per
		} else if floor > 0 {
			ratio = fmt.Sprintf("%.2f", per/floor)
		}
		fmt.Fprintf(os.Stderr, "%s: %.0f instructions/turn\n", d.Name, per)
		fmt.Fprintf(w, "%s\t%.0f\t%s\t\n", d.Name, per, ratio)
	}
	gc := ""
	if noGC {
		gc = ", the collector off"
	}
	fmt.Printf("Instructions per turn under callgrind, %d threads' turns at once on a SQLite file (less preparing them%s)\n\n", concurrentThreads, gc)
	return w.Flush()
}

// runChild prepares threads threads of the named runner and runs turns turns on them, after a
// warm-up turn. With concurrent, it runs one turn on each thread, all at once (turns > 0), or
// only prepares them.
func runChild(name string, threads, turns int, concurrent bool) error {
	dir, err := os.MkdirTemp("", "weft-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, d := range append(bench.Runners(), bench.ScaleRunners()...) {
		if d.Name != name {
			continue
		}
		ctx := context.Background()
		r, err := d.New(bench.Config{Counts: &bench.Counts{}, Dir: dir, PostgresURL: os.Getenv("WEFT_TEST_POSTGRES_URL")})
		if err != nil {
			return err
		}
		defer r.Close()
		if concurrent {
			if turns == 0 {
				return r.Prepare(ctx, threads)
			}
			_, err := bench.Concurrent(ctx, r, threads)
			return err
		}
		// One turn more than asked, first, in both runs: one-time costs (compiling a schema,
		// filling caches) are not a turn's.
		if err := r.Prepare(ctx, threads+1); err != nil {
			return err
		}
		if got, err := r.Turn(ctx, threads); err != nil || got != bench.Answer {
			return fmt.Errorf("warm-up turn: %q %v", got, err)
		}
		for i := range turns {
			if got, err := r.Turn(ctx, i%threads); err != nil || got != bench.Answer {
				return fmt.Errorf("turn %d: %q %v", i, got, err)
			}
		}
		return nil
	}
	return fmt.Errorf("no runner %q", name)
}
