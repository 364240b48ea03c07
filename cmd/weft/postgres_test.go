package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/pgtest"
)

// TestPostgresRunAndThreads runs the support example on PostgreSQL and reads the thread back from
// another process, as a second node would.
func TestPostgresRunAndThreads(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	dir := t.TempDir()
	t.Setenv("WEFT_ENCRYPTION_KEY", envcrypt.EncodeKey(envcrypt.NewKey()))
	out, errOut, code := runWeft(t, dir, "run", "--dir", repo("examples/support/agents"), "support", "Where is order 42?",
		"--model-script", repo("examples/support/demo.script.yaml"), "--db", dsn)
	if code != 0 || !strings.Contains(out, "PC-77812") {
		t.Fatalf("run on postgres: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = runWeft(t, dir, "threads", "list", "--db", dsn)
	if code != 0 || !strings.Contains(out, "support") || strings.Count(out, "thr_") != 1 {
		t.Fatalf("threads list: exit %d\n%s\n%s", code, out, errOut)
	}
	id := strings.Fields(strings.Split(out, "\n")[1])[0]
	out, errOut, code = runWeft(t, dir, "threads", "show", id, "--db", dsn)
	if code != 0 || !strings.Contains(out, "Where is order 42?") || !strings.Contains(out, "PC-77812") {
		t.Fatalf("threads show: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestPostgresBadDatabase: an unreachable host, a missing database, a malformed URL and a schema
// newer than the binary each fail with one line naming the problem, never the password.
func TestPostgresBadDatabase(t *testing.T) {
	name, dsn := pgtest.Schema(t)
	dir := t.TempDir()
	t.Setenv("WEFT_ENCRYPTION_KEY", envcrypt.EncodeKey(envcrypt.NewKey()))
	if _, errOut, code := runWeft(t, dir, "threads", "list", "--db", dsn); code != 0 {
		t.Fatalf("fresh schema: exit %d: %s", code, errOut)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.BaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "INSERT INTO "+name+".schema_migrations VALUES (9999, '9999_future.sql', 0)"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, db, want string
	}{
		{"unreachable", "postgres://weft:s3cretpass@127.0.0.1:1/test", "postgres 127.0.0.1:1: cannot connect: connection refused"},
		{"no_database", strings.Replace(pgtest.BaseURL(t), "/test", "/weft_no_such_db", 1), "database weft_no_such_db does not exist"},
		{"malformed", "postgres://weft:s3cretpass@127.0.0.1:5432/test?sslmode=bogus", "the database URL is not valid"},
		{"newer_schema", dsn, "database schema version 9999 is newer than this Weft supports"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runWeft(t, dir, "threads", "list", "--db", tc.db)
			if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Fatalf("exit %d, want 2 and one line with %q\nstdout: %s\nstderr: %s", code, tc.want, out, errOut)
			}
			if strings.Contains(errOut+out, "s3cretpass") {
				t.Fatalf("the password was printed: %s", errOut)
			}
		})
	}
}

// TestDBCommands: weft db status reads without changing, weft db migrate applies, on PostgreSQL
// and on a SQLite file.
func TestDBCommands(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	dir := t.TempDir()
	file := dir + "/w.db"
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"pg_status_empty", []string{"db", "status", "--db", dsn}, 0, pgPending(t)},
		{"pg_migrate", []string{"db", "migrate", "--db", dsn}, 0, "applied  0003_message_rev.sql"},
		{"pg_status_current", []string{"db", "status", "--db", dsn}, 0, "up to date"},
		{"sqlite_status_missing", []string{"db", "status", "--db", file}, 2, ""},
		{"sqlite_migrate", []string{"db", "migrate", "--db", file}, 0, "applied  0005_auth.sql"},
		{"sqlite_status", []string{"db", "status", "--db", file}, 0, "up to date"},
	}
	for _, tc := range tests {
		out, errOut, code := runWeft(t, dir, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Fatalf("%s: exit %d, want %d with %q\nstdout: %s\nstderr: %s", tc.name, code, tc.code, tc.want, out, errOut)
		}
	}
}

// pgPending is what weft db status says of an empty PostgreSQL schema: every migration of
// postgres/migrations pending.
func pgPending(t *testing.T) string {
	entries, err := os.ReadDir(filepath.Join("..", "..", "postgres", "migrations"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "schema version 0 (this weft: %d)", len(entries))
	for _, e := range entries {
		b.WriteString("\n  pending  " + e.Name())
	}
	return b.String()
}
