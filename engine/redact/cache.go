package redact

import (
	"hash/maphash"
	"slices"
	"sync/atomic"
)

// Cache keeps the Redactors built lately, by the secret values they redact, so that the runs,
// reads and API calls of a thread whose secrets did not change share the one built the first
// time: building one encodes every secret a dozen ways and compiles a replacer, which the
// thread's next read then need not do.
//
// It is keyed by content, not by thread: the caller reads the thread's secrets wherever they live
// (a run's env, the store's env rows) and asks For them. A thread whose secrets changed — here, in
// another process or on another node sharing the store — asks for other values and gets another
// Redactor; nothing is invalidated, and nothing can be stale. Threads with the same secrets (the
// provider keys alone, most often) share one.
//
// It is a direct-mapped table of a fixed number of slots, each holding one Redactor and the values
// it was built of: it holds at most that many, whatever the number of threads, and a set of values
// takes the slot of an older one that hashes alike. It takes no lock.
type Cache struct {
	// seed hashes the values to their slot.
	seed maphash.Seed
	// slots hold the entries; their number is a power of two.
	slots []atomic.Pointer[cached]
}

// cached is one slot's Redactor and the values it redacts, sorted, each once.
type cached struct {
	// secrets are the values, of 4 bytes or more, sorted and without duplicates.
	secrets []string
	// red redacts them.
	red *Redactor
}

// none is the Redactor of no secret, shared.
var none = &Redactor{}

// NewCache returns a Cache of at least size slots (rounded up to a power of two).
func NewCache(size int) *Cache {
	n := 1
	for n < size {
		n <<= 1
	}
	return &Cache{seed: maphash.MakeSeed(), slots: make([]atomic.Pointer[cached], n)}
}

// For returns a Redactor of the secret lists, as New builds it: the one the cache holds for the
// same values, or a new one, which it then holds. Values shorter than 4 bytes are ignored, as New
// ignores them; without any value left it returns a Redactor that changes nothing, shared.
func (c *Cache) For(secrets ...[]string) *Redactor {
	n := 0
	for _, l := range secrets {
		n += len(l)
	}
	if n == 0 {
		return none
	}
	all := make([]string, 0, n)
	for _, l := range secrets {
		for _, s := range l {
			if len(s) >= 4 {
				all = append(all, s)
			}
		}
	}
	if len(all) == 0 {
		return none
	}
	slices.Sort(all)
	all = slices.Compact(all)
	var h maphash.Hash
	h.SetSeed(c.seed)
	for _, s := range all {
		h.WriteString(s)
		h.WriteByte(0)
	}
	slot := &c.slots[h.Sum64()&uint64(len(c.slots)-1)]
	if e := slot.Load(); e != nil && slices.Equal(e.secrets, all) {
		return e.red
	}
	red := New(all)
	slot.Store(&cached{secrets: all, red: red})
	return red
}
