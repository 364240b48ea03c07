package turn_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft/aguiapi"
	"github.com/weft-agents/weft/aisdkapi"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/turn/turntest"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/openaiapi"
)

// BenchmarkFirstDelta measures, side by side on one in-process server, the time from a request
// that posts a message to an existing thread to the first text delta its stream delivers: /api
// (POST …/messages with the thread's SSE already open) and each protocol adapter (one request
// that posts and streams). Each iteration runs every path once, in turn, so that they share the
// machine's load; the median of each is reported (ms-NAME). Each turn is one scripted model call
// that streams its text at once, so the figures are Weft's own.
//
//	go test -run '^$' -bench FirstDelta -benchtime 300x ./internal/turn/
func BenchmarkFirstDelta(b *testing.B) {
	url, key := latencyServer(b)
	post := func(path, body string, header ...string) *http.Response {
		req, _ := http.NewRequest("POST", url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		return resp
	}
	// first reads a stream until a line holding delta (the time is taken then), then to a line
	// holding end.
	first := func(body io.Reader, start time.Time, delta, end string) time.Duration {
		var lines []string
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var took time.Duration
		for sc.Scan() {
			line := sc.Text()
			lines = append(lines, line)
			if took == 0 && strings.Contains(line, delta) {
				took = time.Since(start)
			}
			if took > 0 && strings.Contains(line, end) {
				return took
			}
		}
		b.Fatalf("the stream ended without %q (a delta after %v) %v:\n%s", delta, took, sc.Err(), strings.Join(lines, "\n"))
		return 0
	}
	newThread := func() string {
		resp := post("/api/threads", `{"agent":"helper"}`)
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		s := string(out)
		i := strings.Index(s, `"id":"`) + 6
		return s[i : i+strings.Index(s[i:], `"`)]
	}
	apiThread, chatThread, respThread := newThread(), newThread(), newThread()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/threads/"+apiThread+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sse := bufio.NewReader(resp.Body)
	// The stream has read the thread's log (its first event) before anything is posted: deltas
	// that arrive while a stream first reads the log come after what it read.
	io.Copy(io.Discard, readerUntil(sse, "event: thread_created"))

	paths := []struct {
		name string
		run  func(i int) time.Duration
	}{
		{"api-sse", func(int) time.Duration {
			start := time.Now()
			r := post("/api/threads/"+apiThread+"/messages", `{"content":"hello"}`)
			r.Body.Close()
			return first(readerUntil(sse, "event: run_stopped"), start, "event: message_chunk", "event: run_stopped")
		}},
		{"openai-chat", func(int) time.Duration {
			start := time.Now()
			r := post("/v1/chat/completions", `{"model":"helper","stream":true,"messages":[{"role":"user","content":"hello"}]}`, openaiapi.ThreadHeader, chatThread)
			defer r.Body.Close()
			return first(r.Body, start, `"delta":{"content":"H`, "[DONE]")
		}},
		{"openai-responses", func(int) time.Duration {
			start := time.Now()
			r := post("/v1/responses", `{"model":"helper","stream":true,"input":"hello","conversation":"`+respThread+`"}`)
			defer r.Body.Close()
			return first(r.Body, start, "event: response.output_text.delta", "event: response.completed")
		}},
		{"ai-sdk", func(i int) time.Duration {
			start := time.Now()
			r := post("/api/agents/helper/chat", `{"id":"bench","trigger":"submit-message","messages":[{"id":"u`+strconv.Itoa(i)+`","role":"user","parts":[{"type":"text","text":"hello"}]}]}`)
			defer r.Body.Close()
			return first(r.Body, start, `"type":"text-delta"`, "[DONE]")
		}},
		{"ag-ui", func(i int) time.Duration {
			start := time.Now()
			r := post("/api/agents/helper/ag-ui", `{"threadId":"bench","runId":"r`+strconv.Itoa(i)+`","messages":[{"id":"u","role":"user","content":"hello"}]}`)
			defer r.Body.Close()
			return first(r.Body, start, `"type":"TEXT_MESSAGE_CONTENT"`, `"type":"RUN_FINISHED"`)
		}},
	}
	took := make([][]time.Duration, len(paths))
	b.ResetTimer()
	for i := range b.N {
		for j, p := range paths {
			took[j] = append(took[j], p.run(i))
		}
	}
	b.StopTimer()
	for j, p := range paths {
		slices.Sort(took[j])
		b.ReportMetric(float64(took[j][len(took[j])/2].Microseconds())/1000, "ms-"+p.name)
	}
}

// readerUntil gives the lines of r up to and including the first one holding end, then EOF.
func readerUntil(r *bufio.Reader, end string) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		for {
			line, err := r.ReadString('\n')
			if _, werr := pw.Write([]byte(line)); werr != nil || err != nil {
				pw.CloseWithError(err)
				return
			}
			if strings.Contains(line, end) {
				pw.Close()
				return
			}
		}
	}()
	return pr
}

// latencyServer is an API server with every adapter, over a memstore, whose model answers every
// call with a streamed text; it returns its URL and a user's key.
func latencyServer(b *testing.B) (string, string) {
	b.Helper()
	st, _ := memstore.New(memstore.Options{})
	keys := turntest.Users(b, st, "bench")
	s := turntest.Start(b, st, "version: 1\noptions: {chunk_size: 4, on_exhausted: repeat_last}\nresponses:\n  - text: Hello there, this is the answer.\n",
		keys, func(api *httpapi.Server) {
			openaiapi.Register(api)
			aisdkapi.Register(api)
			aguiapi.Register(api)
		})
	return s.URL, keys["bench"]
}
