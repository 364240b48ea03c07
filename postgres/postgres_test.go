package postgres_test

import (
	"context"
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
