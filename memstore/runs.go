package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// ExecState returns the thread's run-state documents by key.
func (s *Store) ExecState(ctx context.Context, threadID string) (map[string]json.RawMessage, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	th := s.lookup(threadID)
	if th == nil {
		return map[string]json.RawMessage{}, nil
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	return cloneDocs(th.exec), nil
}

// AcquireLease takes the thread's lease for node if it is free or expired, with a token higher than
// any before; ErrLeaseHeld while another acquisition is live (whichever node holds it).
func (s *Store) AcquireLease(ctx context.Context, threadID, node string, ttl time.Duration) (weft.Fence, error) {
	th, err := s.get(threadID)
	if err != nil {
		return weft.Fence{}, err
	}
	return s.acquire(th, threadID, node, ttl)
}

// acquire takes th's lease for node unless another acquisition is live.
func (s *Store) acquire(th *thread, threadID, node string, ttl time.Duration) (weft.Fence, error) {
	now := s.now()
	th.leaseMu.Lock()
	defer th.leaseMu.Unlock()
	if th.leaseOwner != "" && now.Before(th.leaseExpires) {
		return weft.Fence{}, fmt.Errorf("thread %s: lease held by %s: %w", threadID, th.leaseOwner, weft.ErrLeaseHeld)
	}
	th.leaseToken++
	th.leaseOwner, th.leaseExpires = node, now.Add(ttl)
	return weft.Fence{Node: node, Token: th.leaseToken, ThreadID: threadID}, nil
}

// BeginRun takes the thread's lease for node as AcquireLease does and returns, read under the
// thread's lock together with the lease, the thread, its run state, its top-level messages, its
// queue and the env values of the thread, its user (when UserID is set) and the instance, all
// copies. An unknown thread is ErrNotFound; nothing is taken when it fails. push is queued first
// (see weft.Store).
func (s *Store) BeginRun(ctx context.Context, threadID, node string, ttl time.Duration, push *weft.QueuedMessage) (weft.Fence, *weft.RunStart, error) {
	if push != nil {
		// Two steps are one here: no process survives between them, and a run that takes the
		// lease meanwhile finds the message queued, as it would after the push's commit.
		if err := s.PushQueue(ctx, push); err != nil {
			return weft.Fence{}, nil, err
		}
	}
	f, rs, err := s.beginRun(ctx, threadID, node, ttl)
	if err != nil {
		return f, rs, err
	}
	// Read after the thread's lock is released: the effects' lock is never taken under it.
	if set, ok := s.children.Load(threadID); ok {
		set.(*sync.Map).Range(func(any, any) bool {
			rs.Children = true
			return false
		})
	}
	rs.EffectsDue = s.effectsDue()
	return f, rs, nil
}

func (s *Store) beginRun(ctx context.Context, threadID, node string, ttl time.Duration) (weft.Fence, *weft.RunStart, error) {
	if err := ctx.Err(); err != nil {
		return weft.Fence{}, nil, err
	}
	th, err := s.get(threadID)
	if err != nil {
		return weft.Fence{}, nil, err
	}
	th.mu.RLock()
	deleted, userID := th.deleted, th.meta.UserID // UserID never changes
	th.mu.RUnlock()
	if deleted {
		return weft.Fence{}, nil, notFound(threadID)
	}
	// Env first: it is the only part that can fail, and it must not fail with the lease taken.
	rs := &weft.RunStart{}
	if err := s.runEnv(rs, threadID, userID); err != nil {
		return weft.Fence{}, nil, err
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	if th.deleted {
		return weft.Fence{}, nil, notFound(threadID)
	}
	f, err := s.acquire(th, threadID, node, ttl)
	if err != nil {
		return weft.Fence{}, nil, err
	}
	rs.Thread = th.threadCopy()
	rs.ExecState = cloneDocs(th.exec)
	// Rows are shared, not copied: a committed row is never changed in place (UpdateMessage
	// replaces it), so the run reads a stable snapshot.
	n := 0
	for _, m := range th.msgs {
		if m.Depth <= 0 {
			n++
		}
	}
	rs.Rows = make([]*weft.Message, 0, n)
	for _, m := range th.msgs {
		if m.Depth <= 0 {
			rs.Rows = append(rs.Rows, m)
		}
	}
	rs.Queued = copyQueue(th.queue, 0, 0)

	return f, rs, nil
}

// runEnv fills the env values of a RunStart.
func (s *Store) runEnv(rs *weft.RunStart, threadID, userID string) error {
	s.envMu.RLock()
	defer s.envMu.RUnlock()
	var err error
	if rs.ThreadEnv, err = s.envLocked(weft.EnvThread, threadID); err != nil {
		return err
	}
	if userID != "" {
		if rs.UserEnv, err = s.envLocked(weft.EnvUser, userID); err != nil {
			return err
		}
	}
	rs.InstanceEnv, err = s.envLocked(weft.EnvInstance, "")
	return err
}

// RenewLease extends a lease still held with f's token (even if it just expired, as long as nobody
// took it since); ErrLeaseLost otherwise.
func (s *Store) RenewLease(ctx context.Context, f weft.Fence, ttl time.Duration) error {
	th := s.lookup(f.ThreadID)
	if th == nil {
		return fmt.Errorf("thread %s: %w", f.ThreadID, weft.ErrLeaseLost)
	}
	th.leaseMu.Lock()
	defer th.leaseMu.Unlock()
	if th.leaseOwner != f.Node || th.leaseToken != f.Token {
		return fmt.Errorf("thread %s: lease token %d of %s: %w", f.ThreadID, f.Token, f.Node, weft.ErrLeaseLost)
	}
	th.leaseExpires = s.now().Add(ttl)
	return nil
}

// ReleaseLease frees a lease held with f's token; no error if it was already lost.
func (s *Store) ReleaseLease(ctx context.Context, f weft.Fence) error {
	th := s.lookup(f.ThreadID)
	if th == nil {
		return nil
	}
	th.leaseMu.Lock()
	defer th.leaseMu.Unlock()
	if th.leaseOwner == f.Node && th.leaseToken == f.Token {
		th.leaseOwner, th.leaseExpires = "", time.Time{}
	}
	return nil
}

// checkFence reports ErrLeaseLost unless th's lease is live and held with f; when it is and release
// is set, the lease is freed (keeping its token).
func (s *Store) checkFence(th *thread, f *weft.Fence, release bool) error {
	now := s.now()
	th.leaseMu.Lock()
	ok := th.leaseOwner == f.Node && th.leaseToken == f.Token && now.Before(th.leaseExpires)
	if ok && release {
		th.leaseOwner, th.leaseExpires = "", time.Time{}
	}
	th.leaseMu.Unlock()
	if !ok {
		return fmt.Errorf("thread %s: lease token %d of %s: %w", f.ThreadID, f.Token, f.Node, weft.ErrLeaseLost)
	}
	return nil
}

// SetExecState stages a run-state document (nil deletes it).
func (t *tx) SetExecState(key string, value json.RawMessage) error {
	if err := storecontract.CheckExecState(t.id, key, value); err != nil {
		return err
	}
	t.exec = append(t.exec, kvOp{key, cloneRaw(value)})
	return nil
}

// ReleaseLease stages the release of the fence's lease: it is freed at commit, together with the
// writes (a no-op for a Tx without a fence).
func (t *tx) ReleaseLease() error {
	t.releaseLease = true
	return nil
}
