package sqlite

import (
	"database/sql"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/sqlstore"
	msqlite "modernc.org/sqlite"
)

// rowCache keeps, for a thread whose run is under way, what the run's next fenced Tx would read of
// its thread row when it begins (qTxStart): the lease, the sequence counters, the doc and the run
// state, as the run's last transaction left them, and the thread's queue once BeginRun read it. A
// run's steps are transactions of the thread's own, one after another, so each step after the
// first starts without reading the row (one statement, and a seek into messages for the highest
// seq, less per step), and the step that drains the queue deletes the rows without reading them.
//
// It belongs to the writer and is used only while Store.wmu is held. An entry stays true because
// every other change of the row is seen:
//   - in this process every write goes through the writer: a write of one thread's rows (a Tx,
//     BeginRun, a push, a lease's acquisition, renewal or release, a new thread) drops or updates
//     that thread's entry — a fenced Tx of its own thread renews it — and any other write
//     (writeReq.keepsRows unset) clears them all before it runs;
//   - a batch rolled back clears them all (its writes may have renewed entries);
//   - another connection's commit (another process) changes the file's data version, which the
//     writer compares after each BEGIN with the one its own last commit left, clearing them all on
//     a difference.
//
// When the run's last Tx releases the lease, its entry moves to idle, as that Tx leaves the row:
// the thread's next BeginRun starts from it instead of reading the row (idle rows are dropped and
// cleared with the others, and bounded in number).
type rowCache struct {
	rows     map[string]cachedRow
	idle     map[string]cachedRow
	idleHits int // BeginRuns that started from an idle row, for tests
	// What a run starts from besides its thread's row (qRunStartIdle) that is not one thread's:
	// users' env docs, the instance's, and when effects are due. Only writes of no one thread
	// change them (SetEnv, the effects' writes), and those clear everything.
	userEnv                map[string]string
	instanceEnv            string
	instanceKnown          bool
	effPending, effClaimed sql.NullInt64
	effKnown               bool
	aroundHits             int // BeginRuns that read nothing, for tests
	idLookups              int // message ids looked for among the stored ones, for tests
	eventSeqReads          int // event seqs read from the database (tx.AppendEvents), for tests
	idKeptChecks           int // ... among a kept history, for tests
	rowidMisses            int // thread rows a known rowid did not find (updateThread), for tests
	// hist keeps threads' histories (histcache.go), kept true by the same means; unlike rows its
	// entries outlive a lease's release.
	hist histCache
	// bodies keeps threads' last request bodies (bodies.go), kept true by the same means.
	bodies sqlstore.BodyCache
	// version is the data version after this connection's last commit; set while anything is
	// kept.
	version uint32
}

// cachedRow is a thread row as a fenced Tx of the thread left it, with the thread's queue when it
// is known (the docs of the queue table's rows in seq order, as qRunStart concatenates them).
type cachedRow struct {
	// rowid is the thread's number (threads.num, the row's rowid; 0: not known), by which a run's
	// writes of the row find it (writer.updateThread: a seek by the text id through its index costs
	// several thousand instructions more) and its Txs write the thread's messages, calls and logs
	// (migration 0012).
	rowid                             int64
	owner                             string
	token, expires                    int64
	msgSeq, callSeq, logSeq, queueSeq int64
	doc, runState                     string
	inbox                             string // the doc of the message waiting in the row ("": none)
	queue                             string
	queueKnown                        bool
	around                            around
	maxMsgID                          string // see tx.maxMsgID
	maxMsgKnown                       bool
	pendingActivity                   int64 // pending_activity_at (see tx.pendingActivity)
	calls                             openCallsState
	// eventSeq is the thread's last event seq when eventSeqKnown: a run that records events
	// (engine.Options.RecordEvents) appends them in most of its Txs, each of which read it.
	eventSeq      int64
	eventSeqKnown bool
}

// around is what a run starts from besides its thread's row that is the thread's own: its env
// docs (as qRunStartIdle concatenates them) and whether it has children. Only writes of no one
// thread change the env (SetEnv clears everything); a child's CreateThread sets children.
type around struct {
	threadEnv string
	children  bool
	known     bool
}

// maxCachedRows bounds the entries: runs under way at once, far more than one writer serves. It
// bounds the idle rows too (about 500 bytes each).
const maxCachedRows = 4096

func (c *rowCache) get(threadID string) (cachedRow, bool) {
	r, ok := c.rows[threadID]
	return r, ok
}

func (c *rowCache) put(threadID string, r cachedRow) {
	if c.rows == nil {
		c.rows = make(map[string]cachedRow)
	}
	if len(c.rows) >= maxCachedRows {
		clear(c.rows)
	}
	c.rows[threadID] = r
}

