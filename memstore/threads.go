package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// CreateThread stores t and its thread-layer env values. Empty fields get defaults, written back to
// t: ID (thr_…), OriginAgent (Agent), RootID (own id, or the parent's root), Status (idle), times
// (now). A parent that does not exist is ErrNotFound; an existing id is a conflict.
func (s *Store) CreateThread(ctx context.Context, t *weft.Thread, env []weft.EnvValue) error {
	return s.CreateThreadTx(ctx, t, env, nil)
}

// CreateThreadTx creates t as CreateThread does, with fn's writes on it: fn runs on the new thread
// before anyone can see it, and the thread is published with them only when fn succeeds.
func (s *Store) CreateThreadTx(ctx context.Context, t *weft.Thread, env []weft.EnvValue, fn func(weft.Tx) error) error {
	if s.closed.Load() {
		return errClosed
	}
	if err := storecontract.PrepareThread(t, env); err != nil {
		return err
	}
	if t.ParentID != "" {
		p := s.lookup(t.ParentID)
		if p == nil {
			return fmt.Errorf("thread %s: parent thread %s: %w", t.ID, t.ParentID, weft.ErrNotFound)
		}
		if t.RootID == "" {
			p.mu.RLock()
			t.RootID = p.meta.RootID
			p.mu.RUnlock()
		}
	}
	now := s.nowUTC()
	storecontract.DefaultThread(t, now)
	meta, err := normThread(t)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: %v", t.ID, err)
	}
	th := &thread{meta: meta, byID: map[string]*weft.Message{}, callIdx: map[string]int{}, logIdx: map[string]int{},
		exec: map[string]json.RawMessage{}, kv: map[string]json.RawMessage{}, files: map[string]*file{}}
	if fn != nil {
		// The thread is nobody's but this call's until it is stored below: the Tx's writes are
		// applied to it before it can be seen.
		if err := ctx.Err(); err != nil {
			return err
		}
		tx := s.txPool.Get().(*tx)
		tx.th, tx.id = th, t.ID
		err := fn(tx)
		if err == nil {
			err = tx.commit(nil, th)
		}
		tx.release()
		if err != nil {
			return err
		}
	}
	// Hold the env lock across the insert so the thread and its env appear together.
	s.envMu.Lock()
	defer s.envMu.Unlock()
	if _, loaded := s.threads.LoadOrStore(t.ID, th); loaded {
		return weft.Errorf(weft.EConflict, "thread %s already exists", t.ID)
	}
	if meta.ParentID != "" {
		set, _ := s.children.LoadOrStore(meta.ParentID, &sync.Map{})
		set.(*sync.Map).Store(t.ID, struct{}{})
	}
	s.setEnvLocked(weft.EnvThread, t.ID, env, now)
	return nil
}

// normThread returns a private copy of t with UTC times and normalized tags and maps.
func normThread(t *weft.Thread) (weft.Thread, error) {
	c := *t
	c.CreatedAt, c.UpdatedAt, c.LastActivityAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC(), t.LastActivityAt.UTC()
	c.Tags = cloneTags(t.Tags)
	if t.ForkedFrom != nil {
		f := *t.ForkedFrom
		c.ForkedFrom = &f
	}
	var err error
	if c.Properties, err = normMapOrEmpty(t.Properties); err != nil {
		return c, fmt.Errorf("properties: %w", err)
	}
	if c.Arguments, err = normMapOrEmpty(t.Arguments); err != nil {
		return c, fmt.Errorf("arguments: %w", err)
	}
	return c, nil
}

func cloneTags(tags []string) []string {
	if tags == nil {
		return []string{}
	}
	return slices.Clone(tags)
}

func normMapOrEmpty(m map[string]any) (map[string]any, error) {
	if m == nil {
		return map[string]any{}, nil
	}
	return normJSONMap(m)
}

// cloneMap deep-copies a normalized map (nil stays nil).
func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c, _ := normJSONMap(m) // normalized values cannot fail
	return c
}

// threadCopy returns a copy of the stored meta safe to hand out. Caller holds th.mu.
func (th *thread) threadCopy() *weft.Thread {
	c := th.meta
	c.Tags = slices.Clone(c.Tags)
	if c.ForkedFrom != nil {
		f := *c.ForkedFrom
		c.ForkedFrom = &f
	}
	c.Properties = cloneMap(c.Properties)
	c.Arguments = cloneMap(c.Arguments)
	return &c
}

