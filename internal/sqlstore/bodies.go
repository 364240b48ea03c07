package sqlstore

import (
	"fmt"
	"strings"
)

// Request bodies stored on earlier ones. A model call's log carries the request the provider
// sent: the whole conversation so far. Stored as it is, a thread of n messages would store O(n)
// bytes a call, O(n²) over its life (a 1,000-turn chat stored 285 MiB of logs for 0.5 MiB of
// messages). Consecutive requests of a thread share most of their text, so the SQL stores keep a
// body as the bytes it shares with an earlier body of the thread (its base) and the rest, a chain
// of bases at most MaxBodyChain long. BodyCache keeps each thread's last bodies, as stored, so that
// a store finds the shared part without reading anything; how a store keeps its entries true is
// the store's (sqlite/logs.go, postgres/logs.go).
const (
	MaxBodyChain = 256 // bases followed to read a body
	MinShared    = 128 // bytes a body must share with its base
	KeptBodies   = 4   // recent bodies kept per thread
	BodyBudget   = 16 << 20
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

// Base returns the kept body of the thread that shares the longest prefix with body, when that is
// worth a base: at least MinShared bytes and its chain shorter than MaxBodyChain.
func (c *BodyCache) Base(thread, body string) (kb KeptBody, shared int, ok bool) {
	recent, found := c.lru.Get(thread)
	if !found {
		return kb, 0, false
	}
	for i := len(recent) - 1; i >= 0; i-- {
		k := recent[i]
		if k.Chain >= MaxBodyChain {
			continue
		}
		if n := CommonPrefix(k.Body, body); n > shared {
			kb, shared = k, n
			if n >= len(body)-len(body)/8 {
				break // the most recent bodies come first; this one is good enough
			}
		}
	}
	return kb, shared, shared >= MinShared
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

// CommonPrefix returns the length in bytes of the longest common prefix of a and b, comparing
// 64 bytes at a time while they agree.
func CommonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+64 <= n && a[i:i+64] == b[i:i+64] {
		i += 64
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// BodyLink is one row of a body's chain.
type BodyLink struct {
	Base   string
	Shared int
	Rest   string
}

// JoinBody rebuilds a request body from its chain (the log's row first, its whole base last) in
// one pass: the body's bytes beyond each link's shared part are that link's rest, the others its
// base's, so each link gives at most one piece and every byte is copied once.
func JoinBody(log string, links []BodyLink) (string, error) {
	if len(links) == 0 {
		return "", fmt.Errorf("request body of log %s: no row", log)
	}
	if last := links[len(links)-1]; last.Base != "" {
		return "", fmt.Errorf("request body of log %s: base %s missing or its chain too long", log, last.Base)
	}
	if len(links) == 1 {
		return links[0].Rest, nil
	}
	n := links[0].Shared + len(links[0].Rest) // bytes of the body still to place, from its start
	pieces := make([]string, 0, len(links))   // last piece first
	for _, l := range links {
		if l.Base == "" {
			l.Shared = 0 // a whole body shares nothing (older rows may say otherwise)
		}
		if l.Shared < 0 || n-l.Shared > len(l.Rest) {
			return "", fmt.Errorf("request body of log %s: a base of %d bytes where %d are needed", log, l.Shared+len(l.Rest), n)
		}
		if n > l.Shared {
			pieces = append(pieces, l.Rest[:n-l.Shared])
			n = l.Shared
		}
	}
	var b strings.Builder
	b.Grow(links[0].Shared + len(links[0].Rest))
	for i := len(pieces) - 1; i >= 0; i-- {
		b.WriteString(pieces[i])
	}
	return b.String(), nil
}
