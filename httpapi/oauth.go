package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/weft-agents/weft"
)

// Weft is the OAuth 2.1 authorization server of its own /mcp (the MCP authorization spec): /mcp
// announces its protected-resource metadata (RFC 9728) in the WWW-Authenticate header of a 401;
// clients register themselves (RFC 7591), send the user to the consent page with an authorization
// code request with PKCE S256, and exchange the code for an access token bound to the user and to
// /mcp (RFC 8707). The user signs in on the consent page with one of their API keys; the token
// lives no longer than that key.
const (
	oauthResourceMetadataPath = "/.well-known/oauth-protected-resource"
	oauthServerMetadataPath   = "/.well-known/oauth-authorization-server"
	oauthRegisterPath         = "/oauth/register"
	oauthAuthorizePath        = "/oauth/authorize"
	oauthTokenPath            = "/oauth/token"

	// accessTokenPrefix starts every OAuth access token (API keys start with weft.APIKeyPrefix).
	accessTokenPrefix = "wfo_"
	// clientIDPrefix starts every client id this server registers.
	clientIDPrefix = "wmc_"
	// DefaultAccessTokenTTL is how long an access token lasts unless Options.AccessTokenTTL says.
	DefaultAccessTokenTTL = 24 * time.Hour
	// authCodeTTL is how long an authorization code may wait for its exchange.
	authCodeTTL = 60 * time.Second
	// maxCodesPerUser bounds a user's live authorization codes.
	maxCodesPerUser = 16
	// maxRedirectURIs and maxClientName bound a registration (it is carried in the client id).
	maxRedirectURIs = 8
	maxClientName   = 200
	maxOAuthBody    = 64 << 10
)

// oauthEnabled reports whether /mcp is protected by keys Weft can sign users in with, so that
// Weft can be its authorization server.
func (s *Server) oauthEnabled() bool {
	return s.opt.MCP != nil && !s.opt.NoAuth && s.opt.Auth != nil
}

// oauthRoutes registers the metadata, registration, authorization and token endpoints.
func (s *Server) oauthRoutes() {
	if !s.oauthEnabled() {
		return
	}
	s.mux.HandleFunc(oauthResourceMetadataPath+"/mcp", func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(s.resourceMetadata(r, mcpResource(r))).ServeHTTP(w, r)
	})
	s.mux.HandleFunc(oauthResourceMetadataPath, func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(s.resourceMetadata(r, issuer(r))).ServeHTTP(w, r)
	})
	s.mux.HandleFunc(oauthServerMetadataPath, s.serverMetadata)
	s.mux.HandleFunc(oauthRegisterPath, s.registerClient)
	s.mux.HandleFunc("GET "+oauthAuthorizePath, s.authorize)
	s.mux.HandleFunc("POST "+oauthAuthorizePath, s.authorize)
	s.mux.HandleFunc(oauthTokenPath, s.token)
}

// issuer is this server as the client reached it (scheme and host): the authorization server's
// issuer identifier, and the resource of the root protected-resource metadata.
func issuer(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// mcpResource is the resource identifier of /mcp (RFC 8707): its URL.
func mcpResource(r *http.Request) string { return issuer(r) + "/mcp" }

// resourceMetadataURL is where /mcp's protected-resource metadata is (RFC 9728 §3.1: the
// well-known path inserted before the resource's path).
func resourceMetadataURL(r *http.Request) string {
	return issuer(r) + oauthResourceMetadataPath + "/mcp"
}

// acceptedResources are the resources a token for /mcp may be bound to: /mcp itself, and this
// server as a whole (the root metadata's resource, which clients that read it ask for).
func acceptedResources(r *http.Request) []string { return []string{mcpResource(r), issuer(r)} }

func (s *Server) resourceMetadata(r *http.Request, resource string) *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               resource,
		AuthorizationServers:   []string{issuer(r)},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Weft MCP server",
	}
}

