package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"

	"github.com/jackc/pgx/v5"

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

func scanFile(row pgx.Row) (fileRow, error) {
	var r fileRow
	var md []byte
	var created, updated int64
	err := row.Scan(&r.id, &r.info.Path, &r.info.Name, &r.info.IsDir, &r.text, &r.info.MimeType, &r.info.Size, &r.chunks,
		&r.info.Width, &r.info.Height, &r.info.Description, &md, &created, &updated)
	if err != nil {
		return r, err
	}
	r.info.CreatedAt, r.info.UpdatedAt = fromNanos(created), fromNanos(updated)
	if len(md) > 0 {
		if err := json.Unmarshal(md, &r.info.Metadata); err != nil {
			return r, fmt.Errorf("file %s metadata: %w", r.info.Path, err)
		}
	}
	return r, nil
}

// threadExists is nil for a known thread and ErrNotFound naming it otherwise.
func (r *fileReader) threadExists(ctx context.Context, threadID string) error {
	var one int
	err := r.s.pool.QueryRow(ctx, "SELECT 1 FROM threads WHERE id = $1", threadID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return threadNotFound(threadID)
	}
	return pgErr("thread "+threadID, err)
}

// missing distinguishes an unknown thread from a missing file.
func (r *fileReader) missing(ctx context.Context, threadID, p string) error {
	if err := r.threadExists(ctx, threadID); err != nil {
		return err
	}
	return storecontract.FileNotFound(threadID, p)
}

// stat reads a file row; the root is an implicit directory.
func (r *fileReader) stat(ctx context.Context, threadID, p string) (fileRow, error) {
	if p == "/" {
		if err := r.threadExists(ctx, threadID); err != nil {
			return fileRow{}, err
		}
		return fileRow{info: weft.FileInfo{Path: "/", IsDir: true}}, nil
	}
	f, err := scanFile(r.s.pool.QueryRow(ctx, `SELECT `+fileCols+` FROM files WHERE thread_id = $1 AND path = $2`, threadID, p))
	if errors.Is(err, pgx.ErrNoRows) {
		return f, r.missing(ctx, threadID, p)
	}
	if err != nil {
		return f, pgErr("thread "+threadID+": file "+p, err)
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

// ReadFile returns a file's bytes, reading the row and its chunks in one repeatable-read snapshot.
func (r *fileReader) ReadFile(ctx context.Context, threadID, p string) ([]byte, error) {
	cp, err := storecontract.CleanPath(threadID, p)
	if err != nil {
		return nil, err
	}
	if cp == "/" {
		if err := r.threadExists(ctx, threadID); err != nil {
			return nil, err
		}
		return nil, weft.Errorf(weft.EInvalid, "thread %s: / is a directory", threadID)
	}
	var out []byte
	err = pgx.BeginTxFunc(ctx, r.s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var id, size int64
		var isDir bool
		var chunks int
		var data []byte
		err := tx.QueryRow(ctx, `SELECT id, is_dir, size, chunk_count, data FROM files WHERE thread_id = $1 AND path = $2`,
			threadID, cp).Scan(&id, &isDir, &size, &chunks, &data)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return r.missing(ctx, threadID, cp)
		case err != nil:
			return err
		case isDir:
			return weft.Errorf(weft.EInvalid, "thread %s: %s is a directory", threadID, cp)
		case chunks == 0:
			out = data
			return nil
		}
		out = make([]byte, 0, size)
		rows, err := tx.Query(ctx, `SELECT data FROM file_chunks WHERE file_id = $1 ORDER BY n`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			out = append(out, rows.RawValues()[0]...)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if int64(len(out)) != size {
			return fmt.Errorf("thread %s: read %s: %d of %d bytes stored", threadID, cp, len(out), size)
		}
		return nil
	})
	if err != nil {
		return nil, pgErr("thread "+threadID+": read "+cp, err)
	}
	if out == nil {
		out = []byte{}
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
		err := r.s.pool.QueryRow(ctx, `SELECT data FROM file_chunks WHERE file_id = $1 AND n = $2`, id, n).Scan(&data)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, pgErr("thread "+threadID+": read "+path, err)
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
	return r.list(ctx, threadID, `SELECT `+fileCols+` FROM files WHERE thread_id = $1 AND parent = $2 ORDER BY name`, threadID, p)
}

func (r *fileReader) list(ctx context.Context, threadID, q string, args ...any) ([]weft.FileInfo, error) {
	rows, err := r.s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, pgErr("thread "+threadID+": files", err)
	}
	defer rows.Close()
	var out []weft.FileInfo
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return nil, pgErr("thread "+threadID+": files", err)
		}
		out = append(out, f.info)
	}
	return out, pgErr("thread "+threadID+": files", rows.Err())
}

// below returns the SQL condition selecting paths strictly below dir ("/" = all), as an
// index-friendly byte range ('0' is the byte after '/'), numbering its parameters from n.
func below(dir string, n int) (string, []any) {
	if dir == "/" {
		return "", nil
	}
	return fmt.Sprintf(" AND path > $%d AND path < $%d", n, n+1), []any{dir + "/", dir + "0"}
}

