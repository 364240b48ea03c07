package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/weft-agents/weft"
)

// principal is who a request acts as.
type principal struct {
	userID string
	admin  bool
	// keyHash is the hash of the API key the request came with ("" for the admin key and NoAuth):
	// a ticket or a stream of a key lives no longer than the key.
	keyHash string
}

// LocalUser is the user every request acts as with NoAuth.
const LocalUser = "local"

func unauthorized(msg string) *apiError {
	return &apiError{status: http.StatusUnauthorized, code: string(weft.EUnauthorized), message: msg}
}

// credentialParams are query parameters that would carry a key in a URL; a request with one is
// refused, since URLs end up in logs and browser histories.
var credentialParams = []string{"api_key", "apikey", "key", "token", "access_token"}

// authenticate resolves the request's credentials: a Bearer key (an API key or the admin key),
// or a WebSocket ticket for this path. A key in the URL is refused.
func (s *Server) authenticate(r *http.Request) (*principal, error) {
	q := r.URL.Query()
	for _, name := range credentialParams {
		if q.Has(name) {
			return nil, unauthorized("credentials in the URL are refused; send Authorization: Bearer KEY (WebSocket clients: POST /api/auth/ws-ticket, then ?ticket=)")
		}
	}
	for _, vs := range q {
		for _, v := range vs {
			if strings.HasPrefix(v, weft.APIKeyPrefix) {
				return nil, unauthorized("an API key in the URL is refused; send Authorization: Bearer KEY")
			}
		}
	}
	if s.opt.NoAuth {
		return &principal{userID: LocalUser, admin: true}, nil
	}
	if t := q.Get("ticket"); t != "" {
		p, ok := s.tickets.take(t, r.Method, r.URL.Path)
		if !ok {
			return nil, unauthorized("the ticket is unknown, used, expired or for another path or method")
		}
		if p.keyHash != "" {
			if _, err := s.keyPrincipal(r.Context(), p.keyHash); err != nil {
				return nil, err // the key was revoked since
			}
		}
		return p, nil
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, unauthorized("missing credentials: send Authorization: Bearer KEY")
	}
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" {
		return nil, unauthorized("the Authorization header must be Bearer KEY")
	}
	key = strings.TrimSpace(key)
	if s.opt.AdminKey != "" && weft.SameSecret(key, s.opt.AdminKey) {
		return &principal{userID: "admin", admin: true}, nil
	}
	if s.opt.Auth == nil || !strings.HasPrefix(key, weft.APIKeyPrefix) {
		return nil, unauthorized("invalid API key")
	}
	return s.keyPrincipal(r.Context(), weft.HashAPIKey(key))
}

// keyPrincipal returns who the API key of this hash acts as: unauthorized when the key or its
// user is gone.
func (s *Server) keyPrincipal(ctx context.Context, hash string) (*principal, error) {
	if s.opt.Auth == nil {
		return nil, unauthorized("invalid API key")
	}
	k, err := s.opt.Auth.KeyByHash(ctx, hash)
	if weft.ErrorCode(err) == weft.ENotFound {
		return nil, unauthorized("invalid API key")
	}
	if err != nil {
		return nil, err
	}
	u, err := s.opt.Auth.User(ctx, k.UserID)
	if weft.ErrorCode(err) == weft.ENotFound {
		return nil, unauthorized("invalid API key")
	}
	if err != nil {
		return nil, err
	}
	return &principal{userID: u.ID, admin: u.IsAdmin, keyHash: hash}, nil
}

// visibleThread returns the thread when the principal may see it: admins see every thread, users
// their own threads and those threads' descendants. Anything else is not found, so that a thread's
// existence is not revealed.
func (s *Server) visibleThread(ctx context.Context, p *principal, id string) (*weft.Thread, error) {
	st := s.engine().Store()
	t, err := st.Thread(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.admin || t.UserID == p.userID {
		return t, nil
	}
	if t.RootID != "" && t.RootID != t.ID {
		root, err := st.Thread(ctx, t.RootID)
		if err == nil && root.UserID == p.userID {
			return t, nil
		}
	}
	return nil, weft.Errorf(weft.ENotFound, "thread %s not found", id)
}

// Ticket bounds: a ticket is a credential a URL carries, so it opens one stream, once, soon.
const (
	// maxTicketPath bounds a ticket's path (stream paths are short).
	maxTicketPath = 256
	// maxTicketsPerUser bounds the live tickets of one user; more answer 429.
	maxTicketsPerUser = 16
)

// streamPath matches the paths a ticket may open: the GET event streams.
var streamPath = regexp.MustCompile(`^/api/(events|threads/[A-Za-z0-9_-]+/(events|stream))$`)

// tickets are single-use credentials for one GET of one event stream, for browser clients
// (EventSource, WebSocket) that cannot send headers.
type tickets struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]ticket
}

type ticket struct {
	path    string
	p       principal
	expires time.Time
}

func newTickets(ttl time.Duration) *tickets { return &tickets{ttl: ttl, m: map[string]ticket{}} }

// issue returns a new ticket for a stream path and when it expires; expired tickets are dropped.
// A path that is no stream, or a user holding maxTicketsPerUser live tickets, is refused.
func (t *tickets) issue(p *principal, path string) (string, time.Time, error) {
	if len(path) > maxTicketPath || !streamPath.MatchString(path) {
		return "", time.Time{}, validation("path", "the path of an event stream: /api/threads/ID/events, /api/threads/ID/stream or /api/events")
	}
	var b [24]byte
	_, _ = rand.Read(b[:])
	id := "wst_" + hex.EncodeToString(b[:])
	now := time.Now()
	exp := now.Add(t.ttl)
	t.mu.Lock()
	defer t.mu.Unlock()
	mine := 0
	for k, v := range t.m {
		switch {
		case now.After(v.expires):
			delete(t.m, k)
		case v.p.userID == p.userID:
			mine++
		}
	}
	if mine >= maxTicketsPerUser {
		return "", time.Time{}, &apiError{status: http.StatusTooManyRequests, code: codeTooManyTickets, retryAfter: t.ttl,
			message: fmt.Sprintf("%d tickets are live for this user; use or let them expire (%s) first", mine, t.ttl)}
	}
	t.m[id] = ticket{path: path, p: *p, expires: exp}
	return id, exp, nil
}

// take consumes a ticket: valid once, before it expires, for a GET of its own path only.
func (t *tickets) take(id, method, path string) (*principal, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[id]
	if !ok {
		return nil, false
	}
	delete(t.m, id)
	if time.Now().After(v.expires) || v.path != path || method != http.MethodGet {
		return nil, false
	}
	return &v.p, true
}

// revoke drops the tickets of a key.
func (t *tickets) revoke(keyHash string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range t.m {
		if v.p.keyHash == keyHash {
			delete(t.m, k)
		}
	}
}
