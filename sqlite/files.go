package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/sqlstore"
	"github.com/weft-agents/weft/internal/storecontract"
)

// fileReader implements weft.FileReader over a Store.
type fileReader struct{ s *Store }

// Files reads threads' filesystems.
func (s *Store) Files() weft.FileReader { return &s.files }

const fileCols = `id, path, name, is_dir, is_text, mime_type, size, chunk_count, width, height, description, metadata, created_at, updated_at`

// fileRow is a files row without its data.
type fileRow struct {
	id     int64
	info   weft.FileInfo
	text   bool
	chunks int
}

func scanFile(sc scanner) (fileRow, error) {
	var r fileRow
	var md string
	var created, updated int64
	err := sc.Scan(&r.id, &r.info.Path, &r.info.Name, &r.info.IsDir, &r.text, &r.info.MimeType, &r.info.Size, &r.chunks,
		&r.info.Width, &r.info.Height, &r.info.Description, &md, &created, &updated)
	if err != nil {
		return r, err
	}
	r.info.CreatedAt, r.info.UpdatedAt = fromNanos(created), fromNanos(updated)
	if md != "" {
		if err := json.Unmarshal([]byte(md), &r.info.Metadata); err != nil {
			return r, fmt.Errorf("file %s metadata: %w", r.info.Path, err)
		}
	}
	return r, nil
}

// missing distinguishes an unknown thread from a missing file.
func (r *fileReader) missing(ctx context.Context, threadID, p string) error {
	var one int
	if err := r.s.row(ctx, qThreadExists, []any{&one}, threadID); err != nil {
		return r.s.noThread(threadID, err)
	}
	return storecontract.FileNotFound(threadID, p)
}

// stat reads a file row; the root is an implicit directory.
func (r *fileReader) stat(ctx context.Context, threadID, p string) (fileRow, error) {
	if p == "/" {
		var one int
		if err := r.s.row(ctx, qThreadExists, []any{&one}, threadID); err != nil {
			return fileRow{}, r.s.noThread(threadID, err)
		}
		return fileRow{info: weft.FileInfo{Path: "/", IsDir: true}}, nil
	}
	row, err := r.s.rowOf(ctx, `SELECT `+fileCols+` FROM files WHERE thread_id = ? AND path = ?`, threadID, p)
	if err != nil {
		return fileRow{}, err
	}
	f, err := scanFile(row)
	if errors.Is(err, sql.ErrNoRows) {
		return f, r.missing(ctx, threadID, p)
	}
	if err != nil {
		return f, fmt.Errorf("sqlite: thread %s: file %s: %w", threadID, p, err)
	}
	return f, nil
}

// Stat describes a file or directory.
func (r *fileReader) Stat(ctx context.Context, threadID, p string) (weft.FileInfo, error) {
	p, err := storecontract.CleanPath(threadID, p)
	if err != nil {
		return weft.FileInfo{}, err
	}
	f, err := r.stat(ctx, threadID, p)
	return f.info, err
}

// regular reads the row of a regular file.
func (r *fileReader) regular(ctx context.Context, threadID, p string) (fileRow, error) {
	p, err := storecontract.CleanPath(threadID, p)
	if err != nil {
		return fileRow{}, err
	}
	f, err := r.stat(ctx, threadID, p)
	if err == nil && f.info.IsDir {
		err = weft.Errorf(weft.EInvalid, "thread %s: %s is a directory", threadID, p)
	}
	return f, err
}

// ReadFile returns a file's bytes, reading the row and its chunks in one read transaction.
func (r *fileReader) ReadFile(ctx context.Context, threadID, p string) ([]byte, error) {
	cp, err := storecontract.CleanPath(threadID, p)
	if err != nil {
		return nil, err
	}
	tx, err := r.s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: read %s: %w", threadID, cp, err)
	}
	defer tx.Rollback()
	var id, size int64
	var isDir bool
	var chunks int
	var data []byte
	err = tx.QueryRowContext(ctx, `SELECT id, is_dir, size, chunk_count, data FROM files WHERE thread_id = ? AND path = ?`,
		threadID, cp).Scan(&id, &isDir, &size, &chunks, &data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, r.missing(ctx, threadID, cp)
	case err != nil:
		return nil, fmt.Errorf("sqlite: thread %s: read %s: %w", threadID, cp, err)
	case isDir || cp == "/":
		return nil, weft.Errorf(weft.EInvalid, "thread %s: %s is a directory", threadID, cp)
	case chunks == 0:
		if data == nil {
			data = []byte{}
		}
		return data, nil
	}
	out := make([]byte, 0, size)
	rows, err := tx.QueryContext(ctx, `SELECT data FROM file_chunks WHERE file_id = ? ORDER BY n`, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: read %s: %w", threadID, cp, err)
	}
	defer rows.Close()
	for rows.Next() {
		var b sql.RawBytes
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: read %s: %w", threadID, cp, err)
		}
		out = append(out, b...)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: read %s: %w", threadID, cp, err)
	}
	if int64(len(out)) != size {
		return nil, fmt.Errorf("sqlite: thread %s: read %s: %d of %d bytes stored", threadID, cp, len(out), size)
	}
	return out, nil
}

