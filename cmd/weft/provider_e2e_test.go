package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestRunAgainstOpenAICompatibleServer drives the real binary against a fake OpenAI-compatible
// server on loopback: a model defined in files points baseUrl at it; the run streams a tool call,
// runs the tool and streams the answer; usage and cost come from the server.
func TestRunAgainstOpenAICompatibleServer(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(raw, &body)
		mu.Lock()
		bodies = append(bodies, body)
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		msgs, _ := body["messages"].([]any)
		last, _ := msgs[len(msgs)-1].(map[string]any)
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(v string) { fmt.Fprintf(w, "data: %s\n\n", v) }
		if last["role"] == "tool" {
			for _, part := range []string{"The word ", "count is ", strings.TrimSpace(fmt.Sprint(last["content"])), "."} {
				b, _ := json.Marshal(part)
				send(`{"id":"c2","object":"chat.completion.chunk","model":"local-llm","choices":[{"index":0,"delta":{"content":` + string(b) + `}}]}`)
			}
			send(`{"id":"c2","object":"chat.completion.chunk","model":"local-llm","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
			send(`{"id":"c2","object":"chat.completion.chunk","model":"local-llm","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":7,"total_tokens":57}}`)
		} else {
			send(`{"id":"c1","object":"chat.completion.chunk","model":"local-llm","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_wc","type":"function","function":{"name":"word_count","arguments":""}}]}}]}`)
			send(`{"id":"c1","object":"chat.completion.chunk","model":"local-llm","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"text\": \"a b"}}]}}]}`)
			send(`{"id":"c1","object":"chat.completion.chunk","model":"local-llm","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" c\"}"}}]}}]}`)
			send(`{"id":"c1","object":"chat.completion.chunk","model":"local-llm","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
			send(`{"id":"c1","object":"chat.completion.chunk","model":"local-llm","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52}}`)
		}
		send("[DONE]")
	}))
	defer srv.Close()

	dir := t.TempDir()
	files := map[string]string{
		"models/local.yaml": fmt.Sprintf(`name: local
provider: lab
model: local-llm
inputPrice: 1
outputPrice: 2
providerOptions: {baseUrl: "%s/v1"}
`, srv.URL),
		"providers/lab.yaml":   "name: lab\nbase: openai-compatible\nbaseUrl: http://127.0.0.1:1/v1\napiKeyEnv: LAB_KEY\n",
		"prompts/counter.yaml": "{name: counter, toolDescription: Counts words, model: local, prompt: Count words with the tool., tools: [word_count]}\n",
		"tools/word_count.yaml": `kind: command
description: Count the words of a text.
args: {type: object, properties: {text: {type: string}}, required: [text]}
command: [sh, -c, "tr -d '{}\":' | sed 's/text//' | wc -w"]
`,
		"agents/counter.yaml": "{name: counter, sideA: {prompt: counter}}\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, "agents", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	t.Setenv("LAB_KEY", "lab-secret-key-123")
	out, errOut, code := runWeft(t, dir, "run", "counter", "How many words in 'a b c'?", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		Result struct{ Text, Reason string }
		Usage  struct {
			Calls                     int
			InputTokens, OutputTokens int      `json:"-"`
			CostTotal                 *float64 `json:"cost_total"`
		}
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Result.Text != "The word count is 3." || doc.Usage.Calls != 2 || doc.Usage.CostTotal == nil {
		t.Errorf("result %+v usage %+v", doc.Result, doc.Usage)
	}
	// cost = (40+50)·1/1e6 + (12+7)·2/1e6
	if c := *doc.Usage.CostTotal; c < 0.000127 || c > 0.000129 {
		t.Errorf("cost %v", c)
	}
	if len(doc.Messages) != 4 || doc.Messages[2].Role != "tool" || strings.TrimSpace(doc.Messages[2].Content) != "3" {
		t.Errorf("messages %+v", doc.Messages)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || bodies[0]["model"] != "local-llm" || bodies[0]["stream"] != true {
		t.Fatalf("requests %v", bodies)
	}
	if so, _ := bodies[0]["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options %v", bodies[0]["stream_options"])
	}
	if tools, _ := bodies[0]["tools"].([]any); len(tools) != 1 {
		t.Errorf("tools %v", bodies[0]["tools"])
	}
	if auth[0] != "Bearer lab-secret-key-123" {
		t.Errorf("the key from apiKeyEnv is sent: %q", auth[0])
	}
	if strings.Contains(out, "lab-secret-key-123") || strings.Contains(errOut, "lab-secret-key-123") {
		t.Error("the provider key leaked into the output")
	}
}
