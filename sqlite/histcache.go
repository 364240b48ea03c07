package sqlite

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"time"
	"unsafe"

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

// appendRows adds newly inserted messages to the thread's entry, when it has one: copies made as
// they were inserted (keptCopy), of docs bytes of docs in all.
func (c *histCache) appendRows(thread string, rows []*weft.Message, docs int) {
	if len(rows) == 0 {
		return
	}
	e, ok := c.lru.Get(thread)
	if !ok {
		return
	}
	e.rows = append(e.rows, rows...)
	if c.lru.Grow(thread, docs+len(rows)*rowBytes) > c.lru.Limit/maxHistory {
		c.lru.Drop(thread)
	}
}

// bigDoc is the size from which a doc this package just wrote is kept (as the history's message,
// the inbox's) as the string it is rather than copied: a copy of a 20 MiB message's doc is 20 MiB
// more of the peak a large message costs.
const bigDoc = 64 << 10

// docString is b as a string without a copy. Only for bytes that nothing writes to again: a doc
// this package built and passed to SQLite (which copies what it binds), a log's body
// (LogTx.PutLog).
func docString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// keptCopy is the message the kept history holds for one just inserted: what decoding its doc
// would give (doc and metadata as messageDoc wrote them), made without decoding it. The struct
// and its slices are copied, so the caller's message stays the caller's. Its text goes into one
// new buffer, as a decoded message's lies in its doc: the caller's strings may be parts of larger
// ones (a response body) that the history must not keep alive, nor count as less than they are.
// The metadata is decoded from its JSON, for the types a read gives; the time is made from the
// nanoseconds the doc holds. docLen, the doc's length, bounds the text.
func keptCopy(m *weft.Message, created time.Time, metadata []byte, docLen int) (*weft.Message, error) {
	k := *m
	var b textBuf
	b.Grow(docLen)
	for _, f := range []*string{&k.ID, &k.Content, &k.Name, &k.ToolCallID, &k.ParentID, &k.Prompt, &k.Reasoning, &k.LogID, &k.RunID} {
		*f = b.own(*f)
	}
	k.ToolCalls = cloneNonEmpty(m.ToolCalls)
	for i := range k.ToolCalls {
		c := &k.ToolCalls[i]
		c.ID, c.Name, c.Arguments = b.own(c.ID), b.own(c.Name), b.own(c.Arguments)
	}
	k.Attachments = cloneNonEmpty(m.Attachments)
	for i := range k.Attachments {
		a := &k.Attachments[i]
		a.ID, a.Path, a.Name, a.MimeType, a.Description = b.own(a.ID), b.own(a.Path), b.own(a.Name), b.own(a.MimeType), b.own(a.Description)
	}
	k.Metadata = nil
	if metadata != nil {
		if err := json.Unmarshal(metadata, &k.Metadata); err != nil {
			return nil, err
		}
	}
	k.CreatedAt = fromNanos(created.UnixNano())
	return &k, nil
}

// textBuf copies strings into one buffer. A string it returns stays valid and unchanged as more
// are copied (strings.Builder never rewrites what it holds); sized beforehand, it allocates once.
type textBuf struct{ strings.Builder }

func (b *textBuf) own(s string) string {
	if s == "" {
		return ""
	}
	start := b.Len()
	b.WriteString(s)
	return b.String()[start:]
}

// cloneNonEmpty copies s; nil when it is empty, as a decoded doc has it.
func cloneNonEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func (c *histCache) drop(thread string) { c.lru.Drop(thread) }

func (c *histCache) clear() { c.lru.Clear() }