// Open streams a file. A chunked file is read one chunk at a time; if it is replaced or removed
// meanwhile, the stream fails rather than mix contents.
func (r *fileReader) Open(ctx context.Context, threadID, p string) (io.ReadCloser, error) {
	f, err := r.regular(ctx, threadID, p)
	if err != nil {
		return nil, err
	}
	if f.chunks == 0 {
		data, err := r.ReadFile(ctx, threadID, f.info.Path)
		if err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	return r.chunks(ctx, threadID, f.info.Path, f.id, f.chunks), nil
}

// chunks streams the chunks of one file version (the files row id).
func (r *fileReader) chunks(ctx context.Context, threadID, path string, id int64, count int) *sqlstore.ChunkReader {
	return &sqlstore.ChunkReader{ThreadID: threadID, Path: path, Count: count, Fetch: func(n int) ([]byte, bool, error) {
		var data []byte
		err := r.s.row(ctx, `SELECT data FROM file_chunks WHERE file_id = ? AND n = ?`, []any{&data}, id, n)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("sqlite: thread %s: read %s: %w", threadID, path, err)
		}
		return data, true, nil
	}}
}

// ReadDir lists a directory's direct entries sorted by name.
func (r *fileReader) ReadDir(ctx context.Context, threadID, p string) ([]weft.FileInfo, error) {
	p, err := storecontract.CleanPath(threadID, p)
	if err != nil {
		return nil, err
	}
	d, err := r.stat(ctx, threadID, p)
	if err != nil {
		return nil, err
	}
	if !d.info.IsDir {
		return nil, weft.Errorf(weft.EInvalid, "thread %s: %s is not a directory", threadID, p)
	}
	return r.list(ctx, threadID, `SELECT `+fileCols+` FROM files WHERE thread_id = ? AND parent = ? ORDER BY name`, threadID, p)
}

func (r *fileReader) list(ctx context.Context, threadID, q string, args ...any) ([]weft.FileInfo, error) {
	rows, err := r.s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: files: %w", threadID, err)
	}
	defer rows.Close()
	var out []weft.FileInfo
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: files: %w", threadID, err)
		}
		out = append(out, f.info)
	}
	return out, rows.Err()
}

// below returns the SQL condition and arguments selecting paths strictly below dir ("/" = all),
// as an index-friendly range: '0' is the byte after '/'.
func below(dir string) (string, []any) {
	if dir == "/" {
		return "", nil
	}
	return " AND path > ? AND path < ?", []any{dir + "/", dir + "0"}
}

// Find lists files (not directories) matching a ** glob, sorted by path.
func (r *fileReader) Find(ctx context.Context, threadID, glob string) ([]weft.FileInfo, error) {
	if err := storecontract.CheckGlob(glob); err != nil {
		return nil, err
	}
	cond, args := below(sqlstore.GlobDir(glob))
	all, err := r.list(ctx, threadID, `SELECT `+fileCols+` FROM files WHERE thread_id = ? AND is_dir = 0`+cond+` ORDER BY path`,
		append([]any{threadID}, args...)...)
	if err != nil {
		return nil, err
	}
	out := []weft.FileInfo{}
	for _, f := range all {
		if ok, _ := storecontract.MatchGlob(glob, f.Path); ok {
			out = append(out, f)
		}
	}
	return out, nil
}

// Grep searches text files (sorted by path) for lines matching an RE2 pattern.
func (r *fileReader) Grep(ctx context.Context, threadID, pattern string, o weft.GrepOptions) ([]weft.GrepMatch, error) {
	plan, err := storecontract.PlanGrep(threadID, pattern, o)
	if err != nil {
		return nil, err
	}
	cond, args := "", []any{threadID}
	if prefix := plan.Prefix; prefix != "/" { // the prefix itself (a file) or anything below it
		cond, args = " AND (path = ? OR (path > ? AND path < ?))", append(args, prefix, prefix+"/", prefix+"0")
	}
	rows, err := r.s.query(ctx, `SELECT id, path, chunk_count FROM files WHERE thread_id = ? AND is_text = 1 AND is_dir = 0`+cond+` ORDER BY path`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: grep: %w", threadID, err)
	}
	type cand struct {
		id     int64
		path   string
		chunks int
	}
	var cands []cand
	for rows.Next() {
		var c cand
		if err := rows.Scan(&c.id, &c.path, &c.chunks); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: thread %s: grep: %w", threadID, err)
		}
		if plan.Selects(c.path) {
			cands = append(cands, c)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: grep: %w", threadID, err)
	}
	out := []weft.GrepMatch{}
	for _, c := range cands {
		var src io.Reader
		if c.chunks > 0 {
			src = r.chunks(ctx, threadID, c.path, c.id, c.chunks)
		} else {
			var data []byte
			err := r.s.row(ctx, `SELECT data FROM files WHERE id = ?`, []any{&data}, c.id)
			if errors.Is(err, sql.ErrNoRows) {
				continue // removed meanwhile
			}
			if err != nil {
				return nil, fmt.Errorf("sqlite: thread %s: grep %s: %w", threadID, c.path, err)
			}
			src = bytes.NewReader(data)
		}
		full, err := plan.Search(c.path, src, &out)
		if err != nil {
			return nil, err
		}
		if full {
			break
		}
	}
	return out, nil
}

