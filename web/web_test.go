package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/weft-agents/weft/web"
)

// TestHandler: the list and thread pages are the shell, other paths a 404 shell; the scripts,
// styles and modules the shell names are served; every answer carries the security headers.
func TestHandler(t *testing.T) {
	h := web.Handler()
	get := func(path string) (*http.Response, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		b, _ := io.ReadAll(rec.Result().Body)
		return rec.Result(), string(b)
	}
	tests := []struct {
		path, contentType string
		status            int
		body              string
	}{
		{"/", "text/html", 200, `<main id="main">`},
		{"/threads/thr_01abc", "text/html", 200, `<main id="main">`},
		{"/threads/thr_01abc/extra", "text/html", 404, `<main id="main">`},
		{"/nothing", "text/html", 404, `<main id="main">`},
		{"/assets/", "text/html", 404, `<main id="main">`},
		{"/assets/style.css", "text/css", 200, "--accent"},
		{"/assets/app.js", "text/javascript", 200, "askForKey"},
		{"/assets/missing.js", "text/plain", 404, "404"},
	}
	for _, tc := range tests {
		resp, body := get(tc.path)
		if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.contentType) || !strings.Contains(body, tc.body) {
			t.Errorf("GET %s: %d %s, want %d %s with %q", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.status, tc.contentType, tc.body)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: security headers %v", tc.path, resp.Header)
		}
	}
	// Every asset the shell names exists, and the shell has no inline script the policy would
	// refuse.
	_, shell := get("/")
	for _, m := range regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllStringSubmatch(shell, -1) {
		if resp, _ := get(m[1]); resp.StatusCode != 200 {
			t.Errorf("the shell names %s: %d", m[1], resp.StatusCode)
		}
	}
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(shell) || regexp.MustCompile(`\son[a-z]+=`).MatchString(shell) {
		t.Errorf("the shell has inline script:\n%s", shell)
	}
	// Modules import only modules that exist.
	for _, name := range []string{"app.js", "list.js", "thread.js", "api.js", "dom.js", "composer.js"} {
		_, src := get("/assets/" + name)
		for _, m := range regexp.MustCompile(`(?:from|import\()\s*'\./([a-z]+\.js)'`).FindAllStringSubmatch(src, -1) {
			if resp, _ := get("/assets/" + m[1]); resp.StatusCode != 200 {
				t.Errorf("%s imports %s: %d", name, m[1], resp.StatusCode)
			}
		}
	}
}
