package memstore

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/weft-agents/weft/internal/storecontract"
)

// GetKV returns a thread's KV value; found is false when absent.
func (s *Store) GetKV(ctx context.Context, threadID, key string) (json.RawMessage, bool, error) {
	if s.closed.Load() {
		return nil, false, errClosed
	}
	th := s.lookup(threadID)
	if th == nil {
		return nil, false, nil
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	v, ok := th.kv[key]
	return slices.Clone(v), ok, nil
}

// ListKV returns all of a thread's KV values by key.
func (s *Store) ListKV(ctx context.Context, threadID string) (map[string]json.RawMessage, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	out := map[string]json.RawMessage{}
	th := s.lookup(threadID)
	if th == nil {
		return out, nil
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	for k, v := range th.kv {
		out[k] = slices.Clone(v)
	}
	return out, nil
}

type kvOp struct {
	key   string
	value json.RawMessage // nil deletes
}

// SetKV stages a JSON value (nil deletes it).
func (t *tx) SetKV(key string, value json.RawMessage) error {
	if err := storecontract.CheckKV(t.id, key, value); err != nil {
		return err
	}
	t.kv = append(t.kv, kvOp{key, cloneRaw(value)})
	return nil
}
