package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestUnavailable: PostgreSQL shutting down, starting, out of disk or connections, and a refused
// or lost connection are unavailable; a constraint violation, a syntax error or a canceled
// request are not (issue 47, row 10).
func TestUnavailable(t *testing.T) {
	_, refused := pgconn.Connect(context.Background(), "postgres://u@127.0.0.1:1/db?connect_timeout=2")
	if refused == nil {
		t.Fatal("connecting to port 1 worked")
	}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"refused", refused, true},
		{"refused wrapped", fmt.Errorf("postgres: begin run: %w", refused), true},
		{"dial", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"admin shutdown", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, true},
		{"starting", &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, true},
		{"disk full", &pgconn.PgError{Code: "53100", Message: "could not extend file"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"lost as text", errors.New("postgres: append: conn closed"), true},
		{"unique", &pgconn.PgError{Code: "23505"}, false},
		{"syntax", &pgconn.PgError{Code: "42601"}, false},
		{"canceled", context.Canceled, false},
		{"bug", errors.New("a bug"), false},
	}
	for _, c := range cases {
		if got := unavailable(c.err); got != c.want {
			t.Errorf("%s (%v): %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
