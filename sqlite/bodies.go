package sqlite

import (
	"container/list"
	"fmt"
	"strings"
)

// A model call's log row carries the request the provider sent: the whole conversation so far. On
// a thread of n messages every call would store O(n) bytes, O(n²) over the thread's life (a
// 1,000-turn chat stored 285 MiB of logs for 0.5 MiB of messages, and each turn wrote 470 KB of
// overflow pages). Consecutive requests of a thread share most of their text, so a request body is
// stored as the part it shares with an earlier body of the thread (logs.request_base, the earlier
// log's id, and request_prefix, its length in bytes) and the rest (request_body). A body with no
// base is stored whole. A chain of bases is at most maxBodyChain long, so reading a body costs a
// bounded number of rows; a row that is a base is never rewritten unless its dependents are first
// stored whole (tx.replaceLog).
//
// The writer keeps each thread's last request bodies, as stored, to find the shared part without
// reading anything (bodyCache). It belongs to the writer with the row cache (rowCache.bodies),
// used only while Store.wmu is held, and kept true the same way: log rows change only in a Tx of
// their thread, which updates the entry; every other write, a rolled-back batch and another
// connection's commit clear it.
const (
	maxBodyChain = 256 // bases followed to read a body
	minShared    = 128 // bytes a body must share with its base
	keptBodies   = 4   // recent bodies kept per thread
	bodyBudget   = 16 << 20
)

type bodyCache struct {
	bytes   int
	entries map[string]*list.Element // of *bodyEntry
	lru     list.List                // front: most recently used
}

type bodyEntry struct {
	thread string
	recent []keptBody // oldest first
	size   int
}

// keptBody is a log row's request body and the length of its chain of bases (0: stored whole).
type keptBody struct {
	log   string
	body  string
	chain int
}

// base returns the kept body of the thread that shares the longest prefix with body, when that is
// worth a base: at least minShared bytes and its chain shorter than maxBodyChain.
func (c *bodyCache) base(thread, body string) (kb keptBody, shared int, ok bool) {
	el, found := c.entries[thread]
	if !found {
		return kb, 0, false
	}
	e := el.Value.(*bodyEntry)
	for i := len(e.recent) - 1; i >= 0; i-- {
		k := e.recent[i]
		if k.chain >= maxBodyChain {
			continue
		}
		if n := commonPrefix(k.body, body); n > shared {
			kb, shared = k, n
			if n >= len(body)-len(body)/8 {
				break // the most recent bodies come first; this one is good enough
			}
		}
	}
	return kb, shared, shared >= minShared
}

// add keeps a log's request body as stored (chain bases long) as the thread's most recent.
func (c *bodyCache) add(thread string, k keptBody) {
	if len(k.body) > bodyBudget/8 {
		c.drop(thread)
		return
	}
	if c.entries == nil {
		c.entries = make(map[string]*list.Element)
	}
	el, found := c.entries[thread]
	if !found {
		el = c.lru.PushFront(&bodyEntry{thread: thread})
		c.entries[thread] = el
	} else {
		c.lru.MoveToFront(el)
	}
	e := el.Value.(*bodyEntry)
	for i, old := range e.recent {
		if old.log == k.log { // a replaced log: its old body goes
			e.size -= len(old.body)
			c.bytes -= len(old.body)
			e.recent = append(e.recent[:i], e.recent[i+1:]...)
			break
		}
	}
	if len(e.recent) == keptBodies {
		e.size -= len(e.recent[0].body)
		c.bytes -= len(e.recent[0].body)
		e.recent = append(e.recent[:0], e.recent[1:]...)
	}
	e.recent = append(e.recent, k)
	e.size += len(k.body)
	c.bytes += len(k.body)
	for c.bytes > bodyBudget {
		c.drop(c.lru.Back().Value.(*bodyEntry).thread)
	}
}

func (c *bodyCache) drop(thread string) {
	if el, ok := c.entries[thread]; ok {
		c.bytes -= el.Value.(*bodyEntry).size
		c.lru.Remove(el)
		delete(c.entries, thread)
	}
}

func (c *bodyCache) clear() {
	if len(c.entries) > 0 {
		clear(c.entries)
		c.lru.Init()
		c.bytes = 0
	}
}

func (c *bodyCache) empty() bool { return len(c.entries) == 0 }

// commonPrefix returns the length in bytes of the longest common prefix of a and b, comparing
// 64 bytes at a time while they agree.
func commonPrefix(a, b string) int {
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

// qBodyChain reads a log's request body and its bases, the log first, in one statement (one
// snapshot). Each row: the base's id ("" when stored whole), the bytes shared with it, the rest.
const qBodyChain = `WITH RECURSIVE chain(k, base, shared, rest) AS (
		SELECT 0, request_base, request_prefix, request_body FROM logs WHERE thread_id = ?1 AND id = ?2
		UNION ALL
		SELECT c.k + 1, l.request_base, l.request_prefix, l.request_body
		FROM chain c JOIN logs l ON l.thread_id = ?1 AND l.id = c.base
		WHERE c.base <> '' AND c.k <= 300
	) SELECT base, shared, rest FROM chain ORDER BY k`

// bodyLink is one row of a body's chain.
type bodyLink struct {
	base   string
	shared int
	rest   string
}

// joinBody rebuilds a request body from its chain (the log's row first, its whole base last) in
// one pass: the body's bytes beyond each link's shared part are that link's rest, the others its
// base's, so each link gives at most one piece and every byte is copied once.
func joinBody(log string, links []bodyLink) (string, error) {
	if len(links) == 0 {
		return "", fmt.Errorf("request body of log %s: no row", log)
	}
	if last := links[len(links)-1]; last.base != "" {
		return "", fmt.Errorf("request body of log %s: base %s missing or its chain too long", log, last.base)
	}
	if len(links) == 1 {
		return links[0].rest, nil
	}
	n := links[0].shared + len(links[0].rest) // bytes of the body still to place, from its start
	pieces := make([]string, 0, len(links))   // last piece first
	for _, l := range links {
		if l.base == "" {
			l.shared = 0 // a whole body shares nothing (older rows may say otherwise)
		}
		if l.shared < 0 || n-l.shared > len(l.rest) {
			return "", fmt.Errorf("request body of log %s: a base of %d bytes where %d are needed", log, l.shared+len(l.rest), n)
		}
		if n > l.shared {
			pieces = append(pieces, l.rest[:n-l.shared])
			n = l.shared
		}
	}
	var b strings.Builder
	b.Grow(links[0].shared + len(links[0].rest))
	for i := len(pieces) - 1; i >= 0; i-- {
		b.WriteString(pieces[i])
	}
	return b.String(), nil
}
