package httpapi

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Limits protect a listener from slow or greedy clients.
type Limits struct {
	// ReadHeaderTimeout bounds the time request headers take to arrive (default 10s).
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long (default 2m).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds request headers (default 64 KiB).
	MaxHeaderBytes int
}

// HTTPServer returns an http.Server for the API with the limits applied: a client that trickles
// its headers (slow-loris) is cut off after ReadHeaderTimeout, a body after a minute (per
// request, so that long streams are unaffected). Requests' contexts derive from base, so
// cancelling base ends every stream at shutdown.
func (s *Server) HTTPServer(base context.Context, l Limits) *http.Server {
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = 10 * time.Second
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 2 * time.Minute
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 64 << 10
	}
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}
