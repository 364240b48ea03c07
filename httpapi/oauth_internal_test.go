package httpapi

import (
	"strings"
	"testing"
)

// TestOAuthRedirectURIs: https anywhere, http on loopback only, nothing else.
func TestOAuthRedirectURIs(t *testing.T) {
	for _, c := range []struct {
		uri string
		ok  bool
	}{
		{"https://app.example/cb", true},
		{"https://app.example:8443/cb?x=1", true},
		{"http://127.0.0.1:33418/callback", true},
		{"http://[::1]:9/cb", true},
		{"http://localhost/cb", true},
		{"http://127.1.2.3/cb", true},
		{"http://example.com/cb", false},
		{"http://localhost.example.com/cb", false},
		{"cursor://anysphere.cursor-retrieval/oauth", false},
		{"ftp://127.0.0.1/cb", false},
		{"javascript:alert(1)", false},
		{"https://app.example/cb#x", false},
		{"https://user:pw@app.example/cb", false},
		{"/cb", false},
		{"", false},
	} {
		if err := checkRedirectURI(c.uri); (err == nil) != c.ok {
			t.Errorf("checkRedirectURI(%q) = %v, want ok=%v", c.uri, err, c.ok)
		}
	}
}

// TestOAuthPKCE: RFC 7636 Appendix B's example, and verifiers outside the grammar.
func TestOAuthPKCE(t *testing.T) {
	const challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
	for _, c := range []struct {
		verifier string
		ok       bool
	}{
		{"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", true},
		{"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXK", false},
		{challenge, false}, // plain: the challenge itself is no verifier
		{"short", false},
		{strings.Repeat("a", 129), false},
		{"dBjftJeZ4CVP mB92K27uhbUJU1p1r_wW1gFWFOEjXk", false},
	} {
		if got := pkceMatches(c.verifier, challenge); got != c.ok {
			t.Errorf("pkceMatches(%q) = %v, want %v", c.verifier, got, c.ok)
		}
	}
}

// TestOAuthClientID: a client id round-trips its registration; a forged one is checked like a
// registration.
func TestOAuthClientID(t *testing.T) {
	c := &client{RedirectURIs: []string{"http://127.0.0.1:9/cb"}, Name: "Desk"}
	got, err := parseClient(c.id())
	if err != nil || got.Name != "Desk" || len(got.RedirectURIs) != 1 || got.RedirectURIs[0] != "http://127.0.0.1:9/cb" {
		t.Fatalf("parseClient(id) = %+v, %v", got, err)
	}
	forged := &client{RedirectURIs: []string{"http://evil.example/cb"}}
	if _, err := parseClient(forged.id()); err == nil {
		t.Error("a client id with an http redirect URI on a public host was accepted")
	}
	for _, id := range []string{"", "wmc_", "wmc_!!", "other", clientIDPrefix + "e30"} {
		if _, err := parseClient(id); err == nil {
			t.Errorf("parseClient(%q) accepted", id)
		}
	}
}
