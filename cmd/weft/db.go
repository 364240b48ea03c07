package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft/postgres"
	"github.com/weft-agents/weft/sqlite"
)

func newDBCmd() *cobra.Command {
	var db, schema string
	c := &cobra.Command{
		Use:   "db",
		Short: "Show or apply the store's schema migrations",
		Long: `Show or apply the schema migrations of the store --db (default .weft/weft.db; env WEFT_DB).

Every command migrates the store it opens; weft db migrate lets an operator do it ahead of a
rollout (nodes starting together on PostgreSQL migrate once, under an advisory lock). A store
migrated by a newer Weft is refused by every command.`,
	}
	c.PersistentFlags().StringVar(&db, "db", defaultDB(), "store: SQLite file or postgres:// URL (env WEFT_DB)")
	c.PersistentFlags().StringVar(&schema, "schema", "", "PostgreSQL schema holding Weft's tables (default: the URL's search_path)")
	status := &cobra.Command{
		Use:   "status",
		Short: "Print the store's schema version and the migrations it lacks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := dbStatus(cmd.Context(), db, schema)
			if err != nil {
				return exit(exitUsage, fmt.Errorf("--db %s: %w", redactDSN(db), err))
			}
			printDBStatus(cmd.OutOrStdout(), st)
			return nil
		},
	}
	migrate := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the migrations the store lacks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st *postgres.Status
			var err error
			if postgres.IsURL(db) {
				st, err = postgres.Migrate(cmd.Context(), db, schema)
			} else {
				// Opening a SQLite store migrates it.
				var s interface{ Close() error }
				if s, err = openStore(cmd.Context(), db, newLogger("warn", os.Stderr), nil); err == nil {
					s.Close()
					st, err = dbStatus(cmd.Context(), db, "")
				}
			}
			if err != nil {
				return exit(exitUsage, fmt.Errorf("--db %s: %w", redactDSN(db), err))
			}
			printDBStatus(cmd.OutOrStdout(), st)
			return nil
		},
	}
	c.AddCommand(status, migrate)
	return c
}

// dbStatus reads a store's migrations without changing it.
func dbStatus(ctx context.Context, db, schema string) (*postgres.Status, error) {
	if postgres.IsURL(db) {
		return postgres.ReadStatus(ctx, db, schema)
	}
	if _, err := os.Stat(db); err != nil {
		return nil, unwrapPath(err)
	}
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	st := &postgres.Status{Latest: sqlite.SchemaVersion()}
	rows, err := conn.QueryContext(ctx, "SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
	if err != nil {
		return nil, fmt.Errorf("not a Weft database (%w)", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a postgres.AppliedMigration
		var at int64
		if err := rows.Scan(&a.Version, &a.Name, &at); err != nil {
			return nil, err
		}
		a.AppliedAt = time.Unix(0, at).UTC()
		st.Applied = append(st.Applied, a)
		st.Version = max(st.Version, a.Version)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for v := st.Version + 1; v <= st.Latest; v++ {
		st.Pending = append(st.Pending, postgres.Migration{Version: v, Name: fmt.Sprintf("%04d", v)})
	}
	return st, nil
}

func printDBStatus(w io.Writer, st *postgres.Status) {
	fmt.Fprintf(w, "schema version %d (this weft: %d)\n", st.Version, st.Latest)
	for _, a := range st.Applied {
		fmt.Fprintf(w, "  applied  %-28s %s\n", a.Name, a.AppliedAt.Format(time.RFC3339))
	}
	for _, m := range st.Pending {
		fmt.Fprintf(w, "  pending  %s\n", m.Name)
	}
	switch {
	case st.Version > st.Latest:
		fmt.Fprintln(w, "the store was migrated by a newer Weft: upgrade weft")
	case len(st.Pending) == 0:
		fmt.Fprintln(w, "up to date")
	}
}
