package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// noRedirects is an HTTP client that returns redirects instead of following them: the consent
// form's answer is a redirect to the client, which the tests read.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// consentAnswer opens the consent page at authURL as a browser would, posts its form with an API
// key and a decision, and returns the answer's status, its Location (nil without one) and body.
func consentAnswer(t *testing.T, authURL, key, decision string) (int, *url.URL, string) {
	t.Helper()
	resp, err := noRedirects.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, location(t, resp), string(page)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("consent page CSP %q", csp)
	}
	form := url.Values{"key": {key}, "decision": {decision}}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(page), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	u, _ := url.Parse(authURL)
	resp, err = noRedirects.PostForm(u.Scheme+"://"+u.Host+"/oauth/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, location(t, resp), string(body)
}

func location(t *testing.T, resp *http.Response) *url.URL {
	if resp.Header.Get("Location") == "" {
		return nil
	}
	u, err := resp.Location()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// consentFetcher is the go-sdk's AuthorizationCodeFetcher played by a user who approves with an
// API key; it keeps the authorization requests it saw.
type consentFetcher struct {
	t    *testing.T
	key  string
	mu   sync.Mutex
	seen []url.Values
}

func (c *consentFetcher) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(args.URL)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.seen = append(c.seen, u.Query())
	c.mu.Unlock()
	status, loc, body := consentAnswer(c.t, args.URL, c.key, "approve")
	if status != http.StatusSeeOther || loc == nil {
		return nil, fmt.Errorf("consent: %d: %.300s", status, body)
	}
	q := loc.Query()
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("consent: %s: %s", e, q.Get("error_description"))
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// pkce returns a code verifier and its S256 challenge.
func pkce() (string, string) {
	v := rand.Text() + rand.Text() // 52 base32 characters: within RFC 7636's 43 to 128
	sum := sha256.Sum256([]byte(v))
	return v, base64.RawURLEncoding.EncodeToString(sum[:])
}

// oauthPost posts a form or JSON body and decodes the JSON answer.
func oauthPost(t *testing.T, u, contentType, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(u, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST %s: %d: not JSON: %s", u, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// mcpStatus is the status of an initialize request to /mcp with a bearer token, sent to the
// server's address but naming host (the client's view of the server) in the Host header.
func mcpStatus(t *testing.T, base, host, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// oauthUser makes a user and an API key of theirs through the API, with the admin key.
func oauthUser(s *server, admin, name string) (userID, keyID, key string) {
	var u struct{ ID string }
	s.must("POST", "/api/users", admin, `{"name":"`+name+`"}`, http.StatusCreated, &u)
	var k struct{ ID, Key string }
	s.must("POST", "/api/keys", admin, `{"user_id":"`+u.ID+`"}`, http.StatusCreated, &k)
	return u.ID, k.ID, k.Key
}

// TestOAuthMCPFlow drives the MCP authorization spec end to end against `weft serve` with the
// go-sdk's own OAuth client (auth.AuthorizationCodeHandler in its streamable-HTTP transport):
// the 401 from /mcp names the protected-resource metadata, which names Weft as the authorization
// server; the client reads its metadata, registers itself, sends the user to the consent page
// with a PKCE S256 challenge and the resource, the user approves with an API key, and the code
// becomes a token the client calls tools with, over the 2026-07-28 revision and over a
// 2025-11-25 session, whose mcp.session.id reaches the OTLP export. Revoking the API key ends
// the token.
func TestOAuthMCPFlow(t *testing.T) {
	col := &collector{metrics: map[string]bool{}}
	otlp := httptest.NewServer(col)
	defer otlp.Close()
	otelEnv := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL, "OTEL_SERVICE_NAME=", "OTEL_RESOURCE_ATTRIBUTES=",
		"OTEL_TRACES_EXPORTER=", "OTEL_METRICS_EXPORTER=none", "OTEL_SDK_DISABLED=", "OTEL_EXPORTER_OTLP_PROTOCOL=", "OTEL_BSP_SCHEDULE_DELAY=100"}

	dir := t.TempDir()
	writeFiles(t, dir, innerProject)
	const admin = "adm-0123456789abcdefghijklmnop"
	s := startServer(t, dir, append([]string{"WEFT_ADMIN_KEY=" + admin}, otelEnv...), "--db", filepath.Join(dir, "w.db"), "--model-script", "inner.script.yaml")
	var once sync.Once
	stop := func() { once.Do(s.stop) }
	defer stop()
	annID, annKeyID, annKey := oauthUser(s, admin, "ann")

	// Discovery starts from the 401.
	status, challenge := mcpStatus(t, s.base, "", "")
	wantChallenge := `Bearer resource_metadata="` + s.base + `/.well-known/oauth-protected-resource/mcp"`
	if status != http.StatusUnauthorized || challenge != wantChallenge {
		t.Fatalf("/mcp without credentials: %d, WWW-Authenticate %q; want 401, %q", status, challenge, wantChallenge)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, s.base+"/.well-known/oauth-protected-resource/mcp", s.base+"/mcp", nil)
	if err != nil || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != s.base {
		t.Fatalf("protected-resource metadata: %+v, %v", prm, err)
	}
	if root, err := oauthex.GetProtectedResourceMetadata(ctx, s.base+"/.well-known/oauth-protected-resource", s.base, nil); err != nil || root.AuthorizationServers[0] != s.base {
		t.Fatalf("root protected-resource metadata: %+v, %v", root, err)
	}
	asm, err := auth.GetAuthServerMetadata(ctx, s.base, nil)
	if err != nil || asm == nil || asm.RegistrationEndpoint != s.base+"/oauth/register" ||
		strings.Join(asm.CodeChallengeMethodsSupported, ",") != "S256" || !asm.AuthorizationResponseIssParameterSupported {
		t.Fatalf("authorization server metadata: %+v, %v", asm, err)
	}

	// The go-sdk client does the rest on its own.
	consent := &consentFetcher{t: t, key: annKey}
	oauth, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{"http://127.0.0.1:9/callback"}, ClientName: "Test Desk <b>"}},
		AuthorizationCodeFetcher: consent.fetch,
	})
	if err != nil {
		t.Fatal(err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "oauth-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.base + "/mcp", OAuthHandler: oauth, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect with OAuth: %v\n%s", err, s.stderr)
	}
	res := mcpCall(t, cs, "lookup", map[string]any{"message": "Where is order 42?"})
	if got := mcpText(t, res); !strings.Contains(got, "Order 42 shipped") {
		t.Errorf("tools/call lookup = %q", got)
	}
	cs.Close()
	if len(consent.seen) != 1 {
		t.Fatalf("%d authorization requests, want 1", len(consent.seen))
	}
	q := consent.seen[0]
	if q.Get("code_challenge_method") != "S256" || q.Get("resource") != s.base+"/mcp" || q.Get("state") == "" {
		t.Errorf("authorization request %v", q)
	}
	// The thread the call made is ann's: she sees it with her key, in her list.
	thread, _ := res.Meta["weft/thread"].(string)
	var th struct {
		UserID string `json:"user_id"`
	}
	s.must("GET", "/api/threads/"+thread, annKey, "", http.StatusOK, &th)
	if th.UserID != annID {
		t.Errorf("thread %s belongs to %q, want ann %q", thread, th.UserID, annID)
	}

	// The same token over an initialize session of 2025-11-25, whose id the server's span carries.
	ts, err := oauth.TokenSource(ctx)
	if err != nil || ts == nil {
		t.Fatalf("token source: %v", err)
	}
	tok, err := ts.Token()
	if err != nil || !strings.HasPrefix(tok.AccessToken, "wfo_") || tok.Expiry.IsZero() {
		t.Fatalf("token %+v, %v", tok, err)
	}
	cs, err = client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.base + "/mcp", OAuthHandler: oauth, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	sessionID := cs.ID()
	if sessionID == "" {
		t.Fatal("no session id over 2025-11-25")
	}
	mcpCall(t, cs, "prompt_lookup", map[string]any{"message": "And order 43?"})
	cs.Close()
	if len(consent.seen) != 1 {
		t.Errorf("%d authorization requests after the second connection, want 1 (the token is reused)", len(consent.seen))
	}

	// Static API keys keep working beside tokens.
	if status, _ := mcpStatus(t, s.base, "", annKey); status != http.StatusOK {
		t.Errorf("/mcp with an API key: %d", status)
	}
	// The token is no API key for /api.
	if code, _ := s.call("GET", "/api/threads", tok.AccessToken, ""); code != http.StatusUnauthorized {
		t.Errorf("/api with an OAuth token: %d, want 401", code)
	}

	// Revoking the key that approved the client ends its token.
	s.must("DELETE", "/api/keys/"+annKeyID, admin, "", http.StatusNoContent, nil)
	if status, _ := mcpStatus(t, s.base, "", tok.AccessToken); status != http.StatusUnauthorized {
		t.Errorf("/mcp with the token of a revoked key: %d, want 401", status)
	}

	stop() // flushes the spans
	var server *tracepb.Span
	deadline := time.Now().Add(10 * time.Second)
	for server == nil && time.Now().Before(deadline) {
		col.mu.Lock()
		for _, sp := range col.spans {
			if sp.Name == "tools/call prompt_lookup" {
				server = sp
			}
		}
		col.mu.Unlock()
		if server == nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if server == nil {
		t.Fatal("no MCP server span for tools/call prompt_lookup")
	}
	if got := attrValue(server, "mcp.session.id"); got != sessionID {
		t.Errorf("mcp.session.id = %q, want the session's %q", got, sessionID)
	}
	if got := attrValue(server, "mcp.protocol.version"); got != "2025-11-25" {
		t.Errorf("mcp.protocol.version = %q", got)
	}
}

