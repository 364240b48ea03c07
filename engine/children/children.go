// Package children runs the child threads (subagents) a parent thread starts and carries what
// they report back: a blocking call's child runs in the caller's goroutine, a background or
// continuable child's runs in a driver goroutine of its own, each holding the child's turn. Every
// stop of a background child is reported to its parent exactly once, as a silent message queued
// on the parent, unless a blocking call that awaits the child returns it as the call's result.
//
// The package does not run threads itself: a Host (the engine) runs them, commits their
// transactions and keeps the per-thread coordination of this process. What a child reported, and
// the reports held back for a call awaiting it, are kept in the child's run-state documents, so
// that a process that starts after a crash sends exactly what was lost (Recover).
//
// The room also keeps the rules of the other calls whose target is an agent or a prompt, which
// create no child thread: a sub-prompt's nested run (its first message, step cap and result
// string; the engine runs it in the caller's thread) and an agent handoff (HandOff: the thread
// switches to another agent after the step).
package children

import (
	"context"
	"errors"
	"log/slog"

	"github.com/weft-agents/weft"
)

// Host is what the room needs from the engine that runs threads.
type Host interface {
	// Acquire waits for the thread's turn in this process. The returned context carries the hold
	// (runs started with it must be derived from it); release gives the turn back.
	Acquire(ctx context.Context, threadID string) (held context.Context, release func(), err error)
	// RunHeld runs the thread, holding its turn (ctx from Acquire), while it has work: trigger
	// "message" takes its queued messages, "continue" goes on with a run a crash interrupted.
	// stopped is false when no run stopped (nothing to run); info is the last run's stop.
	RunHeld(ctx context.Context, threadID, trigger string) (info weft.StopInfo, stopped bool, err error)
	// RunOnce performs one run of the thread, holding its turn. ErrNotRun: another run took its
	// messages, or another process holds the thread.
	RunOnce(ctx context.Context, threadID, trigger string) (weft.StopInfo, error)
	// Drive runs fn in the background as a driver of the child: registered with the child's
	// owner in this process until fn returns, and counted as work on its tree.
	Drive(child *weft.Thread, fn func())
	// Driven tells whether a driver of this process (Drive) runs the child now.
	Driven(childID string) bool
	// Watch calls fn with the child's report coordination, kept with the thread's owner in this
	// process, under the owner's lock: fn must neither block nor do I/O. The watch is kept while
	// it is not Idle.
	Watch(childID string, fn func(*Watch))
	// Tx commits fn in a transaction of the thread (no run's fence, nothing redacted).
	Tx(ctx context.Context, threadID string, fn func(weft.Tx) error) error
	// Redactor returns the function redacting the thread's secrets.
	Redactor(ctx context.Context, threadID string) (func(string) string, error)
	// StoreAttachments writes attachments into the thread's /attachments/ and returns them stored.
	StoreAttachments(ctx context.Context, thread *weft.Thread, atts []weft.ToolAttachment) ([]weft.Attachment, error)
	// Notify queues m on the thread, as Engine.Send does, and wakes the thread's worker (root is
	// its tree's root).
	Notify(ctx context.Context, threadID, root string, m weft.NewMessage) error
	// Enqueue queues m on the thread without waking anyone.
	Enqueue(ctx context.Context, threadID string, m weft.NewMessage) error
	// Terminate terminates the thread and its descendants.
	Terminate(ctx context.Context, threadID string) error
	// Created tells the host that the child thread was created: the host remembers its root and
	// tells the streams (a thread_created event, and the parent's subagent event).
	Created(ctx context.Context, child *weft.Thread)
	// Observed tells whether events are wanted.
	Observed() bool
	// EmitSubagent sends the child's parent a subagent event: the child's status and status text.
	EmitSubagent(ctx context.Context, child *weft.Thread, agent, status, text string)
}

// ErrNotRun is RunOnce's error when the run did not happen here: another run took the thread's
// messages (and reports them), or another process holds the thread.
var ErrNotRun = errors.New("children: the run was taken elsewhere")

// Room runs child threads and carries their reports. The engine makes one and hosts it.
type Room struct {
	host  Host
	store weft.Store
	reg   *weft.Registry
	log   *slog.Logger
}

// New returns a room hosted by host, reading store and the registry's agents.
func New(host Host, store weft.Store, reg *weft.Registry, log *slog.Logger) *Room {
	return &Room{host: host, store: store, reg: reg, log: log}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
