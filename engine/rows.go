package engine

import (
	"slices"

	"github.com/weft-agents/weft"
)

// addRows appends stored top-level rows to the run's cache (by pointer into rows: no copies).
func (r *run) addRows(rows []weft.Message) {
	if r.rows == nil {
		r.rows = make([]*weft.Message, 0, len(rows)+16)
	}
	for i := range rows {
		m := &rows[i]
		r.noteRow(m)
		if m.Depth == 0 {
			r.rows = append(r.rows, m)
		}
	}
}

// shareRows appends a store's read-only rows to the run's cache; the run never modifies a cached
// row (it replaces it).
func (r *run) shareRows(rows []*weft.Message) {
	if r.rows == nil {
		r.rows = make([]*weft.Message, 0, len(rows)+16)
	}
	for _, m := range rows {
		r.noteRow(m)
		if m.Depth == 0 {
			r.rows = append(r.rows, m)
		}
	}
}

// noteRow records a row's seq and call ids.
func (r *run) noteRow(m *weft.Message) {
	if m.Seq > r.lastSeq {
		r.lastSeq = m.Seq
	}
	for _, c := range m.ToolCalls {
		r.callIDs[c.ID] = true
	}
}

func (r *run) addRow(m weft.Message) {
	r.sync()
	r.cacheRow(m)
}

// cacheRow adds a stored row to the cache, in seq order: a State's row, stored from a tool's
// goroutine, may reach the cache after a later row of the run's own.
func (r *run) cacheRow(m weft.Message) {
	r.noteRow(&m)
	if m.Depth != 0 {
		return
	}
	i := len(r.rows)
	for i > 0 && r.rows[i-1].Seq > m.Seq {
		i--
	}
	r.rows = slices.Insert(r.rows, i, &m)
}

// replaceRow updates a cached row after an update in the store.
func (r *run) replaceRow(m weft.Message) {
	r.sync()
	r.recacheRow(m)
}

func (r *run) recacheRow(m weft.Message) {
	for i := len(r.rows) - 1; i >= 0; i-- {
		if r.rows[i].ID == m.ID {
			r.rows[i] = &m
			return
		}
	}
}

// stored notes the drained rows a transaction stored (with their seq now final) and publishes
// them.
func (r *run) stored(drained []*weft.Message) {
	for _, m := range drained {
		r.noteRow(m)
		r.emitUnrecorded(*m) // (txBody recorded it when the run records its events)
	}
}
