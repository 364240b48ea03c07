// Package memstore is a weft.Store kept in process memory as plain Go data: the fastest back end,
// for ephemeral threads, tests and library users who need no persistence (storage.md). Nothing
// survives the process; leases are process-local.
//
// Each thread has its own locks, so concurrent threads never contend: a writer mutex serializes the
// thread's transactions (a Tx stages its writes and applies them at commit) and a read-write mutex
// guards the committed data, held only while copying in or out. Values handed in are copied and
// values handed out are copies, so callers may keep or change them freely. JSON-like maps are
// normalized on the way in (numbers become float64, as after a JSON round trip) so that memstore
// returns exactly what the SQL back ends return. Env values are encrypted with envcrypt like
// everywhere else.
package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/storecontract"
)

// Options configure a Store.
type Options struct {
	// Key encrypts env values (32 bytes); nil means a random throwaway key.
	Key []byte
	// Now is the clock for timestamps and lease expiry; nil means time.Now.
	Now func() time.Time
}

// Store is an in-memory weft.Store. It is safe for concurrent use.
type Store struct {
	now    func() time.Time
	cipher *envcrypt.Cipher
	closed atomic.Bool

	threads sync.Map // thread id → *thread
	// children indexes threads by parent (parent id → *sync.Map of child ids), so listing a
	// thread's children does not scan every thread.
	children sync.Map

	envMu sync.RWMutex
	env   map[envOwner]map[string]envRow

	effects effects

	files  fileReader
	txPool sync.Pool

	auth authData
}

var _ weft.Store = (*Store)(nil)

type envOwner struct {
	scope weft.EnvScope
	owner string
}

type envRow struct {
	enc     []byte
	keyID   string
	typ     weft.VarType
	updated time.Time
}

// thread holds one thread's data. writer serializes transactions; mu guards every field below it
// for readers. Fields other than queue and the lease change only while writer is held, so a Tx may
// read them without mu.
type thread struct {
	writer sync.Mutex

	mu      sync.RWMutex
	deleted bool
	meta    weft.Thread // Tags, Properties and Arguments are never mutated in place

	msgSeq int64
	msgs   []*weft.Message // by seq; stored messages are immutable (updates replace them)
	byID   map[string]*weft.Message

	callSeq int64
	calls   []*weft.ToolCallRecord // by seq; immutable, replaced on update
	callIdx map[string]int

	queueSeq int64
	queue    []weft.QueuedMessage // by seq; PushQueue appends under mu only

	exec map[string]json.RawMessage

	logs   []*weft.LogEntry // in creation order; immutable, replaced on update
	logIdx map[string]int

	kv map[string]json.RawMessage

	eventSeq int64
	events   []weft.EventRecord // the newest, by seq; pruned to weft.EventWindow
	files    map[string]*file   // immutable values; a Tx swaps in a new map

	leaseMu      sync.Mutex
	leaseOwner   string
	leaseToken   int64
	leaseExpires time.Time
}

// New returns an empty Store.
func New(opts Options) (*Store, error) {
	key := opts.Key
	if key == nil {
		key = envcrypt.NewKey()
	}
	c, err := envcrypt.New(key)
	if err != nil {
		return nil, fmt.Errorf("memstore: %w", err)
	}
	s := &Store{now: opts.Now, cipher: c, env: map[envOwner]map[string]envRow{}}
	if s.now == nil {
		s.now = time.Now
	}
	s.effects.init()
	s.files.s = s
	s.txPool.New = func() any { return &tx{s: s} }
	return s, nil
}

// Close marks the store closed; later calls fail. The data is dropped with the Store.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

var errClosed = errors.New("memstore: store is closed")

func (s *Store) nowUTC() time.Time { return s.now().UTC() }

// lookup returns a live thread or nil.
func (s *Store) lookup(id string) *thread {
	v, ok := s.threads.Load(id)
	if !ok {
		return nil
	}
	return v.(*thread)
}

// get returns a live thread or a not-found error naming it.
func (s *Store) get(id string) (*thread, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	th := s.lookup(id)
	if th == nil {
		return nil, notFound(id)
	}
	return th, nil
}