// TestOAuthMCPRefusals: what the authorization server refuses — redirect URIs that are not https
// or loopback http, an unregistered redirect_uri (an error page, no redirect), plain or missing
// PKCE, a resource of another server, a wrong code_verifier, a reused code (which also revokes
// the token the code gave), a token presented to another resource, and a denied consent; the
// state comes back on every redirect.
func TestOAuthMCPRefusals(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, innerProject)
	const admin = "adm-0123456789abcdefghijklmnop"
	s := startServer(t, dir, []string{"WEFT_ADMIN_KEY=" + admin}, "--db", filepath.Join(dir, "w.db"), "--model-script", "inner.script.yaml")
	defer s.stop()
	_, _, key := oauthUser(s, admin, "bob")

	for _, bad := range []string{"http://example.com/cb", "ftp://127.0.0.1/cb", "https://app.example/cb#frag", "cb"} {
		code, out := oauthPost(t, s.base+"/oauth/register", "application/json", `{"redirect_uris":["`+bad+`"]}`)
		if code != http.StatusBadRequest || out["error"] != "invalid_redirect_uri" {
			t.Errorf("register %s: %d %v, want 400 invalid_redirect_uri", bad, code, out)
		}
	}
	const redirect = "http://127.0.0.1:9/cb"
	code, reg := oauthPost(t, s.base+"/oauth/register", "application/json",
		`{"redirect_uris":["`+redirect+`","https://desk.example/cb"],"client_name":"Desk","token_endpoint_auth_method":"client_secret_basic"}`)
	clientID, _ := reg["client_id"].(string)
	if code != http.StatusCreated || clientID == "" || reg["token_endpoint_auth_method"] != "none" || reg["client_secret"] != nil {
		t.Fatalf("register: %d %v", code, reg)
	}

	authURL := func(redirectURI, state, challenge, method, resource string) string {
		q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI}, "state": {state}}
		if challenge != "" {
			q.Set("code_challenge", challenge)
			q.Set("code_challenge_method", method)
		}
		if resource != "" {
			q.Set("resource", resource)
		}
		return s.base + "/oauth/authorize?" + q.Encode()
	}
	// redirectedError follows the consent flow and returns the error sent back to the client.
	redirectedError := func(u, decision string) string {
		t.Helper()
		status, loc, body := consentAnswer(t, u, key, decision)
		if status != http.StatusSeeOther || loc == nil {
			t.Fatalf("%s: %d, want a redirect: %.300s", u, status, body)
		}
		if got := loc.Query().Get("state"); got != "st-1" {
			t.Errorf("state came back as %q", got)
		}
		if got := loc.Query().Get("iss"); got != s.base {
			t.Errorf("iss = %q", got)
		}
		return loc.Query().Get("error")
	}
	verifier, challenge := pkce()

	// An unregistered redirect_uri, or one registered by no client, is an error page: no redirect.
	for _, u := range []string{authURL("http://127.0.0.1:9/other", "st-1", challenge, "S256", ""),
		strings.Replace(authURL(redirect, "st-1", challenge, "S256", ""), "client_id=wmc_", "client_id=nope", 1)} {
		status, loc, _ := consentAnswer(t, u, key, "approve")
		if status != http.StatusBadRequest || loc != nil {
			t.Errorf("%s: %d, location %v; want 400 and no redirect", u, status, loc)
		}
	}
	if e := redirectedError(authURL(redirect, "st-1", challenge, "plain", ""), "approve"); e != "invalid_request" {
		t.Errorf("plain PKCE: error %q, want invalid_request", e)
	}
	if e := redirectedError(authURL(redirect, "st-1", "", "", ""), "approve"); e != "invalid_request" {
		t.Errorf("no PKCE: error %q, want invalid_request", e)
	}
	if e := redirectedError(authURL(redirect, "st-1", challenge, "S256", "https://elsewhere.example/mcp"), "approve"); e != "invalid_target" {
		t.Errorf("another server's resource: error %q, want invalid_target", e)
	}
	if e := redirectedError(authURL(redirect, "st-1", challenge, "S256", ""), "deny"); e != "access_denied" {
		t.Errorf("denied: error %q, want access_denied", e)
	}
	// A wrong key shows the page again.
	if status, loc, _ := consentAnswer(t, authURL(redirect, "st-1", challenge, "S256", ""), "wft_notakey", "approve"); status != http.StatusUnauthorized || loc != nil {
		t.Errorf("a wrong API key: %d, location %v", status, loc)
	}

	getCode := func(resource string) string {
		t.Helper()
		status, loc, body := consentAnswer(t, authURL(redirect, "st-1", challenge, "S256", resource), key, "approve")
		if status != http.StatusSeeOther || loc == nil || loc.Query().Get("code") == "" {
			t.Fatalf("approve: %d %v %.300s", status, loc, body)
		}
		if loc.Query().Get("state") != "st-1" || !strings.HasPrefix(loc.String(), redirect+"?") {
			t.Errorf("redirect %s", loc)
		}
		return loc.Query().Get("code")
	}
	exchange := func(code, verifier, resource string) (int, map[string]any) {
		f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {clientID},
			"redirect_uri": {redirect}, "code_verifier": {verifier}}
		if resource != "" {
			f.Set("resource", resource)
		}
		return oauthPost(t, s.base+"/oauth/token", "application/x-www-form-urlencoded", f.Encode())
	}

	// A wrong verifier spends the code.
	c := getCode("")
	wrong, _ := pkce()
	if status, out := exchange(c, wrong, ""); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Errorf("wrong verifier: %d %v", status, out)
	}
	if status, out := exchange(c, verifier, ""); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Errorf("the code after a wrong verifier: %d %v", status, out)
	}
	// A resource at the token endpoint other than the authorization request's.
	c = getCode(s.base + "/mcp")
	if status, out := exchange(c, verifier, "https://elsewhere.example/mcp"); status != http.StatusBadRequest || out["error"] != "invalid_target" {
		t.Errorf("another resource at the token endpoint: %d %v", status, out)
	}

	// A good exchange, then the same code again: refused, and the first token is revoked.
	c = getCode(s.base + "/mcp")
	status, out := exchange(c, verifier, s.base+"/mcp")
	tok, _ := out["access_token"].(string)
	if status != http.StatusOK || tok == "" || out["token_type"] != "Bearer" || out["expires_in"] != float64(24*3600) {
		t.Fatalf("exchange: %d %v", status, out)
	}
	if status, _ := mcpStatus(t, s.base, "", tok); status != http.StatusOK {
		t.Fatalf("/mcp with the token: %d", status)
	}
	// The same server under another name is another resource: the token is not for it.
	host := strings.Replace(strings.TrimPrefix(s.base, "http://"), "127.0.0.1", "localhost", 1)
	if status, challenge := mcpStatus(t, s.base, host, tok); status != http.StatusUnauthorized ||
		challenge != `Bearer resource_metadata="http://`+host+`/.well-known/oauth-protected-resource/mcp"` {
		t.Errorf("the token at another resource: %d %q, want 401", status, challenge)
	}
	if status, out := exchange(c, verifier, s.base+"/mcp"); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Errorf("reused code: %d %v", status, out)
	}
	if status, _ := mcpStatus(t, s.base, "", tok); status != http.StatusUnauthorized {
		t.Errorf("/mcp with the token of a reused code: %d, want 401", status)
	}

	// A token for the server as a whole (the root metadata's resource) is good at /mcp too.
	c = getCode(s.base)
	status, out = exchange(c, verifier, "")
	if tok, _ := out["access_token"].(string); status != http.StatusOK || tok == "" {
		t.Fatalf("exchange for %s: %d %v", s.base, status, out)
	} else if status, _ := mcpStatus(t, s.base, "", tok); status != http.StatusOK {
		t.Errorf("/mcp with a token for %s: %d", s.base, status)
	}
}

