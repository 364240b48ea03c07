package sqlite

import (
	"reflect"
	"slices"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/sqlstore"
)

// histCache keeps threads' histories as a run starts from them: a thread's messages at depth ≤ 0,
// in seq order, decoded, handed to the run as RunStart.Rows (read-only, shared). A hit spares
// BeginRun reading every message of the thread (a B-tree walk and a copy of each row) on the
// single write connection, where it holds up every other writer, and decoding them (about a
// thirtieth of a SQLite turn's instructions, and most of a run start's garbage).
//
// It belongs to the writer with the row cache (rowCache.hist) and is used only while Store.wmu is
// held. An entry is exactly the thread's messages because every change of them is seen:
//   - in this process messages change only in a Tx (InsertMessage appends to the entry once the
//     Tx's function succeeded, UpdateMessage and DeleteMessage drop it) and in writes that are not
//     a thread's own (DeleteThread's cascade among them), which clear every entry, as a rolled-back
//     batch does;
//   - another connection's commit clears every entry (rowCache.begun, by the data version).
//
// A kept message is never changed: an entry only grows at its end (a run holding an earlier
// slice of it sees its own length only), and an update or delete drops the entry.
//
// Entries are made when BeginRun reads a history and when CreateThread makes a thread (empty),
// and evicted least recently used first beyond the byte budget (counted as the messages' docs
// plus the decoded structs); a history larger than 1/maxHistory of the budget is not kept.
type histCache struct {
	lru  sqlstore.LRU[*histEntry] // by thread; Limit 0: nothing is kept
	hits int                      // BeginRuns served, for tests
}

type histEntry struct {
	rows []*weft.Message
}

// maxHistory: a history larger than 1/maxHistory of the budget is not kept, so that one thread
// leaves room for others. Such a history is read whole at every run start, as it would be without
// the cache, so the bound is generous (an eighth, until the eighth session, kept no history of
// more than ~9,000 short messages).
const maxHistory = 2

// defaultHistoryCache is Options.HistoryCache's default.
const defaultHistoryCache = 32 << 20

// rowBytes is what a kept message costs besides its doc: the decoded struct and its pointer.
var rowBytes = int(reflect.TypeFor[weft.Message]().Size()) + 8

func (c *histCache) empty() bool { return c.lru.Len() == 0 }

// get returns the thread's history, marking it recently used. The slice is the caller's to
// append to (its capacity ends at its length); the messages are shared and must not be changed.
func (c *histCache) get(thread string) ([]*weft.Message, bool) {
	rows, ok := c.peek(thread)
	if !ok {
		return nil, false
	}
	c.hits++
	return slices.Clip(rows), true
}

// peek is get without counting a hit nor clipping: for reading the history, not running from it.
func (c *histCache) peek(thread string) ([]*weft.Message, bool) {
	e, ok := c.lru.Get(thread)
	if !ok {
		return nil, false
	}
	return e.rows, true
}

// put makes the thread's entry hold rows, decoded from docs bytes of docs; it keeps rows, which
// the caller must not change after.
func (c *histCache) put(thread string, rows []*weft.Message, docs int) {
	size := docs + len(rows)*rowBytes
	if size > c.lru.Limit/maxHistory {
		c.lru.Drop(thread)
		return
	}
	c.lru.Put(thread, &histEntry{rows: rows}, size)
}

// appendDocs adds newly inserted messages to the thread's entry, when it has one, decoding their
// docs (which it keeps).
func (c *histCache) appendDocs(thread string, docs [][]byte) {
	if len(docs) == 0 {
		return
	}
	e, ok := c.lru.Get(thread)
	if !ok {
		return
	}
	added := 0
	for _, d := range docs {
		m, err := decodeMessages(string(d), thread, make([]weft.Message, 0, 1))
		if err != nil || len(m) != 1 {
			c.lru.Drop(thread) // not expected: the doc was just encoded; the thread is read again
			return
		}
		e.rows = append(e.rows, &m[0])
		added += len(d) + rowBytes
	}
	if c.lru.Grow(thread, added) > c.lru.Limit/maxHistory {
		c.lru.Drop(thread)
	}
}

func (c *histCache) drop(thread string) { c.lru.Drop(thread) }

func (c *histCache) clear() { c.lru.Clear() }
