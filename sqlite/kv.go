package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weft-agents/weft/internal/storecontract"
)

// KV write statements. hotWrites lists those prepared at Open.
const (
	qSetKV = `INSERT INTO kv (thread_id, key, value, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (thread_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
	qDelKV = `DELETE FROM kv WHERE thread_id = ? AND key = ?`
)

func (s *Store) jsonMap(ctx context.Context, q, threadID, what string) (map[string]json.RawMessage, error) {
	rows, err := s.query(ctx, q, threadID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %s: %s: %w", threadID, what, err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("sqlite: thread %s: %s: %w", threadID, what, err)
		}
		out[k] = json.RawMessage(v)
	}
	return out, rows.Err()
}

// GetKV returns a thread's KV value; found is false when absent.
func (s *Store) GetKV(ctx context.Context, threadID, key string) (json.RawMessage, bool, error) {
	var v string
	err := s.row(ctx, `SELECT value FROM kv WHERE thread_id = ? AND key = ?`, []any{&v}, threadID, key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: thread %s: kv %s: %w", threadID, key, err)
	}
	return json.RawMessage(v), true, nil
}

// ListKV returns all of a thread's KV values by key.
func (s *Store) ListKV(ctx context.Context, threadID string) (map[string]json.RawMessage, error) {
	return s.jsonMap(ctx, `SELECT key, value FROM kv WHERE thread_id = ?`, threadID, "kv")
}

// SetKV stores a JSON value (nil deletes it).
func (t *tx) SetKV(key string, value json.RawMessage) error {
	if err := storecontract.CheckKV(t.id, key, value); err != nil {
		return err
	}
	var err error
	if value == nil {
		_, err = t.w.exec(t.ctx, qDelKV, t.id, key)
	} else {
		_, err = t.w.exec(t.ctx, qSetKV, t.id, key, string(value), nanos(t.clock()))
	}
	if err != nil {
		return t.fail("kv "+key, err)
	}
	return nil
}
