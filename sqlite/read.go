package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// readStmts caches prepared statements of the read pool by SQL text (database/sql prepares each
// on every pooled connection as needed).
type readStmts struct {
	db    *sql.DB
	mu    sync.Mutex
	cache map[string]*sql.Stmt
}

func (r *readStmts) prepare(ctx context.Context, db *sql.DB) error {
	r.db, r.cache = db, map[string]*sql.Stmt{}
	for _, q := range []string{qThread, qMessagesAsc, qMessagesDesc, qMessage} {
		if _, err := r.stmt(ctx, q); err != nil {
			return fmt.Errorf("sqlite: prepare: %w", err)
		}
	}
	return nil
}

func (r *readStmts) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache == nil {
		return nil, errClosed
	}
	if st, ok := r.cache[q]; ok {
		return st, nil
	}
	st, err := r.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	r.cache[q] = st
	return st, nil
}

func (r *readStmts) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.cache {
		st.Close()
	}
	r.cache = nil
}

// Reads, like writes, check ctx before a statement and run it with a context that is never
// cancelled (see writer.exec): the statements are short, and long reads (chunked files) check ctx
// between chunks.

func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := s.rq.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(context.Background(), args...)
}

// rowOf runs a single-row query and returns the row to scan.
func (s *Store) rowOf(ctx context.Context, q string, args ...any) (*sql.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := s.rq.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(context.Background(), args...), nil
}

func (s *Store) row(ctx context.Context, q string, dest []any, args ...any) error {
	r, err := s.rowOf(ctx, q, args...)
	if err != nil {
		return err
	}
	return r.Scan(dest...)
}

type scanner interface{ Scan(dest ...any) error }
