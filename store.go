package weft

import (
	"context"
	"encoding/json"
	"io"
	"math/bits"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Store persists threads and everything in them: messages, tool calls, the queue, run state, logs,
// events, KV, files and env values. Reads are methods of the Store; every write of a run goes
// through Tx, one transaction per step boundary, fenced by the run's lease. It is composed of one
// small interface per noun, so that a reader finds a method by what it stores and a caller can
// ask for only the part it uses. Implementations (sqlite, postgres, memstore) must behave
// identically; storetest checks them. Safe for concurrent use.
type Store interface {
	ThreadStore
	MessageStore
	LogStore
	KVStore
	FileStore
	EnvStore
	EffectStore
	RunStore

	// Close releases the store's resources.
	Close() error
}

// ThreadStore creates, reads, lists and deletes threads; a run changes a thread through ThreadTx.
type ThreadStore interface {
	// CreateThread stores a new thread together with its thread-layer env values, atomically.
	CreateThread(ctx context.Context, t *Thread, env []EnvValue) error
	// Thread returns a thread or ErrNotFound.
	Thread(ctx context.Context, id string) (*Thread, error)
	// Threads lists threads matching q and the total count before paging.
	Threads(ctx context.Context, q ThreadQuery) ([]*Thread, int, error)
	// DeleteThread deletes a thread, its descendants and all their rows.
	DeleteThread(ctx context.Context, id string) error
	// CreateThreadTx creates t with its env exactly as CreateThread does and runs fn on the new
	// thread in the same transaction (as Tx runs it, without a fence): the thread appears with
	// everything fn wrote, or not at all (a fork is made this way). When fn fails, nothing is
	// stored and its error is returned.
	CreateThreadTx(ctx context.Context, t *Thread, env []EnvValue, fn func(Tx) error) error
}

// MessageStore reads a thread's messages and tool calls and keeps its queue of messages waiting
// for the next step boundary; a run writes them through MessageTx.
type MessageStore interface {
	// Messages lists a thread's messages ordered by seq.
	Messages(ctx context.Context, threadID string, q MessageQuery) ([]Message, error)
	// CountMessages counts the messages Messages lists for q without its Limit and Offset (a
	// page's total), reading none of them.
	CountMessages(ctx context.Context, threadID string, q MessageQuery) (int, error)
	// Message returns one message or ErrNotFound.
	Message(ctx context.Context, threadID, id string) (Message, error)
	// ToolCalls lists a thread's tool calls with one of the given statuses (all when none given),
	// in call order.
	ToolCalls(ctx context.Context, threadID string, status ...CallStatus) ([]ToolCallRecord, error)
	// Queued lists the thread's queued messages in order without draining them.
	Queued(ctx context.Context, threadID string) ([]QueuedMessage, error)
	// PushQueue queues a message for the thread's next step boundary (no fence: callers outside runs).
	// A terminated thread refuses it (ErrTerminated), checked in the same atomic write.
	PushQueue(ctx context.Context, q *QueuedMessage) error
}

// LogStore reads what happened in a thread: the log rows of its model calls and the event log that
// streams resume from; a run appends to both through LogTx.
type LogStore interface {
	// Logs lists a thread's log rows in creation order; Log returns one with its bodies.
	Logs(ctx context.Context, threadID string, q LogQuery) ([]LogEntry, error)
	Log(ctx context.Context, threadID, id string) (LogEntry, error)
	// Events returns the thread's events with Seq > after, in order, at most limit of them (1,000
	// when limit ≤ 0). An unknown thread is ErrNotFound.
	Events(ctx context.Context, threadID string, after int64, limit int) ([]EventRecord, error)
	// LastEvents returns the seq of the thread's newest event (0 when it has none) and, for each
	// of types, the newest event of that type among the thread's within newest (Seq > last −
	// within), with its payload, in seq order. The other events' payloads are not read: a reader
	// that looks for a thread's last stop does not read the message of 20 MiB posted before it.
	// An unknown thread is ErrNotFound.
	LastEvents(ctx context.Context, threadID string, within int64, types ...string) (last int64, evs []EventRecord, err error)
}

// KVStore reads a thread's KV values, the JSON documents its tools keep by key; a run writes them
// through KVTx.
type KVStore interface {
	// GetKV returns a thread's KV value; found is false when absent. ListKV returns all keys.
	GetKV(ctx context.Context, threadID, key string) (value json.RawMessage, found bool, err error)
	ListKV(ctx context.Context, threadID string) (map[string]json.RawMessage, error)
}

// FileStore reads a thread's filesystem; a run writes it through FileTx.
type FileStore interface {
	// Files reads a thread's filesystem.
	Files() FileReader
}

// EnvStore keeps the encrypted env values of threads, users and the instance.
type EnvStore interface {
	// Env returns the decrypted values of one env scope (thread, user or instance) and owner.
	Env(ctx context.Context, scope EnvScope, owner string) ([]EnvValue, error)
	// SetEnv stores (encrypted) or, with Delete, removes env values of one scope and owner.
	SetEnv(ctx context.Context, scope EnvScope, owner string, values []EnvValue) error
}

// EffectStore keeps effects, the work a thread schedules to run later, and hands due ones to
// exactly one claimer across processes.
type EffectStore interface {
	// ScheduleEffect stores a new effect row (status pending); ID, CreatedAt and Status are filled
	// when empty. ErrNotFound for an unknown thread.
	ScheduleEffect(ctx context.Context, e *EffectRecord) error
	// ClaimEffects claims, for node, up to limit due effects (pending with RunAt ≤ now, or
	// processing with an expired claim — which counts as an attempt), ordered by RunAt: each becomes
	// processing with ClaimedBy = node and ClaimExpiresAt = now + claimTTL, Attempts incremented.
	// Exactly one claimer gets each effect, across processes.
	ClaimEffects(ctx context.Context, node string, limit int, claimTTL time.Duration) ([]EffectRecord, error)
	// FinishEffect records a claimed effect's outcome: completed, failed (with errText), or pending
	// again at retryAt (a retry); ErrNotFound if the effect does not exist.
	FinishEffect(ctx context.Context, id string, status EffectStatus, errText string, retryAt time.Time) error
	// CancelEffect cancels a pending effect of the thread; a conflict error (EConflict) when it is
	// no longer pending, ErrNotFound when unknown.
	CancelEffect(ctx context.Context, threadID, id string) error
	// Effects lists a thread's effects by RunAt.
	Effects(ctx context.Context, threadID string) ([]EffectRecord, error)
	// NextEffectAt returns when the earliest pending effect is due (zero when none).
	NextEffectAt(ctx context.Context) (time.Time, error)
}

// RunStore runs a thread: the lease that lets one node at a time run it, the run state a run
// resumes from, and the transactions through which a run writes.
type RunStore interface {
	// Tx runs fn in one transaction on the thread's rows: everything fn writes becomes visible at
	// once, or nothing does when fn returns an error. With a fence, the lease of fence.ThreadID (the
	// Tx's own thread when empty, so a run can write a child thread under its own fence) must still
	// be held with that token, else ErrLeaseLost and nothing is written. fn may read through the
	// Store (it sees committed data) but must not call a Store write method: that deadlocks.
	// fn may run more than once, each run but the last written nowhere (a store may first try it on
	// what it remembers of the thread, and run it again on what it reads when the thread changed):
	// it must change nothing outside the Tx that a second run would change again differently.
	Tx(ctx context.Context, threadID string, fence *Fence, fn func(Tx) error) error

	// BeginRun starts a run in one transaction: it takes the thread's lease for node exactly as
	// AcquireLease does (ErrLeaseHeld if another node holds it) and returns everything a run loads:
	// the thread, its run state, its top-level messages (all statuses), its queued messages, and
	// the env values of the thread, of its user (when UserID is set) and of the instance.
	//
	// push, when set, is queued first in the same transaction, exactly as PushQueue queues it (a
	// caller about to run the thread saves a commit): it is then among RunStart.Queued, and it
	// stays queued when the lease is held elsewhere (ErrLeaseHeld), for the holder's run. A thread
	// that refuses it (ErrTerminated) is left as it was: no message queued, no lease taken.
	BeginRun(ctx context.Context, threadID, node string, ttl time.Duration, push *QueuedMessage) (Fence, *RunStart, error)
	// ExecState returns the thread's run-state documents by key.
	ExecState(ctx context.Context, threadID string) (map[string]json.RawMessage, error)

	// AcquireLease takes the thread's lease for node if it is free or expired, returning a fence
	// with a token higher than any before; ErrLeaseHeld if another node holds it.
	AcquireLease(ctx context.Context, threadID, node string, ttl time.Duration) (Fence, error)
	// RenewLease extends a held lease; ErrLeaseLost if it is no longer held with that token.
	RenewLease(ctx context.Context, f Fence, ttl time.Duration) error
	// ReleaseLease frees a held lease (no error if it was already lost).
	ReleaseLease(ctx context.Context, f Fence) error
}

// RunReclaimer is implemented by a Store that several processes share (postgres). ReclaimRun is
// BeginRun for the node still holding the thread's lease with f's token — live, or expired but
// not taken since — which takes it again with a new token (ErrLeaseHeld if another node took it).
// A process whose run failed on a lost connection after a tool completed keeps the lease and the
// tool's result, and resumes the run itself when the store answers again: another process would
// answer the call as interrupted, and the model would call the tool again.
type RunReclaimer interface {
	ReclaimRun(ctx context.Context, f Fence, ttl time.Duration) (Fence, *RunStart, error)
}

// Notifier is implemented by a Store that several processes share (postgres): it tells one process
// of what the others commit, so that an engine wakes for them instead of polling the store.
type Notifier interface {
	// Watch calls fn, from one goroutine, with each notice of another process's commit until ctx
	// ends. Once it listens, at first and again after its connection dropped (notices sent
	// meanwhile are lost), it sends one of kind NoticeReset: every commit after that one is
	// noticed, and the watcher re-reads from the store whatever it follows.
	Watch(ctx context.Context, fn func(Notice)) error
}

// Notice is one commit of another process, as a Notifier reports it.
type Notice struct {
	Kind NoticeKind
	// ThreadID and Seq: the thread whose event log grew to Seq (NoticeEvents); the thread a
	// message was queued on (NoticeQueued).
	ThreadID string
	Seq      int64
}

// NoticeKind says what a Notice reports.
type NoticeKind uint8

// The notice kinds.
const (
	// NoticeEvents: a thread's events up to Seq were committed.
	NoticeEvents NoticeKind = iota + 1
	// NoticeEffect: an effect was scheduled or rescheduled; the next due time may have changed.
	NoticeEffect
	// NoticeReset: the watch listens (at first, or again after its connection dropped); notices
	// before it may have been missed: re-read what is followed.
	NoticeReset
	// NoticeQueued: a message was queued on ThreadID; a serving process that does not run the
	// thread yet may take it.
	NoticeQueued
)

// Tx is the write side of one transaction on one thread's rows, composed of the writes of each
// noun of the Store.
type Tx interface {
	ThreadTx
	MessageTx
	LogTx
	KVTx
	FileTx
	RunTx
}

// ThreadTx changes the Tx's thread.
type ThreadTx interface {
	// UpdateThread changes thread fields.
	UpdateThread(p ThreadPatch) error
}

// MessageTx writes the Tx's thread's messages, tool calls and queue.
type MessageTx interface {
	// InsertMessage inserts m, assigning ID (when empty), ThreadID, Seq (next gap-free number) and
	// CreatedAt (when zero).
	InsertMessage(m *Message) error
	// UpdateMessage changes a message.
	UpdateMessage(id string, c MessageChange) error
	// DeleteMessage removes a message.
	DeleteMessage(id string) error
	// PutToolCall inserts or replaces a tool-call record (keyed by thread and call id).
	PutToolCall(c *ToolCallRecord) error
	// DrainQueue removes and returns, in order, the queued messages with seq ≤ upTo (all of them
	// when upTo ≤ 0): a run drains exactly the rows it has shown the model.
	DrainQueue(upTo int64) ([]QueuedMessage, error)
	// QueueSeq returns the seq of the newest message ever queued on the thread (0 when none), as of
	// this transaction: a caller that has drained or seen the queue up to n has messages waiting when
	// it is above n. A store reads it with the transaction's other reads, so that a run learns of
	// queued messages without reading the queue again.
	QueueSeq() (int64, error)
	// PushQueue queues a message, as Store.PushQueue does, atomically with the transaction's other
	// writes (a message and the files it attaches land together or not at all); a terminated
	// thread refuses it (ErrTerminated) and nothing of the transaction is written.
	PushQueue(q *QueuedMessage) error
}

// LogTx appends to the Tx's thread's log rows and event log.
type LogTx interface {
	// PutLog inserts or replaces a log row (keyed by id). The store may keep l's request and
	// response bodies as they are (not copied): the caller does not change them afterwards.
	PutLog(l *LogEntry) error
	// AppendEvents adds events to the thread's event log, assigning each its Seq (continuing the
	// thread's gap-free count from 1) and CreatedAt when zero. They commit with the transaction's
	// other writes, so a stream that reconnects finds exactly the events of what was committed.
	AppendEvents(evs []EventRecord) error
}

// KVTx writes the Tx's thread's KV values.
type KVTx interface {
	// SetKV stores a JSON value (nil deletes it).
	SetKV(key string, value json.RawMessage) error
}

// FileTx writes the Tx's thread's filesystem.
type FileTx interface {
	// WriteFile stores a file (chunked above ChunkSize), creating parent directories.
	WriteFile(f *FileInfo, data []byte) error
	// Mkdir creates a directory and its parents.
	Mkdir(path string) error
	// RemoveFile removes a file; RemoveDir a directory (non-empty only when recursive).
	RemoveFile(path string) error
	RemoveDir(path string, recursive bool) error
	// RenameFile moves a file; the target must not exist.
	RenameFile(from, to string) error
}

// RunTx writes the Tx's thread's run state and ends the run's lease.
type RunTx interface {
	// SetExecState stores a run-state document under key (nil deletes it).
	SetExecState(key string, value json.RawMessage) error
	// ReleaseLease frees the Tx's fence lease when the transaction commits (no-op without a fence):
	// a run's last transaction ends it.
	ReleaseLease() error
}

// EventRecord is a thread's event as kept for streams that reconnect (the newest EventWindow of
// each thread at least).
type EventRecord struct {
	// ThreadID is the thread it happened in.
	ThreadID string `json:"thread_id"`
	// Seq numbers the thread's events from 1, without gaps: a stream's cursor.
	Seq int64 `json:"seq"`
	// Type is the event type (message, run_started, tool_completed, …).
	Type string `json:"type"`
	// Data is the payload as JSON, already redacted.
	Data json.RawMessage `json:"data,omitempty"`
	// CreatedAt is when it was appended.
	CreatedAt time.Time `json:"created_at"`
}

// EventWindow is how many of a thread's newest events a store keeps at least; older ones may be
// pruned, and a stream resuming from before them starts at the oldest kept.
const EventWindow = 10000

// RunStart is what BeginRun loads for a run.
type RunStart struct {
	Thread    *Thread
	ExecState map[string]json.RawMessage
	// Messages are the top-level (depth 0) messages in seq order.
	Messages []Message
	// Rows, when a store sets it instead of Messages, are those messages shared with the store,
	// read-only: the store never changes a row in place (an update replaces it), and the caller
	// must not modify them. A store whose rows live in memory saves a copy of every row per run.
	Rows []*Message
	// Queued are the queued messages in order.
	Queued []QueuedMessage
	// ThreadEnv, UserEnv and InstanceEnv are the decrypted env values of those scopes.
	ThreadEnv, UserEnv, InstanceEnv []EnvValue
	// Children reports that the thread has child threads (subagents): a caller that looks after
	// the thread's subtree knows without listing it whether there is one.
	Children bool
	// EffectsDue is the earliest time at which ClaimEffects can find an effect of any thread to
	// claim, as of the run's start: the earliest RunAt of a pending effect or expiry of a claim
	// (zero when there is neither). A caller that runs due effects after the run knows whether
	// to ask.
	EffectsDue time.Time
}

// FileReader reads a thread's filesystem. Paths are absolute, /-separated and cleaned
// (CleanPath); an invalid one is ErrInvalidPath, a missing one ErrNotFound.
type FileReader interface {
	Stat(ctx context.Context, threadID, path string) (FileInfo, error)
	ReadFile(ctx context.Context, threadID, path string) ([]byte, error)
	// Open streams a file, chunked ones included.
	Open(ctx context.Context, threadID, path string) (io.ReadCloser, error)
	// ReadDir lists a directory's direct entries sorted by name.
	ReadDir(ctx context.Context, threadID, path string) ([]FileInfo, error)
	Grep(ctx context.Context, threadID, pattern string, o GrepOptions) ([]GrepMatch, error)
	// Find lists files matching a ** glob, sorted by path.
	Find(ctx context.Context, threadID, glob string) ([]FileInfo, error)
	Usage(ctx context.Context, threadID string) (FileStats, error)
}

// Fence identifies a held lease; writes of a run carry it.
type Fence struct {
	// Node is the lease owner.
	Node string
	// Token increases with every acquisition of the thread's lease.
	Token int64
	// ThreadID is the leased thread.
	ThreadID string
}

// ErrLeaseHeld is returned by AcquireLease when another node holds a live lease.
var ErrLeaseHeld = Errorf(EConflict, "thread is running elsewhere")

// ThreadQuery filters and pages a thread listing. An empty UserID lists every user's threads;
// Limit 0 means no limit.
type ThreadQuery struct {
	UserID, Agent, ParentID, Tag, Search string
	Status                               ThreadStatus
	// RootsOnly lists only threads without a parent (unless ParentID is set).
	RootsOnly bool
	// Queued lists only threads with queued messages (work left after a restart).
	Queued bool
	// ForkedFrom lists only the forks of this thread (threads whose ForkedFrom.Thread it is).
	ForkedFrom string
	// Sort is activity (default), created or oldest.
	Sort          string
	Limit, Offset int
}

// ThreadPatch changes thread fields; nil fields are left alone.
type ThreadPatch struct {
	Agent          *string
	Label          *string
	Tags           []string
	Properties     map[string]any
	Arguments      map[string]any
	Status         *ThreadStatus
	StopReason     *StopReason
	LastActivityAt *time.Time
	Preview        *string
}

// MessageChange changes a stored message; nil fields are left alone.
type MessageChange struct {
	Content     *string
	Status      *MessageStatus
	ToolCalls   *[]ToolCall
	Attachments *[]Attachment
	Metadata    map[string]any // replaces the metadata when non-nil
	Silent      *bool
	Reasoning   *string
	LogID       *string
}

// CallStatus is the execution state of a tool call: registered pending with the assistant message,
// running while it executes, done once its result is stored, so that a resumed run never re-runs a
// stored result and re-runs an interrupted one only when the tool is idempotent.
type CallStatus string

// The tool-call states.
const (
	CallPending CallStatus = "pending"
	CallRunning CallStatus = "running"
	CallDone    CallStatus = "done"
	// CallAwaitingApproval: the call waits for a person's decision before it runs.
	CallAwaitingApproval CallStatus = "awaiting_approval"
)

// ToolCallRecord tracks one tool call's execution so a resumed run never re-runs a stored result.
type ToolCallRecord struct {
	ThreadID  string     `json:"thread_id"`
	CallID    string     `json:"call_id"`
	MessageID string     `json:"message_id"`
	Name      string     `json:"name"`
	Arguments string     `json:"arguments"`
	Status    CallStatus `json:"status"`
	// ResultMessageID is the tool message holding the result, once done.
	ResultMessageID string `json:"result_message_id,omitempty"`
	Idempotent      bool   `json:"idempotent"`
	// Seq orders calls within the thread (assigned on first insert).
	Seq        int64           `json:"seq"`
	Meta       json.RawMessage `json:"meta,omitempty"`
	StartedAt  *time.Time      `json:"started_at,omitempty"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
}

// QueuedMessage is a message waiting for the thread's next step boundary.
type QueuedMessage struct {
	ID          string         `json:"id"`
	ThreadID    string         `json:"thread_id"`
	Seq         int64          `json:"seq"`
	Role        Role           `json:"role"`
	Content     string         `json:"content"`
	Attachments []Attachment   `json:"attachments,omitempty"`
	Silent      bool           `json:"silent,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	CreatedAt   time.Time      `json:"created_at"`
	// MaxMessages, when > 0, makes Store.PushQueue and BeginRun's push refuse the message
	// (ErrThreadFull) when the thread's newest message has seq MaxMessages or more, checked
	// atomically with the push. Tx.PushQueue does not check it. It is not stored.
	MaxMessages int64 `json:"-"`
	// IfBusy is what the message asks for when a run of the thread is in progress (empty: queue).
	// IfBusyReject makes Store.PushQueue refuse it (a *BusyError) when the thread's status is
	// running or its lease is live, checked atomically with the push; it is not stored then.
	// IfBusyInterrupt and IfBusyRollback are stored with the message: the run in progress, told
	// of it (the engine in the same process, a Notifier's NoticeQueued in another), stops at once
	// for a new run.
	IfBusy IfBusy `json:"if_busy,omitempty"`
}

// EnvScope is the layer an env value is stored in.
type EnvScope string

// The stored env scopes.
const (
	EnvThread   EnvScope = "thread"
	EnvUser     EnvScope = "user"
	EnvInstance EnvScope = "instance"
)

// EnvValue is one variable value of a scope. Values are encrypted at rest by the store.
type EnvValue struct {
	Name  string
	Value string
	Type  VarType
	// Delete removes the value in SetEnv.
	Delete    bool
	UpdatedAt time.Time
}

// NewID returns a new sortable id with the given prefix (thr_, msg_, log_, eff_, req_, key_, run_):
// a ULID (48-bit millisecond time, 80 random bits) in lowercase Crockford base32. Ids are unique
// and sort by creation time to the millisecond; they are not secrets (API keys use crypto/rand).
//
// The ids one process makes increase strictly, whatever their prefix: within a millisecond (or
// when the clock steps back) an id is the last one plus a random step of up to 2^32, as ULID's
// monotonic mode does. So ids made one after another sort in the order they were made, which
// lets a store tell a new id from every stored one by comparing it with the greatest.
func NewID(prefix string) string {
	ms := uint64(time.Now().UnixMilli()) & (1<<48 - 1)
	r1, r2 := rand.Uint64(), rand.Uint64()
	// The 128 bits: the time in the top 48, the random bits below.
	hi, lo := ms<<16|r1&0xffff, r2
	lastID.Lock()
	if ms <= lastID.hi>>16 {
		var carry uint64
		lo, carry = bits.Add64(lastID.lo, 1+r2>>32, 0)
		hi = lastID.hi + carry // a carry out of the random bits moves the time on by 1 ms
	}
	lastID.hi, lastID.lo = hi, lo
	lastID.Unlock()
	var arr [48]byte // an id is built here and copied once, into its string
	var buf []byte
	if n := len(prefix) + ulidLen; n <= len(arr) {
		buf = arr[:n]
	} else {
		buf = make([]byte, n)
	}
	copy(buf, prefix)
	encodeULID(buf[len(prefix):], hi, lo)
	return string(buf)
}

// lastID is the 128 bits of the last id NewID made.
var lastID struct {
	sync.Mutex
	hi, lo uint64
}

// ulidLen is the length of a ULID's text: 128 bits in 26 characters of 5 bits.
const ulidLen = 26

// encodeULID writes the 128 bits hi:lo as 26 characters of lowercase Crockford base32, the lowest 5
// bits last (as ulid.ULID.String, in lowercase).
func encodeULID(dst []byte, hi, lo uint64) {
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	_ = dst[ulidLen-1]
	for i := ulidLen - 1; i >= 0; i-- {
		dst[i] = alphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
}

// CleanPath validates and cleans a thread-filesystem path: absolute, /-separated, at most 1024
// bytes, no NUL, no empty segments ("//"), and no ".." escaping the root. "." segments and ".."
// within the tree are resolved; a trailing slash is dropped.
func CleanPath(p string) (string, error) {
	if p == "" || p[0] != '/' || len(p) > 1024 || strings.ContainsRune(p, 0) || strings.ContainsRune(p, '\\') {
		return "", ErrInvalidPath
	}
	if p == "/" {
		return p, nil
	}
	parts := strings.Split(strings.TrimSuffix(p[1:], "/"), "/")
	out := make([]string, 0, len(parts))
	for _, s := range parts {
		switch s {
		case "":
			return "", ErrInvalidPath
		case ".":
		case "..":
			if len(out) == 0 {
				return "", ErrInvalidPath
			}
			out = out[:len(out)-1]
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/"), nil
}
