package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err says that PostgreSQL is unavailable for now — the connection
// refused or lost, the server shutting down, starting or in recovery, out of connections, memory
// or disk — rather than that the request failed: the API answers it 503 with Retry-After
// (weft.UnavailableTeller).
func (s *Store) Unavailable(err error) bool { return unavailable(err) }

func unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			strings.HasPrefix(pe.Code, "53"),                           // insufficient resources: disk full, out of memory, too many connections
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // admin shutdown, crash shutdown, cannot connect now
			pe.Code == "58030": // io_error
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"conn closed", "connection refused", "connection reset", "failed to connect", "unexpected EOF",
		"the database system is shutting down", "the database system is starting up", "terminating connection due to administrator command"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
