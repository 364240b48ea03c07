package postgres

import (
	"errors"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weft-agents/weft"
)

// A run's transactions follow one another on a thread whose lease the run holds, and in between
// nobody else usually writes the thread. So the store remembers, per thread whose lease this
// process holds, the thread row as the run's last transaction left it, named by the row version's
// xmin, and the queue. The next fenced transaction then needs no round trip to lock and read the
// row first: it sends a guard statement, fn's writes and the row's update together, as one
// implicitly committed batch. The guard locks the row and divides by zero when the row's version
// or lease is no longer the one remembered (a push, a renewal, another node's write), which aborts
// the whole batch in the server; the transaction then runs again the usual way, fn included (see
// Store.Tx). The queue is covered by the row's version: a push advances the row's queue counter
// and a drain writes the row.

// known is what a run's transactions know of their thread between them.
type known struct {
	node   string
	token  int64
	xmin   string // the row version's xmin, as text
	row    threadRow
	queued []weft.QueuedMessage
}

// knownRows holds the known rows by thread id.
type knownRows struct {
	mu sync.Mutex
	m  map[string]*known
}

// get returns what is known of threadID for the fence's lease (nil when nothing).
func (k *knownRows) get(threadID string, f *weft.Fence) *known {
	k.mu.Lock()
	defer k.mu.Unlock()
	v := k.m[threadID]
	if v == nil || v.node != f.Node || v.token != f.Token {
		return nil
	}
	return v
}

// maxKnown bounds the known rows: a run that ends without its last transaction (its process
// lost the lease, or the database) leaves its row behind.
const maxKnown = 1 << 16

func (k *knownRows) put(threadID string, v *known) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m) >= maxKnown {
		k.m = map[string]*known{}
	}
	k.m[threadID] = v
}

// drop forgets threadID: this process changed its row outside a run's transactions.
func (k *knownRows) drop(threadID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, threadID)
}

// qGuard locks the thread's row ($1) and aborts the transaction unless its version ($2) and
// lease ($3, $4) are the ones known. A concurrent writer's change is seen: FOR UPDATE waits for
// it and checks the newest version.
const qGuard = `SELECT 1 / count(*) FROM (SELECT 1 FROM threads WHERE id = $1 AND xmin::text = $2
	AND lease_owner = $3 AND lease_token = $4 FOR UPDATE) g`

// qRowVersion reads the thread row's version as the transaction leaves it.
const qRowVersion = `SELECT xmin::text FROM threads WHERE id = $1`

// errStale: the known row was not the database's; the transaction runs again.
var errStale = errors.New("postgres: the thread row changed since the run's last transaction")

// beginKnown starts a transaction from what is known of the row: nothing is sent yet, the guard
// goes first in the batch.
func (t *tx) beginKnown(k *known) {
	t.known = true
	t.row = k.row
	t.queued = slices.Clip(k.queued)
	t.queue(op{sql: qGuard, args: []any{t.id, k.xmin, k.node, k.token}, fail: func(err error) error {
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "22012" { // division_by_zero
			t.stale = true
			return errStale
		}
		return err
	}})
}

// remember updates what is known of the row once a transaction of the fence's thread committed.
func (t *tx) remember() {
	f := t.fence
	switch {
	case f == nil:
		t.s.known.drop(t.id)
	case f.ThreadID != t.id:
	case t.xmin == "":
		// No version was read back: the lease ends, or the queue holds a row this transaction
		// did not read (commit).
		t.s.known.drop(t.id)
	default:
		t.s.known.put(t.id, &known{node: f.Node, token: f.Token, xmin: t.xmin, row: t.row, queued: t.queued})
	}
}
