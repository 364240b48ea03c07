package openaiapi

import (
	"encoding/json"
	"net/http"
	"time"
)

// writeTimeout bounds one write of a stream: a client that stops reading is disconnected.
const writeTimeout = 10 * time.Second

// sse writes Server-Sent Events.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSE(w http.ResponseWriter) *sse { return &sse{w: w, rc: http.NewResponseController(w)} }

// start sends the stream's headers.
func (s *sse) start() error {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	return s.rc.Flush()
}

// raw writes text and flushes it.
func (s *sse) raw(text string) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := s.w.Write([]byte(text)); err != nil {
		return err
	}
	return s.rc.Flush()
}

// data writes v as a data-only event (chat completions).
func (s *sse) data(v any) error { return s.raw("data: " + encode(v) + "\n\n") }

// event writes v as an event of the type typ (responses).
func (s *sse) event(typ string, v any) error {
	return s.raw("event: " + typ + "\ndata: " + encode(v) + "\n\n")
}

// ping writes a comment, which clients ignore, so that idle connections stay open.
func (s *sse) ping() error { return s.raw(": ping\n\n") }

// encode is v's JSON without HTML escaping.
func encode(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
