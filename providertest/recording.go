// Package providertest holds provider-neutral test helpers for Weft model provider adapters: a
// parser for recorded HTTP traffic (httprr v1), a replay server that serves such a recording, and
// a conformance suite (Run) that drives an adapter against a fake server speaking its wire.
package providertest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Recording is a recorded sequence of HTTP exchanges.
type Recording struct {
	// Exchanges are the request/response pairs in recorded order.
	Exchanges []Exchange
}

// Exchange is one recorded HTTP request and its response. The bodies are read into RequestBody
// and ResponseBody; Request.Body and Response.Body are drained and must not be used.
type Exchange struct {
	// Request is the recorded request (headers, method, URL).
	Request *http.Request
	// RequestBody is the recorded request body.
	RequestBody []byte
	// Response is the recorded response (status and headers).
	Response *http.Response
	// ResponseBody is the recorded response body, decoded from any chunked transfer encoding.
	ResponseBody []byte
}

// LoadRecording parses an httprr v1 trace: a header line "httprr trace v1", then per exchange a
// line "REQLEN RESPLEN" followed by REQLEN bytes of raw HTTP/1.1 request and RESPLEN bytes of raw
// HTTP response.
func LoadRecording(path string) (*Recording, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseRecording(data)
}

// ParseRecording parses the bytes of an httprr v1 trace (see LoadRecording).
func ParseRecording(data []byte) (*Recording, error) {
	const header = "httprr trace v1\n"
	if !bytes.HasPrefix(data, []byte(header)) {
		return nil, fmt.Errorf("httprr: missing %q header", strings.TrimSpace(header))
	}
	rest := data[len(header):]
	rec := &Recording{}
	for len(rest) > 0 {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("httprr: exchange %d: missing length line", len(rec.Exchanges)+1)
		}
		fields := strings.Fields(string(rest[:nl]))
		rest = rest[nl+1:]
		if len(fields) != 2 {
			return nil, fmt.Errorf("httprr: exchange %d: bad length line %q", len(rec.Exchanges)+1, fields)
		}
		reqLen, err1 := strconv.Atoi(fields[0])
		respLen, err2 := strconv.Atoi(fields[1])
		if err1 != nil || err2 != nil || reqLen < 0 || respLen < 0 || reqLen+respLen > len(rest) {
			return nil, fmt.Errorf("httprr: exchange %d: bad lengths %v", len(rec.Exchanges)+1, fields)
		}
		var ex Exchange
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(rest[:reqLen])))
		if err != nil {
			return nil, fmt.Errorf("httprr: exchange %d: request: %w", len(rec.Exchanges)+1, err)
		}
		if ex.RequestBody, err = io.ReadAll(req.Body); err != nil {
			return nil, fmt.Errorf("httprr: exchange %d: request body: %w", len(rec.Exchanges)+1, err)
		}
		req.Body.Close()
		ex.Request = req
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(rest[reqLen:reqLen+respLen])), req)
		if err != nil {
			return nil, fmt.Errorf("httprr: exchange %d: response: %w", len(rec.Exchanges)+1, err)
		}
		if ex.ResponseBody, err = io.ReadAll(resp.Body); err != nil {
			return nil, fmt.Errorf("httprr: exchange %d: response body: %w", len(rec.Exchanges)+1, err)
		}
		resp.Body.Close()
		ex.Response = resp
		rec.Exchanges = append(rec.Exchanges, ex)
		rest = rest[reqLen+respLen:]
	}
	return rec, nil
}

// Replay is a loopback server serving a Recording's responses in order; it embeds the
// *httptest.Server (use URL) and remembers what it received.
type Replay struct {
	*httptest.Server

	mu       sync.Mutex
	received []Received
}

// Received is one request the replay server got.
type Received struct {
	// Method and Path are the request line's method and URL path.
	Method, Path string
	// Header is the request header.
	Header http.Header
	// Body is the request body.
	Body []byte
}

// ReplayServer starts a loopback server that answers the n-th request with the n-th recorded
// response (status, headers, body byte for byte) whatever the request is, and records every
// request for later comparison. A request beyond the recording fails the test and gets a 500.
// The server is closed when the test ends.
func ReplayServer(t testing.TB, rec *Recording) *Replay {
	t.Helper()
	r := &Replay{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.received)
		r.received = append(r.received, Received{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: body})
		r.mu.Unlock()
		if n >= len(rec.Exchanges) {
			t.Errorf("replay: unexpected request %d (recording has %d exchanges)", n+1, len(rec.Exchanges))
			http.Error(w, "replay: no more recorded exchanges", http.StatusInternalServerError)
			return
		}
		ex := rec.Exchanges[n]
		for k, vs := range ex.Response.Header {
			switch http.CanonicalHeaderKey(k) {
			case "Content-Length", "Transfer-Encoding", "Connection":
				continue
			}
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(ex.ResponseBody)))
		w.WriteHeader(ex.Response.StatusCode)
		_, _ = w.Write(ex.ResponseBody)
	}))
	t.Cleanup(r.Server.Close)
	return r
}

// Received returns the bodies of the requests received so far, in order.
func (r *Replay) Received() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]byte, len(r.received))
	for i, x := range r.received {
		out[i] = x.Body
	}
	return out
}

// Requests returns the requests received so far, in order.
func (r *Replay) Requests() []Received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Received(nil), r.received...)
}