// serverMetadata serves the authorization server metadata (RFC 8414).
func (s *Server) serverMetadata(w http.ResponseWriter, r *http.Request) {
	if corsPreflight(w, r, "GET") {
		return
	}
	if r.Method != http.MethodGet {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "use GET")
		return
	}
	iss := issuer(r)
	meta := &oauthex.AuthServerMeta{
		Issuer:                                     iss,
		AuthorizationEndpoint:                      iss + oauthAuthorizePath,
		TokenEndpoint:                              iss + oauthTokenPath,
		RegistrationEndpoint:                       iss + oauthRegisterPath,
		ResponseTypesSupported:                     []string{"code"},
		GrantTypesSupported:                        []string{"authorization_code"},
		TokenEndpointAuthMethodsSupported:          []string{"none"},
		CodeChallengeMethodsSupported:              []string{"S256"},
		AuthorizationResponseIssParameterSupported: true,
	}
	b, err := json.Marshal(meta)
	if err == nil {
		// AuthServerMeta always writes jwks_uri; an empty one is no URL, and strict clients refuse it.
		var m map[string]any
		if err = json.Unmarshal(b, &m); err == nil {
			delete(m, "jwks_uri")
			b, err = json.Marshal(m)
		}
	}
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// corsPreflight lets browser clients (the MCP Inspector's web UI) call the public OAuth endpoints
// from another origin: they carry no cookie or ambient credential. It reports whether r was a
// preflight, answered.
func corsPreflight(w http.ResponseWriter, r *http.Request, methods string) bool {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if r.Method != http.MethodOptions {
		return false
	}
	w.Header().Set("Access-Control-Allow-Methods", methods+", OPTIONS")
	w.Header().Set("Access-Control-Allow-Headers", "Content-Type, Authorization, MCP-Protocol-Version")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// oauthError writes an OAuth error response (RFC 6749 §5.2, RFC 7591 §3.2.2).
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// client is what a registration holds. It is carried in the client id itself (base64url JSON
// after clientIDPrefix), so registering stores nothing and a client id stays valid across
// restarts and on every node. Registration is open to anyone (RFC 7591), so a client id made by
// hand gains nothing a registration would not: its redirect URIs pass the same checks at the
// authorization endpoint.
type client struct {
	RedirectURIs []string `json:"r"`
	Name         string   `json:"n,omitempty"`
}

func (c *client) id() string {
	b, _ := json.Marshal(c)
	return clientIDPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// display names the client on the consent page and in the token's record.
func (c *client) display() string {
	if c.Name != "" {
		return c.Name
	}
	u, _ := url.Parse(c.RedirectURIs[0])
	return u.Host
}

// check validates a registration: 1 to maxRedirectURIs valid redirect URIs, a short name.
func (c *client) check() error {
	if len(c.RedirectURIs) == 0 || len(c.RedirectURIs) > maxRedirectURIs {
		return fmt.Errorf("redirect_uris: want 1 to %d URIs, got %d", maxRedirectURIs, len(c.RedirectURIs))
	}
	for i, u := range c.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return fmt.Errorf("redirect_uris[%d]: %w", i, err)
		}
	}
	if len(c.Name) > maxClientName {
		return fmt.Errorf("client_name: at most %d bytes", maxClientName)
	}
	return nil
}

// parseClient decodes and checks a client id.
func parseClient(id string) (*client, error) {
	rest, ok := strings.CutPrefix(id, clientIDPrefix)
	if !ok {
		return nil, errors.New("unknown client_id: register at " + oauthRegisterPath + " first")
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	var c client
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		return nil, errors.New("unknown client_id: register at " + oauthRegisterPath + " first")
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("client_id: %w", err)
	}
	return &c, nil
}

