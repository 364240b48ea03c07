package engine

import (
	"context"
	"iter"
	"slices"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/conversation"
)

// Input is what Converse brings to a thread (conversation.Input).
type Input = conversation.Input

// Converse delivers the input to a thread and yields the events of its tree (the thread and its
// descendants) until the tree is quiescent: the thread's runs, its subagents' runs and their
// reports, work an earlier process left interrupted in the tree, due effects and the runs their
// messages start. An error (a refused message, a thread running in another process, a failing
// store) is yielded last. Breaking out of the loop stops the thread's run as a cancelled context
// does (the run stops as aborted).
//
// Events are yielded in the order they happened; payloads are redacted. Subscribers of the same
// tree in this process see the same events.
func (e *Engine) Converse(ctx context.Context, threadID string, in Input) iter.Seq2[Event, error] {
	return e.conversations.Converse(ctx, threadID, in)
}

// Ask is Converse for callers that want the outcome only: it runs the conversation to
// quiescence and returns the stops of the thread's runs in it (subagents' runs are not listed)
// and the last reply they stored. With no events to hand over while it runs, the conversation
// runs on the caller's goroutine (with Converse, every hand-over between the run's goroutine and
// the caller's may go through the operating system, about a third of an in-memory turn's time:
// bench/README.md), and when nothing else listens (no OnEvent, no event log, no subscriber) its
// runs build no event at all.
func (e *Engine) Ask(ctx context.Context, threadID string, in Input) (*RunResult, error) {
	res := &RunResult{}
	root, t, err := e.roots.Find(ctx, e.store, threadID, in.Message == nil)
	if err != nil {
		return res, err
	}
	// The thread's runs may stop on other goroutines (a parent woken by its subagent's report):
	// their stops are noted to a watch, which builds no event.
	watch := e.watches.Add(threadID)
	defer e.watches.Remove(watch)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	err = e.conversations.Run(runCtx, threadID, root, t, in)
	stops, redactions, reply := e.watches.Taken(watch)
	res.Reply = reply
	for _, info := range stops {
		res.Stops = append(res.Stops, info)
		res.Steps += info.Steps
	}
	res.LastLineRedactions += redactions
	if err != nil {
		return res, err
	}
	// Runs of one thread are serialized; sorting by stop number only guards the order.
	slices.SortStableFunc(res.Stops, func(a, b weft.StopInfo) int { return a.Seq - b.Seq })
	return e.finish(ctx, threadID, res), nil
}

// conversationHost is the engine as engine/conversation's Host.
type conversationHost struct{ e *Engine }

// Run runs the thread (Engine.runPush), the message push queued by its first run's BeginRun.
func (h conversationHost) Run(ctx context.Context, threadID, trigger string, side weft.Side, push *weft.QueuedMessage) (conversation.Tree, error) {
	var sp *startPush
	if push != nil {
		sp = &startPush{q: push}
	}
	res, err := h.e.runPush(ctx, threadID, trigger, side, sp)
	if err != nil {
		return conversation.Tree{}, err
	}
	return conversation.Tree{Started: res.tree.started, Children: res.tree.children, EffectsDue: res.tree.effectsDue}, nil
}

// Recover resumes the thread's tree (Engine.Recover).
func (h conversationHost) Recover(ctx context.Context, threadID string) error {
	return h.e.Recover(ctx, threadID)
}

// RunDueEffects runs the due effects (Engine.RunDueEffects).
func (h conversationHost) RunDueEffects(ctx context.Context) ([]string, error) {
	rep, err := h.e.RunDueEffects(ctx)
	return rep.Threads, err
}
