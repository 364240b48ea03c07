// Package journal is the committer: the one place that writes a thread and records the events
// its rows produce. Every transaction the engine opens goes through Committer.Tx, which hands the
// transaction's function a Tx that redacts every text a row, a call record, a log entry, a queued
// message or an event carries before the store sees it; a run writes through its Journal, whose
// transactions also store the messages drained from the thread's queue and record the events
// waiting in the run's outbox, and which updates the run's caches (Host) and publishes the events
// only once a transaction committed.
//
// A write site cannot forget to redact: a secret that reached a row by a route no one thought of
// (a user pasting it, a tool's injected message, a handoff's message) is stored as [redacted] all
// the same. Message rows are redacted in place, so that the caller's copy (the run's cache, the
// event it builds from the row after the commit) is what the store holds. Call records and log
// entries are redacted in the store's copy only: the run keeps the arguments a tool runs with.
package journal

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/feed"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/internal/storecontract"
)

// Event is something that happened in a thread (feed.Event).
type Event = feed.Event

// NoText is the redactor of a transaction that writes no text of a row, record or log entry (run
// state, thread fields, events already redacted): it loads none.
var NoText = &redact.Redactor{}

// Config is what a Committer writes to and publishes to.
type Config struct {
	// Store is the store written.
	Store weft.Store
	// Clock dates a thread's activity.
	Clock weft.Clock
	// Log reports events that could not be recorded.
	Log *slog.Logger
	// Subscribers (required) and OnEvent (optional) receive the events published.
	Subscribers *feed.Subscribers
	OnEvent     func(Event)
	// RecordEvents keeps every event except streamed text deltas in the thread's event log.
	RecordEvents bool
	// Secrets finds a thread's redactor (loaded outside any transaction).
	Secrets Secrets
}

// Secrets finds threads' redactors (vars.Secrets).
type Secrets interface {
	// Redactor returns the redactor of the thread's secrets.
	Redactor(ctx context.Context, threadID string) (*redact.Redactor, error)
}

// Committer writes threads and publishes their events (see the package comment). The engine holds
// one; its runs' Journals point to it.
type Committer struct{ cfg Config }

// NewCommitter returns a committer of cfg.
func NewCommitter(cfg Config) Committer { return Committer{cfg: cfg} }

// Records reports whether events are kept in the threads' event logs (Config.RecordEvents).
func (c *Committer) Records() bool { return c.cfg.RecordEvents }

// Tx runs fn in a transaction of the thread (fenced when fence is set) that redacts what fn
// writes. red is the thread's redactor; nil loads it first (never inside the transaction).
func (c *Committer) Tx(ctx context.Context, threadID string, fence *weft.Fence, red *redact.Redactor, fn func(weft.Tx) error) error {
	if red == nil {
		red = c.Redactor(ctx, threadID)
	}
	if red.Empty() {
		return c.cfg.Store.Tx(ctx, threadID, fence, fn) // no secret to redact
	}
	return c.cfg.Store.Tx(ctx, threadID, fence, func(tx weft.Tx) error {
		return fn(redactingTx{Tx: tx, red: red.String})
	})
}

// Redactor returns the thread's redactor, which a transaction of the thread without one given
// redacts with, or one that redacts nothing when it cannot be built.
func (c *Committer) Redactor(ctx context.Context, threadID string) *redact.Redactor {
	red, err := c.cfg.Secrets.Redactor(ctx, threadID)
	if err != nil {
		c.cfg.Log.Warn("no redactor for the thread", "thread", threadID, "error", err)
		return NoText
	}
	return red
}

// redactingTx is the Tx the committer hands a transaction's function.
type redactingTx struct {
	weft.Tx
	red func(string) string
}

func (t redactingTx) InsertMessage(m *weft.Message) error {
	redactMessage(m, t.red)
	return t.Tx.InsertMessage(m)
}

func (t redactingTx) UpdateMessage(id string, c weft.MessageChange) error {
	if c.Content != nil {
		c.Content = ptr(t.red(*c.Content))
	}
	if c.Reasoning != nil {
		c.Reasoning = ptr(t.red(*c.Reasoning))
	}
	if c.ToolCalls != nil {
		calls := redact.Calls(*c.ToolCalls, t.red)
		c.ToolCalls = &calls
	}
	if c.Metadata != nil {
		c.Metadata = redactMeta(c.Metadata, t.red)
	}
	return t.Tx.UpdateMessage(id, c)
}

func (t redactingTx) PutToolCall(c *weft.ToolCallRecord) error {
	args, meta := c.Arguments, c.Meta
	c.Arguments, c.Meta = t.red(args), redactRaw(meta, t.red)
	err := t.Tx.PutToolCall(c)
	c.Arguments, c.Meta = args, meta
	return err
}

func (t redactingTx) PutLog(l *weft.LogEntry) error {
	req, resp, msg := l.RequestBody, l.ResponseBody, l.Error
	l.RequestBody, l.ResponseBody, l.Error = redactRaw(req, t.red), redactRaw(resp, t.red), t.red(msg)
	err := t.Tx.PutLog(l)
	l.RequestBody, l.ResponseBody, l.Error = req, resp, msg
	return err
}

func (t redactingTx) AppendEvents(evs []weft.EventRecord) error {
	for i := range evs {
		evs[i].Data = redactRaw(evs[i].Data, t.red)
	}
	return t.Tx.AppendEvents(evs)
}

func (t redactingTx) PushQueue(q *weft.QueuedMessage) error {
	q.Content = t.red(q.Content)
	q.Metadata = redactMeta(q.Metadata, t.red)
	return t.Tx.PushQueue(q)
}

// redactMessage redacts a row's texts in place; its tool calls and metadata are replaced, not
// changed, when they hold a secret (the run may share them).
func redactMessage(m *weft.Message, red func(string) string) {
	m.Content = red(m.Content)
	m.Reasoning = red(m.Reasoning)
	if len(m.ToolCalls) > 0 {
		m.ToolCalls = redact.Calls(m.ToolCalls, red)
	}
	m.Metadata = redactMeta(m.Metadata, red)
}

// redactRaw redacts JSON text (the redactor keeps JSON valid); b itself when nothing changed.
func redactRaw(b []byte, red func(string) string) []byte {
	if len(b) == 0 {
		return b
	}
	s := string(b)
	if r := red(s); r != s {
		return []byte(r)
	}
	return b
}

// redactMeta returns the metadata with every string in it redacted: m itself when nothing
// changed.
func redactMeta(m map[string]any, red func(string) string) map[string]any {
	if len(m) == 0 {
		return m
	}
	b, err := json.Marshal(m)
	if err != nil {
		return m
	}
	s := string(b)
	r := red(s)
	if r == s {
		return m
	}
	var out map[string]any
	if json.Unmarshal([]byte(r), &out) != nil {
		return m
	}
	return out
}

// ChangedRow is cur with the change c applied, as the committer stores it (redacted with red).
func ChangedRow(cur weft.Message, c weft.MessageChange, red *redact.Redactor) weft.Message {
	storecontract.ApplyMessageChange(&cur, c)
	if c.Metadata != nil {
		cur.Metadata = c.Metadata
	}
	if c.ToolCalls != nil {
		cur.ToolCalls = *c.ToolCalls
	}
	if !red.Empty() {
		redactMessage(&cur, red.String)
	}
	return cur
}

func ptr[T any](v T) *T { return &v }
