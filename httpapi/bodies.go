package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// DefaultMaxBodyBytesInFlight bounds the request-body bytes all requests hold at once.
const DefaultMaxBodyBytesInFlight = 256 << 20

// codeBusy answers a request whose body does not fit in the bytes left for bodies in flight.
const codeBusy = "server_busy"

// bodyBudget counts the request-body bytes held by the requests being served: a body is charged
// as it arrives (all at once when its length is declared) and released when its request ends.
type bodyBudget struct {
	limit int64
	used  atomic.Int64
}

// take charges n bytes, or reports that they do not fit.
func (b *bodyBudget) take(n int64) bool {
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

// bodyCharge is what one request holds of the budget.
type bodyCharge struct {
	b *bodyBudget
	n int64
}

func (c *bodyCharge) take(n int64) bool {
	if c == nil {
		return true
	}
	if !c.b.take(n) {
		return false
	}
	c.n += n
	return true
}

func (c *bodyCharge) release() {
	c.b.used.Add(-c.n)
	c.n = 0
}

// BodyBytesInFlight returns the request-body bytes the requests being served hold now.
func (s *Server) BodyBytesInFlight() int64 { return s.bodies.used.Load() }

type bodyChargeKey struct{}

// withBodyCharge returns r with a charge against the server's budget, and its release.
func (s *Server) withBodyCharge(r *http.Request) (*http.Request, func()) {
	c := &bodyCharge{b: &s.bodies}
	return r.WithContext(context.WithValue(r.Context(), bodyChargeKey{}, c)), c.release
}

func chargeOf(r *http.Request) *bodyCharge {
	c, _ := r.Context().Value(bodyChargeKey{}).(*bodyCharge)
	return c
}

func busy(n int64) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, code: codeBusy, retryAfter: time.Second,
		message: fmt.Sprintf("the server holds too many request bodies to take %d more bytes now; retry later", n)}
}

// chargedReader charges what it reads to a request's budget.
type chargedReader struct {
	r   io.Reader
	c   *bodyCharge
	err *apiError
}

func (cr *chargedReader) Read(p []byte) (int, error) {
	n, err := cr.r.Read(p)
	if n > 0 && !cr.c.take(int64(n)) {
		cr.err = busy(int64(n))
		return 0, cr.err
	}
	return n, err
}
