// Package sqlstore holds what the SQL stores (sqlite, postgres) share in their implementation, as
// opposed to the rules every store keeps (package storecontract): embedded migrations, chunked
// file streams, the directory a glob is confined to, and the byte-budget caches (lru.go) of
// histories and request bodies (bodies.go).
package sqlstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// Migration is one embedded schema step of a SQL store.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations reads a store's migrations from dir of fsys in version order; files are named
// NNNN_name.sql.
func Migrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %s: name must start with a version number", e.Name())
		}
		b, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	return out, nil
}

// GlobDir returns the longest directory prefix of a glob without wildcards ("/" when none): the
// subtree a Find must read.
func GlobDir(glob string) string {
	segs := strings.Split(strings.TrimPrefix(glob, "/"), "/")
	dir := ""
	for _, s := range segs[:len(segs)-1] {
		if strings.ContainsAny(s, `*?[\`) {
			break
		}
		dir += "/" + s
	}
	if dir == "" {
		return "/"
	}
	return dir
}

// ChunkReader streams a chunked file chunk by chunk. Fetch reads chunk n of the file's row (by the
// row's id, which a replaced file does not keep) and reports found false when it is gone: the
// stream then fails rather than mix two files' contents.
type ChunkReader struct {
	ThreadID, Path string
	Count          int
	Fetch          func(n int) (data []byte, found bool, err error)

	n         int
	buf       []byte
	closedErr error
}

// Read reads from the current chunk, fetching the next one when it is used up.
func (c *ChunkReader) Read(p []byte) (int, error) {
	if c.closedErr != nil {
		return 0, c.closedErr
	}
	for len(c.buf) == 0 {
		if c.n >= c.Count {
			return 0, io.EOF
		}
		data, found, err := c.Fetch(c.n)
		if err != nil {
			return 0, err
		}
		if !found {
			return 0, fmt.Errorf("thread %s: file %s changed while being read", c.ThreadID, c.Path)
		}
		c.buf, c.n = data, c.n+1
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

// Close ends the stream; later reads fail.
func (c *ChunkReader) Close() error {
	c.closedErr, c.buf = errors.New("read of closed file"), nil
	return nil
}
