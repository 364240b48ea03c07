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
	th := s.lookup(threadID)
	if th == nil {
		return map[string]json.RawMessage{}, nil
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	return cloneDocs(th.kv), nil
}

// cloneDocs copies a thread's documents by key (KV values, run state), sharing nothing.
func cloneDocs(docs map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(docs))
	for k, v := range docs {
		out[k] = slices.Clone(v)
	}
	return out
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
