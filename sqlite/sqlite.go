// Package sqlite is the default weft.Store: one SQLite file in WAL mode, through the pure-Go
// modernc.org/sqlite driver. It keeps the contract every store keeps (package storetest).
//
// All writes go through one dedicated connection with cached prepared statements, each in a
// BEGIN IMMEDIATE transaction; reads use a separate pool of read-only connections, so they never
// wait for writers (WAL). The schema is migrated at Open from embedded SQL files, recorded in
// schema_migrations; a database written by a newer Weft is refused. Env values are sealed with
// envcrypt, and a check value sealed with the key makes Open fail loudly on a wrong key.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/sqlstore"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// MemoryDSN opens a throwaway database, shared by every connection of the store and removed by
// Close, with a throwaway random encryption key (no key file is written, no warning is logged).
//
// It is a WAL file in a private temporary directory (synchronous=OFF) rather than SQLite's own
// in-memory database: those (memdb VFS, shared cache) have no WAL, so an open write transaction
// blocks every reader, and a read made inside Tx's fn would wait for its own transaction. As a WAL
// file it behaves exactly like a file store.
const MemoryDSN = ":memory:"

// Options configure Open.
type Options struct {
	// Key encrypts env values (32 bytes, e.g. from envcrypt.ParseKey). When nil, a file database uses
	// its own key file, envcrypt.KeyFileFor(file) (created, with a warning, when missing; an existing
	// database sealed with its folder's shared weft.key keeps that key, copied to its own file), and
	// MemoryDSN a throwaway random key (no file, no warning).
	Key []byte
	// QuietKeyCreated leaves the warning about a created key file to the caller (Store.KeyCreated),
	// e.g. to show it where a terminal UI will not overwrite it.
	QuietKeyCreated bool
	// Now is the clock for timestamps and lease expiry; nil means time.Now.
	Now func() time.Time
	// Logger receives warnings; nil means slog.Default().
	Logger *slog.Logger
	// ReadConns caps the read pool; 0 means max(4, 2×GOMAXPROCS).
	ReadConns int
	// HistoryCache is the bytes of thread histories (their messages' docs, and the messages
	// decoded) kept in memory for the runs that start from them; 0 means 32 MiB, a negative value
	// keeps none.
	HistoryCache int
}

// Store is a weft.Store on SQLite. It is safe for concurrent use.
type Store struct {
	file    string // absolute path of the database file
	memory  bool   // throwaway database (MemoryDSN)
	tempDir string // the throwaway database's directory, removed by Close
	// createdFiles are the files Open created (removed if it fails); keyCreated: the key was new;
	// sharedKey: the key came from the directory's shared key file (weft.key).
	createdFiles []string
	keyCreated   bool
	sharedKey    bool
	now          func() time.Time
	log          *slog.Logger
	cipher       *envcrypt.Cipher

	rdb *sql.DB // read-only pool
	rq  readStmts

	wmu   sync.Mutex // serializes use of the write connection
	wdb   *sql.DB
	wconn *sql.Conn
	w     *writer
	group groupCommit // writes waiting for the write connection (write.go)
	ckpt  *checkpointer

	files fileReader
}

var _ weft.Store = (*Store)(nil)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations returns the embedded migrations in version order.
func migrations() ([]sqlstore.Migration, error) {
	return sqlstore.Migrations(migrationFS, "migrations")
}

