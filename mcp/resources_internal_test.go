package mcp

import (
	"strings"
	"testing"
)

// FuzzParseURI: parseURI never panics, and a file URI it accepts names an absolute path that
// fileURI writes back to a URI parsing to the same thread and path.
func FuzzParseURI(f *testing.F) {
	for _, s := range []string{"weft://threads/t1/transcript", "weft://threads/t1/files/a/b%20c.txt", "weft://threads//x",
		"weft://threads/t/files/", "weft://threads/t/files/%zz", "http://x", "weft://threads/t/files/a/../b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		thread, path, transcript, err := parseURI(uri)
		if err != nil || transcript {
			return
		}
		if thread == "" || !strings.HasPrefix(path, "/") {
			t.Fatalf("%q: thread %q path %q", uri, thread, path)
		}
		if strings.Contains(thread, "/") {
			t.Fatalf("%q: thread %q holds a slash", uri, thread)
		}
		th2, p2, _, err := parseURI(fileURI(thread, path))
		if err != nil || th2 != thread || p2 != path {
			t.Fatalf("%q: round trip gave %q %q %v", uri, th2, p2, err)
		}
	})
}
