package storecontract

import (
	"encoding/json"
	"time"

	"github.com/weft-agents/weft"
)

// PrepareThread checks a thread handed to CreateThread before anything is stored: Agent is
// required, an empty ID gets a new thr_ id (written back to t), a ForkedFrom names both a thread
// and a message, and every thread-layer env value
// must pass CheckEnvValue.
func PrepareThread(t *weft.Thread, env []weft.EnvValue) error {
	if t.Agent == "" {
		return weft.Errorf(weft.EInvalid, "thread %s: agent is required", t.ID)
	}
	if t.ID == "" {
		t.ID = weft.NewID("thr_")
	}
	if f := t.ForkedFrom; f != nil && (f.Thread == "" || f.Message == "") {
		return weft.Errorf(weft.EInvalid, "thread %s: forked_from needs a thread and a message", t.ID)
	}
	for _, v := range env {
		if _, err := CheckEnvValue(weft.EnvThread, t.ID, v); err != nil {
			return err
		}
	}
	return nil
}

// DefaultThread fills the empty fields of a thread being created, once its parent (if any) has
// been resolved: RootID becomes its own id for a thread without a parent, OriginAgent its Agent,
// Status idle, CreatedAt now, and UpdatedAt and LastActivityAt its CreatedAt.
func DefaultThread(t *weft.Thread, now time.Time) {
	if t.ParentID == "" && t.RootID == "" {
		t.RootID = t.ID
	}
	if t.OriginAgent == "" {
		t.OriginAgent = t.Agent
	}
	if t.Status == "" {
		t.Status = weft.ThreadIdle
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	if t.UpdatedAt.IsZero() {
		t.UpdatedAt = t.CreatedAt
	}
	if t.LastActivityAt.IsZero() {
		t.LastActivityAt = t.CreatedAt
	}
}

// ThreadSort is the order of a thread listing, from weft.ThreadQuery.Sort.
type ThreadSort int

// The orders of ParseThreadSort; ties are broken by id in the same direction.
const (
	SortByActivity ThreadSort = iota // newest LastActivityAt first (the default)
	SortByCreated                    // newest CreatedAt first
	SortByOldest                     // oldest CreatedAt first
)

// ParseThreadSort reads weft.ThreadQuery.Sort: "" or activity, created, oldest; anything else is
// EInvalid.
func ParseThreadSort(sort string) (ThreadSort, error) {
	switch sort {
	case "", "activity":
		return SortByActivity, nil
	case "created":
		return SortByCreated, nil
	case "oldest":
		return SortByOldest, nil
	}
	return 0, weft.Errorf(weft.EInvalid, "unknown thread sort %q (want activity, created or oldest)", sort)
}

// ApplyThreadPatch applies the plain fields of p to t — Agent, Label, Status, StopReason,
// LastActivityAt (as UTC) and Preview — and sets UpdatedAt to now. Tags, Properties and Arguments
// are left to the store, which copies or encodes them its own way.
func ApplyThreadPatch(t *weft.Thread, p weft.ThreadPatch, now time.Time) {
	if p.Agent != nil {
		t.Agent = *p.Agent
	}
	if p.Label != nil {
		t.Label = *p.Label
	}
	if p.Status != nil {
		t.Status = *p.Status
	}
	if p.StopReason != nil {
		t.StopReason = *p.StopReason
	}
	if p.LastActivityAt != nil {
		t.LastActivityAt = p.LastActivityAt.UTC()
	}
	if p.Preview != nil {
		t.Preview = *p.Preview
	}
	t.UpdatedAt = now
}

// DefaultMessageLimit is the page size of a weft.MessageQuery with Limit 0.
const DefaultMessageLimit = 100

// MessageLimit returns the number of messages a weft.MessageQuery asks for: DefaultMessageLimit for
// 0, the limit itself otherwise (negative means no limit).
func MessageLimit(limit int) int {
	if limit == 0 {
		return DefaultMessageLimit
	}
	return limit
}

// ApplyMessageChange applies the plain fields of ch to m — Content, Status, Silent, Reasoning and
// LogID. ToolCalls, Attachments and Metadata are left to the store, which copies or encodes them
// its own way.
func ApplyMessageChange(m *weft.Message, ch weft.MessageChange) {
	if ch.Content != nil {
		m.Content = *ch.Content
	}
	if ch.Status != nil {
		m.Status = *ch.Status
	}
	if ch.Silent != nil {
		m.Silent = *ch.Silent
	}
	if ch.Reasoning != nil {
		m.Reasoning = *ch.Reasoning
	}
	if ch.LogID != nil {
		m.LogID = *ch.LogID
	}
}

// PrepareQueued fills the defaults of a message handed to PushQueue, written back to q: an empty ID
// gets a new que_ id, an empty Role is user, and a zero CreatedAt is now() (called only then);
// CreatedAt is made UTC. ThreadID and Seq are the store's to check and assign.
func PrepareQueued(q *weft.QueuedMessage, now func() time.Time) {
	if q.ID == "" {
		q.ID = weft.NewID("que_")
	}
	if q.Role == "" {
		q.Role = weft.RoleUser
	}
	if q.CreatedAt.IsZero() {
		q.CreatedAt = now()
	}
	q.CreatedAt = q.CreatedAt.UTC()
}

// Busy reports whether a thread has a run in progress, as a queue push with weft.IfBusyReject
// tests it in the push's own write: its status is running (a run is under way, or one that died
// is yet to be resumed), or a node holds its lease (leaseOwner set, expiring after now).
func Busy(status weft.ThreadStatus, leaseOwner string, leaseExpires, now time.Time) bool {
	return status == weft.ThreadRunning || (leaseOwner != "" && now.Before(leaseExpires))
}

// BusyError is the refusal of a push with weft.IfBusyReject to a busy thread.
func BusyError(threadID string) error { return &weft.BusyError{ThreadID: threadID} }

// PrepareLog fills what PutLog assigns, written back to l: an empty ID gets a new log_ id, ThreadID
// is the Tx's thread, and a zero CreatedAt is now() (called only then); CreatedAt is made UTC.
func PrepareLog(l *weft.LogEntry, threadID string, now func() time.Time) {
	if l.ID == "" {
		l.ID = weft.NewID("log_")
	}
	l.ThreadID = threadID
	if l.CreatedAt.IsZero() {
		l.CreatedAt = now()
	} else {
		l.CreatedAt = l.CreatedAt.UTC()
	}
}

// PrepareToolCall checks a record handed to PutToolCall and defaults it: CallID is required, Meta
// (when set) must be valid JSON, and an empty Status becomes pending (written back to c). ThreadID
// and Seq are the store's to assign.
func PrepareToolCall(threadID string, c *weft.ToolCallRecord) error {
	if c.CallID == "" {
		return weft.Errorf(weft.EInvalid, "thread %s: tool call without id", threadID)
	}
	if len(c.Meta) > 0 && !json.Valid(c.Meta) {
		return weft.Errorf(weft.EInvalid, "thread %s: tool call %s: meta is not valid JSON", threadID, c.CallID)
	}
	if c.Status == "" {
		c.Status = weft.CallPending
	}
	return nil
}
