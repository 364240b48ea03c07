package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// Tx runs fn as one transaction on the thread: fn's writes are staged and applied together when it
// returns nil, and dropped when it returns an error or panics. Transactions on one thread run one
// at a time; fn may read the store (it sees committed data) but must not start another Tx on the same
// thread, nor keep the Tx after returning. With a fence, the lease of fence.ThreadID (the Tx's thread
// when empty) must be live and held with fence's node and token both before fn and at commit, else
// ErrLeaseLost and nothing is written. An unknown thread is ErrNotFound.
func (s *Store) Tx(ctx context.Context, threadID string, fence *weft.Fence, fn func(weft.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	th, err := s.get(threadID)
	if err != nil {
		return err
	}
	lease := th
	if fence != nil && fence.ThreadID != "" && fence.ThreadID != threadID {
		if lease = s.lookup(fence.ThreadID); lease == nil {
			return fmt.Errorf("thread %s: %w", fence.ThreadID, weft.ErrLeaseLost)
		}
	}
	th.writer.Lock()
	defer th.writer.Unlock()
	if th.deleted {
		return notFound(threadID)
	}
	if fence != nil {
		if err := s.checkFence(lease, fence, false); err != nil {
			return err
		}
	}
	t := s.txPool.Get().(*tx)
	t.th, t.id = th, threadID
	defer t.release()
	if err := fn(t); err != nil {
		return err
	}
	return t.commit(fence, lease)
}

// tx stages one transaction's writes. Writes to messages, calls, logs and the thread are applied at
// commit; files are edited in a private copy of the file map that commit swaps in.
type tx struct {
	s  *Store
	th *thread
	id string

	now time.Time // read once per transaction

	inserted []*weft.Message // new rows by seq; nil once deleted again
	changed  []*weft.Message // replacements of committed rows
	deleted  []string        // ids of committed rows to delete

	calls    []*weft.ToolCallRecord // puts in order
	newCalls int64

	drainedTo    int64 // queue rows with seq ≤ this were drained
	releaseLease bool  // free the fence's lease at commit

	exec   []kvOp
	kv     []kvOp
	logs   []*weft.LogEntry
	events []weft.EventRecord
	pushed []*weft.QueuedMessage // queue pushes, numbered at commit

	meta    *weft.Thread // nil, or &metaBuf once UpdateThread was called
	metaBuf weft.Thread
	files   map[string]*file
}

type kvOp struct {
	key   string
	value json.RawMessage // nil deletes
}

// release clears the tx and returns it to the pool.
func (t *tx) release() {
	clear(t.inserted)
	clear(t.changed)
	clear(t.deleted)
	clear(t.calls)
	clear(t.exec)
	clear(t.kv)
	clear(t.logs)
	clear(t.events)
	clear(t.pushed)
	*t = tx{s: t.s, inserted: t.inserted[:0], changed: t.changed[:0], deleted: t.deleted[:0], calls: t.calls[:0],
		exec: t.exec[:0], kv: t.kv[:0], logs: t.logs[:0], events: t.events[:0], pushed: t.pushed[:0]}
	t.s.txPool.Put(t)
}

func (t *tx) clock() time.Time {
	if t.now.IsZero() {
		t.now = t.s.nowUTC()
	}
	return t.now
}

// commit applies the staged writes under the thread's data lock.
func (t *tx) commit(fence *weft.Fence, lease *thread) error {
	th := t.th
	th.mu.Lock()
	defer th.mu.Unlock()
	if th.deleted {
		return notFound(t.id)
	}
	if fence != nil {
		// Freed under th.mu with the writes applied below, so a BeginRun taking the lease next (it
		// reads under th.mu) sees them; a Tx of the next holder waits for th.writer.
		if err := t.s.checkFence(lease, fence, t.releaseLease); err != nil {
			return err
		}
	}
	if len(t.pushed) > 0 {
		status := th.meta.Status
		if t.meta != nil {
			status = t.meta.Status
		}
		if status == weft.ThreadTerminated {
			return fmt.Errorf("thread %s: %w", t.id, weft.ErrTerminated)
		}
	}
	if t.meta != nil {
		th.meta = *t.meta
	}
	for _, m := range t.changed {
		th.msgs[th.msgIndex(m.Seq)] = m
		th.byID[m.ID] = m
	}
	for _, id := range t.deleted {
		m := th.byID[id]
		delete(th.byID, id)
		th.msgs = slices.Delete(th.msgs, th.msgIndex(m.Seq), th.msgIndex(m.Seq)+1)
	}
	for _, m := range t.inserted {
		if m != nil {
			th.msgs = append(th.msgs, m)
			th.byID[m.ID] = m
		}
	}
	th.msgSeq += int64(len(t.inserted))
	for _, c := range t.calls {
		if i, ok := th.callIdx[c.CallID]; ok {
			th.calls[i] = c
		} else {
			th.callIdx[c.CallID] = len(th.calls)
			th.calls = append(th.calls, c)
		}
	}
	th.callSeq += t.newCalls
	if t.drainedTo > 0 {
		i := sort.Search(len(th.queue), func(i int) bool { return th.queue[i].Seq > t.drainedTo })
		clear(th.queue[:i])
		th.queue = th.queue[i:]
	}
	for _, op := range t.exec {
		if op.value == nil {
			delete(th.exec, op.key)
		} else {
			th.exec[op.key] = op.value
		}
	}
	for _, l := range t.logs {
		if i, ok := th.logIdx[l.ID]; ok {
			th.logs[i] = l
		} else {
			th.logIdx[l.ID] = len(th.logs)
			th.logs = append(th.logs, l)
		}
	}
	for _, op := range t.kv {
		if op.value == nil {
			delete(th.kv, op.key)
		} else {
			th.kv[op.key] = op.value
		}
	}
	for _, q := range t.pushed {
		th.queueSeq++
		q.Seq = th.queueSeq
		c := *q
		c.Attachments = nilIfEmpty(slices.Clone(q.Attachments))
		c.Metadata, _ = normJSONMap(q.Metadata)
		th.queue = append(th.queue, c)
	}
	for _, e := range t.events {
		th.eventSeq++
		e.Seq = th.eventSeq
		th.events = append(th.events, e)
	}
	if n := len(th.events); n > weft.EventWindow+weft.EventWindow/8 {
		th.events = slices.Clone(th.events[n-weft.EventWindow:])
	}
	if t.files != nil {
		th.files = t.files
	}
	return nil
}

// msgIndex finds a stored message's position by seq. Caller holds the thread's locks.
func (th *thread) msgIndex(seq int64) int {
	return sort.Search(len(th.msgs), func(i int) bool { return th.msgs[i].Seq >= seq })
}

// UpdateThread stages thread field changes; UpdatedAt becomes now.
func (t *tx) UpdateThread(p weft.ThreadPatch) error {
	if t.meta == nil {
		t.metaBuf = t.th.meta
		t.meta = &t.metaBuf
	}
	m := t.meta
	if p.Tags != nil {
		m.Tags = slices.Clone(p.Tags)
	}
	if p.Properties != nil {
		v, err := normJSONMap(p.Properties)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: properties: %v", t.id, err)
		}
		m.Properties = v
	}
	if p.Arguments != nil {
		v, err := normJSONMap(p.Arguments)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: arguments: %v", t.id, err)
		}
		m.Arguments = v
	}
	storecontract.ApplyThreadPatch(m, p, t.clock())
	return nil
}

