package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/memstore"
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
		return nil, exit(exitDefinitions, diags.Err())
	}
	return reg, nil
}

// openStore opens the store a DSN names: ":memory:" (the default for run) keeps everything in
// process memory.
func openStore(ctx context.Context, dsn string, log *slog.Logger) (weft.Store, error) {
	switch {
	case dsn == "" || dsn == ":memory:":
		return memstore.New(memstore.Options{})
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return nil, exit(exitUsage, fmt.Errorf("--db %s: PostgreSQL is not available in this version of Weft", redactDSN(dsn)))
	}
	return openSQLite(ctx, dsn, log)
}

func redactDSN(dsn string) string {
	if i := strings.Index(dsn, "@"); i > 0 {
		if j := strings.Index(dsn, "://"); j > 0 && j < i {
			return dsn[:j+3] + "…" + dsn[i:]
		}
	}
	return dsn
}

// providers resolves a model's provider. The test provider answers "Test response received.";
// network providers arrive with their adapters.
func providers(test weft.Provider) func(m *weft.Model) (weft.Provider, error) {
	return func(m *weft.Model) (weft.Provider, error) {
		if m.Provider == "test" {
			return test, nil
		}
		return nil, fmt.Errorf("provider %q is not available in this version of Weft; run with --model-script FILE", m.Provider)
	}
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