// SchemaVersion is the schema version this binary migrates to.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Open opens (creating if needed) the database at dsn — a file path, or ":memory:" — migrates it and
// verifies the encryption key.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	s := &Store{now: opts.Now, log: opts.Logger, memory: dsn == MemoryDSN}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.files.s = s
	key := opts.Key
	if s.memory {
		dir, err := os.MkdirTemp("", "weft-memory-")
		if err != nil {
			return nil, fmt.Errorf("sqlite: throwaway database: %w", err)
		}
		s.tempDir, s.file = dir, filepath.Join(dir, "weft.db")
		if key == nil {
			key = envcrypt.NewKey()
		}
	} else {
		if dsn == "" {
			return nil, errors.New("sqlite: empty database path")
		}
		abs, err := filepath.Abs(strings.TrimPrefix(dsn, "file:"))
		if err != nil {
			return nil, fmt.Errorf("sqlite: database path %s: %w", dsn, err)
		}
		s.file = abs
		// A new database file is created private (0600, like its key; SQLite gives its WAL the
		// file's mode). What this Open creates is removed again if it fails: a refused or corrupt
		// database leaves no key file or empty database behind.
		dir := filepath.Dir(abs)
		if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("sqlite: database directory %s: %w", dir, err)
			}
			f, err := os.OpenFile(abs, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err == nil {
				f.Close()
				s.createdFiles = append(s.createdFiles, abs, abs+"-wal", abs+"-shm")
			} else if !errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("sqlite: create %s: %w", abs, err)
			}
		}
		if key == nil {
			k, err := s.keyFile(len(s.createdFiles) == 0)
			if err != nil {
				s.removeCreated()
				return nil, fmt.Errorf("sqlite: encryption key for %s: %w", abs, err)
			}
			key = k
		}
	}
	st, err := s.open(ctx, key, opts)
	if err != nil {
		s.removeCreated()
		if !s.memory && readOnlyFile(s.file) {
			return nil, fmt.Errorf("sqlite: %s is on a read-only file system; weft writes its database, so make it writable or use another --db: %w", s.file, err)
		}
		return nil, err
	}
	if s.sharedKey {
		// The database was sealed with the key file its directory's databases once shared: it
		// gets a copy of its own, and the shared file stays for the others.
		if err := envcrypt.WriteKeyFile(s.KeyFile(), key); err != nil && !errors.Is(err, fs.ErrExist) {
			s.log.Info("could not give the database a key file of its own; it goes on using the shared one",
				"key_file", filepath.Join(filepath.Dir(s.file), envcrypt.KeyFile), "database", s.file, "error", err)
		}
	}
	if s.keyCreated && !opts.QuietKeyCreated {
		s.log.Warn("no encryption key configured: created a key file; keep it with the database, env values cannot be read without it",
			"key_file", s.KeyFile(), "database", s.file)
	}
	s.createdFiles = nil
	return st, nil
}

// keyFile reads the database's key file (envcrypt.KeyFileFor), creating it with a new key when
// missing. An existing database without one (existed) that has the key file its directory's
// databases once shared (weft.key) was sealed with that key: it is used, and Open copies it to
// the database's own key file once the key is verified.
func (s *Store) keyFile(existed bool) ([]byte, error) {
	own := envcrypt.KeyFileFor(s.file)
	shared := filepath.Join(filepath.Dir(s.file), envcrypt.KeyFile)
	if existed && own != shared {
		if _, err := os.Stat(own); errors.Is(err, fs.ErrNotExist) {
			k, err := envcrypt.ReadKeyFile(shared)
			if err == nil {
				s.sharedKey = true
				return k, nil
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
	}
	k, created, err := envcrypt.LoadOrCreateKeyFile(own)
	if err != nil {
		return nil, err
	}
	if created {
		s.createdFiles = append(s.createdFiles, own)
		s.keyCreated = true
	}
	return k, nil
}

// KeyFile is the path of the database's own key file (envcrypt.KeyFileFor), "" for MemoryDSN.
// It is read when Options.Key is nil.
func (s *Store) KeyFile() string {
	if s.memory {
		return ""
	}
	return envcrypt.KeyFileFor(s.file)
}

// KeyCreated reports whether Open created the database's key file (Open warns about it unless
// Options.QuietKeyCreated).
func (s *Store) KeyCreated() bool { return s.keyCreated }

// readOnlyFile reports whether path cannot be written because its file system is read-only.
func readOnlyFile(path string) bool {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		f.Close()
		return false
	}
	return errors.Is(err, syscall.EROFS)
}

// removeCreated removes the files a failed Open created.
func (s *Store) removeCreated() {
	for _, f := range s.createdFiles {
		_ = os.Remove(f)
	}
	s.createdFiles = nil
}

// open opens the connections and migrates; the caller cleans up after a failure.
func (s *Store) open(ctx context.Context, key []byte, opts Options) (*Store, error) {
	c, err := envcrypt.New(key)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	s.cipher = c
	base := "file:" + uriEscape(filepath.ToSlash(s.file)) + "?"
	// temp_store(MEMORY) keeps statement journals and savepoint sub-journals in memory: inside a
	// transaction every INSERT into a table with a unique index journals the pages it changes, and
	// a group commit's savepoints outgrow SQLite's 64 KiB in-memory spill limit, so on disk they
	// cost a write syscall per page (1,000 concurrent threads: 5,100 → 6,500 steps/s).
	// foreign_keys is off and deletes cascade through triggers (migration 0003 says why);
	// recursive_triggers lets a thread's delete reach its descendants. secure_delete(FAST) zeroes
	// deleted rows (a drained queue row, a replaced message) on the pages a write touches anyway,
	// so removed text does not linger in the file, at no extra I/O.
	synchronous := "NORMAL"
	if s.memory {
		synchronous = "OFF"
	}
	common := "&_pragma=busy_timeout(10000)&_pragma=foreign_keys(0)&_pragma=recursive_triggers(1)&_pragma=temp_store(MEMORY)&_pragma=secure_delete(FAST)&_pragma=synchronous(" + synchronous + ")"
	if err := s.openWriter(ctx, base+common); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.checkKey(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.openReaders(ctx, base+common+"&_pragma=query_only(1)", opts.ReadConns); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.prepareWriter(ctx, opts.HistoryCache); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.startCheckpointer(ctx, base+common); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// path returns the database file's path.
func (s *Store) path() string { return s.file }

// uriEscape escapes the characters that end or alter the path of an SQLite URI filename.
func uriEscape(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '%', '?', '#', ' ':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func (s *Store) openWriter(ctx context.Context, dsn string) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", s.file, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	s.wdb = db
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", s.file, err)
	}
	s.wconn = conn
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return fmt.Errorf("sqlite: open %s: set WAL: %w", s.file, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("sqlite: open %s: journal mode is %s, WAL unavailable", s.file, mode)
	}
	return nil
}

func (s *Store) openReaders(ctx context.Context, dsn string, n int) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("sqlite: open readers: %w", err)
	}
	if n <= 0 {
		n = max(4, 2*runtime.GOMAXPROCS(0))
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	s.rdb = db
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: open readers: %w", err)
	}
	return s.rq.prepare(ctx, db)
}

