package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func writeFile(t *testing.T, s weft.Store, threadID, p string, data []byte, mime string) weft.FileInfo {
	t.Helper()
	fi := weft.FileInfo{Path: p, MimeType: mime}
	mustTx(t, s, threadID, func(tx weft.Tx) error { return tx.WriteFile(&fi, data) })
	return fi
}

func testFileRoundTrip(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	fs := s.Files()
	sizes := []int{0, 1, weft.ChunkSize, weft.ChunkSize + 1, 10 << 20}
	var total int64
	for _, n := range sizes {
		data := pattern(n)
		p := fmt.Sprintf("/data/f%d.bin", n)
		fi := writeFile(t, s, th.ID, p, data, "application/octet-stream")
		if fi.Path != p || fi.Name != fmt.Sprintf("f%d.bin", n) || fi.Size != int64(n) || fi.CreatedAt.IsZero() {
			t.Errorf("WriteFile set %+v", fi)
		}
		total += int64(n)
		got, err := fs.ReadFile(ctx, th.ID, p)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("ReadFile %d B: %d B back, %v", n, len(got), err)
		}
		rc, err := fs.Open(ctx, th.ID, p)
		if err != nil {
			t.Fatalf("Open %d B: %v", n, err)
		}
		got, err = io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("Open %d B: %d B back, %v", n, len(got), err)
		}
		st, err := fs.Stat(ctx, th.ID, p)
		if err != nil || st.Size != int64(n) || st.IsDir || st.MimeType != "application/octet-stream" {
			t.Errorf("Stat %d B: %+v %v", n, st, err)
		}
	}
	if u, err := fs.Usage(ctx, th.ID); err != nil || u.Files != len(sizes) || u.Bytes != total {
		t.Errorf("Usage: %+v %v, want %d files %d bytes", u, err, len(sizes), total)
	}
	// Replacing a file switches between chunked and inline storage and keeps its creation time.
	p := fmt.Sprintf("/data/f%d.bin", 10<<20)
	before, _ := fs.Stat(ctx, th.ID, p)
	writeFile(t, s, th.ID, p, []byte("small now"), "text/plain")
	if got, _ := fs.ReadFile(ctx, th.ID, p); string(got) != "small now" {
		t.Errorf("replaced chunked file reads %d B", len(got))
	}
	after, _ := fs.Stat(ctx, th.ID, p)
	if !after.CreatedAt.Equal(before.CreatedAt) || after.Size != 9 || after.MimeType != "text/plain" {
		t.Errorf("replaced file: %+v", after)
	}
	big := pattern(weft.ChunkSize*2 + 5)
	writeFile(t, s, th.ID, "/data/f1.bin", big, "")
	if got, _ := fs.ReadFile(ctx, th.ID, "/data/f1.bin"); !bytes.Equal(got, big) {
		t.Errorf("inline file replaced by chunked reads %d B", len(got))
	}
	// Metadata and image fields round-trip.
	fi := weft.FileInfo{Path: "/img.png", MimeType: "image/png", Width: 4, Height: 3, Description: "a dot", Metadata: map[string]any{"k": 1}}
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.WriteFile(&fi, []byte{0x89, 'P', 'N', 'G'}) })
	st, err := fs.Stat(ctx, th.ID, "/img.png")
	if err != nil || st.Width != 4 || st.Height != 3 || st.Description != "a dot" || !reflect.DeepEqual(st.Metadata, map[string]any{"k": 1.0}) || st.Name != "img.png" {
		t.Errorf("image stat: %+v %v", st, err)
	}
	if fi := writeFile(t, s, th.ID, "/notes.md", []byte("# hi"), ""); !strings.HasPrefix(fi.MimeType, "text/markdown") {
		t.Errorf("detected MIME of .md: %q", fi.MimeType)
	}
	_, err = fs.ReadFile(ctx, th.ID, "/missing")
	wantErr(t, "ReadFile(missing)", err, weft.ErrNotFound)
	_, err = fs.Open(ctx, th.ID, "/missing")
	wantErr(t, "Open(missing)", err, weft.ErrNotFound)
}

func names(fis []weft.FileInfo) []string {
	out := make([]string, len(fis))
	for i, f := range fis {
		out[i] = f.Name
	}
	return out
}

