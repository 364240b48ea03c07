package sqlstore

import "container/list"

// LRU keeps values by key within a budget of bytes, evicting the least recently used first. Each
// value's size is what its owner says it is (Put, Resize). It is not safe for concurrent use.
type LRU[V any] struct {
	Limit   int // bytes; at most Limit are kept (none when 0)
	bytes   int
	entries map[string]*list.Element // of *lruEntry[V]
	lru     list.List                // front: most recently used
}

type lruEntry[V any] struct {
	key  string
	val  V
	size int
}

// Get returns the key's value, marking it recently used.
func (c *LRU[V]) Get(key string) (V, bool) {
	el, ok := c.entries[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*lruEntry[V]).val, true
}

// Put keeps v under key, size bytes, replacing what the key held; nothing is kept when size is
// over the budget alone, or the budget is 0.
func (c *LRU[V]) Put(key string, v V, size int) {
	c.Drop(key)
	if c.Limit <= 0 || size > c.Limit {
		return
	}
	if c.entries == nil {
		c.entries = make(map[string]*list.Element)
	}
	c.entries[key] = c.lru.PushFront(&lruEntry[V]{key: key, val: v, size: size})
	c.bytes += size
	c.evict()
}

// Update replaces the key's value and size, marking it recently used, when the key is kept.
func (c *LRU[V]) Update(key string, v V, size int) {
	el, ok := c.entries[key]
	if !ok {
		return
	}
	e := el.Value.(*lruEntry[V])
	c.bytes += size - e.size
	e.val, e.size = v, size
	c.lru.MoveToFront(el)
	c.evict()
}

// Grow counts by more bytes for the key's value (which its owner changed in place) and returns
// its new size, 0 when the key is not kept. It evicts others beyond the budget, not the key.
func (c *LRU[V]) Grow(key string, by int) int {
	el, ok := c.entries[key]
	if !ok {
		return 0
	}
	e := el.Value.(*lruEntry[V])
	e.size += by
	c.bytes += by
	c.lru.MoveToFront(el)
	c.evict()
	return e.size
}

// Drop forgets the key.
func (c *LRU[V]) Drop(key string) {
	if el, ok := c.entries[key]; ok {
		c.bytes -= el.Value.(*lruEntry[V]).size
		c.lru.Remove(el)
		delete(c.entries, key)
	}
}

// Clear forgets everything.
func (c *LRU[V]) Clear() {
	if len(c.entries) > 0 {
		clear(c.entries)
		c.lru.Init()
		c.bytes = 0
	}
}

// Len returns how many keys are kept; Bytes, their bytes.
func (c *LRU[V]) Len() int   { return len(c.entries) }
func (c *LRU[V]) Bytes() int { return c.bytes }

func (c *LRU[V]) evict() {
	for c.bytes > c.Limit {
		el := c.lru.Back()
		if el == nil {
			return
		}
		c.Drop(el.Value.(*lruEntry[V]).key)
	}
}
