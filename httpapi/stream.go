package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// streamFilter is what a stream's query asks to see.
type streamFilter struct {
	includeSilent bool
	depth         int
	reasoning     bool
}

func filterOf(r *http.Request) (streamFilter, error) {
	q := &query{r: r}
	f := streamFilter{includeSilent: q.bool("include_silent"), depth: q.int("depth", 0, 0, 1<<20), reasoning: q.bool("reasoning")}
	return f, q.err
}

// keep tells whether the filter passes an event: reasoning chunks only with reasoning, silent
// messages only with include_silent, and nothing deeper than depth.
func (f streamFilter) keep(ev engine.Event) bool {
	if ev.Type == "reasoning_chunk" && !f.reasoning {
		return false
	}
	if d, ok := intOf(ev.Data["depth"]); ok && d > f.depth {
		return false
	}
	if ev.Type == "message" {
		silent, depth := messageVisibility(ev.Data["message"])
		if (silent && !f.includeSilent) || depth > f.depth {
			return false
		}
	}
	return true
}

// messageVisibility reads a message event's silent flag and depth: a live event carries the
// message itself, a replayed one its decoded JSON.
func messageVisibility(v any) (silent bool, depth int) {
	switch m := v.(type) {
	case weft.Message:
		return m.Silent, m.Depth
	case *weft.Message:
		return m.Silent, m.Depth
	case map[string]any:
		silent, _ = m["silent"].(bool)
		depth, _ = intOf(m["depth"])
		return silent, depth
	}
	return false, 0
}

func intOf(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

// frame is an event as streams send it: its payload with type, thread and cursor added.
func frame(ev engine.Event) []byte { return appendPayload(nil, ev) }

// appendPayload appends frame(ev) to b.
func appendPayload(b []byte, ev engine.Event) []byte {
	if raw := ev.Encoded; len(raw) >= 2 && raw[0] == '{' && !overlaps(ev.Data) {
		// The payload as the event log holds it, behind the event's own fields.
		b = slices.Grow(b, len(raw)+len(ev.Type)+len(ev.ThreadID)+48)
		b = append(b, `{"type":`...)
		b = appendJSONString(b, ev.Type)
		b = append(b, `,"thread_id":`...)
		b = appendJSONString(b, ev.ThreadID)
		if seq := seqOf(ev); seq > 0 {
			b = append(b, `,"seq":`...)
			b = strconv.AppendInt(b, seq, 10)
		}
		if rest := bytes.TrimSpace(raw[1:]); len(rest) > 0 && rest[0] != '}' {
			b = append(b, ',')
		}
		return append(b, raw[1:]...)
	}
	m := make(map[string]any, len(ev.Data)+3)
	for k, v := range ev.Data {
		m[k] = v
	}
	m["type"] = ev.Type
	m["thread_id"] = ev.ThreadID
	if seq := seqOf(ev); seq > 0 {
		m["seq"] = seq
	}
	enc, _ := json.Marshal(m)
	return append(b, enc...)
}

// appendJSONString appends s as a JSON string: as it is between quotes when it holds only
// printable ASCII that needs no escape (event types and ids), else through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// overlaps tells whether a payload has a key of the frame's own (its value would be replaced).
func overlaps(data map[string]any) bool {
	for _, k := range [...]string{"type", "thread_id", "seq"} {
		if _, ok := data[k]; ok {
			return true
		}
	}
	return false
}

// maxBatch bounds the bytes of the frames written with one flush.
const maxBatch = 64 << 10

// pumpBuffer is how many events a stream's source may run ahead of its writer: a step's burst is
// then written with one flush.
const pumpBuffer = 64

// pump runs a subscription in its own goroutine, handing events over ch until ctx ends; the
// goroutine ends with ctx (the subscription honours it), and err reports why the source ended.
func pump(ctx context.Context, seq func(yield func(engine.Event, error) bool)) (<-chan engine.Event, <-chan error) {
	ch := make(chan engine.Event, pumpBuffer)
	errc := make(chan error, 1)
	go func() {
		defer close(ch)
		var end error
		seq(func(ev engine.Event, err error) bool {
			if err != nil {
				end = err
				return false
			}
			select {
			case ch <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		})
		errc <- end
	}()
	return ch, errc
}

// cursorOf reads the resume cursor: Last-Event-ID for SSE, else ?after=.
func cursorOf(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	name := "Last-Event-ID"
	if v == "" {
		v, name = r.URL.Query().Get("after"), "after"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest(name + " must be a non-negative event id")
	}
	return n, nil
}

// threadSSE streams a thread's events as Server-Sent Events.
func (s *Server) threadSSE(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := filterOf(r)
	if err != nil {
		return err
	}
	after, err := cursorOf(r)
	if err != nil {
		return err
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	events, errc := pump(ctx, s.events.Subscribe(ctx, t.ID, after))
	return s.serveSSE(ctx, w, r, events, errc, f.keep)
}

// globalSSE streams thread_created, thread_updated and thread_deleted of the threads the caller
// may see; a run starting or stopping updates its thread.
func (s *Server) globalSSE(w http.ResponseWriter, r *http.Request, p *principal) error {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	kinds := map[string]bool{"thread_created": true, "thread_updated": true, "thread_deleted": true,
		"run_started": true, "run_stopped": true}
	watch := s.opt.Hub.Watch(ctx, func(ev engine.Event) bool { return kinds[ev.Type] })
	renamed := func(yield func(engine.Event, error) bool) {
		for ev, err := range watch {
			if ev.Type == "run_started" || ev.Type == "run_stopped" {
				ev = engine.Event{Type: "thread_updated", ThreadID: ev.ThreadID, RootID: ev.RootID}
			}
			if !yield(ev, err) {
				return
			}
		}
	}
	events, errc := pump(ctx, renamed)
	visible := func(ev engine.Event) bool {
		if p.admin {
			return true
		}
		if ev.Type == "thread_deleted" {
			return ev.Data["user_id"] == p.userID // the thread is gone: its event names its owner
		}
		_, err := s.visibleThread(ctx, p, ev.ThreadID)
		return err == nil
	}
	return s.serveSSE(ctx, w, r, events, errc, visible)
}

// serveSSE writes events as SSE frames with a ping comment every PingInterval, until the client
// goes, the source ends, or a write fails.
func (s *Server) serveSSE(ctx context.Context, w http.ResponseWriter, r *http.Request, events <-chan engine.Event, errc <-chan error, keep func(engine.Event) bool) error {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return nil
	}
	ping := time.NewTicker(s.opt.PingInterval)
	defer ping.Stop()
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.opt.WriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	var b []byte
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ping.C:
			if !write([]byte(": ping\n\n")) {
				return nil
			}
		case ev, ok := <-events:
			// The events already waiting go out with this one, in one write and one flush.
			b = b[:0]
			for more := true; more; {
				if !ok {
					if len(b) > 0 {
						write(b)
					}
					if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
						s.log.Info("stream ended", "path", r.URL.Path, "error", err)
					}
					return nil
				}
				if keep(ev) {
					b = appendFrame(b, ev)
				}
				if len(b) >= maxBatch {
					break
				}
				select {
				case ev, ok = <-events:
				default:
					more = false
				}
			}
			if len(b) > 0 && !write(b) {
				return nil
			}
		}
	}
}