// Usage counts the thread's files and their bytes.
func (r *fileReader) Usage(ctx context.Context, threadID string) (weft.FileStats, error) {
	var st weft.FileStats
	err := r.s.row(ctx, `SELECT COUNT(*), COALESCE(SUM(size), 0) FROM files WHERE thread_id = ? AND is_dir = 0`,
		[]any{&st.Files, &st.Bytes}, threadID)
	if err != nil {
		return st, fmt.Errorf("sqlite: thread %s: usage: %w", threadID, err)
	}
	return st, nil
}

// --- writes ---

// fileKind reads what is at p inside the transaction: exists, isDir, id and creation time.
func (t *tx) fileKind(p string) (exists, isDir bool, id, created int64, err error) {
	err = t.w.row(t.ctx, `SELECT id, is_dir, created_at FROM files WHERE thread_id = ? AND path = ?`,
		[]any{&id, &isDir, &created}, t.id, p)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, 0, 0, nil
	}
	if err != nil {
		return false, false, 0, 0, t.fail("file "+p, err)
	}
	return true, isDir, id, created, nil
}

// mkdir creates directory d (its parent must exist); an existing directory is fine.
func (t *tx) mkdir(d string) error {
	exists, isDir, _, _, err := t.fileKind(d)
	if err != nil {
		return err
	}
	if exists {
		if !isDir {
			return weft.Errorf(weft.EConflict, "thread %s: %s is a file, not a directory", t.id, d)
		}
		return nil
	}
	now := nanos(t.clock())
	_, err = t.w.exec(t.ctx, `INSERT INTO files (thread_id, path, parent, name, is_dir, created_at, updated_at)
		VALUES (?, ?, ?, ?, 1, ?, ?)`, t.id, d, storecontract.ParentDir(d), path.Base(d), now, now)
	if err != nil {
		return t.fail("mkdir "+d, err)
	}
	return nil
}

