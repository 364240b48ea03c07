package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// WAL checkpoints copy committed pages from the WAL into the database file and fsync both; done by
// the committing connection (SQLite's default) they add milliseconds to every few-hundredth
// transaction. A file store runs them on a connection of its own instead, after every
// checkpointEvery commits, as PASSIVE checkpoints that never block readers or the writer. The
// writer's own auto-checkpoint stays as a backstop at a much larger WAL size.
const (
	checkpointEvery   = 128
	backstopWALPages  = 16384 // 64 MiB of 4 KiB pages
	checkpointPragma  = "PRAGMA wal_checkpoint(PASSIVE)"
	autoCheckpointSQL = "PRAGMA wal_autocheckpoint = %d"
)

type checkpointer struct {
	db      *sql.DB
	signal  chan struct{}
	stopped chan struct{}
	commits int // guarded by Store.wmu
}

func (s *Store) startCheckpointer(ctx context.Context, dsn string) error {
	if _, err := s.wconn.ExecContext(ctx, fmt.Sprintf(autoCheckpointSQL, backstopWALPages)); err != nil {
		return fmt.Errorf("sqlite: %s: %w", s.file, err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("sqlite: %s: checkpointer: %w", s.file, err)
	}
	db.SetMaxOpenConns(1)
	c := &checkpointer{db: db, signal: make(chan struct{}, 1), stopped: make(chan struct{})}
	s.ckpt = c
	go func() {
		defer close(c.stopped)
		for range c.signal {
			if _, err := db.Exec(checkpointPragma); err != nil {
				s.log.Warn("WAL checkpoint failed", "database", s.file, "err", err)
			}
		}
	}()
	return nil
}

// committed counts a commit and wakes the checkpointer every checkpointEvery commits. Caller holds
// Store.wmu.
func (c *checkpointer) committed() {
	if c == nil {
		return
	}
	c.commits++
	if c.commits%checkpointEvery == 0 {
		select {
		case c.signal <- struct{}{}:
		default: // one is pending already
		}
	}
}

func (c *checkpointer) stop() error {
	close(c.signal)
	<-c.stopped
	return c.db.Close()
}
