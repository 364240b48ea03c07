package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/internal/jsonstr"
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
	switch d := ev.Data.(type) {
	case engine.MessageData:
		return (!d.Message.Silent || f.includeSilent) && d.Message.Depth <= f.depth
	case engine.Chunk:
		return d.Depth <= f.depth
	case engine.StepStarted:
		return d.Depth <= f.depth
	case engine.StepCompleted:
		return d.Depth <= f.depth
	case engine.ToolStarted:
		return d.Depth <= f.depth
	case engine.ToolCompleted:
		return d.Depth <= f.depth
	case engine.Fields:
		if n, ok := intOf(d["depth"]); ok && n > f.depth {
			return false
		}
	}
	return true
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
	raw, overlap := ev.Encoded, overlaps(ev.Data)
	if len(raw) == 0 && ev.Data != nil && !overlap {
		raw, _ = engine.AppendPayloadJSON(nil, ev.Data)
	}
	if len(raw) >= 2 && raw[0] == '{' && !overlap {
		// The payload as the event log holds it (or as it encodes), behind the event's own fields.
		b = slices.Grow(b, len(raw)+len(ev.Type)+len(ev.ThreadID)+48)
		b = append(b, `{"type":`...)
		b = jsonstr.AppendHTMLSafe(b, ev.Type)
		b = append(b, `,"thread_id":`...)
		b = jsonstr.AppendHTMLSafe(b, ev.ThreadID)
		if seq := seqOf(ev); seq > 0 {
			b = append(b, `,"seq":`...)
			b = strconv.AppendInt(b, seq, 10)
		}
		if rest := bytes.TrimSpace(raw[1:]); len(rest) > 0 && rest[0] != '}' {
			b = append(b, ',')
		}
		return append(b, raw[1:]...)
	}
	m := fieldsOf(ev)
	m["type"] = ev.Type
	m["thread_id"] = ev.ThreadID
	if seq := seqOf(ev); seq > 0 {
		m["seq"] = seq
	}
	enc, _ := json.Marshal(m)
	return append(b, enc...)
}

// fieldsOf returns a copy of an event's payload as a map of its JSON fields.
func fieldsOf(ev engine.Event) map[string]any {
	if f, ok := ev.Data.(engine.Fields); ok {
		m := make(map[string]any, len(f)+3)
		for k, v := range f {
			m[k] = v
		}
		return m
	}
	m := map[string]any{}
	if ev.Data != nil {
		if b, err := json.Marshal(ev.Data); err == nil {
			_ = json.Unmarshal(b, &m)
		}
	}
	return m
}

// overlaps tells whether a payload has a key of the frame's own (its value would be replaced).
func overlaps(p engine.Payload) bool {
	if _, ok := p.(engine.RunStopped); ok {
		return true // its seq
	}
	data, _ := p.(engine.Fields)
	for _, k := range [...]string{"type", "thread_id", "seq"} {
		if _, ok := data[k]; ok {
			return true
		}
	}
	return false
}

// maxBatch bounds the bytes of the frames written with one flush.
const maxBatch = 64 << 10

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
	ctx, cancel := s.streamContext(r, p)
	defer cancel()
	feed, err := s.events.Follow(ctx, t.ID, after)
	if err != nil {
		return err
	}
	defer feed.Close()
	return s.serveSSE(ctx, w, r, feed, f.keep)
}

// globalSSE streams thread_created, thread_updated and thread_deleted of the threads the caller
// may see; a run starting or stopping updates its thread.
func (s *Server) globalSSE(w http.ResponseWriter, r *http.Request, p *principal) error {
	ctx, cancel := s.keyBound(r.Context(), p)
	defer cancel()
	feed := s.engine().Subscribers().Watch("thread_created", "thread_updated", "thread_deleted", "run_started", "run_stopped")
	defer feed.Close()
	visible := func(ev engine.Event) bool {
		if p.admin {
			return true
		}
		if ev.Type == "thread_deleted" {
			d, _ := ev.Data.(engine.Fields)
			return d["user_id"] == p.userID // the thread is gone: its event names its owner
		}
		_, err := s.visibleThread(ctx, p, ev.ThreadID)
		return err == nil
	}
	return s.serveSSE(ctx, w, r, renamed{feed}, visible)
}

// renamed gives a run starting or stopping as an update of its thread.
type renamed struct{ *engine.Watch }

func (f renamed) Next(ctx context.Context, dst []engine.Event) ([]engine.Event, error) {
	n := len(dst)
	dst, err := f.Watch.Next(ctx, dst)
	for i := n; i < len(dst); i++ {
		if ev := dst[i]; ev.Type == "run_started" || ev.Type == "run_stopped" {
			dst[i] = engine.Event{Type: "thread_updated", ThreadID: ev.ThreadID, RootID: ev.RootID}
		}
	}
	return dst, err
}

// serveSSE writes events as SSE frames with a ping comment every PingInterval, until the client
// goes, the feed fails, or a write fails. What a transaction published goes out in one write and
// one flush.
func (s *Server) serveSSE(ctx context.Context, w http.ResponseWriter, r *http.Request, feed Feed, keep func(engine.Event) bool) error {
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
	var evs []engine.Event
	var b []byte
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ping.C:
			if !write([]byte(": ping\n\n")) {
				return nil
			}
		case <-feed.Ready():
			var err error
			evs, err = feed.Next(ctx, evs[:0])
			b = b[:0]
			for _, ev := range evs {
				if !keep(ev) {
					continue
				}
				b = appendFrame(b, ev)
				if len(b) >= maxBatch {
					if !write(b) {
						return nil
					}
					b = b[:0]
				}
			}
			clear(evs)
			if len(b) > 0 && !write(b) {
				return nil
			}
			if err != nil {
				if ctx.Err() == nil {
					s.log.Info("stream ended", "path", r.URL.Path, "error", err)
				}
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
	ctx, cancel := s.streamContext(r, p)
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
	feed, err := s.events.Follow(ctx, t.ID, after)
	if err != nil {
		c.Close(websocket.StatusInternalError, "the thread's events could not be read")
		return nil
	}
	defer feed.Close()
	send := func(b []byte) bool {
		wctx, wcancel := context.WithTimeout(ctx, s.opt.WriteTimeout)
		defer wcancel()
		return c.Write(wctx, websocket.MessageText, b) == nil
	}
	var evs []engine.Event
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
		case <-feed.Ready():
			var err error
			evs, err = feed.Next(ctx, evs[:0])
			for _, ev := range evs {
				if f.keep(ev) && !send(frame(ev)) {
					return nil
				}
			}
			clear(evs)
			if err != nil {
				c.Close(websocket.StatusTryAgainLater, "the stream's events could not be read; reconnect with ?after=")
				return nil
			}
		}
	}
}