func notFound(threadID string) error {
	return fmt.Errorf("thread %s: %w", threadID, weft.ErrNotFound)
}

// CreateThread stores t and its thread-layer env values. Empty fields get defaults, written back to
// t: ID (thr_…), OriginAgent (Agent), RootID (own id, or the parent's root), Status (idle), times
// (now). A parent that does not exist is ErrNotFound; an existing id is a conflict.
func (s *Store) CreateThread(ctx context.Context, t *weft.Thread, env []weft.EnvValue) error {
	if s.closed.Load() {
		return errClosed
	}
	if err := storecontract.PrepareThread(t, env); err != nil {
		return err
	}
	if t.ParentID != "" {
		p := s.lookup(t.ParentID)
		if p == nil {
			return fmt.Errorf("thread %s: parent thread %s: %w", t.ID, t.ParentID, weft.ErrNotFound)
		}
		if t.RootID == "" {
			p.mu.RLock()
			t.RootID = p.meta.RootID
			p.mu.RUnlock()
		}
	}
	now := s.nowUTC()
	storecontract.DefaultThread(t, now)
	meta, err := normThread(t)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: %v", t.ID, err)
	}
	th := &thread{meta: meta, byID: map[string]*weft.Message{}, callIdx: map[string]int{}, logIdx: map[string]int{},
		exec: map[string]json.RawMessage{}, kv: map[string]json.RawMessage{}, files: map[string]*file{}}
	// Hold the env lock across the insert so the thread and its env appear together.
	s.envMu.Lock()
	defer s.envMu.Unlock()
	if _, loaded := s.threads.LoadOrStore(t.ID, th); loaded {
		return weft.Errorf(weft.EConflict, "thread %s already exists", t.ID)
	}
	if meta.ParentID != "" {
		set, _ := s.children.LoadOrStore(meta.ParentID, &sync.Map{})
		set.(*sync.Map).Store(t.ID, struct{}{})
	}
	s.setEnvLocked(weft.EnvThread, t.ID, env, now)
	return nil
}

// normThread returns a private copy of t with UTC times and normalized tags and maps.
func normThread(t *weft.Thread) (weft.Thread, error) {
	c := *t
	c.CreatedAt, c.UpdatedAt, c.LastActivityAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC(), t.LastActivityAt.UTC()
	c.Tags = cloneTags(t.Tags)
	var err error
	if c.Properties, err = normMapOrEmpty(t.Properties); err != nil {
		return c, fmt.Errorf("properties: %w", err)
	}
	if c.Arguments, err = normMapOrEmpty(t.Arguments); err != nil {
		return c, fmt.Errorf("arguments: %w", err)
	}
	return c, nil
}

func cloneTags(tags []string) []string {
	if tags == nil {
		return []string{}
	}
	return slices.Clone(tags)
}

func normMapOrEmpty(m map[string]any) (map[string]any, error) {
	if m == nil {
		return map[string]any{}, nil
	}
	return normJSONMap(m)
}

// cloneMap deep-copies a normalized map (nil stays nil).
func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c, _ := normJSONMap(m) // normalized values cannot fail
	return c
}

// threadCopy returns a copy of the stored meta safe to hand out. Caller holds th.mu.
func (th *thread) threadCopy() *weft.Thread {
	c := th.meta
	c.Tags = slices.Clone(c.Tags)
	c.Properties = cloneMap(c.Properties)
	c.Arguments = cloneMap(c.Arguments)
	return &c
}

// Thread returns a thread or ErrNotFound.
func (s *Store) Thread(ctx context.Context, id string) (*weft.Thread, error) {
	th, err := s.get(id)
	if err != nil {
		return nil, err
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	if th.deleted {
		return nil, notFound(id)
	}
	return th.threadCopy(), nil
}

// threadOrder compares two threads in each thread listing order.
var threadOrder = [...]func(a, b *weft.Thread) int{
	storecontract.SortByActivity: func(a, b *weft.Thread) int {
		return cmp.Or(b.LastActivityAt.Compare(a.LastActivityAt), strings.Compare(b.ID, a.ID))
	},
	storecontract.SortByCreated: func(a, b *weft.Thread) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	},
	storecontract.SortByOldest: func(a, b *weft.Thread) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	},
}

