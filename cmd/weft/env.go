package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
)

// newEnvCmd builds `weft env set|list|unset --user NAME | --instance`: the user and instance
// variable layers (a thread's own values are set when it is created: weft run --env).
func newEnvCmd() *cobra.Command {
	var db, user, typ string
	var instance bool
	scope := func(cmd *cobra.Command, st weft.Store) (weft.EnvScope, string, error) {
		switch {
		case instance && user != "":
			return "", "", exit(exitUsage, fmt.Errorf("give --user NAME or --instance, not both"))
		case instance:
			return weft.EnvInstance, "", nil
		case user != "":
			return weft.EnvUser, userID(cmd.Context(), st, user), nil
		}
		return "", "", exit(exitUsage, fmt.Errorf("which layer? give --user NAME (a server user's name or id) or --instance"))
	}
	c := &cobra.Command{
		Use:   "env",
		Short: "Set, list or unset user and instance variables",
		Long: `Manage the variable layers below a thread's own values: --instance for every thread of the
store, --user NAME for the threads of one user (a weft serve user's name or id).

  weft env set NAME VALUE [--type text|secret] (--user NAME | --instance)
  weft env list (--user NAME | --instance)      secret values are never shown
  weft env unset NAME (--user NAME | --instance)`,
	}
	c.PersistentFlags().StringVar(&db, "db", defaultDB(), "store: SQLite file or postgres:// URL (env WEFT_DB)")
	c.PersistentFlags().StringVar(&user, "user", "", "the layer of this user (name or id)")
	c.PersistentFlags().BoolVar(&instance, "instance", false, "the instance layer (every thread)")
	set := &cobra.Command{
		Use: "set NAME VALUE", Short: "Set a variable of the layer", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			if typ != string(weft.VarText) && typ != string(weft.VarSecret) {
				return exit(exitUsage, fmt.Errorf("--type %q: want text or secret", typ))
			}
			st, err := openStore(cmd.Context(), db, newLogger("warn", os.Stderr), nil)
			if err != nil {
				return exit(exitUsage, fmt.Errorf("--db %s: %w", redactDSN(db), err))
			}
			defer st.Close()
			sc, owner, err := scope(cmd, st)
			if err != nil {
				return err
			}
			if err := st.SetEnv(cmd.Context(), sc, owner, []weft.EnvValue{{Name: a[0], Value: a[1], Type: weft.VarType(typ)}}); err != nil {
				return exit(exitUsage, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "set %s (%s) in the %s layer\n", a[0], typ, layerName(sc, user))
			return nil
		},
	}
	set.Flags().StringVar(&typ, "type", string(weft.VarSecret), "text or secret (secret: encrypted, never shown, redacted everywhere)")
	list := &cobra.Command{
		Use: "list", Short: "List the layer's variables (secret values are not shown)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openExisting(cmd, db)
			if err != nil {
				return err
			}
			defer st.Close()
			sc, owner, err := scope(cmd, st)
			if err != nil {
				return err
			}
			vals, err := st.Env(cmd.Context(), sc, owner)
			if err != nil {
				return exit(exitFailure, err)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tTYPE\tVALUE")
			for _, v := range vals {
				shown := v.Value
				if v.Type != weft.VarText {
					shown = weft.Redacted
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", v.Name, v.Type, oneLine(shown))
			}
			w.Flush()
			if len(vals) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "the %s layer has no variables\n", layerName(sc, user))
			}
			return nil
		},
	}
	unset := &cobra.Command{
		Use: "unset NAME", Short: "Remove a variable of the layer", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			st, err := openExisting(cmd, db)
			if err != nil {
				return err
			}
			defer st.Close()
			sc, owner, err := scope(cmd, st)
			if err != nil {
				return err
			}
			if err := st.SetEnv(cmd.Context(), sc, owner, []weft.EnvValue{{Name: a[0], Delete: true}}); err != nil {
				return exit(exitUsage, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "unset %s in the %s layer\n", a[0], layerName(sc, user))
			return nil
		},
	}
	c.AddCommand(set, list, unset)
	return c
}

// userID resolves a user's name to its id through the store's users, when it keeps them; an
// unknown name is taken as the id itself.
func userID(ctx context.Context, st weft.Store, nameOrID string) string {
	if as, ok := st.(weft.AuthStore); ok {
		if u, err := as.UserByName(ctx, nameOrID); err == nil {
			return u.ID
		}
	}
	return nameOrID
}

func layerName(sc weft.EnvScope, user string) string {
	if sc == weft.EnvUser {
		return "user " + strings.TrimSpace(user)
	}
	return string(sc)
}