// checkRedirectURI admits absolute https URLs, and http URLs of a loopback host (native apps,
// RFC 8252 §7.3), without a fragment or user info.
func checkRedirectURI(s string) error {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", s)
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return fmt.Errorf("%q has a fragment", s)
	}
	if u.User != nil {
		return fmt.Errorf("%q has user info", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%q: http is allowed for loopback hosts only (127.0.0.1, [::1], localhost); use https", s)
	}
	return fmt.Errorf("%q: scheme %q; want https, or http on a loopback host", s, u.Scheme)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// registerClient is dynamic client registration (RFC 7591) for public clients: no secret, PKCE
// instead.
func (s *Server) registerClient(w http.ResponseWriter, r *http.Request) {
	if corsPreflight(w, r, "POST") {
		return
	}
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "use POST with the client's metadata as JSON")
		return
	}
	var meta oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxOAuthBody)).Decode(&meta); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "the body must be the client's metadata as JSON: "+err.Error())
		return
	}
	c := &client{RedirectURIs: meta.RedirectURIs, Name: meta.ClientName}
	if err := c.check(); err != nil {
		code := "invalid_client_metadata"
		if strings.HasPrefix(err.Error(), "redirect_uris") {
			code = "invalid_redirect_uri"
		}
		oauthError(w, http.StatusBadRequest, code, err.Error())
		return
	}
	for _, g := range meta.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "grant_types: only authorization_code is supported")
			return
		}
	}
	for _, t := range meta.ResponseTypes {
		if t != "code" {
			oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "response_types: only code is supported")
			return
		}
	}
	// What is registered, which may differ from what was asked (RFC 7591 §3.2.1): a public client
	// of the authorization code grant.
	meta.TokenEndpointAuthMethod = "none"
	meta.GrantTypes = []string{"authorization_code"}
	meta.ResponseTypes = []string{"code"}
	meta.Scope = ""
	resp := &oauthex.ClientRegistrationResponse{ClientRegistrationMetadata: meta, ClientID: c.id(), ClientIDIssuedAt: time.Now()}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(resp)
}

// authRequest is an authorization request (RFC 6749 §4.1.1 with PKCE and a resource), from the
// query of a GET or the consent form of a POST.
type authRequest struct {
	client        *client
	ClientID      string
	RedirectURI   string
	State         string
	Challenge     string
	Resource      string
	Scope         string
	ResponseType  string
	ChallengeMeth string
}

// readAuthRequest reads an authorization request. An error before the redirect URI is known good
// is shown to the user (never redirected: RFC 6749 §4.1.2.1); after, redirectErr is an error
// code and description to send back to the client.
func readAuthRequest(r *http.Request) (req *authRequest, redirectErr [2]string, pageErr error) {
	f := r.Form
	req = &authRequest{ClientID: f.Get("client_id"), RedirectURI: f.Get("redirect_uri"), State: f.Get("state"),
		Challenge: f.Get("code_challenge"), ChallengeMeth: f.Get("code_challenge_method"), Resource: f.Get("resource"),
		Scope: f.Get("scope"), ResponseType: f.Get("response_type")}
	c, err := parseClient(req.ClientID)
	if err != nil {
		return nil, redirectErr, err
	}
	req.client = c
	if req.RedirectURI == "" && len(c.RedirectURIs) == 1 {
		req.RedirectURI = c.RedirectURIs[0]
	}
	if !slices.Contains(c.RedirectURIs, req.RedirectURI) {
		return nil, redirectErr, fmt.Errorf("redirect_uri %q is not one the client registered", req.RedirectURI)
	}
	switch {
	case req.ResponseType != "code":
		return req, [2]string{"unsupported_response_type", "response_type must be code"}, nil
	case req.Challenge == "":
		return req, [2]string{"invalid_request", "code_challenge is required (PKCE with S256)"}, nil
	case req.ChallengeMeth != "S256":
		return req, [2]string{"invalid_request", "code_challenge_method must be S256"}, nil
	case len(req.Challenge) != 43 || strings.Trim(req.Challenge, base64url) != "":
		return req, [2]string{"invalid_request", "code_challenge must be the base64url SHA-256 of the code verifier (43 characters)"}, nil
	}
	if req.Resource == "" {
		req.Resource = mcpResource(r)
	}
	if !slices.Contains(acceptedResources(r), req.Resource) {
		return req, [2]string{"invalid_target", fmt.Sprintf("resource %q is not served here; this server issues tokens for %s", req.Resource, mcpResource(r))}, nil
	}
	return req, redirectErr, nil
}