// Threads lists threads matching q (see weft.ThreadQuery; Limit 0 means no limit) and the number
// matching before paging.
func (s *Store) Threads(ctx context.Context, q weft.ThreadQuery) ([]*weft.Thread, int, error) {
	if s.closed.Load() {
		return nil, 0, errClosed
	}
	by, err := storecontract.ParseThreadSort(q.Sort)
	if err != nil {
		return nil, 0, err
	}
	search := storecontract.ASCIILower(q.Search)
	var out []*weft.Thread
	match := func(th *thread) {
		th.mu.RLock()
		if !th.deleted && threadMatches(&th.meta, &q, search) && (!q.Queued || len(th.queue) > 0) {
			out = append(out, th.threadCopy())
		}
		th.mu.RUnlock()
	}
	if q.ParentID != "" {
		if set, ok := s.children.Load(q.ParentID); ok {
			set.(*sync.Map).Range(func(k, _ any) bool {
				if th := s.lookup(k.(string)); th != nil {
					match(th)
				}
				return true
			})
		}
	} else {
		s.threads.Range(func(_, v any) bool {
			match(v.(*thread))
			return true
		})
	}
	slices.SortFunc(out, threadOrder[by])
	total := len(out)
	out = out[min(max(q.Offset, 0), len(out)):]
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, total, nil
}

func threadMatches(t *weft.Thread, q *weft.ThreadQuery, search string) bool {
	switch {
	case q.UserID != "" && t.UserID != q.UserID,
		q.Agent != "" && t.Agent != q.Agent,
		q.ParentID != "" && t.ParentID != q.ParentID,
		q.ParentID == "" && q.RootsOnly && t.ParentID != "",
		q.Status != "" && t.Status != q.Status,
		q.Tag != "" && !slices.Contains(t.Tags, q.Tag):
		return false
	}
	if search != "" && !strings.Contains(storecontract.ASCIILower(t.Label), search) &&
		!strings.Contains(storecontract.ASCIILower(t.Preview), search) && !strings.Contains(storecontract.ASCIILower(t.Agent), search) {
		return false
	}
	return true
}

// DeleteThread deletes a thread, its descendants and all their rows, effects and env values.
func (s *Store) DeleteThread(ctx context.Context, id string) error {
	if _, err := s.get(id); err != nil {
		return err
	}
	// Collect the subtree through the parent index.
	ids := []string{id}
	for i := 0; i < len(ids); i++ {
		if set, ok := s.children.Load(ids[i]); ok {
			set.(*sync.Map).Range(func(k, _ any) bool {
				ids = append(ids, k.(string))
				return true
			})
		}
	}
	for _, tid := range ids {
		th := s.lookup(tid)
		if th == nil {
			continue
		}
		th.writer.Lock()
		th.mu.Lock()
		th.deleted = true
		parent := th.meta.ParentID
		th.mu.Unlock()
		s.threads.Delete(tid)
		s.children.Delete(tid)
		if set, ok := s.children.Load(parent); ok {
			set.(*sync.Map).Delete(tid)
		}
		th.writer.Unlock()
		s.envMu.Lock()
		delete(s.env, envOwner{weft.EnvThread, tid})
		s.envMu.Unlock()
		s.effects.deleteThread(tid)
	}
	return nil
}

