package openaiapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/turn/turntest"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/openaiapi"
)

const secret = "s3cr3t-value-123"

// answer is what the scripted model says after its echo call; the API shows it redacted.
const answer = "Done. The secret was " + secret + ", all good."

// script answers n turns: an echo call, then the answer streamed in chunks of 6 bytes.
func script(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\noptions: {real_time: true, chunk_size: 6}\nresponses:\n")
	for range n {
		b.WriteString("  - match: {prompt: helper}\n    expect: {last_role: user}\n    tool_calls:\n      - {name: echo, arguments: {text: \"" + secret + "\"}}\n    usage: {input_tokens: 10, output_tokens: 3}\n")
		b.WriteString("  - match: {prompt: helper}\n    expect: {last_role: tool}\n    delay: 5ms\n    text: \"" + answer + "\"\n    usage: {input_tokens: 20, output_tokens: 9}\n")
	}
	b.WriteString("  - match: {prompt: slow}\n    expect: {last_role: user}\n    text: Let me check.\n    tool_calls:\n      - {name: wait, arguments: {text: ping}}\n")
	b.WriteString("  - match: {prompt: slow}\n    expect: {last_role: tool}\n    text: \"Done: order 42 shipped.\"\n")
	return b.String()
}

type env struct {
	t          *testing.T
	url        string
	store      *memstore.Store
	alice, bob string
}

