package httpapi

import (
	"context"
	"net/http"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// This file is what the protocol adapters (packages openaiapi, aisdkapi, aguiapi) use of the
// server: the same authentication, users, thread visibility, engine and event streams as /api,
// with their own routes and error shapes.

// Caller is who an adapter's request acts as.
type Caller struct {
	// UserID is the authenticated user's id (LocalUser with NoAuth).
	UserID string
	// Admin callers see every thread.
	Admin bool
}

// Mount registers an adapter's handler on the server's mux, behind its request log and panic
// recovery. The handler authenticates with Authenticate.
func (s *Server) Mount(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Authenticate resolves a request's credentials as /api does (Bearer key, admin key, NoAuth);
// the error is weft.EUnauthorized with a message safe to show.
func (s *Server) Authenticate(r *http.Request) (Caller, error) {
	p, err := s.authenticate(r)
	if err != nil {
		if ae, ok := err.(*apiError); ok {
			return Caller{}, weft.Errorf(weft.EUnauthorized, "%s", ae.message)
		}
		return Caller{}, err
	}
	if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		info.user, info.keyHash = p.userID, p.keyHash
	}
	return Caller{UserID: p.userID, Admin: p.admin}, nil
}

// Engine is the engine requests run on now.
func (s *Server) Engine() *engine.Engine { return s.engine() }

// VisibleThread returns the thread when the caller may see it; weft.ENotFound otherwise (another
// user's thread is not revealed).
func (s *Server) VisibleThread(ctx context.Context, c Caller, id string) (*weft.Thread, error) {
	return s.visibleThread(ctx, &principal{userID: c.UserID, admin: c.Admin}, id)
}

// LastEventSeq is the cursor of a thread's newest recorded event (0 when none): a stream that
// follows it from there sees only what happens next.
func (s *Server) LastEventSeq(ctx context.Context, threadID string) (int64, error) {
	last, _, err := s.engine().Store().LastEvents(ctx, threadID, 0)
	return last, err
}

// FollowThread follows a thread's events after the cursor (as the /api streams do), until the
// request ends or the server ends its streams (EndStreams, shutdown). Close the feed, then call
// done.
func (s *Server) FollowThread(r *http.Request, threadID string, after int64) (ctx context.Context, feed Feed, done func(), err error) {
	// The stream lives no longer than the key Authenticate found for r.
	p := &principal{}
	if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		p.userID, p.keyHash = info.user, info.keyHash
	}
	ctx, cancel := s.streamContext(r, p)
	feed, err = s.events.Follow(ctx, threadID, after)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, feed, cancel, nil
}

// ErrorStatus is the one mapping of an error to an HTTP status and a safe message, as /api
// answers it: internal errors are logged and their text replaced with "internal error".
func (s *Server) ErrorStatus(r *http.Request, err error) (status int, message string) {
	if ae, ok := err.(*apiError); ok {
		return ae.status, ae.message
	}
	status, _ = statusOf(err)
	if status == http.StatusInternalServerError {
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		return status, "internal error"
	}
	return status, err.Error()
}

// Redactor returns the function that hides a thread's secret values in text.
func (s *Server) Redactor(ctx context.Context, threadID string) (func(string) string, error) {
	return s.engine().Redactor(ctx, threadID)
}

// WriteError answers err as /api answers its errors ({"error": {code, message, …}}).
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	s.writeError(w, r, err)
}