const base64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// redirect sends the user agent back to the client with params, the state and the issuer
// (RFC 9207).
func (req *authRequest) redirect(w http.ResponseWriter, r *http.Request, params url.Values) {
	u, _ := url.Parse(req.RedirectURI)
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if req.State != "" {
		q.Set("state", req.State)
	}
	q.Set("iss", issuer(r))
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// authorize is the authorization endpoint: GET shows the consent page; POST is the page's form,
// which approves with an API key (the code goes back to the client) or denies.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxOAuthBody)
	if err := r.ParseForm(); err != nil {
		s.consentPage(w, r, http.StatusBadRequest, nil, "the request cannot be read: "+err.Error())
		return
	}
	if r.Method == http.MethodPost {
		// The form's own fields only: parameters in the query do not override them.
		r.Form = r.PostForm
	}
	req, rerr, pageErr := readAuthRequest(r)
	if pageErr != nil {
		s.consentPage(w, r, http.StatusBadRequest, nil, pageErr.Error())
		return
	}
	if rerr[0] != "" {
		req.redirect(w, r, url.Values{"error": {rerr[0]}, "error_description": {rerr[1]}})
		return
	}
	if r.Method == http.MethodGet {
		s.consentPage(w, r, http.StatusOK, req, "")
		return
	}
	if r.PostForm.Get("decision") != "approve" {
		req.redirect(w, r, url.Values{"error": {"access_denied"}, "error_description": {"the user denied the request"}})
		return
	}
	key := strings.TrimSpace(r.PostForm.Get("key"))
	if !strings.HasPrefix(key, weft.APIKeyPrefix) {
		s.consentPage(w, r, http.StatusUnauthorized, req, "Sign in with one of your API keys ("+weft.APIKeyPrefix+"…). The admin key has no user to act as.")
		return
	}
	k, err := s.opt.Auth.KeyByHash(r.Context(), weft.HashAPIKey(key))
	if err == nil {
		_, err = s.opt.Auth.User(r.Context(), k.UserID)
	}
	if weft.ErrorCode(err) == weft.ENotFound {
		s.consentPage(w, r, http.StatusUnauthorized, req, "That API key is not valid.")
		return
	}
	if err != nil {
		s.consentPage(w, r, http.StatusInternalServerError, req, "The key could not be checked: "+err.Error())
		return
	}
	code, err := s.codes.issue(authCode{req: *req, userID: k.UserID, keyID: k.ID})
	if err != nil {
		s.consentPage(w, r, http.StatusTooManyRequests, req, err.Error())
		return
	}
	s.log.Info("oauth: code issued", "user", k.UserID, "client", req.client.display())
	req.redirect(w, r, url.Values{"code": {code}})
}

// token is the token endpoint: an authorization code and its PKCE verifier for an access token.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if corsPreflight(w, r, "POST") {
		return
	}
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "use POST")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxOAuthBody)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded: "+err.Error())
		return
	}
	f := r.PostForm
	if gt := f.Get("grant_type"); gt != "authorization_code" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", fmt.Sprintf("grant_type %q; only authorization_code is supported", gt))
		return
	}
	clientID := f.Get("client_id")
	if id, _, ok := r.BasicAuth(); ok && clientID == "" {
		clientID, _ = url.QueryUnescape(id)
	}
	c, err := parseClient(clientID)
	if err != nil {
		oauthError(w, http.StatusUnauthorized, "invalid_client", err.Error())
		return
	}
	ac, prior, err := s.codes.take(f.Get("code"))
	if prior != "" {
		// A code used twice was likely stolen: the token issued for it goes too (OAuth 2.1 §4.1.3).
		if err := s.opt.Auth.RevokeAccessToken(r.Context(), prior); err != nil {
			s.log.Warn("oauth: revoke the token of a reused code", "err", err)
		}
	}
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_grant", err.Error())
		return
	}
	switch {
	case ac.req.ClientID != clientID:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the code was issued to another client")
		return
	case f.Get("redirect_uri") != ac.req.RedirectURI && !(f.Get("redirect_uri") == "" && len(ac.req.client.RedirectURIs) == 1):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
		return
	case !pkceMatches(f.Get("code_verifier"), ac.req.Challenge):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge")
		return
	case f.Get("resource") != "" && f.Get("resource") != ac.req.Resource:
		oauthError(w, http.StatusBadRequest, "invalid_target", fmt.Sprintf("resource %q differs from the authorization request's %q", f.Get("resource"), ac.req.Resource))
		return
	}
	ttl := s.opt.AccessTokenTTL
	if ttl <= 0 {
		ttl = DefaultAccessTokenTTL
	}
	tok := newAccessToken()
	now := time.Now().UTC()
	rec := &weft.AccessToken{Hash: weft.HashAPIKey(tok), UserID: ac.userID, KeyID: ac.keyID, Client: c.display(),
		Resource: ac.req.Resource, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	if err := s.opt.Auth.CreateAccessToken(r.Context(), rec); err != nil {
		if weft.ErrorCode(err) == weft.ENotFound {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "the API key that approved the code was revoked")
			return
		}
		oauthError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	s.codes.issued(f.Get("code"), rec.Hash)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(ttl / time.Second)})
}