func (t *tx) mkdirs(p string) error {
	for _, d := range storecontract.Ancestors(p) {
		if err := t.mkdir(d); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile stores a file (chunked above weft.ChunkSize), replacing an existing one, and creates
// its parent directories. It sets f's Path (cleaned), Name, Size, MimeType (detected when empty)
// and times.
func (t *tx) WriteFile(f *weft.FileInfo, data []byte) error {
	p, err := storecontract.CleanPath(t.id, f.Path)
	if err != nil {
		return err
	}
	md, err := mapText(f.Metadata)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: file %s metadata: %v", t.id, p, err)
	}
	exists, isDir, oldID, created, err := t.fileKind(p)
	if err != nil {
		return err
	}
	if p == "/" || isDir {
		return weft.Errorf(weft.EConflict, "thread %s: %s is a directory", t.id, p)
	}
	if err := t.mkdirs(p); err != nil {
		return err
	}
	if exists {
		if _, err := t.w.exec(t.ctx, `DELETE FROM files WHERE id = ?`, oldID); err != nil {
			return t.fail("replace "+p, err)
		}
	}
	storecontract.StampWrittenFile(f, p, data, t.clock())
	if exists {
		f.CreatedAt = fromNanos(created)
	}
	chunks := 0
	inline := data
	if len(data) > weft.ChunkSize {
		chunks, inline = (len(data)+weft.ChunkSize-1)/weft.ChunkSize, nil
	} else if inline == nil {
		inline = []byte{}
	}
	var id int64
	err = t.w.row(t.ctx, `INSERT INTO files (thread_id, path, parent, name, is_text, mime_type, size, data, chunk_count,
		width, height, description, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING id`, []any{&id}, t.id, p, storecontract.ParentDir(p), f.Name, boolInt(weft.IsTextMIME(f.MimeType)), f.MimeType, f.Size, inline,
		chunks, f.Width, f.Height, f.Description, md, nanos(f.CreatedAt), nanos(f.UpdatedAt))
	if err != nil {
		return t.fail("write "+p, err)
	}
	for n := 0; n < chunks; n++ {
		chunk := data[n*weft.ChunkSize : min((n+1)*weft.ChunkSize, len(data))]
		if _, err := t.w.exec(t.ctx, `INSERT INTO file_chunks (file_id, n, data) VALUES (?, ?, ?)`, id, n, chunk); err != nil {
			return t.fail("write "+p, err)
		}
	}
	return nil
}

// Mkdir creates a directory and its parents; an existing directory is fine.
func (t *tx) Mkdir(p string) error {
	p, err := storecontract.CleanPath(t.id, p)
	if err != nil || p == "/" {
		return err
	}
	if err := t.mkdirs(p); err != nil {
		return err
	}
	return t.mkdir(p)
}

// RemoveFile removes a file (not a directory).
func (t *tx) RemoveFile(p string) error {
	p, err := storecontract.CleanPath(t.id, p)
	if err != nil {
		return err
	}
	exists, isDir, id, _, err := t.fileKind(p)
	switch {
	case err != nil:
		return err
	case p == "/" || isDir:
		return weft.Errorf(weft.EInvalid, "thread %s: %s is a directory", t.id, p)
	case !exists:
		return storecontract.FileNotFound(t.id, p)
	}
	if _, err := t.w.exec(t.ctx, `DELETE FROM files WHERE id = ?`, id); err != nil {
		return t.fail("remove "+p, err)
	}
	return nil
}

// RemoveDir removes a directory; a non-empty one only when recursive (then with everything below).
func (t *tx) RemoveDir(p string, recursive bool) error {
	p, err := storecontract.CleanRemoveDir(t.id, p)
	if err != nil {
		return err
	}
	exists, isDir, id, _, err := t.fileKind(p)
	switch {
	case err != nil:
		return err
	case !exists:
		return storecontract.FileNotFound(t.id, p)
	case !isDir:
		return weft.Errorf(weft.EInvalid, "thread %s: %s is not a directory", t.id, p)
	}
	cond, args := below(p)
	args = append([]any{t.id}, args...)
	if !recursive {
		var n int
		if err := t.w.row(t.ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM files WHERE thread_id = ?`+cond+` LIMIT 1)`, []any{&n}, args...); err != nil {
			return t.fail("remove dir "+p, err)
		}
		if n > 0 {
			return weft.Errorf(weft.EConflict, "thread %s: directory %s is not empty", t.id, p)
		}
	}
	if _, err := t.w.exec(t.ctx, `DELETE FROM files WHERE thread_id = ?`+cond, args...); err != nil {
		return t.fail("remove dir "+p, err)
	}
	if _, err := t.w.exec(t.ctx, `DELETE FROM files WHERE id = ?`, id); err != nil {
		return t.fail("remove dir "+p, err)
	}
	return nil
}

// RenameFile moves a file or a directory with its contents; the target must not exist. Parent
// directories of the target are created. Chunks follow their file by id.
func (t *tx) RenameFile(from, to string) error {
	from, to, err := storecontract.CleanRename(t.id, from, to)
	if err != nil {
		return err
	}
	exists, isDir, id, _, err := t.fileKind(from)
	if err != nil {
		return err
	}
	if !exists {
		return storecontract.FileNotFound(t.id, from)
	}
	if taken, _, _, _, err := t.fileKind(to); err != nil || taken {
		if err != nil {
			return err
		}
		return weft.Errorf(weft.EConflict, "thread %s: rename %s: target %s already exists", t.id, from, to)
	}
	if err := storecontract.CheckRenameInto(t.id, from, to); err != nil {
		return err
	}
	if err := t.mkdirs(to); err != nil {
		return err
	}
	if isDir {
		cond, args := below(from)
		rows, err := t.w.query(t.ctx, `SELECT id, path FROM files WHERE thread_id = ?`+cond, append([]any{t.id}, args...)...)
		if err != nil {
			return t.fail("rename "+from, err)
		}
		type move struct {
			id   int64
			path string
		}
		var moves []move
		for rows.Next() {
			var m move
			if err := rows.Scan(&m.id, &m.path); err != nil {
				rows.Close()
				return t.fail("rename "+from, err)
			}
			m.path = to + m.path[len(from):]
			moves = append(moves, m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return t.fail("rename "+from, err)
		}
		for _, m := range moves {
			if _, err := t.w.exec(t.ctx, `UPDATE files SET path = ?, parent = ? WHERE id = ?`, m.path, storecontract.ParentDir(m.path), m.id); err != nil {
				return t.fail("rename "+from, err)
			}
		}
	}
	if _, err := t.w.exec(t.ctx, `UPDATE files SET path = ?, parent = ?, name = ? WHERE id = ?`, to, storecontract.ParentDir(to), path.Base(to), id); err != nil {
		return t.fail("rename "+from, err)
	}
	return nil
}
