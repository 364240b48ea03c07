package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/a2a"
)

// newA2ACmd is weft a2a: the Agent2Agent side of Weft (docs/a2a.md).
func newA2ACmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "a2a",
		Short: "Agent2Agent: print the card weft serve gives an agent",
	}
	var base string
	card := &cobra.Command{
		Use:   "card AGENT",
		Short: "Print the A2A agent card of an agent, as weft serve serves it at /a2a/AGENT/.well-known/agent-card.json",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := loadProject(g.dir)
			if err != nil {
				return err
			}
			base = strings.TrimSuffix(base, "/")
			if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
				return exit(exitUsage, fmt.Errorf("--url %q: want the server's http(s) base URL, such as http://127.0.0.1:8080", base))
			}
			c, ok := a2a.Card(reg, args[0], base+a2a.RPCPath(args[0]), version())
			if !ok {
				return exit(exitUsage, fmt.Errorf("no agent named %q under %s", args[0], g.dir))
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(c)
		},
	}
	card.Flags().StringVar(&base, "url", "http://"+envOr("WEFT_ADDR", "127.0.0.1:8080"), "the base URL clients reach weft serve at")
	c.AddCommand(card)
	return c
}

// checkA2A fetches the card of every kind: a2a tool and checks it: a card that cannot be fetched
// or is unusable is an error; a tool whose card or headers need a variable the process
// environment does not have is not checked (a warning).
func checkA2A(ctx context.Context, reg *weft.Registry) weft.Diagnostics {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var out weft.Diagnostics
	add := func(d weft.Diagnostic) {
		mu.Lock()
		out = append(out, d)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, t := range reg.Tools() {
		if t.A2A == nil {
			continue
		}
		src := reg.Source("tool", t.Name)
		// The values the card URL and headers read are replaced in every message: one may be a key.
		var used []string
		lookup := func(n string) (string, bool, error) {
			v, ok := os.LookupEnv(n)
			if ok && v != "" {
				used = append(used, v)
			}
			return v, ok, nil
		}
		cardURL, err := weft.ExpandEnv(t.A2A.Card, lookup)
		headers := map[string]string{}
		for k, v := range t.A2A.Headers {
			if err == nil {
				headers[k], err = weft.ExpandEnv(v, lookup)
			}
		}
		if err != nil {
			add(weft.Diagnostic{Source: src, Path: "card", Severity: weft.SeverityWarning, Message: "not checked: " + err.Error()})
			continue
		}
		redact := func(s string) string {
			for _, v := range used {
				s = strings.ReplaceAll(s, v, "[redacted]")
			}
			return s
		}
		wg.Go(func() {
			card, err := a2a.FetchCard(ctx, cardURL, headers)
			if err != nil {
				add(weft.Diagnostic{Source: src, Path: "card", Severity: weft.SeverityError, Message: redact(err.Error())})
				return
			}
			for _, p := range a2a.CheckCard(card) {
				add(weft.Diagnostic{Source: src, Path: "card", Severity: weft.SeverityError, Message: redact("the agent card at " + cardURL + ": " + p)})
			}
		})
	}
	wg.Wait()
	return out
}
