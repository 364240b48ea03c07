package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/weft-agents/weft"
)

// principal is who a request acts as.
type principal struct {
	userID string
	admin  bool
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
		p, ok := s.tickets.take(t, r.URL.Path)
		if !ok {
			return nil, unauthorized("the ticket is unknown, used, expired or for another path")
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
	k, err := s.opt.Auth.KeyByHash(r.Context(), weft.HashAPIKey(key))
	if weft.ErrorCode(err) == weft.ENotFound {
		return nil, unauthorized("invalid API key")
	}
	if err != nil {
		return nil, err
	}
	u, err := s.opt.Auth.User(r.Context(), k.UserID)
	if weft.ErrorCode(err) == weft.ENotFound {
		return nil, unauthorized("invalid API key")
	}
	if err != nil {
		return nil, err
	}
	return &principal{userID: u.ID, admin: u.IsAdmin}, nil
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

// tickets are single-use WebSocket credentials bound to one path.
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

// issue returns a new ticket for path and when it expires; expired tickets are dropped.
func (t *tickets) issue(p *principal, path string) (string, time.Time) {
	var b [24]byte
	_, _ = rand.Read(b[:])
	id := "wst_" + hex.EncodeToString(b[:])
	now := time.Now()
	exp := now.Add(t.ttl)
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range t.m {
		if now.After(v.expires) {
			delete(t.m, k)
		}
	}
	t.m[id] = ticket{path: path, p: *p, expires: exp}
	return id, exp
}

// take consumes a ticket: valid once, before it expires, for its own path only.
func (t *tickets) take(id, path string) (*principal, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[id]
	if !ok {
		return nil, false
	}
	delete(t.m, id)
	if time.Now().After(v.expires) || v.path != path {
		return nil, false
	}
	return &v.p, true
}