// pkceMatches reports whether the verifier (RFC 7636 §4.1: 43 to 128 unreserved characters)
// hashes to the S256 challenge.
func pkceMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 || strings.Trim(verifier, base64url+".~") != "" {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	return weft.SameSecret(base64.RawURLEncoding.EncodeToString(sum[:]), challenge)
}

var tokenEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

func newAccessToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return accessTokenPrefix + strings.ToLower(tokenEncoding.EncodeToString(b[:]))
}

// verifyAccessToken checks an OAuth access token for this request to /mcp: known, not revoked
// (nor its key), not expired, and bound to this server's /mcp.
func (s *Server) verifyAccessToken(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	at, err := s.opt.Auth.AccessToken(ctx, weft.HashAPIKey(token))
	if weft.ErrorCode(err) == weft.ENotFound {
		return nil, fmt.Errorf("%w: the access token is unknown or revoked", auth.ErrInvalidToken)
	}
	if err != nil {
		return nil, err
	}
	if !time.Now().Before(at.ExpiresAt) {
		return nil, fmt.Errorf("%w: the access token expired at %s", auth.ErrInvalidToken, at.ExpiresAt.Format(time.RFC3339))
	}
	if !slices.Contains(acceptedResources(r), at.Resource) {
		return nil, fmt.Errorf("%w: the access token is for %s, not %s", auth.ErrInvalidToken, at.Resource, mcpResource(r))
	}
	if _, err := s.opt.Auth.User(ctx, at.UserID); err != nil {
		if weft.ErrorCode(err) == weft.ENotFound {
			return nil, fmt.Errorf("%w: the access token's user is gone", auth.ErrInvalidToken)
		}
		return nil, err
	}
	return &auth.TokenInfo{UserID: at.UserID, Expiration: at.ExpiresAt}, nil
}

// authCodes are the live authorization codes: single use, for authCodeTTL, in this process (a
// client exchanges the code at once, with the server that issued it).
type authCodes struct {
	mu sync.Mutex
	m  map[string]*authCode
}

type authCode struct {
	req     authRequest
	userID  string
	keyID   string
	expires time.Time
	// used is set by the first exchange; token is the hash of the token it issued.
	used  bool
	token string
}

// issue returns a new code; expired codes are dropped, and a user with maxCodesPerUser live codes
// is refused.
func (c *authCodes) issue(ac authCode) (string, error) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	code := base64.RawURLEncoding.EncodeToString(b[:])
	now := time.Now()
	ac.expires = now.Add(authCodeTTL)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*authCode{}
	}
	mine := 0
	for k, v := range c.m {
		switch {
		case now.After(v.expires):
			delete(c.m, k)
		case v.userID == ac.userID && !v.used:
			mine++
		}
	}
	if mine >= maxCodesPerUser {
		return "", fmt.Errorf("%d authorizations of yours are waiting for their clients; try again in a minute", mine)
	}
	c.m[code] = &ac
	return code, nil
}

