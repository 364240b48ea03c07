package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// mcpUserHeader carries the authenticated user to the MCP handler (package mcp's UserHeader); it
// replaces whatever a client sent.
const mcpUserHeader = "Weft-Mcp-User"

// mcpRoute serves Options.MCP at /mcp. With authentication on, requests pass through the go-sdk's
// auth.RequireBearerToken with a verifier that accepts what /api accepts: the token's user goes
// into the request's auth.TokenInfo, from which the SDK's streamable-HTTP handler binds each
// session to the user who opened it (another user's key driving it is refused with 403).
func (s *Server) mcpRoute() {
	if s.opt.MCP == nil {
		return
	}
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := LocalUser
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			user = ti.UserID
		}
		r.Header.Set(mcpUserHeader, user)
		s.opt.MCP.ServeHTTP(w, r)
	})
	if s.opt.NoAuth {
		s.handle("/mcp", func(w http.ResponseWriter, r *http.Request, _ *principal) error {
			serve(w, r)
			return nil
		})
		return
	}
	protected := auth.RequireBearerToken(s.verifyMCPToken, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(serve)
	s.mux.Handle("/mcp", protected)
}

// verifyMCPToken is the auth.TokenVerifier of /mcp: an API key or the admin key, as for /api.
func (s *Server) verifyMCPToken(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	p, err := s.authenticate(r)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.status == http.StatusUnauthorized {
			return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, ae.message)
		}
		return nil, err
	}
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		info.user = p.userID
	}
	return &auth.TokenInfo{UserID: p.userID}, nil
}
