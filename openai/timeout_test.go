package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/openai"
)

// TestEngineTimeoutsOverAdapter drives the engine through the real chat-completions adapter against
// a streaming server that misbehaves on the first attempt: no first chunk in time, or a stall after
// the first chunk. The engine classifies each as a timeout, logs the attempt, skips in-place
// retries and the fallback model succeeds. A slow stream of tool-call argument deltas whose gaps
// stay under the stall limit is not cut off: the adapter reports them as progress.
func TestEngineTimeoutsOverAdapter(t *testing.T) {
	sse := func(w http.ResponseWriter, data string) {
		fmt.Fprintf(w, "data: %s\n\n", data)
		w.(http.Flusher).Flush()
	}
	text := func(s string) string {
		return `{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"` + s + `"}}]}`
	}
	const done = `{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`
	answer := func(w http.ResponseWriter) {
		sse(w, text("Hello"))
		sse(w, done)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
	hold := func(r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	cases := []struct {
		name     string
		first    func(w http.ResponseWriter, r *http.Request)
		attempts int
		wantErr  string
	}{
		{"no_first_chunk", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			hold(r)
		}, 2, "no output within 600ms"},
		{"stall_after_first_chunk", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			sse(w, text("Hel"))
			hold(r)
		}, 2, "stream stalled: no output for 300ms"},
		{"slow_tool_arguments_are_progress", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			sse(w, `{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"echo","arguments":""}}]}}]}`)
			for _, part := range []string{`{\"q\"`, `:\"a`, `b\"}`, ``, ``} {
				// Each gap well under the 300 ms stall (a loaded machine delays the writer by tens of
				// milliseconds), all together past the 600 ms first chunk.
				time.Sleep(150 * time.Millisecond)
				sse(w, `{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"`+part+`"}}]}}]}`)
			}
			sse(w, `{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
			fmt.Fprint(w, "data: [DONE]\n\n")
		}, 1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					tc.first(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				answer(w)
			}))
			defer srv.Close()
			reg := weft.NewRegistry()
			reg.AddModel(&weft.Model{Name: "m", Provider: "openai", Model: "gpt-test",
				Timeouts: weft.Timeouts{FirstChunk: weft.Duration(600 * time.Millisecond), Stall: weft.Duration(300 * time.Millisecond)},
				Retry:    weft.RetryPolicy{Attempts: 2, BaseDelay: weft.Duration(time.Millisecond)}, Fallbacks: []string{"backup"}})
			reg.AddModel(&weft.Model{Name: "backup", Provider: "openai", Model: "gpt-backup"})
			reg.AddTool(&weft.Tool{Name: "echo", Description: "Echo.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
				return weft.Success(string(args)), nil
			})})
			reg.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "P.", Model: "m", Prompt: weft.Text("Be brief."), Tools: []weft.ToolEntry{{Name: "echo"}}})
			reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
			st, _ := memstore.New(memstore.Options{})
			prov := openai.New(openai.Options{BaseURL: srv.URL + "/v1"})
			eng, err := engine.New(engine.Options{Registry: reg, Store: st,
				Providers: func(*weft.Model) (weft.Provider, error) { return prov, nil }})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "a", Env: map[string]string{"OPENAI_API_KEY": "sk-test-secret"}})
			if err != nil {
				t.Fatal(err)
			}
			eng.Send(ctx, th.ID, weft.NewMessage{Content: "hi"})
			res, err := eng.Run(ctx, th.ID)
			if err != nil || res.Last().Reason != weft.StopOnResponse {
				t.Fatalf("%v %+v", err, res)
			}
			logs, _ := st.Logs(ctx, th.ID, weft.LogQuery{Limit: 100})
			var failed []string
			for _, l := range logs {
				if l.Error != "" {
					failed = append(failed, l.Error)
				}
			}
			if tc.wantErr == "" {
				if len(failed) != 0 {
					t.Errorf("attempts failed: %q", failed)
				}
				msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleTool}})
				if len(msgs) != 1 || msgs[0].Content != `{"q":"ab"}` {
					t.Errorf("tool result: %+v", msgs)
				}
				return
			}
			if len(failed) != 1 || !strings.Contains(failed[0], "timeout") || !strings.Contains(failed[0], tc.wantErr) || int(calls.Load()) != tc.attempts {
				t.Errorf("failed attempts %q, server calls %d", failed, calls.Load())
			}
		})
	}
}
