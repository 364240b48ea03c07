package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// refuseUnknownSubcommands makes every command that only groups subcommands (threads, env, keys,
// db, …) fail on an argument that names none of them, with cobra's suggestions, as the root does
// for an unknown top-level command. Without it cobra prints the group's help and exits 0, so
// `weft threads lst` looked like success. Alone, a group still prints its help.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasParent() || !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		return exit(exitUsage, unknownSubcommand(cmd, args[0]))
	}
}

// unknownSubcommand is the error for name under the group cmd: cobra's wording and "Did you
// mean" suggestions, then the subcommands there are.
func unknownSubcommand(cmd *cobra.Command, name string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown command %q for %q", name, cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only for the root's own lookups
	}
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		fmt.Fprintf(&b, "\n\nDid you mean this?\n\t%s", strings.Join(s, "\n\t"))
	}
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	fmt.Fprintf(&b, "\n\n%s has: %s (see %s --help)", cmd.CommandPath(), strings.Join(names, ", "), cmd.CommandPath())
	return fmt.Errorf("%s", b.String())
}
