package sqlite

import "container/list"

// histCache keeps threads' histories as a run starts from them: the docs of a thread's messages
// at depth ≤ 0, in seq order, concatenated as qRunStart's messages column is. A hit spares
// BeginRun reading every message of the thread (a B-tree walk and a copy of each row, about a
// twentieth of a SQLite turn's instructions) on the single write connection, where it holds up
// every other writer.
//
// It belongs to the writer with the row cache (rowCache.hist) and is used only while Store.wmu is
// held. An entry is exactly the thread's messages because every change of them is seen:
//   - in this process messages change only in a Tx (InsertMessage appends to the entry once the
//     Tx's function succeeded, UpdateMessage and DeleteMessage drop it) and in writes that are not
//     a thread's own (DeleteThread's cascade among them), which clear every entry, as a rolled-back
//     batch does;
//   - another connection's commit clears every entry (rowCache.begun, by the data version).
//
// Entries are made when BeginRun reads a history and when CreateThread makes a thread (empty),
// and evicted least recently used first beyond the byte budget; a history larger than an eighth
// of the budget is not kept.
type histCache struct {
	limit   int // bytes; 0: nothing is kept
	bytes   int
	entries map[string]*list.Element // of *histEntry
	lru     list.List                // front: most recently used
	hits    int                      // BeginRuns served, for tests
}

type histEntry struct {
	thread string
	docs   []byte
}

// defaultHistoryCache is Options.HistoryCache's default.
const defaultHistoryCache = 32 << 20

func (c *histCache) empty() bool { return len(c.entries) == 0 }

// get returns a copy of the thread's history, marking it recently used.
func (c *histCache) get(thread string) (string, bool) {
	el, ok := c.entries[thread]
	if !ok {
		return "", false
	}
	c.lru.MoveToFront(el)
	c.hits++
	return string(el.Value.(*histEntry).docs), true
}

// put makes the thread's entry hold docs.
func (c *histCache) put(thread, docs string) {
	c.drop(thread)
	if c.limit <= 0 || len(docs) > c.limit/8 {
		return
	}
	if c.entries == nil {
		c.entries = make(map[string]*list.Element)
	}
	e := &histEntry{thread: thread, docs: append(make([]byte, 0, len(docs)+len(docs)/4+512), docs...)}
	c.entries[thread] = c.lru.PushFront(e)
	c.bytes += cap(e.docs)
	c.evict()
}

// appendDocs adds newly inserted messages' docs to the thread's entry, when it has one.
func (c *histCache) appendDocs(thread string, docs [][]byte) {
	el, ok := c.entries[thread]
	if !ok || len(docs) == 0 {
		return
	}
	e := el.Value.(*histEntry)
	before := cap(e.docs)
	for _, d := range docs {
		e.docs = append(e.docs, d...)
	}
	c.bytes += cap(e.docs) - before
	if cap(e.docs) > c.limit/8 {
		c.drop(thread)
		return
	}
	c.lru.MoveToFront(el)
	c.evict()
}

func (c *histCache) drop(thread string) {
	if el, ok := c.entries[thread]; ok {
		c.bytes -= cap(el.Value.(*histEntry).docs)
		c.lru.Remove(el)
		delete(c.entries, thread)
	}
}

func (c *histCache) clear() {
	if len(c.entries) > 0 {
		clear(c.entries)
		c.lru.Init()
		c.bytes = 0
	}
}

// evict drops least recently used entries while the budget is exceeded.
func (c *histCache) evict() {
	for c.bytes > c.limit {
		el := c.lru.Back()
		if el == nil {
			return
		}
		c.drop(el.Value.(*histEntry).thread)
	}
}
