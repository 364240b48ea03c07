// Package postgres is the weft.Store for many nodes: one PostgreSQL database that any number of
// Weft processes share, through a pgx connection pool. It keeps the contract every store keeps
// (package storetest) and is a weft.Notifier: LISTEN/NOTIFY tells each node of the others' commits
// (events, queued messages, effects), so that a serving engine follows them.
//
// Every write transaction of a thread first locks the thread's row (SELECT … FOR UPDATE): that
// orders the thread's writers across nodes, keeps its sequence counters gap-free, and makes the
// fencing check of a run's lease (a write of a run fails with ErrLeaseLost unless the lease is
// still held with its token) hold until commit. Effects are claimed with FOR UPDATE SKIP LOCKED, so
// each goes to exactly one node. The schema is migrated at Open from embedded SQL files under an
// advisory lock, so nodes starting together migrate once; a database migrated by a newer Weft is
// refused. Env values are sealed with envcrypt, and a check value sealed with the key makes Open
// fail loudly on a wrong key.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
)

// Options configure Open.
type Options struct {
	// Key encrypts env values (32 bytes, e.g. from envcrypt.ParseKey); required. Every node of one
	// database must use the same key.
	Key []byte
	// Schema, when set, is the schema Weft's tables live in (created if missing); else the
	// connection's search_path decides (public, or `?search_path=` in the URL).
	Schema string
	// Now is the clock for timestamps and lease expiry; nil means time.Now.
	Now func() time.Time
	// Logger receives warnings; nil means slog.Default().
	Logger *slog.Logger
	// MaxConns caps the pool when the URL sets no pool_max_conns; 0 means max(16, 4×GOMAXPROCS).
	MaxConns int32
	// Tracer, when set, traces the pool's statements (pgx's tracing hooks: OpenTelemetry, logs).
	Tracer pgx.QueryTracer
	// HistoryCache is the bytes of thread histories (their messages' docs, and the messages
	// decoded) kept in memory for the runs that start from them on this node; 0 means 32 MiB, a
	// negative value keeps none.
	HistoryCache int
}

// Store is a weft.Store on PostgreSQL. It is safe for concurrent use.
type Store struct {
	pool   *pgxpool.Pool
	cfg    *pgxpool.Config
	schema string
	now    func() time.Time
	log    *slog.Logger
	cipher *envcrypt.Cipher
	files  fileReader
	locks  threadLocks
	known  knownRows // thread rows as runs' last transactions left them (known.go)
	bodies bodyCache // request bodies this process stored (logs.go)
	hist   histCache // histories this process's runs started from (history.go)
	notify *notifier
}

var (
	_ weft.Store     = (*Store)(nil)
	_ weft.AuthStore = (*Store)(nil)
)

