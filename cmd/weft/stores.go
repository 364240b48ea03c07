package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/postgres"
	"github.com/weft-agents/weft/sqlite"
)

// openSQLite opens a SQLite file store (the embedded default). Env values are encrypted with
// WEFT_ENCRYPTION_KEY (32 bytes, base64 or hex) when set, else with the database's own key file
// beside it (weft.db.key for weft.db, mode 0600, created with a warning — or told to noteKey —
// when missing; a database sealed with its folder's shared weft.key of earlier versions keeps that
// key); a wrong key fails at open.
func openSQLite(ctx context.Context, dsn string, log *slog.Logger, now func() time.Time, noteKey keyNotice) (weft.Store, error) {
	key, err := envKey()
	if err != nil {
		return nil, err
	}
	st, err := sqlite.Open(ctx, dsn, sqlite.Options{Key: key, Logger: log, Now: now, QuietKeyCreated: noteKey != nil})
	if err != nil {
		return nil, err
	}
	if noteKey != nil && st.KeyCreated() {
		noteKey(st.KeyFile(), strings.TrimPrefix(dsn, "file:"))
	}
	return st, nil
}

// envKey reads WEFT_ENCRYPTION_KEY; nil when it is unset.
func envKey() ([]byte, error) {
	v := os.Getenv("WEFT_ENCRYPTION_KEY")
	if v == "" {
		return nil, nil
	}
	k, err := envcrypt.ParseKey(v)
	if err != nil {
		return nil, fmt.Errorf("WEFT_ENCRYPTION_KEY: %w", err)
	}
	return k, nil
}

// openPostgres opens a PostgreSQL store (postgres://…, for many nodes). Env values are encrypted
// with WEFT_ENCRYPTION_KEY when set — every node of a database needs the same key — else with the
// key file .weft/weft.key, created (with a warning, or told to noteKey) when missing.
func openPostgres(ctx context.Context, dsn string, log *slog.Logger, now func() time.Time, noteKey keyNotice) (weft.Store, error) {
	key, err := envKey()
	if err != nil {
		return nil, err
	}
	if key == nil {
		k, created, err := envcrypt.LoadOrCreateKey(".weft")
		if err != nil {
			return nil, fmt.Errorf("encryption key for %s: %w", redactDSN(dsn), err)
		}
		switch {
		case created && noteKey != nil:
			noteKey(filepath.Join(".weft", envcrypt.KeyFile), redactDSN(dsn))
		case created:
			log.Warn("no encryption key configured: created a key file; every node of the database needs this key (or WEFT_ENCRYPTION_KEY)",
				"key_file", filepath.Join(".weft", envcrypt.KeyFile))
		}
		key = k
	}
	return postgres.Open(ctx, dsn, postgres.Options{Key: key, Logger: log, Now: now})
}
