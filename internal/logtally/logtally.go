// Package logtally adds up threads' log rows incrementally: a reader that needs a total over a
// thread's rows (a budget's spend before each model call, a thread's cost in the API) reads only
// the rows written since it last did, instead of every row each time.
//
// It relies on what the stores guarantee of log rows: each is written once under an id of its
// own and never changed after its commit, and a thread's rows are written one transaction at a
// time, in creation order. So the rows after the last one counted (weft.LogQuery.AfterID) are
// the new ones. When that row is gone (the thread was deleted and made again under its id), the
// store says ErrNotFound and everything is counted again.
package logtally

import (
	"context"
	"errors"
	"sync"

	"github.com/weft-agents/weft"
)

// Tally keeps, per thread, a value folded over the thread's log rows (every depth) so far. It is
// safe for concurrent use.
type Tally[T any] struct {
	// Add folds one row into the value.
	Add func(v *T, l *weft.LogEntry)
	// Clone copies a value before it is extended, so that one already returned never changes;
	// nil for a value without references.
	Clone func(T) T

	mu sync.Mutex
	m  map[string]tallied[T]
}

type tallied[T any] struct {
	lastID string // the last row folded
	v      T
}

// maxThreads bounds the threads kept; beyond it the map starts again.
const maxThreads = 1 << 16

// rows is the log query of a tally: every row, sub-prompts' included.
var rows = weft.LogQuery{MaxDepth: 1 << 20}

// Of returns the value over every log row of the thread, reading those written since the last
// call for the thread. The value is the caller's to read, not to change.
func (t *Tally[T]) Of(ctx context.Context, st weft.Store, threadID string) (T, error) {
	t.mu.Lock()
	cur, kept := t.m[threadID]
	t.mu.Unlock()
	q := rows
	q.AfterID = cur.lastID
	logs, err := st.Logs(ctx, threadID, q)
	if errors.Is(err, weft.ErrNotFound) && cur.lastID != "" {
		cur, kept = tallied[T]{}, false
		logs, err = st.Logs(ctx, threadID, rows)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	if len(logs) == 0 && kept {
		return cur.v, nil
	}
	if kept && t.Clone != nil {
		cur.v = t.Clone(cur.v)
	}
	for i := range logs {
		t.Add(&cur.v, &logs[i])
		cur.lastID = logs[i].ID
	}
	t.mu.Lock()
	if t.m == nil || len(t.m) >= maxThreads {
		t.m = map[string]tallied[T]{}
	}
	t.m[threadID] = cur
	t.mu.Unlock()
	return cur.v, nil
}
