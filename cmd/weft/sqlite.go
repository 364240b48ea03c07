package main

import (
	"context"
	"log/slog"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/sqlite"
)

// openSQLite opens a SQLite file store (the embedded default).
func openSQLite(ctx context.Context, dsn string, log *slog.Logger) (weft.Store, error) {
	return sqlite.Open(ctx, dsn, sqlite.Options{Logger: log})
}
