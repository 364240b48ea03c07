package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/postgres"
	"github.com/weft-agents/weft/storetest"
)

// open opens a store in a schema of the test's own.
func open(t *testing.T) *postgres.Store {
	t.Helper()
	_, dsn := pgtest.Schema(t)
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) weft.Store { return open(t) })
}

func TestAuthConformance(t *testing.T) {
	storetest.RunAuth(t, func(t *testing.T) weft.AuthStore {
		s := open(t)
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestReopen: migrations are idempotent on re-open, data survives, and a wrong key fails loudly.
func TestReopen(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	ctx := context.Background()
	key := envcrypt.NewKey()
	s, err := postgres.Open(ctx, dsn, postgres.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, []weft.EnvValue{{Name: "TOKEN", Value: "sekrit-value"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = postgres.Open(ctx, dsn, postgres.Options{Key: key})
	if err != nil {
		t.Fatalf("re-open: %v", err)
	}
	defer s.Close()
	if env, err := s.Env(ctx, weft.EnvThread, th.ID); err != nil || len(env) != 1 || env[0].Value != "sekrit-value" {
		t.Fatalf("env after re-open: %v, %v", env, err)
	}
	st, err := postgres.ReadStatus(ctx, dsn, "")
	if err != nil || st.Version != postgres.SchemaVersion() || len(st.Pending) != 0 || len(st.Applied) != st.Latest {
		t.Fatalf("status after re-open: %+v, %v", st, err)
	}
	_, err = postgres.Open(ctx, dsn, postgres.Options{Key: envcrypt.NewKey()})
	if err == nil || !strings.Contains(err.Error(), "key") {
		t.Fatalf("wrong key: %v", err)
	}
	var raw []byte
	if err := s.Pool().QueryRow(ctx, "SELECT value_enc FROM env").Scan(&raw); err != nil || bytes.Contains(raw, []byte("sekrit-value")) {
		t.Fatalf("env value at rest: %q, %v", raw, err)
	}
}
