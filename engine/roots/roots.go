// Package roots remembers which threads are their own roots. A thread's root never changes, so a
// conversation that knows it need not read the thread before its run (which reads it anyway).
//
// The Cache is a direct-mapped table of Size hashes of thread ids (with a seed of its own),
// allocated once (512 KiB, no pointers to scan): the threads it remembers cost no memory past the
// table however many go idle, and it takes no lock. A newer thread takes an older one's slot; the
// older one's next conversation reads its thread, as does a child's (children are not remembered:
// their conversations are rare). Two ids share a slot and a hash with probability 2⁻⁶⁴.
package roots

import (
	"context"
	"hash/maphash"
	"sync/atomic"

	"github.com/weft-agents/weft"
)

// Size is the number of slots of a Cache.
const Size = 1 << 16

// Cache remembers threads that are their own roots. It is safe for concurrent use.
type Cache struct {
	seed  maphash.Seed
	slots []atomic.Uint64 // 0: empty
}

// New returns an empty cache.
func New() Cache {
	return Cache{seed: maphash.MakeSeed(), slots: make([]atomic.Uint64, Size)}
}

func (c *Cache) slot(id string) (uint64, *atomic.Uint64) {
	h := maphash.String(c.seed, id) | 1
	return h, &c.slots[h%Size]
}

// Known tells whether the thread id is remembered as its own root.
func (c *Cache) Known(id string) bool {
	h, s := c.slot(id)
	return s.Load() == h
}

// Put remembers t when it is its own root.
func (c *Cache) Put(t *weft.Thread) {
	if Of(t) != t.ID {
		return
	}
	h, s := c.slot(t.ID)
	s.Store(h)
}

// Find returns the root of the thread's tree, and the thread when it had to read it: a caller
// that needs the thread itself (thread) always reads it; one that needs only the root reads it
// when the thread is not remembered. A thread read is remembered.
func (c *Cache) Find(ctx context.Context, st weft.Store, threadID string, thread bool) (string, *weft.Thread, error) {
	if !thread && c.Known(threadID) {
		return threadID, nil, nil
	}
	t, err := st.Thread(ctx, threadID)
	if err != nil {
		return "", nil, err
	}
	c.Put(t)
	return Of(t), t, nil
}

// Of returns the root of t's tree (t itself when it has no parent).
func Of(t *weft.Thread) string {
	if t.RootID != "" {
		return t.RootID
	}
	return t.ID
}
