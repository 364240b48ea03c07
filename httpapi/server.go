// Package httpapi serves Weft's HTTP API (the routes under /api): threads, messages, runs, logs,
// cost, thread state, definitions, users and keys, and event streams over SSE and WebSocket. It
// knows the engine and the root interfaces only, never a concrete store.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/internal/logtally"
)

// EventSource follows a thread's events with a cursor above after — the stored ones first, then
// live ones — in order (engine.Engine.Follow).
type EventSource interface {
	Follow(ctx context.Context, threadID string, after int64) (Feed, error)
}

// A Feed is a subscription a stream pulls (engine.Feed is one): Ready is signalled when Next may
// have events, Next appends them without blocking, and an error from Next ends the stream after
// the events given with it.
type Feed interface {
	Ready() <-chan struct{}
	Next(ctx context.Context, dst []engine.Event) ([]engine.Event, error)
	Close()
}

// Options configure a Server.
type Options struct {
	// Engine runs the threads; required. EngineFunc, when set, is asked instead on every request
	// (a server that reloads its definitions swaps engines); the engines it gives share one
	// engine.Options.Subscribers, so that the global event stream follows them all.
	Engine     *engine.Engine
	EngineFunc func() *engine.Engine
	// Auth keeps users and API keys; required unless NoAuth.
	Auth weft.AuthStore
	// NoAuth makes every request act as the admin user "local".
	NoAuth bool
	// AdminKey, when set, is an extra key with every right (WEFT_ADMIN_KEY).
	AdminKey string
	// Events is the per-thread event source of the streams; nil = the engine's Subscribe, which
	// replays the events a reconnecting client missed when the engine records events.
	Events EventSource
	// MCP, when set, is served at /mcp behind the same authentication as /api (the MCP server of
	// package mcp); the authenticated user's id reaches it in the Weft-Mcp-User header.
	MCP http.Handler
	// A2A, when set, is served under /a2a/ behind the same authentication as /api (the A2A
	// server of package a2a); the authenticated user's id reaches it in the Weft-A2a-User header,
	// and whether that user is an admin in Weft-A2a-Admin ("true" or "false").
	A2A http.Handler
	// A2ATasks, when set, answers GET /api/threads/{id}/a2a/tasks for a thread the caller may
	// see: its A2A tasks (values that encode as the A2A JSON of tasks) and whether A2A clients
	// talk to it (package a2a's ThreadTasks). fileURL is the API's route for a thread's file.
	// Without it the route answers 404.
	A2ATasks func(ctx context.Context, t *weft.Thread, fileURL func(thread, path string) string) (tasks any, viaA2A bool, err error)
	// Logger receives request logs; nil discards them.
	Logger *slog.Logger
	// Version is reported by /api/health.
	Version string
	// Pages, when set, serves every path outside /api (the web inspector). It sees the request
	// log and panic recovery of the API; what it shows it must fetch through the API itself.
	Pages http.Handler
	// Evals, when set, runs eval files for POST /api/evals (GET /api/evals reads stored runs
	// from the store either way).
	Evals EvalService
	// PingInterval is the SSE keep-alive period (default 15s).
	PingInterval time.Duration
	// AccessTokenTTL is how long an OAuth access token of /mcp lasts (default
	// DefaultAccessTokenTTL); revoking the API key that approved it ends it sooner.
	AccessTokenTTL time.Duration
	// TicketTTL is how long a WebSocket ticket lasts (default 60s).
	TicketTTL time.Duration
	// MaxBodyBytesInFlight bounds the request-body bytes all requests hold at once (default
	// DefaultMaxBodyBytesInFlight); a body past it is answered 503 server_busy with Retry-After.
	MaxBodyBytesInFlight int64
	// WriteTimeout bounds one write of a stream (default 10s): a client that stops reading is
	// disconnected.
	WriteTimeout time.Duration
}

// Server is the HTTP API. Its Handler serves every route; Ready marks it ready to take work.
type Server struct {
	opt     Options
	log     *slog.Logger
	events  EventSource
	tickets *tickets
	codes   authCodes
	keys    keyStreams
	bodies  bodyBudget
	ready   atomic.Bool
	mux     *http.ServeMux

	// costs is each thread's own cost, read incrementally from its log rows: the thread views
	// and the cost sort add it up for every thread they show.
	costs logtally.Tally[cost]

	// streams ends the thread streams open now (EndStreams).
	streamsMu sync.Mutex
	streams   context.Context
	endAll    context.CancelFunc
}

