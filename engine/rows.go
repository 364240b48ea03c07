package engine

import (
	"slices"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/redact"
)

// rowCache is a run's copy of the thread's top-level rows (completed and pending) in seq order,
// with the newest seq and the ids of the tool calls it has seen. Only the run's goroutine
// changes it; a State's rows reach it through the run's mailbox.
type rowCache struct {
	rows    []*weft.Message
	lastSeq int64
	callIDs map[string]bool
}

// addRows appends stored top-level rows to the run's cache (by pointer into rows: no copies).
func (rc *rowCache) addRows(rows []weft.Message) {
	if rc.rows == nil {
		rc.rows = make([]*weft.Message, 0, len(rows)+16)
	}
	for i := range rows {
		m := &rows[i]
		rc.noteRow(m)
		if m.Depth == 0 {
			rc.rows = append(rc.rows, m)
		}
	}
}

// shareRows appends a store's read-only rows to the run's cache; the run never modifies a cached
// row (it replaces it).
func (rc *rowCache) shareRows(rows []*weft.Message) {
	if rc.rows == nil {
		rc.rows = make([]*weft.Message, 0, len(rows)+16)
	}
	for _, m := range rows {
		rc.noteRow(m)
		if m.Depth == 0 {
			rc.rows = append(rc.rows, m)
		}
	}
}

// noteRow records a row's seq and call ids.
func (rc *rowCache) noteRow(m *weft.Message) {
	if m.Seq > rc.lastSeq {
		rc.lastSeq = m.Seq
	}
	for _, c := range m.ToolCalls {
		rc.callIDs[c.ID] = true
	}
}

func (r *run) addRow(m weft.Message) {
	r.sync()
	r.cacheRow(m)
}

// cacheRow adds a stored row to the cache, in seq order: a State's row, stored from a tool's
// goroutine, may reach the cache after a later row of the run's own.
func (rc *rowCache) cacheRow(m weft.Message) {
	rc.noteRow(&m)
	if m.Depth != 0 {
		return
	}
	i := len(rc.rows)
	for i > 0 && rc.rows[i-1].Seq > m.Seq {
		i--
	}
	rc.rows = slices.Insert(rc.rows, i, &m)
}

// replaceRow updates a cached row after an update in the store.
func (r *run) replaceRow(m weft.Message) {
	r.sync()
	r.recacheRow(m)
}

func (rc *rowCache) recacheRow(m weft.Message) {
	for i := len(rc.rows) - 1; i >= 0; i-- {
		if rc.rows[i].ID == m.ID {
			rc.rows[i] = &m
			return
		}
	}
}

// journalHost is the run as its journal's host (journal.Host).
type journalHost run

func (h *journalHost) Redactor() *redact.Redactor { return (*run)(h).redactorNow() }

// Drained notes the rows drained from the queue that a transaction stored, their seqs now final.
func (h *journalHost) Drained(rows []*weft.Message) {
	for _, m := range rows {
		h.noteRow(m)
	}
}
