// Package pgtest gives tests a PostgreSQL schema of their own on the database that
// WEFT_TEST_POSTGRES_URL names. Unset, the tests that need one skip, saying how to run them; set
// but unreachable, they fail.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env is the variable naming the test database.
const Env = "WEFT_TEST_POSTGRES_URL"

// BaseURL returns the test database's URL, skipping the test when it is not set.
func BaseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(Env)
	if u == "" {
		t.Skip(Env + " is not set: PostgreSQL tests skipped. Run them with " + Env +
			"=postgres://postgres@127.0.0.1:5432/test (any database the user may create schemas in)")
	}
	return u
}

// Schema creates a schema with a fresh name for the test, dropped with everything in it when the
// test ends, and returns its name and a URL whose connections use it.
func Schema(t testing.TB) (name, dsn string) {
	t.Helper()
	base := BaseURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name = "weft_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("%s is set but the database cannot be reached: %v", Env, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create test schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop test schema %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("drop test schema %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", Env, err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return name, u.String()
}