// Find lists files (not directories) matching a ** glob, sorted by path.
func (r *fileReader) Find(ctx context.Context, threadID, glob string) ([]weft.FileInfo, error) {
	if err := storecontract.CheckGlob(glob); err != nil {
		return nil, err
	}
	cond, args := below(sqlstore.GlobDir(glob), 2)
	all, err := r.list(ctx, threadID, `SELECT `+fileCols+` FROM files WHERE thread_id = $1 AND NOT is_dir`+cond+` ORDER BY path`,
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
		cond, args = " AND (path = $2 OR (path > $3 AND path < $4))", append(args, prefix, prefix+"/", prefix+"0")
	}
	rows, err := r.s.pool.Query(ctx, `SELECT id, path, chunk_count FROM files WHERE thread_id = $1 AND is_text AND NOT is_dir`+cond+` ORDER BY path`, args...)
	if err != nil {
		return nil, pgErr("thread "+threadID+": grep", err)
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
			return nil, pgErr("thread "+threadID+": grep", err)
		}
		if plan.Selects(c.path) {
			cands = append(cands, c)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, pgErr("thread "+threadID+": grep", err)
	}
	out := []weft.GrepMatch{}
	for _, c := range cands {
		var src io.Reader
		if c.chunks > 0 {
			src = r.chunks(ctx, threadID, c.path, c.id, c.chunks)
		} else {
			var data []byte
			err := r.s.pool.QueryRow(ctx, `SELECT data FROM files WHERE id = $1`, c.id).Scan(&data)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // removed meanwhile
			}
			if err != nil {
				return nil, pgErr("thread "+threadID+": grep "+c.path, err)
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
	err := r.s.pool.QueryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(size), 0) FROM files WHERE thread_id = $1 AND NOT is_dir`,
		threadID).Scan(&st.Files, &st.Bytes)
	return st, pgErr("thread "+threadID+": usage", err)
}

// --- writes ---

// fileKind reads what is at p inside the transaction: exists, isDir, id and creation time.
func (t *tx) fileKind(p string) (exists, isDir bool, id, created int64, err error) {
	err = t.queryRow(`SELECT id, is_dir, created_at FROM files WHERE thread_id = $1 AND path = $2`, t.id, p).
		Scan(&id, &isDir, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, 0, 0, nil
	}
	if err != nil {
		return false, false, 0, 0, pgErr("thread "+t.id+": file "+p, err)
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
	_, err = t.exec("mkdir "+d, `INSERT INTO files (thread_id, path, parent, name, is_dir, created_at, updated_at)
		VALUES ($1, $2, $3, $4, true, $5, $6)`, t.id, d, storecontract.ParentDir(d), path.Base(d), now, now)
	return err
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
	var md []byte
	if len(f.Metadata) > 0 {
		if md, err = json.Marshal(f.Metadata); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: file %s metadata: %v", t.id, p, err)
		}
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
		if _, err := t.exec("replace "+p, `DELETE FROM files WHERE id = $1`, oldID); err != nil {
			return err
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
	err = t.queryRow(`INSERT INTO files (thread_id, path, parent, name, is_text, mime_type, size, data, chunk_count,
		width, height, description, metadata, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		RETURNING id`, t.id, p, storecontract.ParentDir(p), f.Name, weft.IsTextMIME(f.MimeType), text(f.MimeType), f.Size, inline,
		chunks, f.Width, f.Height, text(f.Description), md, nanos(f.CreatedAt), nanos(f.UpdatedAt)).Scan(&id)
	if err != nil {
		return pgErr("thread "+t.id+": write "+p, err)
	}
	for n := 0; n < chunks; n++ {
		t.queue(op{sql: `INSERT INTO file_chunks (file_id, n, data) VALUES ($1, $2, $3)`,
			args: []any{id, n, slices.Clone(data[n*weft.ChunkSize : min((n+1)*weft.ChunkSize, len(data))])}})
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
	_, err = t.exec("remove "+p, `DELETE FROM files WHERE id = $1`, id)
	return err
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
	cond, args := below(p, 2)
	args = append([]any{t.id}, args...)
	if !recursive {
		var any bool
		if err := t.queryRow(`SELECT EXISTS (SELECT 1 FROM files WHERE thread_id = $1`+cond+`)`, args...).Scan(&any); err != nil {
			return pgErr("thread "+t.id+": remove dir "+p, err)
		}
		if any {
			return weft.Errorf(weft.EConflict, "thread %s: directory %s is not empty", t.id, p)
		}
	}
	if _, err := t.exec("remove dir "+p, `DELETE FROM files WHERE thread_id = $1`+cond, args...); err != nil {
		return err
	}
	_, err = t.exec("remove dir "+p, `DELETE FROM files WHERE id = $1`, id)
	return err
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
		// Everything below moves with it: the prefix is replaced in path and parent alike (the parent
		// of anything below from is from or below it).
		cond, args := below(from, 4)
		if _, err := t.exec("rename "+from, `UPDATE files SET path = $2 || substr(path, $3), parent = $2 || substr(parent, $3)
			WHERE thread_id = $1`+cond, append([]any{t.id, to, len([]rune(from)) + 1}, args...)...); err != nil {
			return err
		}
	}
	_, err = t.exec("rename "+from, `UPDATE files SET path = $1, parent = $2, name = $3 WHERE id = $4`,
		to, storecontract.ParentDir(to), path.Base(to), id)
	return err
}
