package main

import (
	"time"

	"github.com/spf13/cobra"
)

func newInspectCmd(g *globals) *cobra.Command {
	f := &serveFlags{noAuth: true, inspect: true, workers: 8, drain: 5 * time.Second, logFormat: "text"}
	c := &cobra.Command{
		Use:   "inspect",
		Short: "Open the web inspector on a local store (loopback, no auth); prints the URL",
		Long: `Serve the web inspector and the HTTP API over the store --db on a loopback address, with
no auth: every request acts as the admin user "local". It prints the inspector's URL and opens
nothing by itself. The inspector lists the threads, shows each one live — messages by side, tool
calls with their results, sub-prompts, subagents, every model call with its redacted request —
and sends messages, stops, continues and approves like the API does.

--addr must be a loopback address (default 127.0.0.1:0, a free port). To share the inspector,
run weft serve with API keys: it serves the same pages at /.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd, g, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:0", "loopback listen address (port 0: a free one)")
	fl.StringVar(&f.db, "db", defaultDB(), "store: SQLite file or postgres:// URL (env WEFT_DB)")
	fl.StringVar(&f.script, "model-script", "", "answer every model call from a model script (tests, demos)")
	return c
}