func paths(fis []weft.FileInfo) []string {
	out := make([]string, len(fis))
	for i, f := range fis {
		out[i] = f.Path
	}
	return out
}

func testFileDirs(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	fs := s.Files()
	writeFile(t, s, th.ID, "/a/b/c.txt", []byte("c"), "")
	for _, d := range []string{"/", "/a", "/a/b"} {
		if st, err := fs.Stat(ctx, th.ID, d); err != nil || !st.IsDir || st.Path != d {
			t.Errorf("Stat(%s) = %+v, %v; want a directory", d, st, err)
		}
	}
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		if err := tx.Mkdir("/a/x/y"); err != nil {
			return err
		}
		return tx.Mkdir("/a/x") // existing: fine
	})
	writeFile(t, s, th.ID, "/a/z.txt", []byte("z"), "")
	writeFile(t, s, th.ID, "/a/m.txt", []byte("m"), "")
	if got, err := fs.ReadDir(ctx, th.ID, "/"); err != nil || !slices.Equal(names(got), []string{"a"}) {
		t.Errorf("ReadDir(/) = %v, %v", names(got), err)
	}
	got, err := fs.ReadDir(ctx, th.ID, "/a")
	if err != nil || !slices.Equal(names(got), []string{"b", "m.txt", "x", "z.txt"}) || !slices.Equal(paths(got), []string{"/a/b", "/a/m.txt", "/a/x", "/a/z.txt"}) {
		t.Errorf("ReadDir(/a) = %v, %v", paths(got), err)
	} else if !got[0].IsDir || got[1].IsDir || got[1].Size != 1 {
		t.Errorf("ReadDir(/a) entries: %+v", got)
	}
	_, err = fs.ReadDir(ctx, th.ID, "/nope")
	wantErr(t, "ReadDir(missing)", err, weft.ErrNotFound)
	if _, err := fs.ReadDir(ctx, th.ID, "/a/m.txt"); err == nil {
		t.Error("ReadDir of a file succeeded")
	}
	tx := func(fn func(weft.Tx) error) error { return s.Tx(ctx, th.ID, nil, fn) }
	wantCode(t, "RemoveDir(non-empty)", tx(func(tx weft.Tx) error { return tx.RemoveDir("/a", false) }), weft.EConflict)
	wantCode(t, "WriteFile below a file", tx(func(tx weft.Tx) error {
		return tx.WriteFile(&weft.FileInfo{Path: "/a/m.txt/inner"}, []byte("x"))
	}), weft.EConflict)
	wantCode(t, "WriteFile onto a directory", tx(func(tx weft.Tx) error { return tx.WriteFile(&weft.FileInfo{Path: "/a/x"}, nil) }), weft.EConflict)
	wantCode(t, "Mkdir onto a file", tx(func(tx weft.Tx) error { return tx.Mkdir("/a/m.txt") }), weft.EConflict)
	if err := tx(func(tx weft.Tx) error { return tx.RemoveFile("/a/x") }); err == nil {
		t.Error("RemoveFile of a directory succeeded")
	}
	if err := tx(func(tx weft.Tx) error { return tx.RemoveDir("/a/m.txt", false) }); err == nil {
		t.Error("RemoveDir of a file succeeded")
	}
	wantErr(t, "RemoveFile(missing)", tx(func(tx weft.Tx) error { return tx.RemoveFile("/a/none") }), weft.ErrNotFound)
	wantErr(t, "RemoveDir(missing)", tx(func(tx weft.Tx) error { return tx.RemoveDir("/none", true) }), weft.ErrNotFound)
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		if err := tx.RemoveDir("/a/x/y", false); err != nil {
			return err
		}
		return tx.RemoveFile("/a/m.txt")
	})
	if got, _ := fs.ReadDir(ctx, th.ID, "/a"); !slices.Equal(names(got), []string{"b", "x", "z.txt"}) {
		t.Errorf("after removals: %v", names(got))
	}
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.RemoveDir("/a", true) })
	_, err = fs.Stat(ctx, th.ID, "/a/b/c.txt")
	wantErr(t, "Stat after recursive RemoveDir", err, weft.ErrNotFound)
	if u, _ := fs.Usage(ctx, th.ID); u.Files != 0 || u.Bytes != 0 {
		t.Errorf("usage after removing everything: %+v", u)
	}
	if got, err := fs.ReadDir(ctx, th.ID, "/"); err != nil || len(got) != 0 {
		t.Errorf("ReadDir(/) of an empty filesystem = %v, %v", got, err)
	}
}

