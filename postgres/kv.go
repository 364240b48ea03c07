package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/weft-agents/weft/internal/storecontract"
)

// jsonMap reads key/value rows of one thread.
func (s *Store) jsonMap(ctx context.Context, sql, threadID, what string) (map[string]json.RawMessage, error) {
	rows, err := s.pool.Query(ctx, sql, threadID)
	if err != nil {
		return nil, pgErr("thread "+threadID+": "+what, err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, pgErr("thread "+threadID+": "+what, err)
		}
		out[k] = v
	}
	return out, pgErr("thread "+threadID+": "+what, rows.Err())
}

// GetKV returns a thread's KV value; found is false when absent.
func (s *Store) GetKV(ctx context.Context, threadID, key string) (json.RawMessage, bool, error) {
	var v []byte
	err := s.pool.QueryRow(ctx, "SELECT value FROM kv WHERE thread_id = $1 AND key = $2", threadID, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, pgErr("thread "+threadID+": kv", err)
	}
	return v, true, nil
}

// ListKV returns all of a thread's KV values by key.
func (s *Store) ListKV(ctx context.Context, threadID string) (map[string]json.RawMessage, error) {
	return s.jsonMap(ctx, "SELECT key, value FROM kv WHERE thread_id = $1", threadID, "kv")
}

// SetKV stores a JSON value (nil deletes it).
func (t *tx) SetKV(key string, value json.RawMessage) error {
	if err := storecontract.CheckKV(t.id, key, value); err != nil {
		return err
	}
	if value == nil {
		t.queue(op{sql: "DELETE FROM kv WHERE thread_id = $1 AND key = $2", args: []any{t.id, key}})
		return nil
	}
	t.queue(op{sql: `INSERT INTO kv (thread_id, key, value, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (thread_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		args: []any{t.id, key, []byte(slices.Clone(value)), nanos(t.clock())}})
	return nil
}
