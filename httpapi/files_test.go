package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestFileRoutesNeverRunContent: every file route answers nosniff and a sandboxing CSP; file
// contents are attachments but for raster images, whatever type the uploader claimed (issue 47,
// row 7: an uploaded text/html page was served inline from the API's origin).
func TestFileRoutesNeverRunContent(t *testing.T) {
	e := newEnv(t, envOptions{})
	id := e.createThread(e.alice)
	base := e.srv.URL + "/api/threads/" + id
	do := func(method, url, ct, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.alice)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	uploads := []struct{ name, ct, disposition string }{
		{"x.html", "text/html", "attachment"},
		{"x.svg", "image/svg+xml", "attachment"},
		{"x.js", "application/javascript", "attachment"},
		{"x.xml", "text/xml; charset=utf-8", "attachment"},
		{"x.txt", "text/plain", "attachment"},
		{"x.png", "image/png", "inline"},
		{"x.jpg", "image/jpeg", "inline"},
	}
	for _, u := range uploads {
		if resp := do("PUT", base+"/fs/"+u.name, u.ct, "<script>alert(1)</script>"); resp.StatusCode/100 != 2 {
			t.Fatalf("PUT %s: %d", u.name, resp.StatusCode)
		}
		resp := do("GET", base+"/fs/"+u.name, "", "")
		if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, u.disposition+";") {
			t.Errorf("GET %s (%s): Content-Disposition %q, want %s", u.name, u.ct, cd, u.disposition)
		}
	}
	routes := []struct{ method, path string }{
		{"GET", "/fs/x.html"}, {"GET", "/fs/x.png"}, {"GET", "/fs/x.html?stat=1"}, {"GET", "/fs/"},
		{"GET", "/fs-search?glob=*"}, {"PUT", "/fs/y.html"}, {"DELETE", "/fs/y.html"}, {"GET", "/fs/missing.html"},
	}
	for _, r := range routes {
		resp := do(r.method, base+r.path, "text/html", "<b>x</b>")
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") ||
			!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("%s %s (%d): nosniff %q, CSP %q", r.method, r.path, resp.StatusCode,
				resp.Header.Get("X-Content-Type-Options"), resp.Header.Get("Content-Security-Policy"))
		}
	}
}
