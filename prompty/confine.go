package prompty

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// errOutside is returned for a path that leaves the project root.
var errOutside = errors.New("outside allowed roots")

// confinedFS reads files relative to a .prompty file while keeping them inside the project root
// (symlinks resolved).
type confinedFS struct {
	root string // absolute, symlinks resolved
	dir  string // the .prompty file's directory, absolute, symlinks resolved
	// files, when set, replaces the disk for reads; it gets the cleaned path relative to dir.
	files func(path string) ([]byte, error)
}

func newConfinedFS(root, dir string) *confinedFS {
	return &confinedFS{root: realPath(root), dir: realPath(dir)}
}

// realPath makes p absolute and resolves its symlinks as far as it exists.
func realPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		abs = filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// within reports whether p is root or below it (both clean and absolute).
func within(root, p string) bool {
	if p == root {
		return true
	}
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// read reads name relative to dir (a directory inside the root). It returns the file's resolved
// path. Errors: errOutside (`outside allowed roots`) and fs.ErrNotExist (`not found`).
func (c *confinedFS) read(dir, name string) (string, []byte, error) {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return "", nil, notFoundError{fs.ErrNotExist}
	}
	p := filepath.FromSlash(name)
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	if !within(c.root, p) {
		return "", nil, errOutside
	}
	if c.files != nil {
		rel, err := filepath.Rel(c.dir, p)
		if err != nil {
			return "", nil, errOutside
		}
		data, err := c.files(filepath.ToSlash(rel))
		if err != nil {
			return "", nil, notFound(err)
		}
		if len(data) > maxMediaBytes {
			return "", nil, errors.New("file is larger than 20 MiB")
		}
		return p, data, nil
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", nil, notFound(err)
	}
	if !within(c.root, real) {
		return "", nil, errOutside
	}
	f, err := os.Open(real)
	if err != nil {
		return "", nil, notFound(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", nil, notFound(err)
	}
	if !st.Mode().IsRegular() {
		return "", nil, fmt.Errorf("not a regular file")
	}
	if st.Size() > maxMediaBytes {
		return "", nil, errors.New("file is larger than 20 MiB")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxMediaBytes+1))
	if err != nil {
		return "", nil, err
	}
	if len(data) > maxMediaBytes {
		return "", nil, errors.New("file is larger than 20 MiB")
	}
	return real, data, nil
}

// notFoundError reads `not found` and unwraps to the cause.
type notFoundError struct{ err error }

// Error reads "not found".
func (e notFoundError) Error() string { return "not found" }

// Unwrap returns the fs error.
func (e notFoundError) Unwrap() error { return e.err }

func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return notFoundError{err}
	}
	return err
}
