package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weft-agents/weft"
)

// A Tx's own statements: whether its thread exists, its fence, its counters. hotWrites lists those
// prepared at Open.
const (
	qThreadExists = `SELECT num FROM threads WHERE id = ?`
	// qTxThread is an unfenced Tx's read of its thread: its number and the activity its run left
	// pending (migration 0016), which the Tx moves to the index when it writes the row.
	qTxThread = `SELECT num, pending_activity_at FROM threads WHERE id = ?`
	qTxFence  = `SELECT t.num, t.pending_activity_at, COALESCE(l.lease_owner, ''), COALESCE(l.lease_token, 0), COALESCE(l.lease_expires_at, 0)
		FROM threads t LEFT JOIN threads l ON l.id = ?2 WHERE t.id = ?1`
	// qSeqs reads the thread's sequence counters (see tx), when the Tx first numbers a row.
	qSeqs = `SELECT max(msg_seq, COALESCE((SELECT MAX(seq) FROM messages WHERE thread_num = threads.num), 0)), call_seq, log_seq
		FROM threads WHERE id = ?1`
	// qTxStart is qTxFence, qSeqs, qQueueSeq and qThreadDoc in one statement, for a fenced Tx on
	// its own thread (a run's steps): every step numbers rows and asks for the queue, most update
	// the thread, and one read of the thread row serves them all.
	qTxStart = `SELECT t.num, t.lease_owner, t.lease_token, t.lease_expires_at,
		max(t.msg_seq, COALESCE((SELECT MAX(seq) FROM messages WHERE thread_num = t.num), 0)), t.call_seq, t.log_seq, t.queue_seq, t.doc, t.run_state,
		COALESCE(t.inbox, ''), t.pending_activity_at, COALESCE(t.calls, '')
		FROM threads t WHERE t.id = ?1`
	// qInbox reads the message waiting in the thread row (migration 0007), for a Tx that drains the
	// queue without having read the row.
	qInbox = `SELECT COALESCE(inbox, '') FROM threads WHERE id = ?`
)

// What a Tx's one write of the thread row sets, at its end (tx.flush): a mask of these picks its
// statement. Setting last_activity_at rewrites its two indexes (two more pages), so only when it
// changes, and in a run only at its end: its steps set pending_activity_at (tx.activity).
const (
	setFields   = 1 << iota // status, preview and the doc: UpdateThread changed some field
	setNames                // agent, label and tags, when UpdateThread changed one of them
	setActivity             // last_activity_at, whose two indexes cost two pages; nothing pending
	setPending              // pending_activity_at: the activity a run's step leaves to its end
	setSeqs                 // the counters the Tx advanced
	setRunState             // the run-state documents
	setRelease              // the lease freed (ReleaseLease of the Tx's own thread)
	setInbox                // the message waiting in the row drained
	setCalls                // the open calls (opencalls.go)
)

// qUpdateThread holds the statement of each mask. Its parameters are plain ?, in the order of the
// SET clauses below and the thread id last (flush appends the arguments in that order): modernc
// allocates a string for every numbered parameter of every execution, and this statement is
// written at the end of most transactions.
var qUpdateThread = func() (q [512]string) {
	for mask := 1; mask < len(q); mask++ {
		if mask&(setActivity|setPending) == setActivity|setPending {
			continue // never both
		}
		var set []string
		if mask&setNames != 0 {
			set = append(set, "agent = ?, label = ?, tags = COALESCE(?, tags)")
		}
		if mask&setFields != 0 {
			set = append(set, "status = ?, preview = ?, doc = ?")
		}
		if mask&setActivity != 0 {
			set = append(set, "last_activity_at = ?, pending_activity_at = 0")
		}
		if mask&setPending != 0 {
			set = append(set, "pending_activity_at = ?")
		}
		if mask&setSeqs != 0 {
			set = append(set, "msg_seq = max(msg_seq, ?), call_seq = ?, log_seq = ?")
		}
		if mask&setRunState != 0 {
			set = append(set, "run_state = ?")
		}
		if mask&setRelease != 0 {
			set = append(set, "lease_owner = '', lease_expires_at = 0")
		}
		if mask&setInbox != 0 {
			set = append(set, "inbox = NULL")
		}
		if mask&setCalls != 0 {
			set = append(set, "calls = ?")
		}
		q[mask] = "UPDATE threads SET " + strings.Join(set, ", ") + " WHERE id = ?"
	}
	return q
}()