func testFileRename(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	fs := s.Files()
	writeFile(t, s, th.ID, "/x/a.txt", []byte("aaa"), "")
	writeFile(t, s, th.ID, "/x/b.txt", []byte("bbb"), "")
	big := pattern(weft.ChunkSize + 10)
	writeFile(t, s, th.ID, "/x/big.bin", big, "")
	tx := func(fn func(weft.Tx) error) error { return s.Tx(ctx, th.ID, nil, fn) }
	wantCode(t, "Rename onto existing", tx(func(tx weft.Tx) error { return tx.RenameFile("/x/a.txt", "/x/b.txt") }), weft.EConflict)
	wantErr(t, "Rename(missing)", tx(func(tx weft.Tx) error { return tx.RenameFile("/x/none", "/x/c") }), weft.ErrNotFound)
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.RenameFile("/x/a.txt", "/y/z/c.txt") })
	if got, err := fs.ReadFile(ctx, th.ID, "/y/z/c.txt"); err != nil || string(got) != "aaa" {
		t.Errorf("renamed file: %q %v", got, err)
	}
	if st, err := fs.Stat(ctx, th.ID, "/y/z/c.txt"); err != nil || st.Name != "c.txt" || st.Path != "/y/z/c.txt" {
		t.Errorf("renamed stat: %+v %v", st, err)
	}
	_, err := fs.Stat(ctx, th.ID, "/x/a.txt")
	wantErr(t, "old path after rename", err, weft.ErrNotFound)
	// Directories move with their contents, chunked files included.
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.RenameFile("/x", "/w") })
	if got, err := fs.ReadFile(ctx, th.ID, "/w/big.bin"); err != nil || !bytes.Equal(got, big) {
		t.Errorf("moved chunked file: %d B, %v", len(got), err)
	}
	if got, _ := fs.ReadDir(ctx, th.ID, "/w"); !slices.Equal(paths(got), []string{"/w/b.txt", "/w/big.bin"}) {
		t.Errorf("moved dir lists %v", paths(got))
	}
	if _, err := fs.Stat(ctx, th.ID, "/x/b.txt"); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("old dir content after move: %v", err)
	}
	if err := tx(func(tx weft.Tx) error { return tx.RenameFile("/w", "/w/sub") }); err == nil {
		t.Error("moving a directory into itself succeeded")
	}
}

func testFilePaths(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	fs := s.Files()
	for _, p := range []string{"", "rel/a.txt", "../x", "/../x", "/a/../../x", "/a//b", "/a\x00b", `/a\b`, "/" + strings.Repeat("x", 1024)} {
		err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.WriteFile(&weft.FileInfo{Path: p}, []byte("x")) })
		wantErr(t, fmt.Sprintf("WriteFile(%q)", p), err, weft.ErrInvalidPath)
		_, err = fs.Stat(ctx, th.ID, p)
		wantErr(t, fmt.Sprintf("Stat(%q)", p), err, weft.ErrInvalidPath)
		_, err = fs.ReadFile(ctx, th.ID, p)
		wantErr(t, fmt.Sprintf("ReadFile(%q)", p), err, weft.ErrInvalidPath)
	}
	err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.RenameFile("/a", "/../b") })
	wantErr(t, "RenameFile to an escaping path", err, weft.ErrInvalidPath)
	fi := writeFile(t, s, th.ID, "/a/./b/../c.txt/", []byte("x"), "")
	if fi.Path != "/a/c.txt" {
		t.Errorf("cleaned path %q, want /a/c.txt", fi.Path)
	}
	if got, err := fs.ReadFile(ctx, th.ID, "/a/b/../c.txt"); err != nil || string(got) != "x" {
		t.Errorf("read via uncleaned path: %q %v", got, err)
	}
	if u, _ := fs.Usage(ctx, th.ID); u.Files != 1 {
		t.Errorf("invalid writes stored files: %+v", u)
	}
}

