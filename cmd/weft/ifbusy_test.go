package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/postgres"
)

// busyModel is an OpenAI-compatible model for the double-texting test: "slow" is answered only
// once its request is cancelled (the model call interrupted) — which it reports on cancelled — or
// after a minute; "charge" calls the record tool; a tool result is answered "done"; any other
// last user message "answered: TEXT".
func busyModel(t *testing.T, started, cancelled chan<- string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(raw, &body); err != nil || len(body.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		last := body.Messages[len(body.Messages)-1]
		var text string
		if json.Unmarshal(last.Content, &text) != nil {
			var parts []struct{ Text string }
			_ = json.Unmarshal(last.Content, &parts)
			for _, p := range parts {
				text += p.Text
			}
		}
		msg := map[string]any{"role": "assistant", "content": "answered: " + text}
		finish := "stop"
		switch {
		case last.Role == "tool":
			msg["content"] = "done"
		case text == "charge":
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "record", "arguments": "{}"}}}}
			finish = "tool_calls"
		case text == "slow":
			started <- text
			select {
			case <-r.Context().Done():
				cancelled <- text
				return
			case <-time.After(time.Minute):
				msg["content"] = "slow answer"
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "cmpl", "object": "chat.completion", "model": "busy-llm",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestClusterIfBusy: two weft serve nodes on one PostgreSQL database. A thread runs on node 0;
// messages with if_busy are posted to node 1. While the model answers slowly: reject is 409
// thread_busy naming node 0's run; interrupt cancels node 0's model call (the model sees the
// request end) and a new run answers the message. While a non-idempotent command tool runs on
// node 0: interrupt lets it complete (its line written once, its result stored) and a new run
// answers the message; rollback too, its reply and result deleted.
func TestClusterIfBusy(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	dir := t.TempDir()
	lines := filepath.Join(dir, "records.txt")
	started, cancelled := make(chan string, 4), make(chan string, 4)
	model := busyModel(t, started, cancelled)
	writeFiles(t, filepath.Join(dir, "agents"), map[string]string{
		"models/m.yaml": fmt.Sprintf("name: m\nprovider: openai-compatible\nmodel: busy-llm\n"+
			"providerOptions: {baseUrl: %q}\ncapabilities: {supportsStreaming: false}\n", model.URL+"/v1"),
		"prompts/p.yaml": "{name: p, toolDescription: Records, model: m, prompt: 'Answer.', tools: [record]}\n",
		"agents/a.yaml":  "{name: a, sideA: {prompt: p}}\n",
		"tools/record.yaml": fmt.Sprintf(`kind: command
description: Record one line (not idempotent), slowly.
command: [sh, -c, 'sleep 1; echo "$WEFT_TOOL_CALL_ID" >> "$LINES_FILE"; echo recorded']
env: {LINES_FILE: %q}
`, lines),
	})
	keyText := envcrypt.EncodeKey(envcrypt.NewKey())
	env := []string{"WEFT_ENCRYPTION_KEY=" + keyText, "WEFT_ADMIN_KEY=" + clusterAdminKey, "WEFT_LEASE_TTL=30s"}
	args := []string{"--dir", filepath.Join(dir, "agents"), "--db", dsn, "--log-level", "warn"}
	nodes := []*server{startServer(t, dir, env, append(args, "--node-id", "node-0")...),
		startServer(t, dir, env, append(args, "--node-id", "node-1")...)}
	key, err := envcrypt.ParseKey(keyText)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	st, err := postgres.Open(ctx, dsn, postgres.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	call := func(node int, method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, nodes[node].base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+clusterAdminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	newThread := func() string {
		t.Helper()
		code, out := call(0, "POST", "/api/threads", `{"agent":"a"}`)
		th, _ := out["thread"].(map[string]any)
		if code != 201 || th == nil {
			t.Fatalf("create thread: %d %v", code, out)
		}
		return th["id"].(string)
	}
	runStarted := func(id string) string {
		t.Helper()
		evs, err := st.Events(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Type == "run_started" {
				var d struct {
					RunID string `json:"run_id"`
				}
				_ = json.Unmarshal(ev.Data, &d)
				return d.RunID
			}
		}
		t.Fatalf("thread %s: no run_started", id)
		return ""
	}
	interrupted := func(id, runID string) {
		t.Helper()
		evs, err := st.Events(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Type == "run_interrupted" && strings.Contains(string(ev.Data), runID) {
				return
			}
		}
		t.Errorf("thread %s: no run_interrupted of %s", id, runID)
	}

	t.Run("slow_model", func(t *testing.T) {
		id := newThread()
		if code, out := call(0, "POST", "/api/threads/"+id+"/messages", `{"content":"slow"}`); code != 202 {
			t.Fatalf("post: %d %v", code, out)
		}
		waitChan(t, started, "the slow model call")
		runID := runStarted(id)
		code, out := call(1, "POST", "/api/threads/"+id+"/messages", `{"content":"refused","if_busy":"reject"}`)
		e, _ := out["error"].(map[string]any)
		if code != 409 || e["code"] != "thread_busy" || e["run_id"] != runID {
			t.Fatalf("reject on the other node: %d %v, want 409 thread_busy naming %s", code, out, runID)
		}
		if code, out := call(1, "POST", "/api/threads/"+id+"/messages", `{"content":"second","if_busy":"interrupt"}`); code != 202 {
			t.Fatalf("interrupt on the other node: %d %v", code, out)
		}
		waitChan(t, cancelled, "node 0's model call to be cancelled")
		got := waitRows(t, st, id, "assistant: answered: second")
		if want := "user: slow|user: second|assistant: answered: second"; strings.Join(got, "|") != want {
			t.Errorf("messages %q, want %s", got, want)
		}
		interrupted(id, runID)
	})

	for _, c := range []struct{ policy, want string }{
		{"interrupt", "user: charge|assistant: |tool: recorded|user: second|assistant: answered: second"},
		{"rollback", "user: charge|user: second|assistant: answered: second"},
	} {
		t.Run("slow_tool_"+c.policy, func(t *testing.T) {
			before, _ := os.ReadFile(lines)
			id := newThread()
			if code, out := call(0, "POST", "/api/threads/"+id+"/messages", `{"content":"charge"}`); code != 202 {
				t.Fatalf("post: %d %v", code, out)
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				calls, err := st.ToolCalls(ctx, id, weft.CallRunning)
				if err != nil {
					t.Fatal(err)
				}
				if len(calls) == 1 {
					break // marked running before it runs (not idempotent): it has started or is starting
				}
				if time.Now().After(deadline) {
					t.Fatal("the tool did not start")
				}
				time.Sleep(10 * time.Millisecond)
			}
			runID := runStarted(id)
			if code, out := call(1, "POST", "/api/threads/"+id+"/messages", `{"content":"second","if_busy":"`+c.policy+`"}`); code != 202 {
				t.Fatalf("%s on the other node: %d %v", c.policy, code, out)
			}
			got := waitRows(t, st, id, "assistant: answered: second")
			if strings.Join(got, "|") != c.want {
				t.Errorf("messages %q, want %s", got, c.want)
			}
			written, err := os.ReadFile(lines)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(written), "\n") - strings.Count(string(before), "\n"); n != 1 {
				t.Errorf("the non-idempotent tool wrote %d lines, want 1:\n%s", n, written)
			}
			interrupted(id, runID)
		})
	}
}

func waitChan(t *testing.T, ch <-chan string, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30 s for %s", what)
	}
}

// waitRows waits until the thread is idle with last as its newest row ("role: content") and
// returns its rows so.
func waitRows(t *testing.T, st weft.Store, id, last string) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		msgs, err := st.Messages(context.Background(), id, weft.MessageQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, m := range msgs {
			rows = append(rows, string(m.Role)+": "+m.Content)
		}
		th, err := st.Thread(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > 0 && rows[len(rows)-1] == last && th.Status != weft.ThreadRunning {
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %s did not end with %q (status %s): %q", id, last, th.Status, rows)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
