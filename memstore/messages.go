package memstore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

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
	msgs := after(th.msgs, q.AfterSeq)
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
		if !listed(m, q) {
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

// CountMessages counts the messages Messages lists for q without its Limit and Offset.
func (s *Store) CountMessages(ctx context.Context, threadID string, q weft.MessageQuery) (int, error) {
	if s.closed.Load() {
		return 0, errClosed
	}
	th := s.lookup(threadID)
	if th == nil {
		return 0, nil
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	msgs := after(th.msgs, q.AfterSeq)
	n := 0
	for _, m := range msgs {
		if listed(m, q) {
			n++
		}
	}
	return n, nil
}

// after returns the messages (in seq order) with a seq above seq.
func after(msgs []*weft.Message, seq int64) []*weft.Message {
	i := sort.Search(len(msgs), func(i int) bool { return msgs[i].Seq > seq })
	return msgs[i:]
}

// listed reports whether q's filters (not AfterSeq, Limit, Offset) keep m.
func listed(m *weft.Message, q weft.MessageQuery) bool {
	return m.Depth <= q.MaxDepth && !(q.ExcludeSilent && m.Silent) && (len(q.Roles) == 0 || slices.Contains(q.Roles, m.Role))
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
	if q.MaxMessages > 0 {
		if last := th.lastSeq(); last >= q.MaxMessages {
			return &weft.ThreadFullError{ThreadID: q.ThreadID, Messages: last}
		}
	}
	if q.IfBusy == weft.IfBusyReject {
		th.leaseMu.Lock()
		busy := storecontract.Busy(th.meta.Status, th.leaseOwner, th.leaseExpires, s.now())
		th.leaseMu.Unlock()
		if busy {
			return storecontract.BusyError(q.ThreadID)
		}
	}
	th.queueSeq++
	q.Seq, c.Seq = th.queueSeq, th.queueSeq
	th.queue = append(th.queue, c)
	return nil
}

// msgIndex finds a stored message's position by seq. Caller holds the thread's locks.
func (th *thread) msgIndex(seq int64) int {
	return sort.Search(len(th.msgs), func(i int) bool { return th.msgs[i].Seq >= seq })
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

// lastSeq is the seq of the thread's newest message (0 when it has none). Caller holds th.mu.
func (th *thread) lastSeq() int64 {
	if len(th.msgs) == 0 {
		return 0
	}
	return th.msgs[len(th.msgs)-1].Seq
}