// Tx runs fn in one BEGIN IMMEDIATE transaction on the write connection: committed when fn returns
// nil, rolled back when it returns an error or panics. Transactions of all threads run one at a time
// (SQLite has one writer); fn may read through the Store (it sees committed data) but must not
// start another Tx or other write, nor keep the Tx after returning. With a fence, the lease of
// fence.ThreadID (the Tx's thread when empty) must be live and held with fence's node and token,
// checked inside the transaction, else ErrLeaseLost and nothing is written. An unknown thread is
// ErrNotFound.
func (s *Store) Tx(ctx context.Context, threadID string, fence *weft.Fence, fn func(weft.Tx) error) error {
	return s.writeOwn(ctx, func(w *writer) error { return s.txIn(ctx, w, threadID, fence, fn) })
}

// txIn runs fn as Tx does, within the write w (CreateThreadTx runs it after its thread's insert).
func (s *Store) txIn(ctx context.Context, w *writer, threadID string, fence *weft.Fence, fn func(weft.Tx) error) (txErr error) {
	t := tx{s: s, w: w, ctx: ctx, id: threadID, idArg: threadID, fence: fence, eventSeq: -1}
	// A fenced Tx of the lease's own thread starts from the row its run's last Tx left
	// (rowcache.go) and leaves the row for the next; an unfenced Tx of a thread whose idle
	// row is kept does the same with that row; any other Tx changes the row unseen.
	own := fence != nil && (fence.ThreadID == "" || fence.ThreadID == threadID)
	idle, kept := cachedRow{}, false
	if fence == nil {
		idle, kept = w.rows.takeIdle(threadID)
	}
	if !own {
		w.rows.drop(threadID)
	}
	if kept {
		t.load(idle)
		defer func() {
			if txErr != nil {
				w.rows.drop(threadID)
				return
			}
			w.rows.putIdle(threadID, t.row(idle.owner, idle.token, idle.expires))
		}()
	} else if fence == nil {
		if err := w.row(ctx, qTxThread, []any{&t.rowid, &t.pendingActivity}, threadID); err != nil {
			return s.noThread(threadID, err)
		}
	} else {
		leaseThread := fence.ThreadID
		if leaseThread == "" {
			leaseThread = threadID
		}
		// The lease as read lives in t, which is on the heap anyway: locals whose addresses
		// are scanned into, or that the deferred function captures, would each be one more
		// allocation a Tx.
		l := &t.held
		var err error
		if c, ok := w.rows.get(threadID); ok && own {
			l.owner, l.token, l.expires = c.owner, c.token, c.expires
			t.load(c)
		} else if own {
			err = w.row(ctx, qTxStart, []any{&t.rowid, &l.owner, &l.token, &l.expires, &t.msgSeq, &t.callSeq, &t.logSeq, &t.queueSeq, &t.doc, &t.runState.framed, &t.inbox, &t.pendingActivity, &t.calls.col}, threadID)
			t.seqsRead, t.queueRead, t.docRead, t.runState.read, t.inboxRead = err == nil, err == nil, err == nil, err == nil, err == nil
			t.calls.read, t.calls.exact = err == nil, t.calls.col == ""
		} else {
			err = w.row(ctx, qTxFence, []any{&t.rowid, &t.pendingActivity, &l.owner, &l.token, &l.expires}, threadID, leaseThread)
		}
		if err != nil {
			return s.noThread(threadID, err)
		}
		if l.owner != fence.Node || l.token != fence.Token || s.now().UnixNano() >= l.expires {
			w.rows.drop(threadID)
			return fmt.Errorf("thread %s: lease token %d of %s: %w", leaseThread, fence.Token, fence.Node, weft.ErrLeaseLost)
		}
		if own {
			defer func() {
				// Kept for the run's next Tx: the row as this one leaves it; when the lease
				// goes with it, for the thread's next run (unless the Tx fails: its writes,
				// whatever it did, roll back).
				if txErr != nil {
					w.rows.drop(threadID)
					return
				}
				c := t.row(l.owner, l.token, l.expires)
				if t.release {
					c.owner, c.expires = "", 0 // as setRelease writes them
					w.rows.putIdle(threadID, c)
				} else {
					w.rows.put(threadID, c)
				}
			}()
		}
	}
	if t.rowid == 0 {
		// Not kept (a row whose number the writer did not learn): read, as the thread's
		// messages, calls and logs are written by it.
		if err := w.row(ctx, qTxThread, []any{&t.rowid, &t.pendingActivity}, threadID); err != nil {
			return s.noThread(threadID, err)
		}
	}
	t.numArg = t.rowid
	if err := fn(&t); err != nil {
		return err
	}
	if err := t.flush(); err != nil {
		return err
	}
	// Should the batch roll back after all, every kept history goes (commitBatch).
	w.rows.hist.appendRows(threadID, t.inserted, t.insertedDocs)
	return nil
}

