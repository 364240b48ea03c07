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
	bodies []stagedBody // the request bodies of logs, by log
	events []weft.EventRecord
	pushed []*weft.QueuedMessage // queue pushes, numbered at commit

	meta    *weft.Thread // nil, or &metaBuf once UpdateThread was called
	metaBuf weft.Thread
	files   map[string]*file
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
	clear(t.bodies)
	clear(t.events)
	clear(t.pushed)
	*t = tx{s: t.s, inserted: t.inserted[:0], changed: t.changed[:0], deleted: t.deleted[:0], calls: t.calls[:0],
		exec: t.exec[:0], kv: t.kv[:0], logs: t.logs[:0], bodies: t.bodies[:0], events: t.events[:0], pushed: t.pushed[:0]}
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
		if slices.ContainsFunc(t.pushed, func(q *weft.QueuedMessage) bool { return q.IfBusy == weft.IfBusyReject }) {
			th.leaseMu.Lock()
			busy := storecontract.Busy(th.meta.Status, th.leaseOwner, th.leaseExpires, t.s.now())
			th.leaseMu.Unlock()
			if busy {
				return storecontract.BusyError(t.id)
			}
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
	for i, l := range t.logs {
		if j, ok := th.logIdx[l.ID]; ok {
			th.logs[j] = l
		} else {
			th.logIdx[l.ID] = len(th.logs)
			th.logs = append(th.logs, l)
		}
		b := t.bodies[i]
		if b.node == nil {
			delete(th.reqBodies, l.ID)
			continue
		}
		if th.reqBodies == nil {
			th.reqBodies = map[string]*memBody{}
		}
		th.reqBodies[l.ID] = b.node
		// A new slice: a transaction of the thread may hold the old one (read under the lock).
		next := make([]recentBody, 0, keptRecent)
		next = append(next, th.recent[max(0, len(th.recent)-keptRecent+1):]...)
		th.recent = append(next, recentBody(b))
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

func cloneRaw(v json.RawMessage) json.RawMessage {
	if v == nil {
		return nil
	}
	return append(json.RawMessage{}, v...)
}
