package turn

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/httpapi"
)

// HandlerFunc serves a request of an authenticated caller; an error it returns is written as
// the API writes errors (a protocol with an error shape of its own writes it before returning).
type HandlerFunc func(w http.ResponseWriter, r *http.Request, c httpapi.Caller) error

// Route authenticates a request as /api does and serves it with f.
func Route(api *httpapi.Server, f HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := api.Authenticate(r)
		if err == nil {
			err = f(w, r, c)
		}
		if err != nil {
			api.WriteError(w, r, err)
		}
	})
}

// ReadJSON decodes a request body of at most weft.MaxMessageBytes (what /api takes as a posted
// message) into v. what names the body in the error (EInvalid, or the limit's error).
func ReadJSON(w http.ResponseWriter, r *http.Request, v any, what string) error {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, weft.MaxMessageBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return weft.LimitError("the request body", mbe.Limit+1, weft.MaxMessageBytes)
	}
	if err != nil {
		return weft.Errorf(weft.EInvalid, "reading the request body: %v", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return weft.Errorf(weft.EInvalid, "the body is not %s: %v", what, err)
	}
	return nil
}

// Tagged returns the caller's thread of the agent that carries the tag (a client-chosen id), or
// nil when there is none.
func Tagged(ctx context.Context, api *httpapi.Server, c httpapi.Caller, agent, tag string) (*weft.Thread, error) {
	found, _, err := api.Engine().Store().Threads(ctx, weft.ThreadQuery{UserID: c.UserID, Agent: agent, Tag: tag, Limit: 1})
	if err != nil || len(found) == 0 {
		return nil, err
	}
	return found[0], nil
}

// Resumed is the running turn of a thread, followed from the start of its event log.
type Resumed struct {
	*Feed
	Thread *weft.Thread
	// Input is the posted message the turn answers.
	Input *weft.Message
	// Now is the thread's newest event when the stream resumed (a Reader's ResumeAt).
	Now int64
}

// Reader is the reader of the resumed turn: from its input's storing, through waits for
// approvals, the deltas before Now dropped. An input the thread's log never stored — copied by
// a fork, whose run answers it again (a retry) — is not waited for: the turn is the log's first
// run.
func (rs *Resumed) Reader() *Reader {
	rd := &Reader{Input: rs.Input.ID, AfterInput: true, ResumeAt: rs.Now, ThroughParked: true}
	if rs.Thread.ForkedFrom != nil && rs.Input.CreatedAt.Before(rs.Thread.CreatedAt) {
		rd.Input, rd.AfterInput = "", false
	}
	return rd
}

// Resume finds the caller's thread of the agent that carries the tag and follows its running
// turn — a run, or a wait for approvals that are all decided — from its start (read it with a
// Reader that goes ThroughParked): the newest user message among its latest rows is the turn's. No such thread is ENotFound
// naming what; when no turn runs, Resume answers 204 and returns nil. Close it when done.
func Resume(w http.ResponseWriter, r *http.Request, api *httpapi.Server, c httpapi.Caller, agent, tag, what string) (*Resumed, error) {
	rs, err := resume(r, api, c, agent, tag, what)
	if err == nil && rs == nil {
		w.WriteHeader(http.StatusNoContent)
	}
	return rs, err
}

func resume(r *http.Request, api *httpapi.Server, c httpapi.Caller, agent, tag, what string) (*Resumed, error) {
	ctx := r.Context()
	t, err := Tagged(ctx, api, c, agent, tag)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, weft.Errorf(weft.ENotFound, "no %s of agent %q", what, agent)
	}
	running := t.Status == weft.ThreadRunning
	if t.Status == weft.ThreadAwaitingApproval {
		// Every call decided (or answered by its client): the run goes on, though it has not
		// written its status yet.
		waiting, err := api.Engine().PendingApprovals(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		running = len(waiting) == 0
	}
	if !running {
		// A run that took no message (a continue, a retry on a fork) leaves the status as it
		// was: its run_started without a run_stopped says it goes on.
		if running, err = openRun(ctx, api, t.ID); err != nil || !running {
			return nil, err
		}
	}
	msgs, err := api.Engine().Store().Messages(ctx, t.ID, weft.MessageQuery{Limit: 20, Desc: true})
	if err != nil {
		return nil, err
	}
	rs := &Resumed{Thread: t}
	for i := range msgs {
		if msgs[i].Role == weft.RoleUser {
			rs.Input = &msgs[i]
			break
		}
	}
	if rs.Input == nil {
		return nil, nil
	}
	if rs.Now, err = api.LastEventSeq(ctx, t.ID); err != nil {
		return nil, err
	}
	if rs.Feed, err = Open(r, api, t.ID, 0); err != nil {
		return nil, err
	}
	return rs, nil
}

// openRun reports whether the thread's newest recorded run_started (among its last events) has
// no run_stopped after it.
func openRun(ctx context.Context, api *httpapi.Server, threadID string) (bool, error) {
	last, err := api.LastEventSeq(ctx, threadID)
	if err != nil {
		return false, err
	}
	evs, err := api.Engine().Store().Events(ctx, threadID, max(0, last-500), 0)
	if err != nil {
		return false, err
	}
	open := false
	for _, ev := range evs {
		switch ev.Type {
		case "run_started":
			open = true
		case "run_stopped":
			open = false
		}
	}
	return open, nil
}

// WriteTimeout bounds one write of a stream: a client that stops reading is disconnected.
const WriteTimeout = 10 * time.Second

// SSE writes a response as Server-Sent Events.
type SSE struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// NewSSE starts a 200 event stream, with the headers given (name, value, …) besides the stream's
// own.
func NewSSE(w http.ResponseWriter, header ...string) *SSE {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	w.WriteHeader(http.StatusOK)
	s := &SSE{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

// Raw writes text and flushes it.
func (s *SSE) Raw(text string) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(WriteTimeout))
	if _, err := io.WriteString(s.w, text); err != nil {
		return err
	}
	return s.rc.Flush()
}

// Data writes v as a data-only event.
func (s *SSE) Data(v any) error { return s.Raw("data: " + Encode(v) + "\n\n") }

// DataAll writes each value as a data-only event, in one write (none: nothing).
func DataAll[T any](s *SSE, vs []T) error {
	if len(vs) == 0 {
		return nil
	}
	var b []byte
	for _, v := range vs {
		b = append(b, "data: "...)
		b = append(b, Encode(v)...)
		b = append(b, "\n\n"...)
	}
	return s.Raw(string(b))
}

// Event writes v as an event of the type typ.
func (s *SSE) Event(typ string, v any) error {
	return s.Raw("event: " + typ + "\ndata: " + Encode(v) + "\n\n")
}

// Ping writes a comment, which clients ignore, so that idle connections stay open.
func (s *SSE) Ping() error { return s.Raw(": ping\n\n") }

// Encode is v's JSON.
func Encode(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// StreamData streams a turn as data-only events: first, then the events read makes of each part,
// until the turn ends (nil), the request or the server's streams end, or a write fails; the
// stream is pinged every interval.
func StreamData[T any](s *SSE, f *Feed, rd *Reader, first []T, read func(Part) []T, interval time.Duration) error {
	if err := DataAll(s, first); err != nil {
		return err
	}
	return f.Stream(rd, func(parts []Part) error {
		for _, p := range parts {
			if err := DataAll(s, read(p)); err != nil {
				return err
			}
		}
		return nil
	}, s.Ping, interval)
}
