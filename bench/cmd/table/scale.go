package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/weft-agents/weft/bench"
)

const (
	concurrentThreads = 1000
	idleThreads       = 10000
)

// scaleTable prints the scale figures: turns per second with 1,000 threads at once on SQLite,
// Weft against the floor that group-commits the same four rows per turn (rounds interleaved,
// medians), and the goroutines and heap bytes 10,000 idle threads hold on each of Weft's
// in-process stores.
func scaleTable(ctx context.Context, dir string, count int) error {
	defs := bench.ScaleRunners()
	for _, d := range defs {
		if err := bench.Check(ctx, d, dir, ""); err != nil {
			return err
		}
	}
	rates := map[string][]float64{}
	for round := range count {
		for _, d := range defs {
			sub, err := os.MkdirTemp(dir, d.Name+"-")
			if err != nil {
				return err
			}
			r, err := d.New(bench.Config{Counts: &bench.Counts{}, Dir: sub})
			if err != nil {
				return err
			}
			rate, err := bench.Concurrent(ctx, r, concurrentThreads)
			r.Close()
			os.RemoveAll(sub)
			if err != nil {
				return fmt.Errorf("%s: %w", d.Name, err)
			}
			rates[d.Name] = append(rates[d.Name], rate)
			fmt.Fprintf(os.Stderr, "round %d/%d %-18s %8.0f turns/s\n", round+1, count, d.Name, rate)
		}
	}
	host, _ := os.Hostname()
	fmt.Printf("%d threads' tool turns at once on a SQLite file (medians of %d rounds; %s, %s/%s, %d CPUs, %s, %s)\n\n",
		concurrentThreads, count, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), host, time.Now().UTC().Format("2006-01-02"))
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "runner\tturns/s\tsteps/s\t× the floor\t")
	floor := median(rates[defs[0].Name])
	for _, d := range defs {
		m := median(rates[d.Name])
		ratio := ""
		if !d.Floor {
			ratio = fmt.Sprintf("%.2f", m/floor)
		}
		// A turn is three steps: the model's call, the tool, the model's answer.
		fmt.Fprintf(w, "%s\t%.0f\t%.0f\t%s\t\n", d.Name, m, 3*m, ratio)
	}
	w.Flush()

	fmt.Printf("\n%d idle threads (each has had one turn)\n\n", idleThreads)
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "runner\tgoroutines\theap bytes/thread\t")
	for _, d := range bench.Runners() {
		if d.Name != "weft-memstore" && d.Name != "weft-sqlite" {
			continue
		}
		sub, err := os.MkdirTemp(dir, d.Name+"-")
		if err != nil {
			return err
		}
		f, err := bench.Idle(ctx, d, bench.Config{Counts: &bench.Counts{}, Dir: sub}, idleThreads)
		os.RemoveAll(sub)
		if err != nil {
			return fmt.Errorf("%s: %w", d.Name, err)
		}
		fmt.Fprintf(w, "%s\t%d\t%.0f\t\n", d.Name, f.Goroutines, f.BytesPerThread())
	}
	return w.Flush()
}