// load starts the Tx from a kept row.
func (t *tx) load(c cachedRow) {
	t.rowid = c.rowid
	t.msgSeq, t.callSeq, t.logSeq, t.queueSeq, t.doc, t.runState.framed = c.msgSeq, c.callSeq, c.logSeq, c.queueSeq, c.doc, c.runState
	t.seqsRead, t.queueRead, t.docRead, t.runState.read, t.inboxRead = true, true, true, true, true
	t.queued, t.queuedKnown, t.inbox = c.queue, c.queueKnown, c.inbox
	t.around, t.pendingActivity, t.calls = c.around, c.pendingActivity, c.calls
	t.maxMsgID, t.maxMsgKnown = c.maxMsgID, c.maxMsgKnown
	if c.eventSeqKnown {
		t.eventSeq = c.eventSeq
	}
}

// row is the thread row as the Tx leaves it, with the given lease.
func (t *tx) row(owner string, token, expires int64) cachedRow {
	return cachedRow{rowid: t.rowid, owner: owner, token: token, expires: expires,
		msgSeq: t.msgSeq, callSeq: t.callSeq, logSeq: t.logSeq, queueSeq: t.queueSeq,
		doc: t.doc, runState: t.runState.framed, inbox: t.inbox, queue: t.queued, queueKnown: t.queuedKnown, around: t.around,
		maxMsgID: t.maxMsgID, maxMsgKnown: t.maxMsgKnown, pendingActivity: t.pendingActivity, calls: t.calls,
		eventSeq: max(t.eventSeq, 0), eventSeqKnown: t.eventSeq >= 0}
}

// noThread maps a missing row to ErrNotFound naming the thread.
func (s *Store) noThread(threadID string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("thread %s: %w", threadID, weft.ErrNotFound)
	}
	return fmt.Errorf("sqlite: thread %s: %w", threadID, err)
}

// tx is the weft.Tx of one Store.Tx call.
//
// Sequence numbers are assigned from counters read when the Tx first numbers a row; the Tx is the
// only writer until it ends. The next message seq is one above the highest stored seq or
// threads.msg_seq, which only records the seqs of deleted messages, so that inserting a message
// does not write the thread row (one page less per commit). Calls and logs are numbered from
// threads.call_seq and log_seq, stored once, before the commit, when they advanced.
type tx struct {
	s     *Store
	w     *writer
	ctx   context.Context
	id    string
	fence *weft.Fence // nil for an unfenced Tx
	now   time.Time
	rowid int64 // the thread row's number (threads.num, its rowid; cachedRow.rowid)
	// numArg is rowid as a statement argument, boxed once as idArg is: the thread's messages,
	// calls and logs name it by number (migration 0012).
	numArg any

	seqsRead                bool  // the counters below were read
	msgSeq, callSeq, logSeq int64 // last numbers assigned
	seqsDirty               bool  // callSeq or logSeq advanced
	queueRead               bool  // queueSeq was read (no push can land while the Tx holds the writer)
	queueSeq                int64
	queuedKnown             bool          // queued holds the thread's queue table rows (from the row cache)
	queued                  string        // the queued rows' docs, in seq order
	inboxRead               bool          // inbox holds the thread row's inbox
	inbox                   string        // the doc of the message waiting in the row ("": none)
	inboxDrained            bool          // DrainQueue took the inbox's message: flush clears it
	docRead                 bool          // doc holds the thread row's doc
	doc                     string        // as read, or as UpdateThread last made it
	thread                  *threadUpdate // the thread's fields once UpdateThread changed them
	runState                runState
	release                 bool            // ReleaseLease: flush frees the thread's lease
	around                  around          // kept with the row the Tx started from, passed on
	eventSeq                int64           // the last event seq, once read (-1 until then)
	deleted                 bool            // a message was deleted: msg_seq must keep msgSeq
	inserted                []*weft.Message // copies of the messages at depth ≤ 0 inserted, in seq order (keptCopy)
	insertedDocs            int             // their docs' bytes
	insertedIDs             []string        // ids of the messages inserted, at any depth (in idsBuf first)
	idsBuf                  [2]string
	maxMsgKnown             bool   // maxMsgID is the greatest id of the thread's messages
	maxMsgID                string // ("" when it has none), deleted ones possibly included
	held                    lease  // a fenced Tx's lease as it began
	// pendingActivity is the thread row's pending_activity_at (migration 0016), as read or as
	// flush leaves it: the activity its run's steps left for the run's end to index (0: none).
	pendingActivity int64
	// calls is what the Tx knows of the row's open calls (opencalls.go); open their entries once
	// decoded (openDecoded), callsDirty that the Tx put one of them.
	calls       openCallsState
	open        []openCall
	openDecoded bool
	callsDirty  bool
	// idArg is id as a statement argument, boxed once: a string passed as an argument is copied
	// to the heap at each statement otherwise, and a step's statements name the thread five to
	// ten times.
	idArg any
}

