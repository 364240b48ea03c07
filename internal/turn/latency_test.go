package turn_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/aguiapi"
	"github.com/weft-agents/weft/aisdkapi"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/openaiapi"
	"github.com/weft-agents/weft/project"
	"github.com/weft-agents/weft/scripted"
)

// BenchmarkFirstDelta measures, side by side on one in-process server, the time from a request
// that posts a message to an existing thread to the first text delta its stream delivers: /api
// (POST …/messages with the thread's SSE already open) and each protocol adapter (one request
// that posts and streams). The difference is what an adapter adds. Each turn is one scripted
// model call that streams its text at once (no model delay), so the figures are Weft's own.
//
//	go test -run '^$' -bench FirstDelta -benchtime 300x ./internal/turn/
func BenchmarkFirstDelta(b *testing.B) {
	srv, key := latencyServer(b)
	post := func(path, body string, header ...string) *http.Response {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
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
	// first reads a stream until a line holding delta, then to a line holding end.
	first := func(b *testing.B, body io.Reader, delta, end string) {
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		seen := false
		for sc.Scan() {
			line := sc.Text()
			if testing.Verbose() {
				b.Log(line)
			}
			if !seen && strings.Contains(line, delta) {
				seen = true
				b.StopTimer()
			}
			if seen && strings.Contains(line, end) {
				return
			}
		}
		b.Fatalf("the stream ended (seen a delta: %v) %v", seen, sc.Err())
	}
	newThread := func() string {
		resp := post("/api/threads", `{"agent":"helper"}`)
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		s := string(out)
		i := strings.Index(s, `"id":"`) + 6
		return s[i : i+strings.Index(s[i:], `"`)]
	}

	b.Run("api-sse", func(b *testing.B) {
		thread := newThread()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/threads/"+thread+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		sse := bufio.NewReader(resp.Body)
		b.ResetTimer()
		for range b.N {
			r := post("/api/threads/"+thread+"/messages", `{"content":"hello"}`)
			r.Body.Close()
			first(b, readerUntil(sse, "event: run_stopped"), "event: message_chunk", "event: run_stopped")
			b.StartTimer()
		}
	})
	b.Run("openai-chat", func(b *testing.B) {
		thread := newThread()
		for range b.N {
			r := post("/v1/chat/completions", `{"model":"helper","stream":true,"messages":[{"role":"user","content":"hello"}]}`, openaiapi.ThreadHeader, thread)
			first(b, r.Body, `"delta":{"content":"H`, "[DONE]")
			r.Body.Close()
			b.StartTimer()
		}
	})
	b.Run("openai-responses", func(b *testing.B) {
		thread := newThread()
		for range b.N {
			r := post("/v1/responses", `{"model":"helper","stream":true,"input":"hello","conversation":"`+thread+`"}`)
			first(b, r.Body, "event: response.output_text.delta", "event: response.completed")
			r.Body.Close()
			b.StartTimer()
		}
	})
	b.Run("ai-sdk", func(b *testing.B) {
		for i := range b.N {
			r := post("/api/agents/helper/chat", `{"id":"bench","trigger":"submit-message","messages":[{"id":"u`+strconv.Itoa(i)+`","role":"user","parts":[{"type":"text","text":"hello"}]}]}`)
			first(b, r.Body, `"type":"text-delta"`, "[DONE]")
			r.Body.Close()
			b.StartTimer()
		}
	})
	b.Run("ag-ui", func(b *testing.B) {
		for i := range b.N {
			r := post("/api/agents/helper/ag-ui", `{"threadId":"bench","runId":"r`+strconv.Itoa(i)+`","messages":[{"id":"u","role":"user","content":"hello"}]}`)
			first(b, r.Body, `"type":"TEXT_MESSAGE_CONTENT"`, `"type":"RUN_FINISHED"`)
			r.Body.Close()
			b.StartTimer()
		}
	})
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
// call with a streamed text.
func latencyServer(b *testing.B) (*httptest.Server, string) {
	b.Helper()
	reg, diags := project.Open("../../openaiapi/testdata/agents", project.Options{})
	if diags.HasErrors() {
		b.Fatal(diags.Err())
	}
	sc, err := scripted.Parse("bench.yaml", []byte("version: 1\noptions: {chunk_size: 4, on_exhausted: repeat_last}\nresponses:\n  - text: Hello there, this is the answer.\n"))
	if err != nil {
		b.Fatal(err)
	}
	st, _ := memstore.New(memstore.Options{})
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: scripted.New(sc), RecordEvents: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = eng.Serve(ctx, engine.ServeOptions{Workers: 4, DrainTimeout: time.Second})
	}()
	api := httpapi.New(httpapi.Options{Engine: eng, Auth: st})
	api.SetReady(true)
	openaiapi.Register(api)
	aisdkapi.Register(api)
	aguiapi.Register(api)
	srv := httptest.NewServer(api.Handler())
	b.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); cancel(); <-served })
	u := &weft.User{Name: "bench"}
	if err := st.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	key, rec := weft.NewAPIKey(u.ID)
	if err := st.CreateKey(ctx, rec); err != nil {
		b.Fatal(err)
	}
	return srv, key
}
