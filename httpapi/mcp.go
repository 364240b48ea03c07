package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// mcpUserHeader carries the authenticated user to the MCP handler (package mcp's UserHeader); it
// replaces whatever a client sent.
const mcpUserHeader = "Weft-Mcp-User"

// mcpRoute serves Options.MCP at /mcp. With authentication on, requests pass through the go-sdk's
// auth.RequireBearerToken with a verifier that accepts what /api accepts and the OAuth access
// tokens Weft issues for /mcp (oauth.go): the token's user goes into the request's
// auth.TokenInfo, from which the SDK's streamable-HTTP handler binds each session to the user who
// opened it (another user's key driving it is refused with 403). A 401 carries
// WWW-Authenticate: Bearer resource_metadata="…/.well-known/oauth-protected-resource/mcp", where
// OAuth clients start (RFC 9728).
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
	s.mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		opts := &auth.RequireBearerTokenOptions{AllowMissingExpiration: true}
		if s.oauthEnabled() {
			// The metadata's URL follows the host the client reached, as the metadata does.
			opts.ResourceMetadataURL = resourceMetadataURL(r)
		}
		auth.RequireBearerToken(s.verifyMCPToken, opts)(serve).ServeHTTP(w, r)
	})
}

// verifyMCPToken is the auth.TokenVerifier of /mcp: an OAuth access token Weft issued for /mcp,
// or an API key or the admin key, as for /api.
func (s *Server) verifyMCPToken(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	var ti *auth.TokenInfo
	if strings.HasPrefix(token, accessTokenPrefix) && s.oauthEnabled() {
		var err error
		if ti, err = s.verifyAccessToken(ctx, token, r); err != nil {
			return nil, err
		}
	} else {
		p, err := s.authenticate(r)
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.status == http.StatusUnauthorized {
				return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, ae.message)
			}
			return nil, err
		}
		ti = &auth.TokenInfo{UserID: p.userID}
	}
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		info.user = ti.UserID
	}
	return ti, nil
}
