package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/providers"
)

// newBudgetCmd builds `weft threads budget ID [--usd X] [--tokens N]`: it sets the thread's own
// budget and prints its spend; a paused thread goes on with `weft run --thread ID`.
func newBudgetCmd(g *globals, db *string) *cobra.Command {
	var usd float64
	var tokens int64
	c := &cobra.Command{
		Use: "budget ID", Short: "Set a thread's budget (its subagents included) and show its spend", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if rc := remoteOf(g); rc != nil {
				var set *weft.Budget
				if cmd.Flags().Changed("usd") || cmd.Flags().Changed("tokens") {
					set = &weft.Budget{MaxCostUSD: usd, MaxTokens: tokens}
				}
				return rc.budget(cmd, args[0], set)
			}
			reg, err := loadProject(g.dir)
			if err != nil {
				return err
			}
			store, err := openStore(ctx, *db, newLogger(g.logLevel, os.Stderr), nil)
			if err != nil {
				return exit(exitUsage, fmt.Errorf("--db %s: %w", redactDSN(*db), err))
			}
			defer store.Close()
			eng, err := engine.New(engine.Options{Registry: reg, Store: store, Providers: providers.Cache(providers.Options{Registry: reg})})
			if err != nil {
				return exit(exitFailure, err)
			}
			id := args[0]
			if cmd.Flags().Changed("usd") || cmd.Flags().Changed("tokens") {
				if err := eng.SetBudget(ctx, id, weft.Budget{MaxCostUSD: usd, MaxTokens: tokens}); err != nil {
					return exit(exitUsage, err)
				}
			}
			return printSpend(ctx, cmd, eng, store, id)
		},
	}
	c.Flags().Float64Var(&usd, "usd", 0, "cap the cost in US dollars")
	c.Flags().Int64Var(&tokens, "tokens", 0, "cap the tokens (input and output)")
	return c
}

func printSpend(ctx context.Context, cmd *cobra.Command, eng *engine.Engine, store weft.Store, id string) error {
	th, err := store.Thread(ctx, id)
	if err != nil {
		return exit(exitUsage, err)
	}
	sp, err := eng.Spend(ctx, id)
	if err != nil {
		return exit(exitFailure, err)
	}
	a, _ := eng.Registry().Agent(th.Agent)
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "spent: $%.4f, %d tokens, %s", sp.CostUSD, sp.Tokens, plural(sp.Calls, "model call"))
	if sp.UnknownCostCalls > 0 {
		fmt.Fprintf(out, " (%d without a known price)", sp.UnknownCostCalls)
	}
	fmt.Fprintln(out)
	if b := engine.BudgetOf(th, a); b != nil {
		fmt.Fprintf(out, "budget: %s\n", describeBudget(b))
	} else {
		fmt.Fprintln(out, "budget: none")
	}
	if th.Status == weft.ThreadPaused {
		fmt.Fprintf(out, "the thread is paused (%s); continue it with: weft run %s --thread %s\n", th.StopReason, th.Agent, id)
	}
	return nil
}

func describeBudget(b *weft.Budget) string {
	s := ""
	if b.MaxCostUSD > 0 {
		s = fmt.Sprintf("$%.4f", b.MaxCostUSD)
	}
	if b.MaxTokens > 0 {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%d tokens", b.MaxTokens)
	}
	if b.UnknownCost == "block" {
		s += " (unknown prices block)"
	}
	return s
}