// readSeqs reads the counters once per Tx.
func (t *tx) readSeqs() error {
	if t.seqsRead {
		return nil
	}
	if err := t.w.row(t.ctx, qSeqs, []any{&t.msgSeq, &t.callSeq, &t.logSeq}, t.id); err != nil {
		return t.fail("counters", err)
	}
	t.seqsRead = true
	return nil
}

// flush writes the thread row once before the Tx commits: the fields UpdateThread changed, the
// counters the Tx advanced and the run state SetExecState changed, in one statement.
func (t *tx) flush() error {
	mask := 0
	var buf [13]any // at most 6 fields, activity, 3 counters, the run state, the calls and the id
	args := buf[:0]
	if u := t.thread; u != nil {
		th := &u.th
		if u.names {
			mask |= setNames
			args = append(args, th.Agent, th.Label, u.tags)
		}
		mask |= setFields
		args = append(args, wordArg(string(th.Status)), th.Preview, u.doc)
	}
	switch act, write, pending := t.activity(); {
	case write && pending:
		mask |= setPending
		args = append(args, act)
		t.pendingActivity = act
	case write:
		mask |= setActivity
		args = append(args, act)
		t.pendingActivity = 0
	}
	if t.seqsDirty || t.deleted {
		mask |= setSeqs
		floor := int64(0)
		if t.deleted {
			floor = t.msgSeq
		}
		args = append(args, floor, t.callSeq, t.logSeq)
	}
	if t.runState.dirty {
		mask |= setRunState
		t.runState.framed = t.runState.encode()
		args = append(args, t.runState.framed)
	}
	if t.release {
		mask |= setRelease
	}
	if t.inboxDrained {
		mask |= setInbox
	}
	if col, write, err := t.flushCalls(mask != 0); err != nil {
		return err
	} else if write {
		mask |= setCalls
		args = append(args, col)
	}
	if mask == 0 {
		return nil
	}
	args = append(args, t.idArg)
	if _, err := t.w.updateThread(t.ctx, qUpdateThread[mask], t.rowid, args...); err != nil {
		return t.fail("update thread", err)
	}
	return nil
}

// activity is what flush writes of the thread's activity: when write, act (unix nanoseconds) to
// last_activity_at, or to pending_activity_at when pending too.
//
// A fenced step of its own thread's run, the thread running and the lease kept, leaves the
// activity index to the run's end (migration 0016): its new activity goes to pending_activity_at,
// in the row it writes anyway. Any other write of the row that changes the activity, the status
// or the lease — the run's end (its release, or a status other than running), an unfenced Tx
// (the API's) — indexes the activity, the pending one when it sets none. So a thread whose
// activity is pending is running in a run that holds, or held, its lease: a run that ends moves
// it; one that crashed left the thread running, and the run that resumes it moves it at its end.
func (t *tx) activity() (act int64, write, pending bool) {
	u := t.thread
	changed := u != nil && u.activity
	if changed {
		act = nanos(u.th.LastActivityAt)
	}
	own := t.fence != nil && (t.fence.ThreadID == "" || t.fence.ThreadID == t.id)
	running := u == nil || u.th.Status == weft.ThreadRunning // no status set: as the pending one's
	switch {
	case own && !t.release && running && (!changed || act != 0): // (0 would read as none pending)
		// A step: what changed waits for the run's end; what is pending stays.
		return act, changed && act != t.pendingActivity, true
	case changed:
		return act, true, false
	case t.pendingActivity != 0 && (u != nil || t.release):
		return t.pendingActivity, true, false // moved with the row's other changes
	}
	return 0, false, false
}

func (t *tx) clock() time.Time {
	if t.now.IsZero() {
		t.now = t.s.now().UTC()
	}
	return t.now
}

func (t *tx) fail(what string, err error) error {
	return fmt.Errorf("sqlite: thread %s: %s: %w", t.id, what, err)
}

// wordArg passes a role or status as a statement argument: a known one boxed once (knownWords),
// any other as it is (a string passed as an argument is copied to the heap at each statement).
func wordArg(w string) any {
	if v, ok := knownWords[w]; ok {
		return v
	}
	return w
}

// knownWords are the roles and statuses the hot statements pass, each boxed once.
var knownWords = func() map[string]any {
	m := map[string]any{}
	for _, w := range []string{
		string(weft.RoleUser), string(weft.RoleAssistant), string(weft.RoleTool), string(weft.RoleSystem),
		string(weft.ThreadIdle), string(weft.ThreadRunning), string(weft.ThreadAwaitingHuman), string(weft.ThreadStopped),
		string(weft.CallPending), string(weft.CallRunning), string(weft.CallDone),
	} {
		m[w] = w
	}
	return m
}()