func (c *rowCache) drop(threadID string) {
	if len(c.rows) > 0 {
		delete(c.rows, threadID)
	}
	if len(c.idle) > 0 {
		delete(c.idle, threadID)
	}
}

// putIdle keeps the row a run's last Tx left, the lease released.
func (c *rowCache) putIdle(threadID string, r cachedRow) {
	delete(c.rows, threadID)
	if c.idle == nil {
		c.idle = make(map[string]cachedRow)
	}
	if len(c.idle) >= maxCachedRows {
		clear(c.idle)
	}
	c.idle[threadID] = r
}

// takeIdle returns the thread's idle row and forgets it.
func (c *rowCache) takeIdle(threadID string) (cachedRow, bool) {
	r, ok := c.idle[threadID]
	if ok {
		delete(c.idle, threadID)
	}
	return r, ok
}

// renewed notes a lease renewal: the thread's entry, when it holds that lease, expires later.
func (c *rowCache) renewed(f weft.Fence, expires int64) {
	r, ok := c.rows[f.ThreadID]
	if !ok {
		return
	}
	if r.owner != f.Node || r.token != f.Token {
		delete(c.rows, f.ThreadID)
		return
	}
	r.expires = expires
	c.rows[f.ThreadID] = r
}

// childAdded notes that the thread has a child now.
func (c *rowCache) childAdded(parent string) {
	if r, ok := c.rows[parent]; ok {
		r.around.children = true
		c.rows[parent] = r
	}
	if r, ok := c.idle[parent]; ok {
		r.around.children = true
		c.idle[parent] = r
	}
}

// noteAround keeps what a run start read that is not one thread's.
func (c *rowCache) noteAround(user, userEnv, instanceEnv string, pending, claimed sql.NullInt64) {
	if user != "" {
		if c.userEnv == nil {
			c.userEnv = make(map[string]string)
		}
		if len(c.userEnv) >= maxCachedRows {
			clear(c.userEnv)
		}
		c.userEnv[user] = userEnv
	}
	c.instanceEnv, c.instanceKnown = instanceEnv, true
	c.effPending, c.effClaimed, c.effKnown = pending, claimed, true
}

// aroundOf returns what is around a thread's row for its run start (env docs of its scopes,
// children, effects due) when all of it is kept.
func (c *rowCache) aroundOf(r cachedRow, user string) (env [3]string, children bool, pending, claimed sql.NullInt64, ok bool) {
	if !r.around.known || !c.instanceKnown || !c.effKnown {
		return env, false, pending, claimed, false
	}
	var userEnv string
	if user != "" {
		if userEnv, ok = c.userEnv[user]; !ok {
			return env, false, pending, claimed, false
		}
	}
	return [3]string{r.around.threadEnv, userEnv, c.instanceEnv}, r.around.children, c.effPending, c.effClaimed, true
}

func (c *rowCache) clear() {
	if len(c.rows) > 0 {
		clear(c.rows)
	}
	if len(c.idle) > 0 {
		clear(c.idle)
	}
	if len(c.userEnv) > 0 {
		clear(c.userEnv)
	}
	c.instanceKnown, c.effKnown = false, false
	c.hist.clear()
	c.bodies.Clear()
}

// active reports whether anything is kept.
func (c *rowCache) active() bool {
	return len(c.rows) > 0 || len(c.idle) > 0 || !c.hist.empty() || !c.bodies.Empty() || len(c.userEnv) > 0 || c.instanceKnown || c.effKnown
}

// begun runs after BEGIN: the entries go when another connection committed since this one's last
// commit (or when the version cannot be read).
func (c *rowCache) begun(conn *sql.Conn) {
	if !c.active() {
		return
	}
	if v, ok := dataVersion(conn); !ok || v != c.version {
		c.clear()
	}
}

// committed runs after this connection's COMMIT: the entries the transaction left are true as of
// the version it notes.
func (c *rowCache) committed(conn *sql.Conn) {
	if !c.active() {
		return
	}
	v, ok := dataVersion(conn)
	if !ok {
		c.clear()
		return
	}
	c.version = v
}

// dataVersion reads the main database's data version (SQLITE_FCNTL_DATA_VERSION): it changes with
// each commit of this connection and, when a transaction begins, when another connection committed.
func dataVersion(conn *sql.Conn) (uint32, bool) {
	var v uint32
	err := conn.Raw(func(dc any) error {
		fc, ok := dc.(msqlite.FileControl)
		if !ok {
			return errNoFileControl
		}
		var err error
		v, err = fc.FileControlDataVersion("main")
		return err
	})
	return v, err == nil
}