func testFileGrep(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	writeFile(t, s, th.ID, "/docs/a.md", []byte("alpha\nBeta\nalphabet\n"), "")
	writeFile(t, s, th.ID, "/docs/sub/b.txt", []byte("gamma\r\nALPHA one\nlast alpha"), "")
	writeFile(t, s, th.ID, "/src/c.go", []byte("package alpha"), "")
	writeFile(t, s, th.ID, "/docs/e.json", []byte(`{"alpha": 1}`), "application/json")
	writeFile(t, s, th.ID, "/bin/d.bin", []byte("alpha"), "application/octet-stream")
	big := append(bytes.Repeat([]byte("filler line\n"), weft.ChunkSize/12+10), []byte("needle alpha at the end\n")...)
	writeFile(t, s, th.ID, "/big/log.txt", big, "text/plain")
	bigLine := len(bytes.Split(big, []byte("\n"))) - 1
	str := func(ms []weft.GrepMatch) []string {
		out := []string{}
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%s:%d:%s", m.Path, m.Line, m.Text))
		}
		return out
	}
	cases := []struct {
		name    string
		pattern string
		o       weft.GrepOptions
		want    []string
	}{
		{"plain", "alpha", weft.GrepOptions{}, []string{
			fmt.Sprintf("/big/log.txt:%d:needle alpha at the end", bigLine),
			"/docs/a.md:1:alpha", "/docs/a.md:3:alphabet", `/docs/e.json:1:{"alpha": 1}`, "/docs/sub/b.txt:3:last alpha", "/src/c.go:1:package alpha"}},
		{"ignore case", "^alpha", weft.GrepOptions{IgnoreCase: true, Path: "/docs/sub"}, []string{"/docs/sub/b.txt:2:ALPHA one"}},
		{"regexp", `^(al|Be)\w+$`, weft.GrepOptions{Path: "/docs"}, []string{"/docs/a.md:1:alpha", "/docs/a.md:2:Beta", "/docs/a.md:3:alphabet"}},
		{"path prefix is a directory", "alpha", weft.GrepOptions{Path: "/doc"}, []string{}},
		{"glob", "alpha", weft.GrepOptions{Glob: "**/*.md"}, []string{"/docs/a.md:1:alpha", "/docs/a.md:3:alphabet"}},
		{"max results", "alpha", weft.GrepOptions{MaxResults: 2}, []string{fmt.Sprintf("/big/log.txt:%d:needle alpha at the end", bigLine), "/docs/a.md:1:alpha"}},
		{"none", "zebra", weft.GrepOptions{}, []string{}},
	}
	for _, c := range cases {
		got, err := s.Files().Grep(ctx, th.ID, c.pattern, c.o)
		if err != nil || !slices.Equal(str(got), c.want) {
			t.Errorf("%s: got %q (%v)\nwant %q", c.name, str(got), err, c.want)
		}
	}
	_, err := s.Files().Grep(ctx, th.ID, "(", weft.GrepOptions{})
	wantCode(t, "bad pattern", err, weft.EInvalid)
}

func testFileFind(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	for _, p := range []string{"/a.md", "/docs/x.md", "/docs/sub/y.md", "/docs/z.txt", "/other/deep/er/q.md"} {
		writeFile(t, s, th.ID, p, []byte(p), "")
	}
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.Mkdir("/docs/empty.md") })
	cases := []struct {
		glob string
		want []string
	}{
		{"**/*.md", []string{"/a.md", "/docs/sub/y.md", "/docs/x.md", "/other/deep/er/q.md"}},
		{"/docs/*.md", []string{"/docs/x.md"}},
		{"docs/**", []string{"/docs/sub/y.md", "/docs/x.md", "/docs/z.txt"}},
		{"/other/**/q.md", []string{"/other/deep/er/q.md"}},
		{"*.md", []string{"/a.md"}},
		{"/docs/?.txt", []string{"/docs/z.txt"}},
		{"/nothing/**", []string{}},
	}
	for _, c := range cases {
		got, err := s.Files().Find(ctx, th.ID, c.glob)
		if err != nil || !slices.Equal(paths(got), c.want) {
			t.Errorf("Find(%q) = %v (%v), want %v", c.glob, paths(got), err, c.want)
		}
	}
	_, err := s.Files().Find(ctx, th.ID, "/[")
	wantCode(t, "bad glob", err, weft.EInvalid)
}