// EndStreams ends every thread stream open now; clients reconnect with their cursor and miss
// nothing. A server that swaps its engine (a definitions reload) calls it, since a stream follows
// the engine it was opened on.
func (s *Server) EndStreams() {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	s.endAll()
	s.streams, s.endAll = context.WithCancel(context.Background())
}

// streamContext returns a context for a stream of p that ends with the request, with EndStreams
// or when p's key is revoked.
func (s *Server) streamContext(r *http.Request, p *principal) (context.Context, context.CancelFunc) {
	s.streamsMu.Lock()
	all := s.streams
	s.streamsMu.Unlock()
	ctx, cancel := s.keyBound(r.Context(), p)
	stop := context.AfterFunc(all, cancel)
	return ctx, func() { stop(); cancel() }
}

// New returns a Server; it answers 503 on /api/ready until SetReady(true).
func New(o Options) *Server {
	if o.PingInterval <= 0 {
		o.PingInterval = 15 * time.Second
	}
	if o.TicketTTL <= 0 {
		o.TicketTTL = 60 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	s := &Server{opt: o, log: o.Logger, events: o.Events, tickets: newTickets(o.TicketTTL)}
	s.bodies.limit = o.MaxBodyBytesInFlight
	if s.bodies.limit <= 0 {
		s.bodies.limit = DefaultMaxBodyBytesInFlight
	}
	s.costs = logtally.Tally[cost]{Add: addCost, Clone: cost.clone}
	s.streams, s.endAll = context.WithCancel(context.Background())
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.events == nil {
		s.events = engineEvents{s}
	}
	s.mux = http.NewServeMux()
	s.routes()
	return s
}

// SetReady marks the server ready (recovery done) or not (shutting down).
func (s *Server) SetReady(ok bool) { s.ready.Store(ok) }

// Handler returns the API's handler with request logging and panic recovery.
func (s *Server) Handler() http.Handler { return s.logRequests(s.mux) }

// engineEvents subscribes through the server's current engine.
type engineEvents struct{ s *Server }

func (e engineEvents) Follow(ctx context.Context, threadID string, after int64) (Feed, error) {
	f, err := e.s.engine().Follow(ctx, threadID, after)
	if err != nil {
		return nil, err // not a nil *engine.Feed in a non-nil Feed
	}
	return f, nil
}

func (s *Server) engine() *engine.Engine {
	if s.opt.EngineFunc != nil {
		return s.opt.EngineFunc()
	}
	return s.opt.Engine
}

// handler is a route's function: an error is answered by writeError.
type handler func(w http.ResponseWriter, r *http.Request, p *principal) error

// handle registers an authenticated route.
func (s *Server) handle(pattern string, h handler) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		r, release := s.withBodyCharge(r)
		defer release()
		p, err := s.authenticate(r)
		if err == nil {
			if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
				info.user = p.userID
			}
			err = h(w, r, p)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

// admin wraps a route only admins may call (403 for others).
func admin(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		if !p.admin {
			return &apiError{status: http.StatusForbidden, code: string(weft.EForbidden), message: "this route is for admins"}
		}
		return h(w, r, p)
	}
}

// requestInfo carries what the request log reports beyond the request itself: the user id the
// request acted as (never its key).
type requestInfo struct {
	user string
	// keyHash is the key an adapter's request authenticated with (Authenticate): its streams end
	// when the key is revoked (FollowThread).
	keyHash string
}

type requestInfoKey struct{}

// statusWriter records the status of a response for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flush, hijack, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequests logs one line per request: method, path (never the query, which may hold a
// ticket), status, duration; and answers 500 for a panicking handler.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		info := &requestInfo{}
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v)
				if sw.status == 0 {
					writeJSON(sw, http.StatusInternalServerError, map[string]any{"error": map[string]any{"code": "internal", "message": "internal error"}})
				}
			}
			s.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", sw.status,
				"duration_ms", time.Since(start).Milliseconds(), "user", info.user, "remote", r.RemoteAddr)
		}()
		next.ServeHTTP(sw, r)
	})
}