// findMsg returns the message id as this transaction sees it; staged reports whether the pointer is
// private to the transaction (inserted or already changed here) and may be edited in place.
func (t *tx) findMsg(id string) (m *weft.Message, staged bool) {
	for _, m := range t.inserted {
		if m != nil && m.ID == id {
			return m, true
		}
	}
	for _, m := range t.changed {
		if m.ID == id {
			return m, true
		}
	}
	if slices.Contains(t.deleted, id) {
		return nil, false
	}
	return t.th.byID[id], false
}

// InsertMessage stages m with the next seq, assigning ID, ThreadID, Seq and CreatedAt on m.
func (t *tx) InsertMessage(m *weft.Message) error {
	md, err := normJSONMap(m.Metadata)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: message metadata: %v", t.id, err)
	}
	if m.ID == "" {
		m.ID = weft.NewID("msg_")
	} else if old, _ := t.findMsg(m.ID); old != nil {
		return weft.Errorf(weft.EConflict, "thread %s: message %s already exists", t.id, m.ID)
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = t.clock()
	} else {
		m.CreatedAt = m.CreatedAt.UTC()
	}
	m.ThreadID = t.id
	m.Seq = t.th.msgSeq + int64(len(t.inserted)) + 1
	c := *m
	c.ToolCalls = nilIfEmpty(slices.Clone(m.ToolCalls))
	c.Attachments = nilIfEmpty(slices.Clone(m.Attachments))
	c.Metadata = md
	t.inserted = append(t.inserted, &c)
	return nil
}

// UpdateMessage stages a change of a message (inserted earlier in this Tx or committed).
func (t *tx) UpdateMessage(id string, ch weft.MessageChange) error {
	m, staged := t.findMsg(id)
	if m == nil {
		return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
	}
	var md map[string]any
	if ch.Metadata != nil {
		var err error
		if md, err = normJSONMap(ch.Metadata); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: message %s metadata: %v", t.id, id, err)
		}
	}
	if !staged {
		c := *m
		m = &c
		t.changed = append(t.changed, m)
	}
	storecontract.ApplyMessageChange(m, ch)
	if ch.ToolCalls != nil {
		m.ToolCalls = nilIfEmpty(slices.Clone(*ch.ToolCalls))
	}
	if ch.Attachments != nil {
		m.Attachments = nilIfEmpty(slices.Clone(*ch.Attachments))
	}
	if md != nil {
		m.Metadata = md
	}
	return nil
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// DeleteMessage stages the removal of a message; its seq is not reused.
func (t *tx) DeleteMessage(id string) error {
	for i, m := range t.inserted {
		if m != nil && m.ID == id {
			t.inserted[i] = nil
			return nil
		}
	}
	for i, m := range t.changed {
		if m.ID == id {
			t.changed = slices.Delete(t.changed, i, i+1)
			t.deleted = append(t.deleted, id)
			return nil
		}
	}
	if _, ok := t.th.byID[id]; !ok || slices.Contains(t.deleted, id) {
		return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
	}
	t.deleted = append(t.deleted, id)
	return nil
}