// take consumes a code. A code used before is refused, and prior is the hash of the token its
// first use issued (to revoke); an unknown or expired code is refused.
func (c *authCodes) take(code string) (ac authCode, prior string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[code]
	if !ok || code == "" {
		return ac, "", errors.New("the code is unknown or expired")
	}
	if v.used {
		return ac, v.token, errors.New("the code was used already; the token issued for it is revoked")
	}
	v.used = true
	if time.Now().After(v.expires) {
		return ac, "", errors.New("the code expired")
	}
	return *v, "", nil
}

// issued records the token a code's exchange issued.
func (c *authCodes) issued(code, tokenHash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[code]; ok {
		v.token = tokenHash
	}
}

// consentStyle is the consent page's only style; the page's Content-Security-Policy admits it by
// its hash.
const consentStyle = `body{font:15px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#222}` +
	`h1{font-size:1.3rem}.err{color:#a00;font-weight:600}code{background:#eee;padding:0 .2rem}` +
	`input[type=password]{width:100%;padding:.4rem;margin:.3rem 0 1rem}button{padding:.4rem 1rem;margin-right:.5rem}`

var consentStyleHash = func() string {
	sum := sha256.Sum256([]byte(consentStyle))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

var consentTemplate = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Authorize an MCP client · Weft</title><style>{{.Style}}</style></head><body>
{{if .Req}}<h1>Authorize {{.Client}} to use Weft as you?</h1>
<p><b>{{.Client}}</b> asks to use this server's MCP endpoint (<code>{{.Resource}}</code>): to call its
agents and prompts as tools, in threads of yours, and to read your threads' transcripts and files.
After you approve, your browser returns to <code>{{.Redirect}}</code>.</p>
<p>The access token lasts {{.TTL}}, and ends at once when the API key you sign in with is revoked.</p>
{{if .Error}}<p class="err">{{.Error}}</p>{{end}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="response_type" value="code">
<input type="hidden" name="client_id" value="{{.Req.ClientID}}">
<input type="hidden" name="redirect_uri" value="{{.Req.RedirectURI}}">
<input type="hidden" name="state" value="{{.Req.State}}">
<input type="hidden" name="code_challenge" value="{{.Req.Challenge}}">
<input type="hidden" name="code_challenge_method" value="{{.Req.ChallengeMeth}}">
<input type="hidden" name="resource" value="{{.Req.Resource}}">
<input type="hidden" name="scope" value="{{.Req.Scope}}">
<label for="key">Your API key</label>
<input type="password" id="key" name="key" autocomplete="off" placeholder="wft_…" autofocus>
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
{{else}}<h1>This authorization request cannot be served</h1><p class="err">{{.Error}}</p>{{end}}
</body></html>
`))

// consentPage renders the consent page for req, or the error that stops a request with no client
// to return to (req nil).
func (s *Server) consentPage(w http.ResponseWriter, r *http.Request, status int, req *authRequest, msg string) {
	h := w.Header()
	formAction := "'self'"
	data := map[string]any{"Style": template.CSS(consentStyle), "Error": msg, "Action": oauthAuthorizePath}
	if req != nil {
		// The form's answer redirects to the client, which CSP form-action must allow too.
		if u, err := url.Parse(req.RedirectURI); err == nil {
			formAction += " " + u.Scheme + "://" + u.Host
		}
		ttl := s.opt.AccessTokenTTL
		if ttl <= 0 {
			ttl = DefaultAccessTokenTTL
		}
		data["Req"], data["Client"], data["Resource"], data["Redirect"], data["TTL"] = req, req.client.display(), req.Resource, req.RedirectURI, humanDuration(ttl)
	}
	h.Set("Content-Security-Policy", "default-src 'none'; style-src "+consentStyleHash+"; form-action "+formAction+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := consentTemplate.Execute(w, data); err != nil {
		s.log.Warn("oauth: consent page", "err", err)
	}
}

// humanDuration writes a token lifetime for people: "24 hours", "90 minutes".
func humanDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}
