package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/weft-agents/weft/bench"
)

// longTable prints a long conversation's figures on SQLite (bench.LongThread).
func longTable(ctx context.Context, dir string, turns int) error {
	window := max(turns/10, 1)
	rows, err := bench.LongThread(ctx, dir, turns, window)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "turns\tµs/turn\trequest body (bytes)\tlogs stored/turn (bytes)\tlogs table (KiB)\t\n")
	for _, r := range rows {
		fmt.Fprintf(w, "%d\t%.0f\t%d\t%d\t%d\t\n", r.Turns, float64(r.PerTurn.Nanoseconds())/1e3, r.RequestSize, r.LogGrowth, r.LogBytes>>10)
	}
	fmt.Printf("One conversation of %d turns on SQLite (Engine.Ask; each window of %d turns: the mean time of a turn, the bytes its logs added)\n\n", turns, window)
	return w.Flush()
}