// migrate applies the embedded migrations the database lacks, in one transaction.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("sqlite: migrations: %w", err)
	}
	latest := ms[len(ms)-1].Version
	return s.rawWrite(ctx, func(c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
			return err
		}
		var cur int
		if err := c.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&cur); err != nil {
			return err
		}
		if cur > latest {
			return fmt.Errorf("database schema version %d is newer than this Weft supports (%d): upgrade Weft", cur, latest)
		}
		for _, m := range ms {
			if m.Version <= cur {
				continue
			}
			if _, err := c.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
			if _, err := c.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
				m.Version, m.Name, s.now().UnixNano()); err != nil {
				return err
			}
		}
		return nil
	})
}

// checkKey stores a check value on first use and verifies the key against it afterwards.
func (s *Store) checkKey(ctx context.Context) error {
	return s.rawWrite(ctx, func(c *sql.Conn) error {
		var id sql.NullString
		var check []byte
		err := c.QueryRowContext(ctx, `SELECT (SELECT CAST(value AS TEXT) FROM settings WHERE name = 'key_id'),
			(SELECT value FROM settings WHERE name = 'key_check')`).Scan(&id, &check)
		if err != nil {
			return err
		}
		if check == nil {
			_, err := c.ExecContext(ctx, "INSERT INTO settings (name, value) VALUES ('key_id', ?), ('key_check', ?)",
				s.cipher.KeyID(), s.cipher.NewCheck())
			return err
		}
		return s.cipher.CheckKey(check, id.String)
	})
}

// rawWrite runs fn in a BEGIN IMMEDIATE transaction on the write connection (setup and tests).
func (s *Store) rawWrite(ctx context.Context, fn func(*sql.Conn) error) (err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.w != nil {
		s.w.rows.clear()
	}
	if _, err := s.wconn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	defer func() {
		if err == nil {
			if _, err = s.wconn.ExecContext(ctx, "COMMIT"); err == nil {
				return
			}
		}
		s.wconn.ExecContext(context.Background(), "ROLLBACK")
		var wk *envcrypt.WrongKeyError
		if !errors.As(err, &wk) {
			err = fmt.Errorf("sqlite: %s: %w", s.file, err)
		}
	}()
	return fn(s.wconn)
}

// Close closes every connection; a throwaway (MemoryDSN) database is deleted.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var errs []error
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.stop())
		s.ckpt = nil
	}
	if s.w != nil {
		s.w.close()
		s.w = nil
	}
	s.rq.close()
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close()) // idempotent; kept so late readers get "database is closed"
	}
	if s.wconn != nil {
		errs = append(errs, s.wconn.Close())
		s.wconn = nil
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
		s.wdb = nil
	}
	if s.tempDir != "" {
		errs = append(errs, os.RemoveAll(s.tempDir))
		s.tempDir = ""
	}
	return errors.Join(errs...)
}

// --- value encoding shared by reads and writes ---

// nanos encodes a time as Unix nanoseconds; the zero time is 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos decodes nanos; 0 is the zero time.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// mapText marshals a map for a JSON column; nil gives "" (an empty map "{}").
func mapText(m map[string]any) (string, error) {
	if m == nil {
		return "", nil
	}
	b, err := marshal(m)
	return string(b), err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isConstraint reports whether err is an SQLite constraint violation of the given kind ("UNIQUE",
// "FOREIGN KEY", "NOT NULL").
func isConstraint(err error, kind string) bool {
	return err != nil && strings.Contains(err.Error(), kind+" constraint failed")
}
