package modelcall

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/redact"
)

// callProvider runs the call under the first-chunk and stall timeouts.
func (c *Caller) callProvider(p weft.Provider, req *weft.Request, log *weft.LogEntry, start time.Time) (*weft.Response, error) {
	// One allocation holds the call's state; its methods are the timer's and the chunks' callbacks.
	pc := &providerCall{c: c, log: log, depth: req.Depth, to: req.Timeouts}
	// Deltas are redacted as a stream: a secret split across deltas is replaced as well.
	pc.text, pc.reasoning = redact.NewStream(*c.red), redact.NewStream(*c.red)
	ctx, cancel := context.WithCancelCause(c.ctx)
	defer cancel(nil)
	pc.cancel = cancel
	if req.Depth == 0 {
		// A message with weft.IfBusyInterrupt cancels the run's top-level model call (a
		// sub-prompt's belongs to a tool call that started, which completes).
		if !c.run.Interruptible(cancel) {
			return nil, ErrInterrupted
		}
		defer c.run.Interruptible(nil)
	}
	if pc.to.FirstChunk > 0 {
		pc.timer = time.AfterFunc(pc.to.FirstChunk.D(), pc.expire)
		defer pc.timer.Stop()
	}
	if pc.to.Total > 0 {
		var cc context.CancelFunc
		ctx, cc = context.WithTimeoutCause(ctx, pc.to.Total.D(), &weft.ProviderError{Type: weft.ErrTimeout, Message: fmt.Sprintf("no complete reply within %s", pc.to.Total)})
		defer cc()
	}
	defer pc.flush()
	resp, err := p.Call(ctx, req, pc.onChunk)
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrInterrupted) && c.ctx.Err() == nil {
			return nil, ErrInterrupted // its output is discarded: nothing of it is stored
		}
		if cause := context.Cause(ctx); cause != nil && c.ctx.Err() == nil {
			var pe *weft.ProviderError
			if errors.As(cause, &pe) {
				return nil, pe
			}
		}
		return nil, err
	}
	if resp == nil {
		return nil, &weft.ProviderError{Type: weft.ErrUnknown, Message: "provider returned no response"}
	}
	if !pc.first.IsZero() {
		log.TimeToFirstTokenMS = pc.first.Sub(start).Milliseconds()
	}
	return resp, nil
}

// providerCall is one provider call's streaming state (callProvider). Its chunks come from the
// provider's Call, one at a time and not after it returned (weft.Provider): the redactors are
// theirs, then flush's, and first is read once the call returned. Only started is shared, with
// the timer's goroutine.
type providerCall struct {
	// c is the caller; log the attempt's log row; depth the calling scope's.
	c     *Caller
	log   *weft.LogEntry
	depth int
	// to are the attempt's timeouts; cancel ends the call with a cause.
	to     weft.Timeouts
	cancel context.CancelCauseFunc
	// timer is the first-chunk, then stall, timer (nil without a first-chunk timeout).
	timer *time.Timer

	// started is set by the first chunk, which arrived at first.
	started atomic.Bool
	first   time.Time
	// text and reasoning redact the streamed deltas.
	text, reasoning redact.Stream
}

// expire is the timer's: no chunk within the first-chunk timeout, or none since the last for the
// stall timeout.
func (pc *providerCall) expire() {
	if pc.started.Load() {
		pc.cancel(&weft.ProviderError{Type: weft.ErrTimeout, Message: fmt.Sprintf("stream stalled: no output for %s", pc.to.Stall)})
		return
	}
	pc.cancel(&weft.ProviderError{Type: weft.ErrTimeout, Message: fmt.Sprintf("no output within %s", pc.to.FirstChunk)})
}

// onChunk takes a streamed chunk: it restarts the stall timer and emits the redacted deltas.
func (pc *providerCall) onChunk(ch weft.Chunk) {
	if pc.first.IsZero() {
		pc.first = pc.c.now()
		pc.started.Store(true)
	}
	if pc.timer != nil && pc.to.Stall > 0 {
		pc.timer.Reset(pc.to.Stall.D())
	}
	if ch.Text == "" && ch.Reasoning == "" {
		return
	}
	pc.emitDelta("message_chunk", pc.text.Write(ch.Text))
	pc.emitDelta("reasoning_chunk", pc.reasoning.Write(ch.Reasoning))
}

// flush emits what the redactors still hold once the call ended.
func (pc *providerCall) flush() {
	pc.emitDelta("message_chunk", pc.text.Flush())
	pc.emitDelta("reasoning_chunk", pc.reasoning.Flush())
}

func (pc *providerCall) emitDelta(typ, delta string) {
	if delta != "" && pc.c.run.Observed() {
		pc.c.run.Emit(typ, payload.Chunk{MessageID: pc.log.MessageID, Depth: pc.depth, Delta: delta})
	}
}