// Thread returns a thread or ErrNotFound.
func (s *Store) Thread(ctx context.Context, id string) (*weft.Thread, error) {
	th, err := s.get(id)
	if err != nil {
		return nil, err
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	if th.deleted {
		return nil, notFound(id)
	}
	return th.threadCopy(), nil
}

// threadOrder compares two threads in each thread listing order.
var threadOrder = [...]func(a, b *weft.Thread) int{
	storecontract.SortByActivity: func(a, b *weft.Thread) int {
		return cmp.Or(b.LastActivityAt.Compare(a.LastActivityAt), strings.Compare(b.ID, a.ID))
	},
	storecontract.SortByCreated: func(a, b *weft.Thread) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	},
	storecontract.SortByOldest: func(a, b *weft.Thread) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	},
}

// Threads lists threads matching q (see weft.ThreadQuery; Limit 0 means no limit) and the number
// matching before paging.
func (s *Store) Threads(ctx context.Context, q weft.ThreadQuery) ([]*weft.Thread, int, error) {
	if s.closed.Load() {
		return nil, 0, errClosed
	}
	by, err := storecontract.ParseThreadSort(q.Sort)
	if err != nil {
		return nil, 0, err
	}
	search := storecontract.ASCIILower(q.Search)
	var out []*weft.Thread
	match := func(th *thread) {
		th.mu.RLock()
		if !th.deleted && threadMatches(&th.meta, &q, search) && (!q.Queued || len(th.queue) > 0) {
			out = append(out, th.threadCopy())
		}
		th.mu.RUnlock()
	}
	if q.ParentID != "" {
		if set, ok := s.children.Load(q.ParentID); ok {
			set.(*sync.Map).Range(func(k, _ any) bool {
				if th := s.lookup(k.(string)); th != nil {
					match(th)
				}
				return true
			})
		}
	} else {
		s.threads.Range(func(_, v any) bool {
			match(v.(*thread))
			return true
		})
	}
	slices.SortFunc(out, threadOrder[by])
	total := len(out)
	out = out[min(max(q.Offset, 0), len(out)):]
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, total, nil
}

func threadMatches(t *weft.Thread, q *weft.ThreadQuery, search string) bool {
	switch {
	case q.UserID != "" && t.UserID != q.UserID,
		q.Agent != "" && t.Agent != q.Agent,
		q.ParentID != "" && t.ParentID != q.ParentID,
		q.ParentID == "" && q.RootsOnly && t.ParentID != "",
		q.Status != "" && t.Status != q.Status,
		q.ForkedFrom != "" && (t.ForkedFrom == nil || t.ForkedFrom.Thread != q.ForkedFrom),
		q.Tag != "" && !slices.Contains(t.Tags, q.Tag):
		return false
	}
	if search != "" && !strings.Contains(storecontract.ASCIILower(t.Label), search) &&
		!strings.Contains(storecontract.ASCIILower(t.Preview), search) && !strings.Contains(storecontract.ASCIILower(t.Agent), search) {
		return false
	}
	return true
}

// DeleteThread deletes a thread, its descendants and all their rows, effects and env values.
func (s *Store) DeleteThread(ctx context.Context, id string) error {
	if _, err := s.get(id); err != nil {
		return err
	}
	// Collect the subtree through the parent index.
	ids := []string{id}
	for i := 0; i < len(ids); i++ {
		if set, ok := s.children.Load(ids[i]); ok {
			set.(*sync.Map).Range(func(k, _ any) bool {
				ids = append(ids, k.(string))
				return true
			})
		}
	}
	for _, tid := range ids {
		th := s.lookup(tid)
		if th == nil {
			continue
		}
		th.writer.Lock()
		th.mu.Lock()
		th.deleted = true
		parent := th.meta.ParentID
		th.mu.Unlock()
		s.threads.Delete(tid)
		s.children.Delete(tid)
		if set, ok := s.children.Load(parent); ok {
			set.(*sync.Map).Delete(tid)
		}
		th.writer.Unlock()
		s.envMu.Lock()
		delete(s.env, envOwner{weft.EnvThread, tid})
		s.envMu.Unlock()
		s.effects.deleteThread(tid)
	}
	return nil
}

// UpdateThread stages thread field changes; UpdatedAt becomes now.
func (t *tx) UpdateThread(p weft.ThreadPatch) error {
	if t.meta == nil {
		t.metaBuf = t.th.meta
		t.meta = &t.metaBuf
	}
	m := t.meta
	if p.Tags != nil {
		m.Tags = slices.Clone(p.Tags)
	}
	if p.Properties != nil {
		v, err := normJSONMap(p.Properties)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: properties: %v", t.id, err)
		}
		m.Properties = v
	}
	if p.Arguments != nil {
		v, err := normJSONMap(p.Arguments)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: arguments: %v", t.id, err)
		}
		m.Arguments = v
	}
	storecontract.ApplyThreadPatch(m, p, t.clock())
	return nil
}