// appendFrame appends an event as an SSE frame: its type, its cursor and its payload.
func appendFrame(b []byte, ev engine.Event) []byte {
	b = append(b, "event: "...)
	b = append(b, ev.Type...)
	if seq := seqOf(ev); seq > 0 {
		b = append(b, "\nid: "...)
		b = strconv.AppendInt(b, seq, 10)
	}
	b = append(b, "\ndata: "...)
	b = appendPayload(b, ev)
	return append(b, "\n\n"...)
}

// threadWebSocket streams a thread's events over a WebSocket; the client may send
// {"type":"ping"} and gets {"type":"pong"}.
func (s *Server) threadWebSocket(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := filterOf(r)
	if err != nil {
		return err
	}
	after, err := cursorOf(r)
	if err != nil {
		return err
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return nil // Accept answered the client
	}
	defer c.CloseNow()
	c.SetReadLimit(4096)
	ctx, cancel := s.streamContext(r)
	defer cancel()
	pongs := make(chan struct{}, 1)
	// The reader answers pings and notices a client that goes away. It reads with a context of its
	// own, so that a stream the server ends (shutdown, reload) can still close the connection
	// with a status that tells the client to reconnect.
	readCtx, stopReading := context.WithCancel(context.Background())
	defer stopReading()
	clientGone := make(chan struct{})
	go func() {
		defer close(clientGone)
		defer cancel()
		for {
			_, b, err := c.Read(readCtx)
			if err != nil {
				return
			}
			var m struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(b, &m) == nil && m.Type == "ping" {
				select {
				case pongs <- struct{}{}:
				default:
				}
			}
		}
	}()
	events, errc := pump(ctx, s.events.Subscribe(ctx, t.ID, after))
	send := func(b []byte) bool {
		wctx, wcancel := context.WithTimeout(ctx, s.opt.WriteTimeout)
		defer wcancel()
		return c.Write(wctx, websocket.MessageText, b) == nil
	}
	for {
		select {
		case <-ctx.Done():
			select {
			case <-clientGone:
			default:
				// The server ends the stream: the client reconnects with its cursor.
				c.Close(websocket.StatusServiceRestart, "the stream ended; reconnect with ?after= the last seq")
			}
			return nil
		case <-pongs:
			if !send([]byte(`{"type":"pong"}`)) {
				return nil
			}
		case ev, ok := <-events:
			if !ok {
				if err := <-errc; err != nil {
					c.Close(websocket.StatusTryAgainLater, "the stream fell behind; reconnect with ?after=")
				} else {
					c.Close(websocket.StatusNormalClosure, "")
				}
				return nil
			}
			if f.keep(ev) && !send(frame(ev)) {
				return nil
			}
		}
	}
}
