package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
)

func newKeysCmd() *cobra.Command {
	var db string
	c := &cobra.Command{
		Use:   "keys",
		Short: "Create, list or revoke the API keys of weft serve",
		Long: `Manage the API keys of a store (--db, default .weft/weft.db; env WEFT_DB):

  weft keys create [--user NAME] [--admin]   a new key, printed once (the user is created if new)
  weft keys list                             every key: id, user, hint, created, revoked
  weft keys revoke ID                        the key stops working at once`,
	}
	c.PersistentFlags().StringVar(&db, "db", defaultDB(), "store: SQLite file or postgres:// URL (env WEFT_DB)")
	var user string
	var isAdmin bool
	create := &cobra.Command{
		Use: "create", Short: "Create a key and print it (shown only this once)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			as, closeFn, err := openAuth(cmd, db, true)
			if err != nil {
				return err
			}
			defer closeFn()
			ctx := cmd.Context()
			u, err := as.UserByName(ctx, user)
			if weft.ErrorCode(err) == weft.ENotFound {
				u = &weft.User{Name: user, IsAdmin: isAdmin}
				err = as.CreateUser(ctx, u)
			}
			if err != nil {
				return exit(exitFailure, err)
			}
			key, rec := weft.NewAPIKey(u.ID)
			if err := as.CreateKey(ctx, rec); err != nil {
				return exit(exitFailure, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "key %s for user %s (%s)%s; it is shown only now:\n", rec.ID, u.Name, u.ID, adminNote(u.IsAdmin))
			fmt.Fprintln(cmd.OutOrStdout(), key)
			return nil
		},
	}
	create.Flags().StringVar(&user, "user", "admin", "the user the key acts as (created when new)")
	create.Flags().BoolVar(&isAdmin, "admin", false, "a new user is an admin (the default user admin always is)")
	create.PreRun = func(cmd *cobra.Command, _ []string) {
		if !cmd.Flags().Changed("user") {
			isAdmin = true
		}
	}
	list := &cobra.Command{
		Use: "list", Short: "List the keys (never the keys themselves)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			as, closeFn, err := openAuth(cmd, db, false)
			if err != nil {
				return err
			}
			defer closeFn()
			ks, err := as.Keys(cmd.Context(), "")
			if err != nil {
				return exit(exitFailure, err)
			}
			names := map[string]string{}
			if us, err := as.Users(cmd.Context()); err == nil {
				for _, u := range us {
					names[u.ID] = u.Name
				}
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tUSER\tHINT\tCREATED\tREVOKED")
			for _, k := range ks {
				revoked := "—"
				if k.RevokedAt != nil {
					revoked = k.RevokedAt.Local().Format(time.DateTime)
				}
				fmt.Fprintf(w, "%s\t%s\t%s…\t%s\t%s\n", k.ID, names[k.UserID], k.Hint, k.CreatedAt.Local().Format(time.DateTime), revoked)
			}
			return w.Flush()
		},
	}
	revoke := &cobra.Command{
		Use: "revoke ID", Short: "Revoke a key", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			as, closeFn, err := openAuth(cmd, db, false)
			if err != nil {
				return err
			}
			defer closeFn()
			if err := as.RevokeKey(cmd.Context(), a[0]); err != nil {
				return exit(threadExit(err), fmt.Errorf("key %s: %w", a[0], err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", a[0])
			return nil
		},
	}
	c.AddCommand(create, list, revoke)
	return c
}

func adminNote(admin bool) string {
	if admin {
		return ", an admin"
	}
	return ""
}

// openAuth opens the store's users and keys; create allows a new database file.
func openAuth(cmd *cobra.Command, db string, create bool) (weft.AuthStore, func(), error) {
	var st weft.Store
	var err error
	if create {
		if err := mkParent(db); err != nil {
			return nil, nil, err
		}
		st, err = openStore(cmd.Context(), db, newLogger("warn", os.Stderr), nil)
		if err != nil {
			return nil, nil, exit(exitUsage, fmt.Errorf("--db %s: %w", redactDSN(db), err))
		}
	} else if st, err = openExisting(cmd, db); err != nil {
		return nil, nil, err
	}
	as, ok := st.(weft.AuthStore)
	if !ok {
		st.Close()
		return nil, nil, exit(exitUsage, fmt.Errorf("--db %s keeps no keys", redactDSN(db)))
	}
	return as, func() { st.Close() }, nil
}
