package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/sqlite"
)

// openSQLite opens a SQLite file store (the embedded default). Env values are encrypted with
// WEFT_ENCRYPTION_KEY (32 bytes, base64 or hex) when set, else with a key file beside the database
// (env.md §6.2).
func openSQLite(ctx context.Context, dsn string, log *slog.Logger, now func() time.Time) (weft.Store, error) {
	var key []byte
	if v := os.Getenv("WEFT_ENCRYPTION_KEY"); v != "" {
		k, err := envcrypt.ParseKey(v)
		if err != nil {
			return nil, fmt.Errorf("WEFT_ENCRYPTION_KEY: %w", err)
		}
		key = k
	}
	return sqlite.Open(ctx, dsn, sqlite.Options{Key: key, Logger: log, Now: now})
}
