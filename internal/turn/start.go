package turn

import (
	"context"
	"net/http"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
)

// Input is what a protocol request asks of a thread.
type Input struct {
	// Agent is the agent of a new thread; a continued thread must be of it too (404 otherwise,
	// as for another user's thread).
	Agent string
	// ThreadID continues that thread ("" = a new thread, or the one Tag names).
	ThreadID string
	// Tag, when set without ThreadID, names the caller's thread: the caller's thread with this
	// tag is continued, or a new one is created with it (a client-chosen chat id).
	Tag string
	// History is injected into a new thread before Message (earlier turns a client sends along
	// with its new message); a continued thread already holds them and ignores it.
	History []weft.NewMessage
	// Message is posted; the turn is the run that takes it.
	Message weft.NewMessage
	// Label labels a new thread.
	Label string
	// Before, when set, runs once the thread is found or created, before the message is posted
	// (the thread's client tools are set, the calls its client answered delivered).
	Before func(t *weft.Thread) error
}

// Turn is a posted message, its thread and the feed of its events, opened before the message
// was posted so that no streamed delta is missed. Close it when done.
type Turn struct {
	*Feed
	Thread *weft.Thread
	// Created reports a new thread.
	Created bool
	// InputID is the id of the posted message.
	InputID string
	// Cursor is the thread's newest event before the message was posted: the turn's events
	// follow it.
	Cursor int64
	// interrupts: the message was posted with weft.IfBusyInterrupt or weft.IfBusyRollback, so a
	// run in progress stops
	// without taking it (Reader).
	interrupts bool
}

// Reader returns the reader of the turn's parts: the run that takes the posted message. The
// parts of a run in progress that the message interrupts are not the turn's: the reader gives
// nothing before the message is stored.
func (t *Turn) Reader() *Reader {
	return &Reader{Input: t.InputID, AfterInput: t.interrupts}
}

// Start finds or creates the thread, follows its events, posts the message and returns the turn.
// Errors are the engine's (weft.ENotFound for an unknown agent or an invisible thread,
// weft.EInvalid, …).
func Start(r *http.Request, api *httpapi.Server, c httpapi.Caller, in Input) (*Turn, error) {
	ctx := r.Context()
	eng := api.Engine()
	if _, ok := eng.Registry().Agent(in.Agent); !ok {
		return nil, weft.Errorf(weft.ENotFound, "no agent named %q", in.Agent)
	}
	t := &Turn{}
	var err error
	switch {
	case in.ThreadID != "":
		t.Thread, err = api.VisibleThread(ctx, c, in.ThreadID)
		if err == nil && t.Thread.Agent != in.Agent {
			err = weft.Errorf(weft.ENotFound, "thread %s is not a thread of agent %q", in.ThreadID, in.Agent)
		}
	case in.Tag != "":
		var found []*weft.Thread
		found, _, err = eng.Store().Threads(ctx, weft.ThreadQuery{UserID: c.UserID, Agent: in.Agent, Tag: in.Tag, Limit: 1})
		if err == nil && len(found) > 0 {
			t.Thread = found[0]
		}
	}
	if err != nil {
		return nil, err
	}
	if t.Thread == nil {
		nt := engine.NewThread{Agent: in.Agent, UserID: c.UserID, Label: in.Label}
		if in.Tag != "" {
			nt.Tags = []string{in.Tag}
		}
		if t.Thread, err = eng.CreateThread(ctx, nt); err != nil {
			return nil, err
		}
		t.Created = true
		if len(in.History) > 0 {
			st, err := eng.State(ctx, t.Thread.ID)
			if err != nil {
				return nil, err
			}
			for _, m := range in.History {
				if _, err := st.InjectMessage(ctx, m); err != nil {
					return nil, err
				}
			}
		}
	}
	if t.Thread.Status == weft.ThreadTerminated {
		return nil, weft.Errorf(weft.EConflict, "thread %s is terminated", t.Thread.ID)
	}
	if t.Cursor, err = api.LastEventSeq(ctx, t.Thread.ID); err != nil {
		return nil, err
	}
	if in.Before != nil {
		// After the cursor: a run that what it does starts is followed too.
		if err := in.Before(t.Thread); err != nil {
			return nil, err
		}
	}
	if t.Feed, err = Open(r, api, t.Thread.ID, t.Cursor); err != nil {
		return nil, err
	}
	if in.Message.IfBusy == "" {
		in.Message.IfBusy = weft.IfBusyOf(t.Thread) // the thread's default, as for POST …/messages
	}
	t.interrupts = in.Message.IfBusy.Interrupts()
	if t.InputID, err = eng.Send(ctx, t.Thread.ID, in.Message); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Feed is a thread's events followed for a request: until the request or the server's streams
// end (httpapi.Server.FollowThread).
type Feed struct {
	ctx    context.Context
	feed   httpapi.Feed
	done   func()
	redact func(string) string
	// first is what the feed gave when opened: Open reads the log up to now before a message is
	// posted, since deltas that arrive while a feed first reads the log come after what it read.
	first []engine.Event
}

// Open follows a thread's events after the cursor.
func Open(r *http.Request, api *httpapi.Server, threadID string, after int64) (*Feed, error) {
	redact, err := api.Redactor(r.Context(), threadID)
	if err != nil {
		return nil, err
	}
	ctx, feed, done, err := api.FollowThread(r, threadID, after)
	if err != nil {
		return nil, err
	}
	f := &Feed{ctx: ctx, feed: feed, done: done, redact: redact}
	select {
	case <-feed.Ready():
		f.first, err = feed.Next(ctx, nil)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Redact hides the thread's secrets in the parts' texts. Event payloads are redacted already;
// this covers what a message event may carry besides its content (reasoning, arguments).
func Redact(parts []Part, redact func(string) string) {
	for i := range parts {
		parts[i].Text = redact(parts[i].Text)
		parts[i].Error = redact(parts[i].Error)
	}
}

// Close ends the feed.
func (f *Feed) Close() {
	f.feed.Close()
	f.done()
}

// Stream reads the feed, giving each batch of parts to emit, until the turn ends (nil), the
// request or the server's streams end (the context's error), or the feed fails. ping, when not
// nil, is called every interval (a stream's keep-alive).
func (f *Feed) Stream(rd *Reader, emit func([]Part) error, ping func() error, interval time.Duration) error {
	ctx, feed := f.ctx, f.feed
	var tick <-chan time.Time
	if ping != nil && interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	var parts []Part
	for _, ev := range f.first {
		parts = rd.Read(ev, parts)
	}
	f.first = nil
	Redact(parts, f.redact)
	if len(parts) > 0 {
		if err := emit(parts); err != nil {
			return err
		}
	}
	if rd.Done() {
		return nil
	}
	var evs []engine.Event
	var err error
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			if err := ping(); err != nil {
				return err
			}
		case <-feed.Ready():
			evs, err = feed.Next(ctx, evs[:0])
			parts = parts[:0]
			for _, ev := range evs {
				parts = rd.Read(ev, parts)
			}
			clear(evs)
			Redact(parts, f.redact)
			if len(parts) > 0 {
				if err := emit(parts); err != nil {
					return err
				}
			}
			if rd.Done() {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
}

// Collect reads the feed to the turn's end and returns every part (a request that does not
// stream).
func (f *Feed) Collect(rd *Reader) ([]Part, error) {
	var all []Part
	err := f.Stream(rd, func(p []Part) error {
		all = append(all, p...)
		return nil
	}, nil, 0)
	return all, err
}
