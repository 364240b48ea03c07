package engine

import (
	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/redact"
)

// addRow adds a stored row to the run's cache (rowcache.Cache.Insert), after what was posted.
func (r *run) addRow(m weft.Message) {
	r.sync()
	r.cache.Insert(m)
}

// replaceRow updates a cached row after an update in the store.
func (r *run) replaceRow(m weft.Message) {
	r.sync()
	r.cache.Replace(m)
}

// journalHost is the run as its journal's host (journal.Host).
type journalHost run

func (h *journalHost) Redactor() *redact.Redactor { return (*run)(h).redactorNow() }

// Drained notes the rows drained from the queue that a transaction stored, their seqs now final.
func (h *journalHost) Drained(rows []*weft.Message) {
	for _, m := range rows {
		h.cache.Note(m)
	}
}
