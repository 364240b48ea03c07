package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
)

func newLogsCmd(g *globals) *cobra.Command {
	var db string
	var full, asJSON, follow bool
	c := &cobra.Command{
		Use:   "logs THREAD",
		Short: "Print a thread's model calls: time, model, tokens, cost, latency, status",
		Long: `Print one line per model attempt of THREAD (every depth): time, model, tokens in/out, cost,
latency and status, then the thread's total cost. --full adds the redacted request and response
bodies; --json prints the log rows; --follow keeps printing new calls as they happen (Ctrl-C ends it).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			if rc := remoteOf(g); rc != nil {
				return rc.logs(cmd, a[0], full, asJSON)
			}
			st, err := openExisting(cmd, db)
			if err != nil {
				return err
			}
			defer st.Close()
			if _, err := st.Thread(cmd.Context(), a[0]); err != nil {
				return exit(threadExit(err), err)
			}
			if follow {
				return followLogs(cmd.Context(), cmd.OutOrStdout(), st, a[0])
			}
			logs, err := st.Logs(cmd.Context(), a[0], weft.LogQuery{MaxDepth: 1 << 20})
			if err != nil {
				return exit(exitFailure, err)
			}
			if full || asJSON {
				for i := range logs {
					if l, err := st.Log(cmd.Context(), a[0], logs[i].ID); err == nil {
						logs[i] = l
					}
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				for i := range logs {
					logs[i].RequestBody, logs[i].ResponseBody = jsonOrString(logs[i].RequestBody), jsonOrString(logs[i].ResponseBody)
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(logs)
			}
			writeLogs(out, logs, full)
			return nil
		},
	}
	c.Flags().StringVar(&db, "db", defaultDB(), "store: SQLite file or postgres:// URL (env WEFT_DB)")
	c.Flags().BoolVar(&full, "full", false, "add the redacted request and response bodies")
	c.Flags().BoolVar(&asJSON, "json", false, "print the log rows as JSON")
	c.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new model calls as they happen")
	return c
}

// followLogs prints the thread's log rows, then new ones as they are written, until ctx ends. The
// store of another process gives no signal, so it looks again every 300 ms.
func followLogs(ctx context.Context, out io.Writer, st weft.Store, threadID string) error {
	fmt.Fprintf(out, "%-8s  %-5s  %-16s  %6s  %6s  %-10s  %8s  %s\n", "TIME", "KIND", "MODEL", "IN", "OUT", "COST", "LATENCY", "STATUS")
	seen := map[string]bool{}
	for {
		logs, err := st.Logs(ctx, threadID, weft.LogQuery{MaxDepth: 1 << 20})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return exit(exitFailure, err)
		}
		for _, l := range logs {
			if seen[l.ID] || (l.Kind == "llm" && !l.IsComplete && l.Error == "") {
				continue // printed, or a call still under way
			}
			seen[l.ID] = true
			cost := "—"
			if l.CostTotal != nil {
				cost = fmt.Sprintf("$%.6f", *l.CostTotal)
			}
			status := l.FinishReason
			if l.Error != "" {
				status = oneLine(l.Error)
			}
			fmt.Fprintf(out, "%-8s  %-5s  %-16s  %6d  %6d  %-10s  %6dms  %s\n", l.CreatedAt.Local().Format(time.TimeOnly), l.Kind, l.Model,
				l.InputTokens, l.OutputTokens, cost, l.LatencyMS, status)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// jsonOrString keeps a body that is JSON as it is and turns any other text into a JSON string.
func jsonOrString(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

func writeLogs(out io.Writer, logs []weft.LogEntry, full bool) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tKIND\tMODEL\tIN\tOUT\tCOST\tLATENCY\tSTATUS")
	var total float64
	unknown := 0
	calls := 0
	for _, l := range logs {
		status := "ok"
		switch {
		case l.Error != "":
			status = l.ErrorType
			if status == "" {
				status = "error"
			}
			// A provider error's text starts with its type already ("unknown: …").
			if msg := oneLine(l.Error); strings.HasPrefix(msg, status+":") || strings.HasPrefix(msg, status+" (") {
				status = msg
			} else {
				status += ": " + msg
			}
		case l.FinishReason != "":
			status = l.FinishReason
		}
		cost := "—"
		if l.Kind == "llm" {
			calls++
			switch {
			case l.CostTotal != nil:
				cost = fmt.Sprintf("$%.6f", *l.CostTotal)
				total = weft.RoundUSD(total + *l.CostTotal)
			case l.InputTokens+l.OutputTokens > 0:
				unknown++ // tokens were used, and the model has no price
			default:
				cost = "$0" // a failed attempt that used nothing
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%dms\t%s\n", l.CreatedAt.Local().Format(time.TimeOnly), l.Kind, l.Model,
			l.InputTokens, l.OutputTokens, cost, l.LatencyMS, status)
	}
	w.Flush()
	if full {
		// The bodies follow the table, so that its columns stay aligned.
		for i, l := range logs {
			if len(l.RequestBody) == 0 && len(l.ResponseBody) == 0 {
				continue
			}
			fmt.Fprintf(out, "\n#%d %s %s %s\n", i+1, l.CreatedAt.Local().Format(time.TimeOnly), l.Model, l.ID)
			if len(l.RequestBody) > 0 {
				fmt.Fprintf(out, "  request:  %s\n", l.RequestBody)
			}
			if len(l.ResponseBody) > 0 {
				fmt.Fprintf(out, "  response: %s\n", l.ResponseBody)
			}
		}
		fmt.Fprintln(out)
	}
	switch {
	case calls == 0:
		fmt.Fprintln(out, "no model calls")
	case unknown == calls && unknown > 0:
		fmt.Fprintf(out, "%s, cost unknown (the models have no prices)\n", plural(calls, "call"))
	case unknown > 0:
		fmt.Fprintf(out, "%s, total cost $%.6f (%s without a price)\n", plural(calls, "call"), total, plural(unknown, "call"))
	default:
		fmt.Fprintf(out, "%s, total cost $%.6f\n", plural(calls, "call"), total)
	}
}