func newEnv(t *testing.T, turns int) *env {
	t.Helper()
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{t: t, store: st}
	e.url = turntest.Start(t, st, script(turns), nil, func(api *httpapi.Server) { openaiapi.Register(api) }).URL
	var aliceID string
	e.alice, aliceID = e.user("alice")
	e.bob, _ = e.user("bob")
	// Alice's secret, which every thread of hers redacts.
	if err := st.SetEnv(context.Background(), weft.EnvUser, aliceID, []weft.EnvValue{{Name: "TOKEN", Value: secret, Type: weft.VarSecret}}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) user(name string) (key, id string) {
	u := &weft.User{Name: name}
	if err := e.store.CreateUser(context.Background(), u); err != nil {
		e.t.Fatal(err)
	}
	key, rec := weft.NewAPIKey(u.ID)
	if err := e.store.CreateKey(context.Background(), rec); err != nil {
		e.t.Fatal(err)
	}
	return key, u.ID
}

// do sends a request and returns the response with its body read.
func (e *env) do(method, path, key, body string, header ...string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestErrors: every refusal is in OpenAI's error shape with its status.
func TestErrors(t *testing.T) {
	e := newEnv(t, 2)
	cases := []struct {
		name, method, path, key, body string
		header                        []string
		status                        int
		typ, code, param              string
	}{
		{"no key", "GET", "/v1/models", "", "", nil, 401, "authentication_error", "invalid_api_key", ""},
		{"bad key", "GET", "/v1/models", "wft_nope", "", nil, 401, "authentication_error", "invalid_api_key", ""},
		{"unknown model", "POST", "/v1/chat/completions", "alice", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, nil, 404, "invalid_request_error", "model_not_found", "model"},
		{"unknown model id", "GET", "/v1/models/nope", "alice", "", nil, 404, "invalid_request_error", "model_not_found", "model"},
		{"no messages", "POST", "/v1/chat/completions", "alice", `{"model":"helper","messages":[]}`, nil, 400, "invalid_request_error", "", "messages"},
		{"last not user", "POST", "/v1/chat/completions", "alice", `{"model":"helper","messages":[{"role":"assistant","content":"x"}]}`, nil, 400, "invalid_request_error", "", "messages[0].role"},
		{"client tools", "POST", "/v1/chat/completions", "alice", `{"model":"helper","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`, nil, 400, "invalid_request_error", "", "tools"},
		{"n", "POST", "/v1/chat/completions", "alice", `{"model":"helper","n":2,"messages":[{"role":"user","content":"x"}]}`, nil, 400, "invalid_request_error", "", "n"},
		{"image part", "POST", "/v1/chat/completions", "alice", `{"model":"helper","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, nil, 400, "invalid_request_error", "", "messages[0].content[0].type"},
		{"bad json", "POST", "/v1/chat/completions", "alice", `{"model":`, nil, 400, "invalid_request_error", "", ""},
		{"wrong type", "POST", "/v1/chat/completions", "alice", `{"model":1}`, nil, 400, "invalid_request_error", "", "model"},
		{"unknown thread", "POST", "/v1/chat/completions", "alice", `{"model":"helper","messages":[{"role":"user","content":"x"}]}`, []string{"Weft-Thread-Id", "thr_nope"}, 404, "not_found_error", "not_found", ""},
		{"unknown response", "GET", "/v1/responses/resp_thr_x.msg_y", "alice", "", nil, 404, "invalid_request_error", "not_found", "response_id"},
		{"bad response id", "GET", "/v1/responses/xyz", "alice", "", nil, 404, "invalid_request_error", "not_found", "response_id"},
		{"bad previous", "POST", "/v1/responses", "alice", `{"model":"helper","input":"x","previous_response_id":"nope"}`, nil, 404, "invalid_request_error", "not_found", "previous_response_id"},
		{"input items", "POST", "/v1/responses", "alice", `{"model":"helper","input":[{"type":"function_call_output"}]}`, nil, 400, "invalid_request_error", "", "input[0].type"},
		{"no input", "POST", "/v1/responses", "alice", `{"model":"helper"}`, nil, 400, "invalid_request_error", "", "input"},
		{"unknown route", "GET", "/v1/embeddings", "alice", "", nil, 404, "invalid_request_error", "unknown_url", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := map[string]string{"alice": e.alice}[c.key]
			if key == "" {
				key = c.key
			}
			resp, body := e.do(c.method, c.path, key, c.body, c.header...)
			var got struct {
				Error struct {
					Message, Type string
					Code, Param   *string
				}
			}
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			deref := func(p *string) string {
				if p == nil {
					return ""
				}
				return *p
			}
			if resp.StatusCode != c.status || got.Error.Type != c.typ || deref(got.Error.Code) != c.code || deref(got.Error.Param) != c.param || got.Error.Message == "" {
				t.Errorf("%d %s, want %d %s/%s/%s", resp.StatusCode, body, c.status, c.typ, c.code, c.param)
			}
		})
	}
}

// TestBudgetIs429: a thread over its budget answers 429 insufficient_quota.
func TestBudgetIs429(t *testing.T) {
	e := newEnv(t, 1)
	resp, body := e.do("POST", "/v1/chat/completions", e.alice, `{"model":"capped","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 429 || !strings.Contains(body, `"code":"insufficient_quota"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// TestChatThreads: a completion runs on a new thread of the caller, named in Weft-Thread-Id;
// sending that header continues the thread with the last message only; another user's thread
// is not found; the secret is redacted in the whole answer and in the stream.
func TestChatThreads(t *testing.T) {
	e := newEnv(t, 3)
	history := `[{"role":"system","content":"Be brief."},{"role":"user","content":"first"},{"role":"assistant","content":"ok"},{"role":"user","content":"hello"}]`
	resp, body := e.do("POST", "/v1/chat/completions", e.alice, `{"model":"helper","messages":`+history+`}`)
	thread := resp.Header.Get("Weft-Thread-Id")
	if resp.StatusCode != 200 || thread == "" || strings.Contains(body, secret) {
		t.Fatalf("%d %s %s", resp.StatusCode, thread, body)
	}
	var c struct {
		Choices []struct {
			Message struct {
				Content       string
				WeftToolCalls []struct{ Output, Status string } `json:"weft_tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		}
	}
	json.Unmarshal([]byte(body), &c)
	redacted := strings.ReplaceAll(answer, secret, "[redacted]")
	if c.Choices[0].Message.Content != redacted || c.Choices[0].FinishReason != "stop" || len(c.Choices[0].Message.WeftToolCalls) != 1 ||
		c.Usage.PromptTokens != 30 || c.Usage.CompletionTokens != 12 || c.Usage.TotalTokens != 42 {
		t.Fatalf("completion %s", body)
	}
	// The history went into the thread, before the posted message.
	_, msgs := e.do("GET", "/api/threads/"+thread+"/messages", e.alice, "")
	for _, want := range []string{`"Be brief."`, `"first"`, `"ok"`, `"hello"`} {
		if !strings.Contains(msgs, want) {
			t.Fatalf("thread lacks %s: %s", want, msgs)
		}
	}
	// Bob cannot continue it.
	if resp, body := e.do("POST", "/v1/chat/completions", e.bob, `{"model":"helper","messages":[{"role":"user","content":"x"}]}`, "Weft-Thread-Id", thread); resp.StatusCode != 404 {
		t.Fatalf("bob: %d %s", resp.StatusCode, body)
	}
	// Alice continues it, streamed, resending the whole history: only the new message is added.
	req := `{"model":"helper","stream":true,"stream_options":{"include_usage":true},"messages":` +
		strings.TrimSuffix(history, "]") + `,{"role":"assistant","content":"x"},{"role":"user","content":"again"}]}`
	resp, body = e.do("POST", "/v1/chat/completions", e.alice, req, "Weft-Thread-Id", thread)
	if resp.StatusCode != 200 || resp.Header.Get("Weft-Thread-Id") != thread || strings.Contains(body, secret) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var text strings.Builder
	var finish string
	var usage map[string]any
	sc := bufio.NewScanner(strings.NewReader(body))
	var last string
	deltas := 0
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		last = data
		if data == "[DONE]" {
			break
		}
		var ch struct {
			Choices []struct {
				Delta        struct{ Content string }
				FinishReason *string `json:"finish_reason"`
			}
			Usage map[string]any
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != "" {
				deltas++
			}
			text.WriteString(c.Delta.Content)
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
		if ch.Usage != nil {
			usage = ch.Usage
		}
	}
	// Streamed as the model wrote it (chunks of 6 bytes), not whole: the stream follows the
	// thread before the message is posted, so no delta is missed.
	if text.String() != redacted || deltas < 5 || finish != "stop" || usage["total_tokens"] != float64(42) || last != "[DONE]" {
		t.Fatalf("stream: %q %q %v\n%s", text.String(), finish, usage, body)
	}
	var count struct{ Total int }
	_, msgs = e.do("GET", "/api/threads/"+thread+"/messages", e.alice, "")
	json.Unmarshal([]byte(msgs), &count)
	if count.Total != 3+4+4 { // the history, then per turn the message, the call, its result and the answer
		t.Fatalf("%d messages: %s", count.Total, msgs)
	}
}

// TestResponses: responses chained by previous_response_id and by conversation run on one
// thread; GET reads one back; another user's response is not found.
func TestResponses(t *testing.T) {
	e := newEnv(t, 3)
	type response struct {
		ID, Status, Model  string
		PreviousResponseID *string `json:"previous_response_id"`
		Conversation       struct{ ID string }
		Output             []struct {
			Type, Name, Status string
			Output             *string
			Content            []struct{ Type, Text string }
		}
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
			TotalTokens  int `json:"total_tokens"`
		}
	}
	post := func(body string) response {
		t.Helper()
		resp, out := e.do("POST", "/v1/responses", e.alice, body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
		var r response
		json.Unmarshal([]byte(out), &r)
		return r
	}
	first := post(`{"model":"helper","input":"hello","instructions":"Be brief."}`)
	second := post(`{"model":"helper","input":[{"role":"user","content":[{"type":"input_text","text":"again"}]}],"previous_response_id":"` + first.ID + `"}`)
	third := post(`{"model":"helper","input":"third","conversation":{"id":"` + first.Conversation.ID + `"}}`)
	if first.Conversation.ID == "" || second.Conversation.ID != first.Conversation.ID || third.Conversation.ID != first.Conversation.ID ||
		*second.PreviousResponseID != first.ID {
		t.Fatalf("threads %+v %+v %+v", first, second, third)
	}
	redacted := strings.ReplaceAll(answer, secret, "[redacted]")
	for _, r := range []response{first, second, third} {
		if r.Status != "completed" || len(r.Output) != 2 || r.Output[0].Type != "mcp_call" || r.Output[0].Name != "echo" ||
			r.Output[0].Status != "completed" || r.Output[0].Output == nil || r.Output[1].Type != "message" ||
			r.Output[1].Content[0].Text != redacted || r.Usage.TotalTokens != 42 {
			t.Fatalf("response %+v", r)
		}
	}
	resp, out := e.do("GET", "/v1/responses/"+second.ID, e.alice, "")
	var back response
	json.Unmarshal([]byte(out), &back)
	if resp.StatusCode != 200 || back.ID != second.ID || back.Status != "completed" || len(back.Output) != 2 ||
		back.Output[1].Content[0].Text != redacted || back.Usage.TotalTokens != 42 {
		t.Fatalf("read back %d %s", resp.StatusCode, out)
	}
	if resp, out := e.do("GET", "/v1/responses/"+second.ID, e.bob, ""); resp.StatusCode != 404 {
		t.Fatalf("bob reads alice's response: %d %s", resp.StatusCode, out)
	}
	if resp, out := e.do("POST", "/v1/responses", e.bob, `{"model":"helper","input":"x","previous_response_id":"`+first.ID+`"}`); resp.StatusCode != 404 {
		t.Fatalf("bob continues alice's response: %d %s", resp.StatusCode, out)
	}
}

// TestModels: the agents, by name.
func TestModels(t *testing.T) {
	e := newEnv(t, 1)
	resp, body := e.do("GET", "/v1/models", e.alice, "")
	if resp.StatusCode != 200 || body != `{"data":[{"id":"capped","object":"model","created":0,"owned_by":"weft"},{"id":"helper","object":"model","created":0,"owned_by":"weft"},{"id":"slow","object":"model","created":0,"owned_by":"weft"}],"object":"list"}`+"\n" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// sseEvents reads Responses events until one of type until (then drops the connection).
func sseEvents(t *testing.T, resp *http.Response, until string) []map[string]any {
	t.Helper()
	defer resp.Body.Close()
	var evs []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		if ev["type"] == until {
			return evs
		}
	}
	t.Fatalf("the stream ended before %s: %v", until, evs)
	return nil
}

// TestResponseStreamResumed: a streamed response dropped after its first text is read again
// with GET /v1/responses/{id}?stream=true: the replayed stream's texts are whole, once each, and
// its final response is the one GET returns.
func TestResponseStreamResumed(t *testing.T) {
	e := newEnv(t, 1)
	stream := func(method, path, body string) *http.Response {
		req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.alice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
		return resp
	}
	first := sseEvents(t, stream("POST", "/v1/responses", `{"model":"slow","input":"where is 42?","stream":true}`), "response.output_text.delta")
	id := first[0]["response"].(map[string]any)["id"].(string)
	replayed := sseEvents(t, stream("GET", "/v1/responses/"+id+"?stream=true", ""), "response.completed")
	texts := map[string]string{}
	var order []string
	for i, ev := range replayed {
		if int(ev["sequence_number"].(float64)) != i {
			t.Fatalf("event %d has sequence_number %v", i, ev["sequence_number"])
		}
		if ev["type"] == "response.output_text.delta" {
			item := ev["item_id"].(string)
			if _, ok := texts[item]; !ok {
				order = append(order, item)
			}
			texts[item] += ev["delta"].(string)
		}
	}
	if len(order) != 2 || texts[order[0]] != "Let me check." || texts[order[1]] != "Done: order 42 shipped." {
		t.Fatalf("replayed texts %q", texts)
	}
	final, _ := json.Marshal(replayed[len(replayed)-1]["response"])
	_, got := e.do("GET", "/v1/responses/"+id, e.alice, "")
	var a, b any
	json.Unmarshal(final, &a)
	json.Unmarshal([]byte(got), &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("replayed final response\n%s\nGET\n%s", final, got)
	}
	if resp, body := e.do("GET", "/v1/responses/"+id+"?stream=true&starting_after=3", e.alice, ""); resp.StatusCode != 400 {
		t.Errorf("starting_after: %d %s", resp.StatusCode, body)
	}
}
