// Package rowcache is a run's copy of its thread's top-level rows (completed and pending) in seq
// order, with the newest seq and the ids of the tool calls it has seen: what a run's requests are
// built from, without reading the store each step. Only the run's goroutine changes a Cache; rows
// stored from another goroutine reach it through the run's mailbox.
package rowcache

import (
	"slices"

	"github.com/weft-agents/weft"
)

// Cache is a run's copy of its thread's top-level rows. New makes one.
type Cache struct {
	// Rows are the top-level rows in seq order; the run never modifies a cached row (it replaces
	// it).
	Rows []*weft.Message
	// LastSeq is the newest seq seen, of any depth.
	LastSeq int64
	// CallIDs are the ids of the tool calls seen, of any depth.
	CallIDs map[string]bool
}

// New returns an empty cache.
func New() Cache { return Cache{CallIDs: map[string]bool{}} }

// Add appends stored rows, keeping the top-level ones (by pointer into rows: no copies).
func (c *Cache) Add(rows []weft.Message) {
	if c.Rows == nil {
		c.Rows = make([]*weft.Message, 0, len(rows)+16)
	}
	for i := range rows {
		m := &rows[i]
		c.Note(m)
		if m.Depth == 0 {
			c.Rows = append(c.Rows, m)
		}
	}
}

// Share appends a store's read-only rows, keeping the top-level ones.
func (c *Cache) Share(rows []*weft.Message) {
	if c.Rows == nil {
		c.Rows = make([]*weft.Message, 0, len(rows)+16)
	}
	for _, m := range rows {
		c.Note(m)
		if m.Depth == 0 {
			c.Rows = append(c.Rows, m)
		}
	}
}

// Note records a row's seq and call ids, without caching it.
func (c *Cache) Note(m *weft.Message) {
	if m.Seq > c.LastSeq {
		c.LastSeq = m.Seq
	}
	for _, tc := range m.ToolCalls {
		c.CallIDs[tc.ID] = true
	}
}

// Insert adds a stored row in seq order: a row a tool stored from its own goroutine may arrive
// after a later row of the run's own.
func (c *Cache) Insert(m weft.Message) {
	c.Note(&m)
	if m.Depth != 0 {
		return
	}
	i := len(c.Rows)
	for i > 0 && c.Rows[i-1].Seq > m.Seq {
		i--
	}
	c.Rows = slices.Insert(c.Rows, i, &m)
}

// Replace puts a row updated in the store in place of its cached copy.
func (c *Cache) Replace(m weft.Message) {
	for i := len(c.Rows) - 1; i >= 0; i-- {
		if c.Rows[i].ID == m.ID {
			c.Rows[i] = &m
			return
		}
	}
}

// Delete drops the cached rows with the given ids.
func (c *Cache) Delete(ids ...string) {
	c.Rows = slices.DeleteFunc(c.Rows, func(m *weft.Message) bool { return slices.Contains(ids, m.ID) })
}
