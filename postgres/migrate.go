package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migration is one embedded schema step.
type Migration = sqlstore.Migration

// migrationLock is the advisory lock id under which a database is migrated, so that nodes starting
// together migrate it once ("weft" in ASCII).
const migrationLock = 0x77656674

// Migrations returns the embedded migrations in version order; files are named NNNN_name.sql.
func Migrations() ([]Migration, error) {
	return sqlstore.Migrations(migrationFS, "migrations")
}

// SchemaVersion is the schema version this binary migrates to.
func SchemaVersion() int {
	ms, err := Migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

const qCreateMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    integer PRIMARY KEY,
	name       text NOT NULL,
	applied_at bigint NOT NULL)`

// migrate applies the pending migrations in one transaction under the migration lock; a database
// at a newer version than the binary knows is refused.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].Version
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, qCreateMigrations); err != nil {
			return err
		}
		var cur int
		if err := tx.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&cur); err != nil {
			return err
		}
		if cur > latest {
			return fmt.Errorf("database schema version %d is newer than this Weft supports (%d): upgrade Weft", cur, latest)
		}
		for _, m := range ms {
			if m.Version <= cur {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
				m.Version, m.Name, s.now().UnixNano()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if strings.Contains(err.Error(), "newer than this Weft") {
			return fmt.Errorf("postgres: %w", err)
		}
		return s.connErr(err)
	}
	return nil
}

// checkKey stores a check value on first use and verifies the key against it afterwards.
func (s *Store) checkKey(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
			return err
		}
		var id, check []byte
		err := tx.QueryRow(ctx, `SELECT (SELECT value FROM settings WHERE name = 'key_id'),
			(SELECT value FROM settings WHERE name = 'key_check')`).Scan(&id, &check)
		if err != nil {
			return err
		}
		if check == nil {
			_, err := tx.Exec(ctx, "INSERT INTO settings (name, value) VALUES ('key_id', $1), ('key_check', $2)",
				[]byte(s.cipher.KeyID()), s.cipher.NewCheck())
			return err
		}
		return s.cipher.CheckKey(check, string(id))
	})
	var wk *envcrypt.WrongKeyError
	if errors.As(err, &wk) {
		return fmt.Errorf("postgres: %w", err)
	}
	return pgErr("encryption key check", err)
}

// Status is the state of a database's schema, for `weft db status`.
type Status struct {
	// Version is the database's schema version (0 for an empty database); Latest the binary's.
	Version, Latest int
	// Applied are the migrations recorded in the database, with when they were applied.
	Applied []AppliedMigration
	// Pending are the binary's migrations the database lacks.
	Pending []Migration
}

// AppliedMigration is a migration recorded in schema_migrations.
type AppliedMigration struct {
	Version   int
	Name      string
	AppliedAt time.Time
}

// ReadStatus reads a database's schema state without changing it.
func ReadStatus(ctx context.Context, url, schema string) (*Status, error) {
	cfg, err := config(url, Options{Schema: schema})
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return nil, connErr(cfg, err)
	}
	defer conn.Close(ctx)
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	st := &Status{Latest: ms[len(ms)-1].Version}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return nil, pgErr("schema status", err)
	}
	if exists {
		rows, err := conn.Query(ctx, "SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
		if err != nil {
			return nil, pgErr("schema status", err)
		}
		for rows.Next() {
			var a AppliedMigration
			var at int64
			if err := rows.Scan(&a.Version, &a.Name, &at); err != nil {
				rows.Close()
				return nil, pgErr("schema status", err)
			}
			a.AppliedAt = fromNanos(at)
			st.Applied = append(st.Applied, a)
			st.Version = max(st.Version, a.Version)
		}
		if err := rows.Err(); err != nil {
			return nil, pgErr("schema status", err)
		}
	}
	for _, m := range ms {
		if m.Version > st.Version {
			st.Pending = append(st.Pending, m)
		}
	}
	return st, nil
}

// Migrate brings a database's schema to this binary's version (what Open does first), without
// checking an encryption key: for operators who migrate before rolling out nodes.
func Migrate(ctx context.Context, url, schema string) (*Status, error) {
	cfg, err := config(url, Options{Schema: schema})
	if err != nil {
		return nil, err
	}
	if schema != "" {
		if err := createSchema(ctx, cfg, schema); err != nil {
			return nil, err
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, connErr(cfg, err)
	}
	defer pool.Close()
	s := &Store{pool: pool, cfg: cfg, now: time.Now}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	return ReadStatus(ctx, url, schema)
}
