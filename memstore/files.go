package memstore

import (
	"bytes"
	"context"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// file is one stored file or directory; never changed once stored.
type file struct {
	info weft.FileInfo
	data []byte
	text bool
}

// infoCopy returns the entry's FileInfo sharing nothing with it.
func (f *file) infoCopy() weft.FileInfo {
	fi := f.info
	fi.Metadata = cloneMap(fi.Metadata)
	return fi
}

// fileReader implements weft.FileReader over a Store.
type fileReader struct{ s *Store }

// Files reads threads' filesystems.
func (s *Store) Files() weft.FileReader { return &s.files }

// read runs fn with the thread's committed file map under its read lock.
func (r *fileReader) read(threadID, p string, fn func(files map[string]*file, p string) error) error {
	if r.s.closed.Load() {
		return errClosed
	}
	p, err := storecontract.CleanPath(threadID, p)
	if err != nil {
		return err
	}
	th := r.s.lookup(threadID)
	if th == nil {
		return notFound(threadID)
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	if th.deleted {
		return notFound(threadID)
	}
	return fn(th.files, p)
}

// list runs fn with the thread's committed file map under its read lock; an unknown thread has no
// files.
func (r *fileReader) list(threadID string, fn func(files map[string]*file)) error {
	if r.s.closed.Load() {
		return errClosed
	}
	th := r.s.lookup(threadID)
	if th == nil {
		return nil
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	if !th.deleted {
		fn(th.files)
	}
	return nil
}

// Stat describes a file or directory.
func (r *fileReader) Stat(ctx context.Context, threadID, p string) (weft.FileInfo, error) {
	var fi weft.FileInfo
	err := r.read(threadID, p, func(files map[string]*file, p string) error {
		if p == "/" {
			fi = weft.FileInfo{Path: "/", IsDir: true} // the implicit root
			return nil
		}
		f, ok := files[p]
		if !ok {
			return storecontract.FileNotFound(threadID, p)
		}
		fi = f.infoCopy()
		return nil
	})
	return fi, err
}

// ReadFile returns a file's bytes.
func (r *fileReader) ReadFile(ctx context.Context, threadID, p string) ([]byte, error) {
	var data []byte
	err := r.read(threadID, p, func(files map[string]*file, p string) error {
		f, err := regularFile(threadID, files, p)
		if err != nil {
			return err
		}
		data = bytes.Clone(f.data)
		if data == nil {
			data = []byte{}
		}
		return nil
	})
	return data, err
}

func regularFile(threadID string, files map[string]*file, p string) (*file, error) {
	f, ok := files[p]
	if p == "/" || (ok && f.info.IsDir) {
		return nil, weft.Errorf(weft.EInvalid, "thread %s: %s is a directory", threadID, p)
	}
	if !ok {
		return nil, storecontract.FileNotFound(threadID, p)
	}
	return f, nil
}

// Open streams a file (stored bytes are immutable, so the stream needs no lock).
func (r *fileReader) Open(ctx context.Context, threadID, p string) (io.ReadCloser, error) {
	var data []byte
	err := r.read(threadID, p, func(files map[string]*file, p string) error {
		f, err := regularFile(threadID, files, p)
		if err == nil {
			data = f.data
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// ReadDir lists a directory's direct entries sorted by name.
func (r *fileReader) ReadDir(ctx context.Context, threadID, p string) ([]weft.FileInfo, error) {
	var out []weft.FileInfo
	err := r.read(threadID, p, func(files map[string]*file, p string) error {
		if p != "/" {
			f, ok := files[p]
			if !ok {
				return storecontract.FileNotFound(threadID, p)
			}
			if !f.info.IsDir {
				return weft.Errorf(weft.EInvalid, "thread %s: %s is not a directory", threadID, p)
			}
		}
		for fp, f := range files {
			if storecontract.ParentDir(fp) == p {
				out = append(out, f.infoCopy())
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b weft.FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}

// Grep searches text files (sorted by path) for lines matching an RE2 pattern.
func (r *fileReader) Grep(ctx context.Context, threadID, pattern string, o weft.GrepOptions) ([]weft.GrepMatch, error) {
	plan, err := storecontract.PlanGrep(threadID, pattern, o)
	if err != nil {
		return nil, err
	}
	var cands []*file
	err = r.list(threadID, func(files map[string]*file) {
		for fp, f := range files {
			if f.text && plan.Selects(fp) {
				cands = append(cands, f)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(cands, func(a, b *file) int { return strings.Compare(a.info.Path, b.info.Path) })
	out := []weft.GrepMatch{}
	for _, f := range cands {
		full, err := plan.Search(f.info.Path, bytes.NewReader(f.data), &out)
		if err != nil || full {
			return out, err
		}
	}
	return out, nil
}

// Find lists files (not directories) matching a ** glob, sorted by path.
func (r *fileReader) Find(ctx context.Context, threadID, glob string) ([]weft.FileInfo, error) {
	if err := storecontract.CheckGlob(glob); err != nil {
		return nil, err
	}
	out := []weft.FileInfo{}
	err := r.list(threadID, func(files map[string]*file) {
		for fp, f := range files {
			if ok, _ := storecontract.MatchGlob(glob, fp); ok && !f.info.IsDir {
				out = append(out, f.infoCopy())
			}
		}
	})
	slices.SortFunc(out, func(a, b weft.FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return out, err
}

// Usage counts the thread's files and their bytes.
func (r *fileReader) Usage(ctx context.Context, threadID string) (weft.FileStats, error) {
	var st weft.FileStats
	err := r.list(threadID, func(files map[string]*file) {
		for _, f := range files {
			if !f.info.IsDir {
				st.Files++
				st.Bytes += f.info.Size
			}
		}
	})
	return st, err
}

// fileMap returns the transaction's private copy of the thread's file map.
func (t *tx) fileMap() map[string]*file {
	if t.files == nil {
		t.files = make(map[string]*file, len(t.th.files)+1)
		for k, v := range t.th.files {
			t.files[k] = v
		}
	}
	return t.files
}

// mkdirs creates p's missing ancestors; an ancestor that is a file is an error.
func (t *tx) mkdirs(files map[string]*file, p string) error {
	for _, d := range storecontract.Ancestors(p) {
		if err := t.mkdir(files, d); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) mkdir(files map[string]*file, d string) error {
	if f, ok := files[d]; ok {
		if !f.info.IsDir {
			return weft.Errorf(weft.EConflict, "thread %s: %s is a file, not a directory", t.id, d)
		}
		return nil
	}
	now := t.clock()
	files[d] = &file{info: weft.FileInfo{Path: d, Name: path.Base(d), IsDir: true, CreatedAt: now, UpdatedAt: now}}
	return nil
}

// WriteFile stores a file, replacing an existing one, and creates its parent directories. It sets
// f's Path (cleaned), Name, Size, MimeType (detected when empty) and times.
func (t *tx) WriteFile(f *weft.FileInfo, data []byte) error {
	p, err := storecontract.CleanPath(t.id, f.Path)
	if err != nil {
		return err
	}
	md, err := normJSONMap(f.Metadata)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: file %s metadata: %v", t.id, p, err)
	}
	files := t.fileMap()
	old, exists := files[p]
	if p == "/" || (exists && old.info.IsDir) {
		return weft.Errorf(weft.EConflict, "thread %s: %s is a directory", t.id, p)
	}
	if err := t.mkdirs(files, p); err != nil {
		return err
	}
	storecontract.StampWrittenFile(f, p, data, t.clock())
	if exists {
		f.CreatedAt = old.info.CreatedAt
	}
	info := *f
	info.Metadata = md
	files[p] = &file{info: info, data: bytes.Clone(data), text: weft.IsTextMIME(f.MimeType)}
	return nil
}

// Mkdir creates a directory and its parents; an existing directory is fine.
func (t *tx) Mkdir(p string) error {
	p, err := storecontract.CleanPath(t.id, p)
	if err != nil || p == "/" {
		return err
	}
	files := t.fileMap()
	if err := t.mkdirs(files, p); err != nil {
		return err
	}
	return t.mkdir(files, p)
}

// RemoveFile removes a file (not a directory).
func (t *tx) RemoveFile(p string) error {
	p, err := storecontract.CleanPath(t.id, p)
	if err != nil {
		return err
	}
	files := t.fileMap()
	if _, err := regularFile(t.id, files, p); err != nil {
		return err
	}
	delete(files, p)
	return nil
}

// RemoveDir removes a directory; a non-empty one only when recursive (then with everything below).
func (t *tx) RemoveDir(p string, recursive bool) error {
	p, err := storecontract.CleanRemoveDir(t.id, p)
	if err != nil {
		return err
	}
	files := t.fileMap()
	f, ok := files[p]
	if !ok {
		return storecontract.FileNotFound(t.id, p)
	}
	if !f.info.IsDir {
		return weft.Errorf(weft.EInvalid, "thread %s: %s is not a directory", t.id, p)
	}
	var below []string
	for fp := range files {
		if fp != p && storecontract.Within(fp, p) {
			below = append(below, fp)
		}
	}
	if len(below) > 0 && !recursive {
		return weft.Errorf(weft.EConflict, "thread %s: directory %s is not empty", t.id, p)
	}
	for _, fp := range below {
		delete(files, fp)
	}
	delete(files, p)
	return nil
}

// RenameFile moves a file or a directory with its contents; the target must not exist. Parent
// directories of the target are created.
func (t *tx) RenameFile(from, to string) error {
	from, to, err := storecontract.CleanRename(t.id, from, to)
	if err != nil {
		return err
	}
	files := t.fileMap()
	f, ok := files[from]
	if !ok {
		return storecontract.FileNotFound(t.id, from)
	}
	if _, ok := files[to]; ok {
		return weft.Errorf(weft.EConflict, "thread %s: rename %s: target %s already exists", t.id, from, to)
	}
	if err := storecontract.CheckRenameInto(t.id, from, to); err != nil {
		return err
	}
	if err := t.mkdirs(files, to); err != nil {
		return err
	}
	move := func(src, dst string, f *file) {
		c := *f
		c.info.Path, c.info.Name = dst, path.Base(dst)
		delete(files, src)
		files[dst] = &c
	}
	if f.info.IsDir {
		for fp, e := range files {
			if fp != from && storecontract.Within(fp, from) {
				move(fp, to+fp[len(from):], e)
			}
		}
	}
	move(from, to, f)
	return nil
}