// Messages lists a thread's messages ordered by seq (see weft.MessageQuery; Limit 0 means 100 and a
// negative Limit no limit). An unknown thread has no messages.
func (s *Store) Messages(ctx context.Context, threadID string, q weft.MessageQuery) ([]weft.Message, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	th := s.lookup(threadID)
	if th == nil {
		return []weft.Message{}, nil
	}
	limit := storecontract.MessageLimit(q.Limit)
	th.mu.RLock()
	defer th.mu.RUnlock()
	msgs := th.msgs
	if q.AfterSeq > 0 {
		i := sort.Search(len(msgs), func(i int) bool { return msgs[i].Seq > q.AfterSeq })
		msgs = msgs[i:]
	}
	n := len(msgs)
	if limit > 0 && limit < n {
		n = limit
	}
	out := make([]weft.Message, 0, n)
	skip := q.Offset
	for i := range msgs {
		m := msgs[i]
		if q.Desc {
			m = msgs[len(msgs)-1-i]
		}
		if m.Depth > q.MaxDepth || (q.ExcludeSilent && m.Silent) || (len(q.Roles) > 0 && !slices.Contains(q.Roles, m.Role)) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, copyMessage(m))
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// copyMessage returns a copy of a stored message that shares nothing with it.
func copyMessage(m *weft.Message) weft.Message {
	c := *m
	c.ToolCalls = slices.Clone(m.ToolCalls)
	c.Attachments = slices.Clone(m.Attachments)
	c.Metadata = cloneMap(m.Metadata)
	return c
}

// Message returns one message or ErrNotFound.
func (s *Store) Message(ctx context.Context, threadID, id string) (weft.Message, error) {
	th, err := s.get(threadID)
	if err != nil {
		return weft.Message{}, err
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	m, ok := th.byID[id]
	if !ok || th.deleted {
		return weft.Message{}, fmt.Errorf("thread %s: message %s: %w", threadID, id, weft.ErrNotFound)
	}
	return copyMessage(m), nil
}

// ToolCalls lists a thread's tool calls with one of the given statuses (all when none), by seq.
func (s *Store) ToolCalls(ctx context.Context, threadID string, status ...weft.CallStatus) ([]weft.ToolCallRecord, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	th := s.lookup(threadID)
	if th == nil {
		return nil, nil
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	var out []weft.ToolCallRecord
	for _, c := range th.calls {
		if len(status) == 0 || slices.Contains(status, c.Status) {
			out = append(out, copyCall(c))
		}
	}
	return out, nil
}

func copyCall(c *weft.ToolCallRecord) weft.ToolCallRecord {
	r := *c
	r.Meta = slices.Clone(c.Meta)
	r.StartedAt = copyTime(c.StartedAt)
	r.FinishedAt = copyTime(c.FinishedAt)
	return r
}

func copyTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// ExecState returns the thread's run-state documents by key.
func (s *Store) ExecState(ctx context.Context, threadID string) (map[string]json.RawMessage, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	out := map[string]json.RawMessage{}
	th := s.lookup(threadID)
	if th == nil {
		return out, nil
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	for k, v := range th.exec {
		out[k] = slices.Clone(v)
	}
	return out, nil
}

// Queued lists the thread's queued messages in order without draining them.
func (s *Store) Queued(ctx context.Context, threadID string) ([]weft.QueuedMessage, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	th := s.lookup(threadID)
	if th == nil {
		return nil, nil
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	return copyQueue(th.queue, 0, 0), nil
}

// copyQueue copies the queued rows with after < seq ≤ upTo (no upper bound when upTo ≤ 0).
func copyQueue(q []weft.QueuedMessage, after, upTo int64) []weft.QueuedMessage {
	var out []weft.QueuedMessage
	for i := range q {
		if upTo > 0 && q[i].Seq > upTo {
			break
		}
		if q[i].Seq > after {
			c := q[i]
			c.Attachments = slices.Clone(c.Attachments)
			c.Metadata = cloneMap(c.Metadata)
			out = append(out, c)
		}
	}
	return out
}

// PushQueue queues a message, assigning ID (when empty), ThreadID, Seq and CreatedAt (when zero);
// Role defaults to user.
func (s *Store) PushQueue(ctx context.Context, q *weft.QueuedMessage) error {
	th, err := s.get(q.ThreadID)
	if err != nil {
		return err
	}
	md, err := normJSONMap(q.Metadata)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: queued message metadata: %v", q.ThreadID, err)
	}
	storecontract.PrepareQueued(q, s.nowUTC)
	c := *q
	c.Attachments = nilIfEmpty(slices.Clone(q.Attachments))
	c.Metadata = md
	th.mu.Lock()
	defer th.mu.Unlock()
	if th.deleted {
		return notFound(q.ThreadID)
	}
	if th.meta.Status == weft.ThreadTerminated {
		return fmt.Errorf("thread %s: %w", q.ThreadID, weft.ErrTerminated)
	}
	th.queueSeq++
	q.Seq, c.Seq = th.queueSeq, th.queueSeq
	th.queue = append(th.queue, c)
	return nil
}

// Logs lists a thread's log rows in creation order, without request and response bodies (Limit 0
// means no limit).
func (s *Store) Logs(ctx context.Context, threadID string, q weft.LogQuery) ([]weft.LogEntry, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	th := s.lookup(threadID)
	if th == nil {
		return nil, nil
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	var out []weft.LogEntry
	skip := q.Offset
	for _, l := range th.logs {
		if l.Depth > q.MaxDepth {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		c := copyLog(l)
		c.RequestBody, c.ResponseBody = nil, nil
		out = append(out, c)
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

func copyLog(l *weft.LogEntry) weft.LogEntry {
	c := *l
	c.CostInput, c.CostCached, c.CostOutput, c.CostTotal = copyFloat(l.CostInput), copyFloat(l.CostCached), copyFloat(l.CostOutput), copyFloat(l.CostTotal)
	c.RequestBody, c.ResponseBody = slices.Clone(l.RequestBody), slices.Clone(l.ResponseBody)
	c.ToolsOffered, c.ToolsCalled, c.QueuedTools = slices.Clone(l.ToolsOffered), slices.Clone(l.ToolsCalled), slices.Clone(l.QueuedTools)
	return c
}

func copyFloat(f *float64) *float64 {
	if f == nil {
		return nil
	}
	v := *f
	return &v
}

// Log returns one log row with its bodies, or ErrNotFound.
func (s *Store) Log(ctx context.Context, threadID, id string) (weft.LogEntry, error) {
	th, err := s.get(threadID)
	if err != nil {
		return weft.LogEntry{}, err
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	i, ok := th.logIdx[id]
	if !ok || th.deleted {
		return weft.LogEntry{}, fmt.Errorf("thread %s: log %s: %w", threadID, id, weft.ErrNotFound)
	}
	return copyLog(th.logs[i]), nil
}

// GetKV returns a thread's KV value; found is false when absent.
func (s *Store) GetKV(ctx context.Context, threadID, key string) (json.RawMessage, bool, error) {
	if s.closed.Load() {
		return nil, false, errClosed
	}
	th := s.lookup(threadID)
	if th == nil {
		return nil, false, nil
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	v, ok := th.kv[key]
	return slices.Clone(v), ok, nil
}

// ListKV returns all of a thread's KV values by key.
func (s *Store) ListKV(ctx context.Context, threadID string) (map[string]json.RawMessage, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	out := map[string]json.RawMessage{}
	th := s.lookup(threadID)
	if th == nil {
		return out, nil
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	for k, v := range th.kv {
		out[k] = slices.Clone(v)
	}
	return out, nil
}

// Events returns the thread's events after a seq, in order.
func (s *Store) Events(ctx context.Context, threadID string, after int64, limit int) ([]weft.EventRecord, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	th, err := s.get(threadID)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 1000
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	i, _ := slices.BinarySearchFunc(th.events, after+1, func(e weft.EventRecord, seq int64) int { return cmp.Compare(e.Seq, seq) })
	out := make([]weft.EventRecord, 0, min(limit, len(th.events)-i))
	for _, e := range th.events[i:] {
		if len(out) == limit {
			break
		}
		e.Data = slices.Clone(e.Data)
		out = append(out, e)
	}
	return out, nil
}

// Env returns the decrypted values of one scope and owner, sorted by name.
func (s *Store) Env(ctx context.Context, scope weft.EnvScope, owner string) ([]weft.EnvValue, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	s.envMu.RLock()
	defer s.envMu.RUnlock()
	return s.envLocked(scope, owner)
}

// envLocked decrypts the values of one scope and owner, sorted by name; caller holds envMu.
func (s *Store) envLocked(scope weft.EnvScope, owner string) ([]weft.EnvValue, error) {
	rows := s.env[envOwner{scope, owner}]
	out := make([]weft.EnvValue, 0, len(rows))
	for name, r := range rows {
		if r.keyID != s.cipher.KeyID() {
			return nil, fmt.Errorf("env %s %s: variable %s was encrypted with key %s, current key is %s", scope, owner, name, r.keyID, s.cipher.KeyID())
		}
		p, err := s.cipher.Open(r.enc)
		if err != nil {
			return nil, fmt.Errorf("env %s %s: variable %s: %w", scope, owner, name, err)
		}
		out = append(out, weft.EnvValue{Name: name, Value: string(p), Type: r.typ, UpdatedAt: r.updated})
	}
	slices.SortFunc(out, func(a, b weft.EnvValue) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// SetEnv stores (encrypted) or, with Delete, removes env values of one scope and owner. An empty Type
// is stored as secret.
func (s *Store) SetEnv(ctx context.Context, scope weft.EnvScope, owner string, values []weft.EnvValue) error {
	if s.closed.Load() {
		return errClosed
	}
	for _, v := range values {
		if _, err := storecontract.CheckEnvValue(scope, owner, v); err != nil {
			return err
		}
	}
	s.envMu.Lock()
	defer s.envMu.Unlock()
	s.setEnvLocked(scope, owner, values, s.nowUTC())
	return nil
}

// setEnvLocked applies checked values; caller holds envMu.
func (s *Store) setEnvLocked(scope weft.EnvScope, owner string, values []weft.EnvValue, now time.Time) {
	key := envOwner{scope, owner}
	rows := s.env[key]
	for _, v := range values {
		if v.Delete {
			delete(rows, v.Name)
			continue
		}
		if rows == nil {
			rows = map[string]envRow{}
			s.env[key] = rows
		}
		typ, _ := storecontract.CheckEnvValue(scope, owner, v)
		rows[v.Name] = envRow{enc: s.cipher.Seal([]byte(v.Value)), keyID: s.cipher.KeyID(), typ: typ, updated: now}
	}
	if len(rows) == 0 {
		delete(s.env, key)
	}
}

// rawEnv returns the stored ciphertext of one value (tests).
func (s *Store) rawEnv(scope weft.EnvScope, owner, name string) []byte {
	s.envMu.RLock()
	defer s.envMu.RUnlock()
	return s.env[envOwner{scope, owner}][name].enc
}

// AcquireLease takes the thread's lease for node if it is free or expired, with a token higher than
// any before; ErrLeaseHeld while another acquisition is live (whichever node holds it).
func (s *Store) AcquireLease(ctx context.Context, threadID, node string, ttl time.Duration) (weft.Fence, error) {
	th, err := s.get(threadID)
	if err != nil {
		return weft.Fence{}, err
	}
	return s.acquire(th, threadID, node, ttl)
}

// acquire takes th's lease for node unless another acquisition is live.
func (s *Store) acquire(th *thread, threadID, node string, ttl time.Duration) (weft.Fence, error) {
	now := s.now()
	th.leaseMu.Lock()
	defer th.leaseMu.Unlock()
	if th.leaseOwner != "" && now.Before(th.leaseExpires) {
		return weft.Fence{}, fmt.Errorf("thread %s: lease held by %s: %w", threadID, th.leaseOwner, weft.ErrLeaseHeld)
	}
	th.leaseToken++
	th.leaseOwner, th.leaseExpires = node, now.Add(ttl)
	return weft.Fence{Node: node, Token: th.leaseToken, ThreadID: threadID}, nil
}

// BeginRun takes the thread's lease for node as AcquireLease does and returns, read under the
// thread's lock together with the lease, the thread, its run state, its top-level messages, its
// queue and the env values of the thread, its user (when UserID is set) and the instance, all
// copies. An unknown thread is ErrNotFound; nothing is taken when it fails.
func (s *Store) BeginRun(ctx context.Context, threadID, node string, ttl time.Duration) (weft.Fence, *weft.RunStart, error) {
	if err := ctx.Err(); err != nil {
		return weft.Fence{}, nil, err
	}
	th, err := s.get(threadID)
	if err != nil {
		return weft.Fence{}, nil, err
	}
	th.mu.RLock()
	deleted, userID := th.deleted, th.meta.UserID // UserID never changes
	th.mu.RUnlock()
	if deleted {
		return weft.Fence{}, nil, notFound(threadID)
	}
	// Env first: it is the only part that can fail, and it must not fail with the lease taken.
	rs := &weft.RunStart{}
	if err := s.runEnv(rs, threadID, userID); err != nil {
		return weft.Fence{}, nil, err
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	if th.deleted {
		return weft.Fence{}, nil, notFound(threadID)
	}
	f, err := s.acquire(th, threadID, node, ttl)
	if err != nil {
		return weft.Fence{}, nil, err
	}
	rs.Thread = th.threadCopy()
	rs.ExecState = make(map[string]json.RawMessage, len(th.exec))
	for k, v := range th.exec {
		rs.ExecState[k] = slices.Clone(v)
	}
	// Rows are shared, not copied: a committed row is never changed in place (UpdateMessage
	// replaces it), so the run reads a stable snapshot.
	n := 0
	for _, m := range th.msgs {
		if m.Depth <= 0 {
			n++
		}
	}
	rs.Rows = make([]*weft.Message, 0, n)
	for _, m := range th.msgs {
		if m.Depth <= 0 {
			rs.Rows = append(rs.Rows, m)
		}
	}
	rs.Queued = copyQueue(th.queue, 0, 0)
	return f, rs, nil
}

// runEnv fills the env values of a RunStart.
func (s *Store) runEnv(rs *weft.RunStart, threadID, userID string) error {
	s.envMu.RLock()
	defer s.envMu.RUnlock()
	var err error
	if rs.ThreadEnv, err = s.envLocked(weft.EnvThread, threadID); err != nil {
		return err
	}
	if userID != "" {
		if rs.UserEnv, err = s.envLocked(weft.EnvUser, userID); err != nil {
			return err
		}
	}
	rs.InstanceEnv, err = s.envLocked(weft.EnvInstance, "")
	return err
}

// RenewLease extends a lease still held with f's token (even if it just expired, as long as nobody
// took it since); ErrLeaseLost otherwise.
func (s *Store) RenewLease(ctx context.Context, f weft.Fence, ttl time.Duration) error {
	th := s.lookup(f.ThreadID)
	if th == nil {
		return fmt.Errorf("thread %s: %w", f.ThreadID, weft.ErrLeaseLost)
	}
	th.leaseMu.Lock()
	defer th.leaseMu.Unlock()
	if th.leaseOwner != f.Node || th.leaseToken != f.Token {
		return fmt.Errorf("thread %s: lease token %d of %s: %w", f.ThreadID, f.Token, f.Node, weft.ErrLeaseLost)
	}
	th.leaseExpires = s.now().Add(ttl)
	return nil
}

// ReleaseLease frees a lease held with f's token; no error if it was already lost.
func (s *Store) ReleaseLease(ctx context.Context, f weft.Fence) error {
	th := s.lookup(f.ThreadID)
	if th == nil {
		return nil
	}
	th.leaseMu.Lock()
	defer th.leaseMu.Unlock()
	if th.leaseOwner == f.Node && th.leaseToken == f.Token {
		th.leaseOwner, th.leaseExpires = "", time.Time{}
	}
	return nil
}

// checkFence reports ErrLeaseLost unless th's lease is live and held with f; when it is and release
// is set, the lease is freed (keeping its token).
func (s *Store) checkFence(th *thread, f *weft.Fence, release bool) error {
	now := s.now()
	th.leaseMu.Lock()
	ok := th.leaseOwner == f.Node && th.leaseToken == f.Token && now.Before(th.leaseExpires)
	if ok && release {
		th.leaseOwner, th.leaseExpires = "", time.Time{}
	}
	th.leaseMu.Unlock()
	if !ok {
		return fmt.Errorf("thread %s: lease token %d of %s: %w", f.ThreadID, f.Token, f.Node, weft.ErrLeaseLost)
	}
	return nil
}
