package sqlstore

import "github.com/weft-agents/weft/internal/storecontract"

// BodyCache keeps each thread's last request bodies, as stored, so that a SQL store finds the part
// a new body shares with one (storecontract.BestBase) without reading anything; how a store keeps
// its entries true is the store's (sqlite/logs.go, postgres/logs.go).
const (
	KeptBodies = 4 // recent bodies kept per thread
	BodyBudget = 16 << 20
)

// BodyCache keeps threads' last request bodies, least recently used threads evicted beyond
// BodyBudget bytes. It is not safe for concurrent use.
type BodyCache struct {
	lru LRU[[]KeptBody] // by thread, oldest body first
}

// KeptBody is a stored request body: the id later bodies name it by as their base (the log's in
// sqlite, the body row's in postgres), the body, and the length of its chain of bases (0: stored
// whole).
type KeptBody struct {
	ID    string
	Body  string
	Chain int
}

// Base returns the kept body of the thread that is worth storing body on (storecontract.BestBase)
// and the bytes they share.
func (c *BodyCache) Base(thread, body string) (kb KeptBody, shared int, ok bool) {
	recent, found := c.lru.Get(thread)
	if !found {
		return kb, 0, false
	}
	i, shared := storecontract.BestBase(len(recent), func(i int) (string, int) { return recent[i].Body, recent[i].Chain }, body)
	if i < 0 {
		return kb, 0, false
	}
	return recent[i], shared, true
}

// Add keeps a log's request body as stored (chain bases long) as the thread's most recent. A body
// that replaces one of the same id drops it; a body larger than an eighth of the budget drops the
// thread's.
func (c *BodyCache) Add(thread string, k KeptBody) {
	c.lru.Limit = BodyBudget
	if len(k.Body) > BodyBudget/8 {
		c.lru.Drop(thread)
		return
	}
	old, found := c.lru.Get(thread)
	recent := make([]KeptBody, 0, KeptBodies) // a new slice: the old one may be a caller's
	for _, b := range old {
		if b.ID != k.ID {
			recent = append(recent, b)
		}
	}
	if len(recent) == KeptBodies {
		recent = recent[1:]
	}
	recent = append(recent, k)
	size := 0
	for _, b := range recent {
		size += len(b.Body)
	}
	if found {
		c.lru.Update(thread, recent, size)
	} else {
		c.lru.Put(thread, recent, size)
	}
}

// Drop forgets the thread's bodies.
func (c *BodyCache) Drop(thread string) { c.lru.Drop(thread) }

// Clear forgets every body.
func (c *BodyCache) Clear() { c.lru.Clear() }

// Has reports whether the thread's bodies are kept.
func (c *BodyCache) Has(thread string) bool {
	_, ok := c.lru.Get(thread)
	return ok
}

// Empty reports whether nothing is kept.
func (c *BodyCache) Empty() bool { return c.lru.Len() == 0 }