// TestOAuthMCPNpmClient: the TypeScript SDK's OAuth client (an OAuthClientProvider in its
// streamable-HTTP transport, the client side the MCP Inspector's web UI builds on) connects to
// /mcp of `weft serve` with nothing but an API key typed into the consent page: discovery from
// the 401, registration, PKCE, the code, the token, a session and a tool call.
func TestOAuthMCPNpmClient(t *testing.T) {
	npm := npmDir(t)
	dir := t.TempDir()
	writeFiles(t, dir, innerProject)
	const admin = "adm-0123456789abcdefghijklmnop"
	s := startServer(t, dir, []string{"WEFT_ADMIN_KEY=" + admin}, "--db", filepath.Join(dir, "w.db"), "--model-script", "inner.script.yaml")
	defer s.stop()
	_, _, key := oauthUser(s, admin, "cy")
	repoRoot, _ := filepath.Abs("../..")
	cmd := exec.Command("node", filepath.Join(repoRoot, "testdata/npm-mcp/oauth.mjs"), npm, s.base+"/mcp", key, "lookup", `{"message":"Where is order 42?"}`)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("npm OAuth client: %v\n%s\n%s\n%s", err, out, stderr, s.stderr)
	}
	var got struct {
		Unauthorized  bool
		Authorization map[string]string
		ClientID      string `json:"client_id"`
		TokenType     string `json:"token_type"`
		ExpiresIn     int    `json:"expires_in"`
		TokenPrefix   string `json:"token_prefix"`
		Session       string
		Result        struct {
			IsError bool
			Content []struct{ Type, Text string }
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	a := got.Authorization
	if !got.Unauthorized || !strings.HasPrefix(got.ClientID, "wmc_") || a["code_challenge_method"] != "S256" || a["resource"] != s.base+"/mcp" ||
		got.TokenType != "Bearer" || got.ExpiresIn != 24*3600 || got.TokenPrefix != "wfo_" || got.Session == "" {
		t.Errorf("flow: %s", out)
	}
	if got.Result.IsError || len(got.Result.Content) != 1 || got.Result.Content[0].Text != "Order 42 shipped yesterday." {
		t.Errorf("tools/call: %s", out)
	}
}
