package main

import (
	"context"
	"fmt"
	"github.com/weft-agents/weft/a2a"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/postgres"
	"github.com/weft-agents/weft/project"
	"github.com/weft-agents/weft/scripted"
)

// loadProject loads and validates the definitions; invalid ones exit 3 with every problem listed.
func loadProject(dir string) (*weft.Registry, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, exit(exitUsage, fmt.Errorf("cannot read the definitions directory %s: %w", dir, unwrapPath(err)))
	}
	reg, diags := project.Open(dir, project.Options{})
	if diags.HasErrors() {
		return nil, exit(exitDefinitions, fromHere(dir, diags).Err())
	}
	a2a.Attach(reg)
	return reg, nil
}

// openStore opens the store a DSN names: ":memory:" (the default for run) keeps everything in
// process memory. An encryption key file it creates is logged as a warning.
func openStore(ctx context.Context, dsn string, log *slog.Logger, now func() time.Time) (weft.Store, error) {
	return openStoreNotingKey(ctx, dsn, log, now, nil)
}

// keyNotice is told about an encryption key file a store created: the key file and the database
// it encrypts.
type keyNotice func(keyFile, database string)

// openStoreNotingKey is openStore that tells noteKey, instead of the log, about a key file it
// created (nil: the log), so that a command can say it where its screen keeps it.
func openStoreNotingKey(ctx context.Context, dsn string, log *slog.Logger, now func() time.Time, noteKey keyNotice) (weft.Store, error) {
	switch {
	case dsn == "" || dsn == ":memory:":
		return memstore.New(memstore.Options{Now: now})
	case postgres.IsURL(dsn):
		return openPostgres(ctx, dsn, log, now, noteKey)
	}
	return openSQLite(ctx, dsn, log, now, noteKey)
}

// redactDSN is a database URL fit to print: its password (in the user info or a password
// parameter) replaced by "redacted".
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		if i := strings.Index(dsn, "@"); i > 0 {
			if j := strings.Index(dsn, "://"); j > 0 && j < i {
				return dsn[:j+3] + "…" + dsn[i:]
			}
		}
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "redacted")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "redacted")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// loadScript reads a model script; an unreadable or invalid file is a usage error.
func loadScript(path string) (*scripted.Provider, error) {
	if path == "" {
		return nil, nil
	}
	s, err := scripted.Load(path)
	if err != nil {
		return nil, exit(exitUsage, err)
	}
	return scripted.New(s), nil
}

func newLogger(level string, w *os.File) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