// IsURL reports whether a --db value names a PostgreSQL database (postgres:// or postgresql://).
func IsURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open connects to the database at url, migrates it to this binary's schema and verifies the
// encryption key. A database migrated by a newer Weft, a wrong key, a wrong password or an
// unreachable host fail with a one-line error naming the host.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := config(url, opts)
	if err != nil {
		return nil, err
	}
	if opts.Key == nil {
		return nil, errors.New("postgres: no encryption key: set WEFT_ENCRYPTION_KEY (the same on every node)")
	}
	c, err := envcrypt.New(opts.Key)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{cfg: cfg, schema: opts.Schema, now: opts.Now, log: opts.Logger, cipher: c}
	switch {
	case opts.HistoryCache == 0:
		s.hist.lru.Limit = defaultHistoryCache
	case opts.HistoryCache > 0:
		s.hist.lru.Limit = opts.HistoryCache
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.files.s = s
	s.locks.m = map[string]*threadLock{}
	s.notify = newNotifier()
	s.notify.hook(cfg)
	if opts.Schema != "" {
		if err := createSchema(ctx, cfg, opts.Schema); err != nil {
			return nil, err
		}
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, s.connErr(err)
	}
	if err := s.migrate(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	if err := s.checkKey(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	return s, nil
}

// config parses url into a pool configuration with Weft's defaults.
func config(url string, opts Options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgconn's parse errors quote the URL, password included: say only what is wrong.
		return nil, errors.New("postgres: the database URL is not valid (postgres://user:password@host:port/database)")
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = opts.MaxConns
		if cfg.MaxConns <= 0 {
			cfg.MaxConns = int32(max(16, 4*runtime.GOMAXPROCS(0)))
		}
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema
	}
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	return cfg, nil
}

// createSchema creates schema if it is missing, on a connection of its own (the pool's connections
// name it in their search_path).
func createSchema(ctx context.Context, cfg *pgxpool.Config, schema string) error {
	cc := cfg.ConnConfig.Copy()
	delete(cc.RuntimeParams, "search_path")
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return connErr(cfg, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("postgres: create schema %s: %w", schema, err)
	}
	return nil
}

// Close closes the pool and the notification listener.
func (s *Store) Close() error {
	s.notify.close()
	s.pool.Close()
	return nil
}

// Pool is the store's connection pool, for operators' tools and tests.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

func (s *Store) nowUTC() time.Time { return s.now().UTC() }

// connErr turns a failure to connect into one line naming the host.
func (s *Store) connErr(err error) error { return connErr(s.cfg, err) }

func connErr(cfg *pgxpool.Config, err error) error {
	host := net.JoinHostPort(cfg.ConnConfig.Host, fmt.Sprint(cfg.ConnConfig.Port))
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "28P01":
		return fmt.Errorf("postgres %s: password authentication failed for user %s", host, cfg.ConnConfig.User)
	case errors.As(err, &pe) && pe.Code == "3D000":
		return fmt.Errorf("postgres %s: database %s does not exist", host, cfg.ConnConfig.Database)
	case errors.As(err, &pe):
		return fmt.Errorf("postgres %s: %s (%s)", host, pe.Message, pe.Code)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return fmt.Errorf("postgres %s: cannot connect: %w", host, err)
	}
	msg := err.Error()
	// pgconn's connect errors carry the whole dial chain; the last part says what went wrong.
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return fmt.Errorf("postgres %s: cannot connect: %s", host, msg)
}

// pgErr wraps a database error with what was being done; lost connections keep their cause.
func pgErr(what string, err error) error {
	if err == nil {
		return nil
	}
	var we *weft.Error
	if errors.As(err, &we) || errors.Is(err, weft.ErrNotFound) || errors.Is(err, weft.ErrLeaseLost) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}

// isCode reports whether err is a PostgreSQL error with the SQLSTATE code.
func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
)

// text makes s storable in a text column: PostgreSQL's text holds no NUL and only valid UTF-8.
// Columns that get it are copies for filtering; the record itself keeps s exactly in its doc.
func text(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// nanos is a time as Unix nanoseconds, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos is the UTC time of Unix nanoseconds, the zero time for 0.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func optNanos(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return nanos(*t)
}

func optTime(n int64) *time.Time {
	if n == 0 {
		return nil
	}
	t := fromNanos(n)
	return &t
}

func threadNotFound(threadID string) error {
	return fmt.Errorf("thread %s: %w", threadID, weft.ErrNotFound)
}

// threadLocks serializes one process's write transactions per thread before they take a
// connection, so that writers of one busy thread wait in the process, not holding pool connections
// while they wait for the thread's row lock.
type threadLocks struct {
	mu sync.Mutex
	m  map[string]*threadLock
}

type threadLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks threadID's mutex; the returned function unlocks it.
func (l *threadLocks) lock(threadID string) func() {
	l.mu.Lock()
	e := l.m[threadID]
	if e == nil {
		e = &threadLock{}
		l.m[threadID] = e
	}
	e.refs++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(l.m, threadID)
		}
		l.mu.Unlock()
	}
}

// collect scans rows of one json column with a seq into values. The doc is read in place, not
// copied: dec must not keep it (json.Unmarshal copies what it keeps).
func collect[T any](rows pgx.Rows, what string, dec func(doc []byte, seq int64) (T, error)) ([]T, error) {
	return collectN(rows, what, 0, dec)
}

// collectN is collect with room for n values from the start.
func collectN[T any](rows pgx.Rows, what string, n int, dec func(doc []byte, seq int64) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	if n > 0 {
		out = make([]T, 0, n)
	}
	for rows.Next() {
		var seq int64
		if err := rows.Scan(nil, &seq); err != nil {
			return nil, pgErr(what, err)
		}
		v, err := dec(rows.RawValues()[0], seq)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, pgErr(what, rows.Err())
}
