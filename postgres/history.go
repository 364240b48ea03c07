package postgres

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"sync"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/sqlstore"
)

// histCache keeps the histories this node's runs started from: per thread, its messages at depth
// ≤ 0 in seq order, decoded, handed to the next run as RunStart.Rows (read-only, shared). A run
// start then reads and decodes only the messages added since, where it read the whole thread:
// every turn of a conversation n messages long cost O(n) (10.8 ms a turn at 1,000 messages, most
// of it decoding JSON, against SQLite's 0.23 ms; BenchmarkLongThreadTurn in engine/).
//
// An entry is right as long as the thread's msg_rev is the one read with it (migration 0003):
// every UPDATE, DELETE or TRUNCATE of messages moves it, in the same transaction, whoever runs the
// statement. Adding a message does not, and needs not: a message's seq is taken under the thread
// row's lock, held to its commit, so messages commit in seq order and BeginRun, which locks the row
// before it reads, sees every message up to the last seq it reads. BeginRun asks for the messages
// after the entry's last seq when msg_rev still matches and for all of them when not, in one
// statement, and reads msg_rev itself under the lock to know which it got.
type histCache struct {
	mu   sync.Mutex
	lru  sqlstore.LRU[*histEntry] // by thread; Limit 0: nothing is kept
	hits int                      // run starts served from an entry, for tests
}

type histEntry struct {
	rows []*weft.Message // never changed once kept: a run start appends to a copy
	last int64           // seq of the last row, 0 when there is none
	rev  int64           // threads.msg_rev when rows were read
	docs int             // bytes of the rows' docs
}

// defaultHistoryCache is Options.HistoryCache's default.
const defaultHistoryCache = 32 << 20

// rowBytes is what a kept message costs besides its doc: the decoded struct and its pointer.
var rowBytes = int(reflect.TypeFor[weft.Message]().Size()) + 8

// maxHistory: a history larger than 1/maxHistory of the budget is not kept, so that one thread
// leaves room for others. Such a history is read whole at every run start, as it would be without
// the cache, so the bound is generous: with an eighth, a run start on a thread of 8,000 short
// messages (4.6 MB decoded) read them all each time, 31.8 ms a turn.
const maxHistory = 2

// noRev is the msg_rev asked with when nothing is kept: the sequence never gives it.
const noRev = -1

// get returns the thread's entry, marking it recently used.
func (c *histCache) get(thread string) (histEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(thread)
	if !ok {
		return histEntry{rev: noRev}, false
	}
	return *e, true
}

// put keeps rows as the thread's history at rev; docs is the bytes of their docs. The rows are the
// cache's from then on, and a history larger than 1/maxHistory of the budget is not kept.
func (c *histCache) put(thread string, rows []*weft.Message, rev int64, docs int) {
	e := &histEntry{rows: slices.Clip(rows), rev: rev, docs: docs}
	if len(rows) > 0 {
		e.last = rows[len(rows)-1].Seq
	}
	size := docs + len(rows)*rowBytes
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.lru.Limit/maxHistory {
		c.lru.Drop(thread)
		return
	}
	c.lru.Put(thread, e, size)
}

func (c *histCache) drop(thread string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Drop(thread)
}

func (c *histCache) hit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hits++
}

// qRunMessages reads a run start's messages: those after $3 when the thread's msg_rev is still $2,
// else all of them.
const qRunMessages = `SELECT doc, seq FROM messages WHERE thread_id = $1 AND depth <= 0
	AND seq > (SELECT CASE WHEN msg_rev = $2 THEN $3 ELSE 0 END FROM threads WHERE id = $1) ORDER BY seq`

// qAllRunMessages is every message a run starts from, for verifyHistory.
const qAllRunMessages = `SELECT doc, seq FROM messages WHERE thread_id = $1 AND depth <= 0 ORDER BY seq`

// verifyHistory makes BeginRun read the whole history in the same transaction as well when it
// starts from a kept one, and fail when they differ: this package's tests set it, and CI sets
// WEFT_POSTGRES_CHECK_HISTORY for every test (and every weft process the end-to-end tests start).
var verifyHistory = os.Getenv("WEFT_POSTGRES_CHECK_HISTORY") != ""

// checkHistory compares a history served from the cache with the stored one.
func checkHistory(threadID string, got []*weft.Message, stored []weft.Message) error {
	if !sqlstore.SameHistory(stored, got) {
		return fmt.Errorf("postgres: thread %s: the kept history (%d messages) is not the stored one (%d messages)", threadID, len(got), len(stored))
	}
	return nil
}

// runRows sets the run start's history: the kept one and the messages read after it when the
// thread's msg_rev is still the kept one's, else the messages read, which are then all of them.
// What the run starts from is kept for the next.
func (s *Store) runRows(rs *weft.RunStart, threadID string, kept histEntry, rev int64, read []weft.Message, docBytes int, stored []weft.Message) error {
	var rows []*weft.Message
	if rev == kept.rev {
		s.hist.hit()
		rows = slices.Grow(slices.Clip(kept.rows), len(read))
		docBytes += kept.docs
	} else {
		rows = make([]*weft.Message, 0, len(read))
	}
	for i := range read {
		rows = append(rows, &read[i])
	}
	if verifyHistory && rev == kept.rev {
		if err := checkHistory(threadID, rows, stored); err != nil {
			s.hist.drop(threadID)
			return err
		}
	}
	rs.Rows = rows
	s.hist.put(threadID, rows, rev, docBytes)
	return nil
}
