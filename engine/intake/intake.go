// Package intake accepts what is posted to the engine: a thread to create, whose arguments, budget
// and required variables it checks (Thread), and the messages posted to a thread. It checks a
// message (its role, content, size and double-texting policy), builds it as the thread's queue
// holds it, queues it, and tells a run of the thread in this process, which takes it at its next
// step boundary.
//
// Double-texting is what a message sent while a run of its thread is in progress does
// (weft.NewMessage.IfBusy); queue is the default. Reject is decided by the store, in the write
// that would queue the message (weft.QueuedMessage.IfBusy); Busy names the run that refused it
// when it runs here. Interrupt (and rollback) queues the message, then tells the run: in this
// process through the Run that Host.Queued returns; in another through the store's notice of the
// push, on which the engine calls Interrupt. The run stops at once with weft.StopInterrupted and
// the next run takes the message.
//
// The package does not import engine: a Host stores attachments and finds the runs of this
// process.
package intake

import (
	"context"
	"errors"
	"log/slog"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// Run is a run in progress in this process, as a message queued on its thread reaches it.
type Run interface {
	// Interrupt asks the run to stop for the queued message id (rollback: weft.IfBusyRollback).
	// It reports false when the run was not asked: another message interrupts it already, or it
	// took this one into its context, which it then answers.
	Interrupt(id string, rollback bool) bool
	// ID is the run's id ("" before it started).
	ID() string
}

// Host is what intake needs from the engine.
type Host interface {
	// QueueWithFiles stores attachments in the thread of q and queues q (its Attachments set) in
	// the same transaction: a crash or a refusal leaves neither.
	QueueWithFiles(ctx context.Context, q *weft.QueuedMessage, attachments []weft.ToolAttachment) error
	// Queued tells the run of threadID registered in this process, if any, that a message was
	// queued (interrupts: one with weft.IfBusyInterrupt or rollback), and returns it (nil when
	// none is).
	Queued(threadID string, interrupts bool) Run
	// Running returns the run of threadID in progress in this process (nil when none is).
	Running(threadID string) Run
}

// Intake checks the threads to create, and checks and queues the messages posted to threads.
type Intake struct {
	// Store holds the threads and their queues.
	Store weft.Store
	// Registry holds the agents.
	Registry *weft.Registry
	// Validator returns the compiled Validator of a prompt's requiredSchema.
	Validator func(*schema.Schema) (*schema.Validator, error)
	// Clock dates the messages.
	Clock weft.Clock
	// Log receives the failures nobody is told of.
	Log *slog.Logger
	// MaxThreadMessages refuses a message posted to a thread that already holds this many
	// (negative: no limit; never 0).
	MaxThreadMessages int
	// Host stores attachments and tells the runs of this process.
	Host Host
}

// Check checks a posted message and returns it as the queue will hold it (not yet queued): a
// user message by default, with content or attachments, within the message limits, with a known
// if_busy policy, to a thread below MaxThreadMessages (checked here when it has attachments, by
// the store's push otherwise).
func (in *Intake) Check(ctx context.Context, threadID string, m weft.NewMessage) (*weft.QueuedMessage, error) {
	if m.Role == "" {
		m.Role = weft.RoleUser
	}
	switch m.Role {
	case weft.RoleUser, weft.RoleAssistant, weft.RoleSystem:
	default:
		return nil, weft.Errorf(weft.EInvalid, "a posted message's role is user, assistant or system, not %q", m.Role)
	}
	if m.Content == "" && len(m.Attachments) == 0 {
		return nil, weft.Errorf(weft.EInvalid, "a message needs content or attachments")
	}
	if err := weft.CheckNewMessage(m); err != nil {
		return nil, err
	}
	if !m.IfBusy.Valid() {
		return nil, weft.Errorf(weft.EInvalid, "if_busy is queue, reject, interrupt or rollback, not %q", m.IfBusy)
	}
	q := &weft.QueuedMessage{ID: weft.NewID("msg_"), ThreadID: threadID, Role: m.Role, Content: m.Content,
		Silent: m.Silent, Metadata: m.Metadata, CreatedAt: in.Clock.Now().UTC()}
	if m.IfBusy != weft.IfBusyQueue {
		q.IfBusy = m.IfBusy
	}
	if limit := in.MaxThreadMessages; limit > 0 {
		if len(m.Attachments) > 0 {
			// Queued by a Tx with its files, which does not check the limit: read it first.
			if err := in.checkLength(ctx, threadID); err != nil {
				return nil, err
			}
		} else {
			q.MaxMessages = int64(limit) // checked by the push itself
		}
	}
	return q, nil
}

// Enqueue checks and queues a message without waking anyone, and returns its id.
func (in *Intake) Enqueue(ctx context.Context, threadID string, m weft.NewMessage) (string, error) {
	q, err := in.Check(ctx, threadID, m)
	if err != nil {
		return "", err
	}
	if err := in.Push(ctx, q, m.Attachments); err != nil {
		return "", err
	}
	return q.ID, nil
}

// Push queues q (with the files it attaches, stored first) and tells a run of the thread in this
// process, which takes it at its next boundary; one with weft.IfBusyInterrupt interrupts it.
func (in *Intake) Push(ctx context.Context, q *weft.QueuedMessage, attachments []weft.ToolAttachment) error {
	// PushQueue refuses an unknown or terminated thread atomically.
	if len(attachments) > 0 {
		if err := in.Host.QueueWithFiles(ctx, q, attachments); err != nil {
			return err
		}
	} else if err := in.Store.PushQueue(ctx, q); err != nil {
		return in.Refusal(err)
	}
	// A run of the thread in this engine takes the message at its next boundary, or is followed
	// by another run (the run checks once it is no longer registered); a run may have started
	// without being registered yet: it checks the queue for an interrupting message once it is.
	if run := in.Host.Queued(q.ThreadID, q.IfBusy.Interrupts()); run != nil && q.IfBusy.Interrupts() {
		run.Interrupt(q.ID, q.IfBusy == weft.IfBusyRollback)
	}
	return nil
}

// Interrupt interrupts the thread's run for the first message with weft.IfBusyInterrupt in the
// queue that the run has not taken: a message queued by another process, or before the run was
// registered.
func (in *Intake) Interrupt(ctx context.Context, threadID string, run Run) {
	queued, err := in.Store.Queued(ctx, threadID)
	if err != nil {
		in.Log.Warn("reading a queue for an interrupting message failed", "thread", threadID, "error", err)
		return
	}
	for _, q := range queued {
		if q.IfBusy.Interrupts() && run.Interrupt(q.ID, q.IfBusy == weft.IfBusyRollback) {
			return
		}
	}
}

// Busy completes the store's refusal of a message with weft.IfBusyReject with the id of the run
// in progress when it runs in this process; other errors are returned as they are.
func (in *Intake) Busy(threadID string, err error) error {
	var be *weft.BusyError
	if !errors.As(err, &be) || be.RunID != "" {
		return err
	}
	if run := in.Host.Running(threadID); run != nil {
		be.RunID = run.ID()
	}
	return err
}

// Refusal explains a push the store refused for the thread's length (weft.ThreadFullError);
// other errors are returned as they are.
func (in *Intake) Refusal(err error) error {
	if err == nil {
		return nil // (errors.As's target escapes: an allocation a run start otherwise)
	}
	var full *weft.ThreadFullError
	if errors.As(err, &full) {
		return in.tooLong(full.ThreadID, full.Messages)
	}
	return err
}

// checkLength refuses a message to a thread that reached MaxThreadMessages (its newest message's
// seq: one indexed read).
func (in *Intake) checkLength(ctx context.Context, threadID string) error {
	limit := in.MaxThreadMessages
	if limit < 0 {
		return nil
	}
	last, err := in.Store.Messages(ctx, threadID, weft.MessageQuery{Limit: 1, Desc: true, MaxDepth: 1 << 20})
	if err != nil || len(last) == 0 || last[0].Seq < int64(limit) {
		return err
	}
	return in.tooLong(threadID, last[0].Seq)
}

// tooLong is the error refusing a message to a thread holding n messages.
func (in *Intake) tooLong(threadID string, n int64) error {
	return weft.Errorf(weft.EInvalid, "thread %s holds %d messages; the limit is %d: start a new thread, or raise "+
		"engine.Options.MaxThreadMessages (weft: WEFT_MAX_THREAD_MESSAGES)", threadID, n, in.MaxThreadMessages)
}
