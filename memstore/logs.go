package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// Logs lists a thread's log rows in creation order, without request and response bodies (Limit 0
// means no limit).
func (s *Store) Logs(ctx context.Context, threadID string, q weft.LogQuery) ([]weft.LogEntry, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	th := s.lookup(threadID)
	if th == nil {
		if q.AfterID != "" {
			return nil, fmt.Errorf("thread %s: log %s: %w", threadID, q.AfterID, weft.ErrNotFound)
		}
		return nil, nil
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	var out []weft.LogEntry
	skip := q.Offset
	logs := th.logs
	if q.AfterID != "" {
		i := slices.IndexFunc(logs, func(l *weft.LogEntry) bool { return l.ID == q.AfterID })
		if i < 0 {
			return nil, fmt.Errorf("thread %s: log %s: %w", threadID, q.AfterID, weft.ErrNotFound)
		}
		logs = logs[i+1:]
	}
	for _, l := range logs {
		if l.Depth > q.MaxDepth {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, copyMeta(l))
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

func copyLog(l *weft.LogEntry) weft.LogEntry {
	c := copyMeta(l)
	c.RequestBody, c.ResponseBody = slices.Clone(l.RequestBody), slices.Clone(l.ResponseBody)
	return c
}

// copyMeta copies a log without its bodies.
func copyMeta(l *weft.LogEntry) weft.LogEntry {
	c := *l
	c.RequestBody, c.ResponseBody = nil, nil
	c.CostInput, c.CostCached, c.CostOutput, c.CostTotal = copyFloat(l.CostInput), copyFloat(l.CostCached), copyFloat(l.CostOutput), copyFloat(l.CostTotal)
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
	c := copyLog(th.logs[i])
	if b := th.reqBodies[id]; b != nil {
		body, err := b.text()
		if err != nil {
			return c, fmt.Errorf("thread %s: log %s: %w", threadID, id, err)
		}
		c.RequestBody = json.RawMessage(body)
	}
	return c, nil
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

// LastEvents returns the thread's newest seq and the newest event of each of types among its
// within newest.
func (s *Store) LastEvents(ctx context.Context, threadID string, within int64, types ...string) (int64, []weft.EventRecord, error) {
	if s.closed.Load() {
		return 0, nil, errClosed
	}
	th, err := s.get(threadID)
	if err != nil {
		return 0, nil, err
	}
	th.mu.RLock()
	defer th.mu.RUnlock()
	if len(th.events) == 0 {
		return 0, nil, nil
	}
	last := th.events[len(th.events)-1].Seq
	var out []weft.EventRecord
	for i := len(th.events) - 1; i >= 0 && th.events[i].Seq > last-within && len(out) < len(types); i-- {
		e := th.events[i]
		if slices.Contains(types, e.Type) && !slices.ContainsFunc(out, func(o weft.EventRecord) bool { return o.Type == e.Type }) {
			e.Data = slices.Clone(e.Data)
			out = append(out, e)
		}
	}
	slices.Reverse(out)
	return last, out, nil
}

// PutLog stages a log row (keyed by id; a replaced row keeps its place), assigning ID (when empty),
// ThreadID and CreatedAt (when zero). Bodies are stored unchecked; the request body as what it
// shares with one of the thread's last ones and the rest (bodies.go).
func (t *tx) PutLog(l *weft.LogEntry) error {
	storecontract.PrepareLog(l, t.id, t.clock)
	c := copyMeta(l)
	c.ResponseBody = nilIfEmpty(slices.Clone(l.ResponseBody))
	var b stagedBody
	if len(l.RequestBody) > 0 {
		b.full = string(l.RequestBody)
		t.th.mu.RLock()
		recent := t.th.recent
		t.th.mu.RUnlock()
		b.node = bodyOn(b.full, append(slices.Clip(recent), t.recentStaged()...))
	}
	t.bodies = append(t.bodies, b)
	c.ToolsOffered, c.ToolsCalled, c.QueuedTools = nilIfEmpty(c.ToolsOffered), nilIfEmpty(c.ToolsCalled), nilIfEmpty(c.QueuedTools)
	t.logs = append(t.logs, &c)
	return nil
}

// stagedBody is a staged log's request body (node nil: none).
type stagedBody struct {
	node *memBody
	full string
}

// recentStaged returns the request bodies this transaction staged, as candidate bases.
func (t *tx) recentStaged() []recentBody {
	var out []recentBody
	for _, b := range t.bodies {
		if b.node != nil {
			out = append(out, recentBody(b))
		}
	}
	return out
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
