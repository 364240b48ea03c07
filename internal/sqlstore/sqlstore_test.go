package sqlstore

import (
	"io"
	"strings"
	"testing"
	"testing/fstest"
)

func TestGlobDir(t *testing.T) {
	for glob, want := range map[string]string{
		"/a/b/*.txt": "/a/b", "/**/*.go": "/", "*.md": "/", "/a/*/c/*.txt": "/a", "/a/b[0-9]/x": "/a", "/a/b/c": "/a/b",
	} {
		if got := GlobDir(glob); got != want {
			t.Errorf("GlobDir(%q) = %q, want %q", glob, got, want)
		}
	}
}

func TestMigrations(t *testing.T) {
	ms, err := Migrations(fstest.MapFS{"m/0002_b.sql": {Data: []byte("B")}, "m/0001_a.sql": {Data: []byte("A")}}, "m")
	if err != nil || len(ms) != 2 || ms[0].Version != 1 || ms[0].SQL != "A" || ms[1].Name != "0002_b.sql" {
		t.Fatalf("%+v, %v", ms, err)
	}
	if _, err := Migrations(fstest.MapFS{"m/x.sql": {Data: []byte("X")}}, "m"); err == nil || !strings.Contains(err.Error(), "version number") {
		t.Fatalf("unnumbered file: %v", err)
	}
}

// TestChunkReader: chunks are read in order; a chunk gone meanwhile fails the stream instead of
// mixing files; a closed stream fails.
func TestChunkReader(t *testing.T) {
	chunks := [][]byte{[]byte("hello "), []byte("chunked "), []byte("world")}
	r := &ChunkReader{ThreadID: "thr_1", Path: "/f", Count: 3, Fetch: func(n int) ([]byte, bool, error) { return chunks[n], true, nil }}
	if b, err := io.ReadAll(r); err != nil || string(b) != "hello chunked world" {
		t.Fatalf("%q, %v", b, err)
	}
	gone := &ChunkReader{ThreadID: "thr_1", Path: "/f", Count: 3, Fetch: func(n int) ([]byte, bool, error) { return chunks[n], n == 0, nil }}
	if _, err := io.ReadAll(gone); err == nil || !strings.Contains(err.Error(), "changed while being read") {
		t.Fatalf("replaced file: %v", err)
	}
	r.Close()
	if _, err := r.Read(make([]byte, 1)); err == nil {
		t.Fatal("read after close")
	}
}
