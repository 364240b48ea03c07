package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
)

// drainingStdio is the stdio of `weft mcp`: at the end of standard input it holds the end back
// until every request read has been answered. The SDK closes the session at EOF and drops the
// answers still being made, so `printf '<initialize>\n<initialized>\n<tools/list>\n' | weft mcp`
// answered only initialize.
type drainingStdio struct {
	ctx context.Context
	in  io.Reader
	out io.Writer

	mu                  sync.Mutex
	cond                *sync.Cond
	requested, answered int
	inLine, outLine     []byte
}

func newDrainingStdio(ctx context.Context, in io.Reader, out io.Writer) *drainingStdio {
	s := &drainingStdio{ctx: ctx, in: in, out: out}
	s.cond = sync.NewCond(&s.mu)
	context.AfterFunc(ctx, func() { // an interrupt ends the wait
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	return s
}

// reader and writer are the two ends, for the SDK's IOTransport.
func (s *drainingStdio) reader() io.ReadCloser  { return stdioEnd{s.read} }
func (s *drainingStdio) writer() io.WriteCloser { return stdioEnd{s.write} }

type stdioEnd struct{ f func([]byte) (int, error) }

func (e stdioEnd) Read(p []byte) (int, error)  { return e.f(p) }
func (e stdioEnd) Write(p []byte) (int, error) { return e.f(p) }
func (e stdioEnd) Close() error                { return nil }

func (s *drainingStdio) read(p []byte) (int, error) {
	n, err := s.in.Read(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inLine = countMessages(append(s.inLine, p[:n]...), func(m rpcFrame) {
		if len(m.ID) > 0 && m.Method != "" {
			s.requested++
		}
	})
	if err == io.EOF {
		if len(bytes.TrimSpace(s.inLine)) > 0 { // a last request without a newline
			countMessages(append(s.inLine, '\n'), func(m rpcFrame) {
				if len(m.ID) > 0 && m.Method != "" {
					s.requested++
				}
			})
			s.inLine = nil
		}
		for s.answered < s.requested && s.ctx.Err() == nil {
			s.cond.Wait()
		}
	}
	return n, err
}

func (s *drainingStdio) write(p []byte) (int, error) {
	n, err := s.out.Write(p)
	s.mu.Lock()
	s.outLine = countMessages(append(s.outLine, p[:n]...), func(m rpcFrame) {
		if len(m.ID) > 0 && m.Method == "" {
			s.answered++
		}
	})
	s.cond.Broadcast()
	s.mu.Unlock()
	return n, err
}

// rpcFrame is what drainingStdio reads of a JSON-RPC message: a request has an id and a method,
// a response an id and no method, a notification no id.
type rpcFrame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// countMessages calls f for each message of each complete line of buf (a line may hold a batch,
// a JSON array) and returns what is left after the last newline.
func countMessages(buf []byte, f func(rpcFrame)) []byte {
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return buf
		}
		line := bytes.TrimSpace(buf[:i])
		buf = buf[i+1:]
		if len(line) > 0 && line[0] == '[' {
			var batch []rpcFrame
			if json.Unmarshal(line, &batch) == nil {
				for _, m := range batch {
					f(m)
				}
			}
			continue
		}
		var m rpcFrame
		if json.Unmarshal(line, &m) == nil && !bytes.Equal(m.ID, []byte("null")) {
			f(m)
		}
	}
}