// PutToolCall stages a tool-call record, assigning ThreadID and Seq (kept from an earlier put of the
// same call; Status defaults to pending).
func (t *tx) PutToolCall(c *weft.ToolCallRecord) error {
	if err := storecontract.PrepareToolCall(t.id, c); err != nil {
		return err
	}
	c.ThreadID = t.id
	seq := int64(0)
	for i := len(t.calls) - 1; i >= 0; i-- {
		if t.calls[i].CallID == c.CallID {
			seq = t.calls[i].Seq
			break
		}
	}
	if seq == 0 {
		if i, ok := t.th.callIdx[c.CallID]; ok {
			seq = t.th.calls[i].Seq
		} else {
			t.newCalls++
			seq = t.th.callSeq + t.newCalls
		}
	}
	c.Seq = seq
	r := copyCall(c)
	r.Meta = nilIfEmpty(r.Meta)
	t.calls = append(t.calls, &r)
	return nil
}

// DrainQueue returns the queued messages with seq ≤ upTo (all when upTo ≤ 0) not yet drained in
// this Tx, in order, and stages their removal.
func (t *tx) DrainQueue(upTo int64) ([]weft.QueuedMessage, error) {
	th := t.th
	th.mu.RLock()
	out := copyQueue(th.queue, t.drainedTo, upTo)
	th.mu.RUnlock()
	if len(out) > 0 {
		t.drainedTo = out[len(out)-1].Seq
	}
	return out, nil
}

// QueueSeq returns the seq of the thread's newest queued message as of the call.
func (t *tx) QueueSeq() (int64, error) {
	t.th.mu.RLock()
	defer t.th.mu.RUnlock()
	return t.th.queueSeq, nil
}

// SetExecState stages a run-state document (nil deletes it).
func (t *tx) SetExecState(key string, value json.RawMessage) error {
	if err := storecontract.CheckExecState(t.id, key, value); err != nil {
		return err
	}
	t.exec = append(t.exec, kvOp{key, cloneRaw(value)})
	return nil
}

func cloneRaw(v json.RawMessage) json.RawMessage {
	if v == nil {
		return nil
	}
	return append(json.RawMessage{}, v...)
}

// PutLog stages a log row (keyed by id; a replaced row keeps its place), assigning ID (when empty),
// ThreadID and CreatedAt (when zero). Bodies are stored verbatim, unchecked.
func (t *tx) PutLog(l *weft.LogEntry) error {
	if l.ID == "" {
		l.ID = weft.NewID("log_")
	}
	l.ThreadID = t.id
	if l.CreatedAt.IsZero() {
		l.CreatedAt = t.clock()
	} else {
		l.CreatedAt = l.CreatedAt.UTC()
	}
	c := copyLog(l)
	c.RequestBody, c.ResponseBody = nilIfEmpty(c.RequestBody), nilIfEmpty(c.ResponseBody)
	c.ToolsOffered, c.ToolsCalled, c.QueuedTools = nilIfEmpty(c.ToolsOffered), nilIfEmpty(c.ToolsCalled), nilIfEmpty(c.QueuedTools)
	t.logs = append(t.logs, &c)
	return nil
}

// SetKV stages a JSON value (nil deletes it).
func (t *tx) SetKV(key string, value json.RawMessage) error {
	if err := storecontract.CheckKV(t.id, key, value); err != nil {
		return err
	}
	t.kv = append(t.kv, kvOp{key, cloneRaw(value)})
	return nil
}

// PushQueue stages a queue push; its seq is assigned at commit.
func (t *tx) PushQueue(q *weft.QueuedMessage) error {
	if _, err := normJSONMap(q.Metadata); err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: queued message metadata: %v", t.id, err)
	}
	q.ThreadID = t.id
	storecontract.PrepareQueued(q, t.s.nowUTC)
	t.pushed = append(t.pushed, q)
	return nil
}

// AppendEvents stages events; their seqs are assigned here from the thread's count, which no
// other transaction advances while this one holds the thread's writer.
func (t *tx) AppendEvents(evs []weft.EventRecord) error {
	t.th.mu.RLock()
	next := t.th.eventSeq + int64(len(t.events))
	t.th.mu.RUnlock()
	for i := range evs {
		next++
		evs[i].ThreadID, evs[i].Seq = t.id, next
		if evs[i].CreatedAt.IsZero() {
			evs[i].CreatedAt = t.clock()
		}
		e := evs[i]
		e.Data = cloneRaw(e.Data)
		if e.Data == nil {
			e.Data = json.RawMessage("null")
		}
		t.events = append(t.events, e)
	}
	return nil
}

// ReleaseLease stages the release of the fence's lease: it is freed at commit, together with the
// writes (a no-op for a Tx without a fence).
func (t *tx) ReleaseLease() error {
	t.releaseLease = true
	return nil
}
