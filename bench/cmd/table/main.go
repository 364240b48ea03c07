// Command table measures the bench module's turn through every runner and prints the medians and
// the ratios the performance targets are stated in. Runners are measured in rounds, each round
// running every runner once, so that a slow spell of the machine falls on all of them alike.
//
//	cd bench && go run ./cmd/table [-count 5] [-benchtime 1s] [-run REGEX]
//	cd bench && go run ./cmd/table -scale [-count 3]
//	cd bench && go run ./cmd/table -callgrind [-nogc] [-run REGEX]
//	cd bench && go run ./cmd/table -long 1000
//
// The PostgreSQL rows run when WEFT_TEST_POSTGRES_URL names a database the runners may create a
// schema in.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/weft-agents/weft/bench"
)

func main() {
	testing.Init()
	count := flag.Int("count", 5, "rounds; each figure is the median over them")
	benchtime := flag.Duration("benchtime", time.Second, "time per runner per round")
	run := flag.String("run", "", "measure only the runners matching this regular expression")
	cg := flag.Bool("callgrind", false, "count instructions per turn under valgrind's callgrind instead of timing (in-process stores only); with -scale, of 1,000 threads' turns at once")
	noGC := flag.Bool("nogc", false, "with -callgrind: run with the collector off (GOGC=off), to compare builds by their own work")
	scale := flag.Bool("scale", false, "measure the scale figures instead: 1,000 threads' turns at once on SQLite against the group-committed floor, and what 10,000 idle threads hold")
	long := flag.Int("long", 0, "measure one conversation of this many turns on SQLite instead: time a turn and bytes stored a turn as it grows")
	child := flag.String("child", "", "internal: prepare -threads threads of this runner and run -turns turns on them")
	concurrent := flag.Bool("concurrent", false, "internal, with -child: with -turns above 0, run one turn on each thread, all at once")
	threads := flag.Int("threads", 300, "internal, with -child")
	turns := flag.Int("turns", 0, "internal, with -child")
	flag.Parse()
	if *child != "" {
		if err := runChild(*child, *threads, *turns, *concurrent); err != nil {
			fatal(err)
		}
		return
	}
	if err := flag.Set("test.benchtime", benchtime.String()); err != nil {
		fatal(err)
	}
	re, err := regexp.Compile(*run)
	if err != nil {
		fatal(err)
	}
	dir, err := os.MkdirTemp("", "weft-bench-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(dir)
	pg := os.Getenv("WEFT_TEST_POSTGRES_URL")
	ctx := context.Background()
	if *long > 0 {
		if err := longTable(ctx, dir, *long); err != nil {
			fatal(err)
		}
		return
	}
	if *scale && *cg {
		if err := callgrindScale(ctx, dir, *noGC); err != nil {
			fatal(err)
		}
		return
	}
	if *scale {
		if err := scaleTable(ctx, dir, *count); err != nil {
			fatal(err)
		}
		return
	}

	var defs []bench.Def
	for _, d := range bench.Runners() {
		if !re.MatchString(d.Name) {
			continue
		}
		if d.Kind == bench.Postgres && pg == "" {
			fmt.Fprintf(os.Stderr, "%s: skipped, WEFT_TEST_POSTGRES_URL is not set\n", d.Name)
			continue
		}
		// Every runner proves it does the whole turn before it is timed.
		if err := bench.Check(ctx, d, dir, pg); err != nil {
			fatal(err)
		}
		defs = append(defs, d)
	}
	if *cg {
		if err := callgrind(defs, *noGC); err != nil {
			fatal(err)
		}
		return
	}
	samples := make(map[string][]testing.BenchmarkResult)
	for round := range *count {
		for _, d := range defs {
			res, err := measure(ctx, d, dir, pg)
			if err != nil {
				fatal(fmt.Errorf("%s: %w", d.Name, err))
			}
			samples[d.Name] = append(samples[d.Name], res)
			fmt.Fprintf(os.Stderr, "round %d/%d %-18s %9.1f µs/turn\n", round+1, *count, d.Name, float64(res.NsPerOp())/1e3)
		}
	}
	print(defs, samples, *count, *benchtime)
}

// measure runs one benchmark of a fresh runner: turns on threads prepared in batches outside the
// timer.
func measure(ctx context.Context, d bench.Def, dir, pg string) (testing.BenchmarkResult, error) {
	sub, err := os.MkdirTemp(dir, d.Name+"-")
	if err != nil {
		return testing.BenchmarkResult{}, err
	}
	defer os.RemoveAll(sub)
	r, err := d.New(bench.Config{Counts: &bench.Counts{}, Dir: sub, PostgresURL: pg})
	if err != nil {
		return testing.BenchmarkResult{}, err
	}
	defer r.Close()
	var turnErr error
	res := testing.Benchmark(func(b *testing.B) { turnErr = bench.Turns(ctx, b, r) })
	return res, turnErr
}

type row struct {
	ns, bytes, allocs float64
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func print(defs []bench.Def, samples map[string][]testing.BenchmarkResult, count int, benchtime time.Duration) {
	rows := make(map[string]row)
	floors := make(map[bench.Kind]string)
	for _, d := range defs {
		var ns, by, al []float64
		for _, r := range samples[d.Name] {
			ns = append(ns, float64(r.T.Nanoseconds())/float64(r.N))
			by = append(by, float64(r.AllocedBytesPerOp()))
			al = append(al, float64(r.AllocsPerOp()))
		}
		rows[d.Name] = row{median(ns), median(by), median(al)}
		if d.Floor {
			floors[d.Kind] = d.Name
		}
	}
	host, _ := os.Hostname()
	fmt.Printf("One tool turn (21 prior messages; medians of %d rounds of %s each; %s, %s/%s, %d CPUs, %s, %s)\n\n",
		count, benchtime, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), host, time.Now().UTC().Format("2006-01-02"))
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "runner\tstore\tµs/turn\tB/turn\tallocs/turn\t× its floor\t× eino-react\t")
	eino, hasEino := rows["eino-react"]
	for _, d := range defs {
		r := rows[d.Name]
		vsFloor, vsEino := "", ""
		if f, ok := floors[d.Kind]; ok && !d.Floor {
			vsFloor = fmt.Sprintf("%.2f", r.ns/rows[f].ns)
		}
		if hasEino && d.Name != "eino-react" {
			vsEino = fmt.Sprintf("%.2f", r.ns/eino.ns)
		}
		fmt.Fprintf(w, "%s\t%s\t%.1f\t%.0f\t%.0f\t%s\t%s\t\n", d.Name, d.Kind, r.ns/1e3, r.bytes, r.allocs, vsFloor, vsEino)
	}
	w.Flush()
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
