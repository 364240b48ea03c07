package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenAINpmClient drives weft serve's /v1 with the official openai npm client: the models
// list, a chat completion plain and streamed (with usage), responses chained by
// previous_response_id and read back, a streamed response through the SDK's accumulating helper,
// and errors in OpenAI's shape (404 unknown model, 401, 400).
func TestOpenAINpmClient(t *testing.T) {
	npm := npmPackages(t, "openai", "openai")
	dir := t.TempDir()
	db := filepath.Join(dir, "weft.db")
	key := createKey(t, dir, db, "alice")
	s := startServer(t, dir, nil, "--dir", repo("httpapi/testdata/agents"), "--db", db, "--model-script", chatScript(t, 6))
	out := runNode(t, "openai", "client.mjs", npm, s.base, key, "chat")
	var got struct {
		Models []string
		Plain  struct {
			Content, Finish string
			Usage           struct{ Prompt_tokens, Completion_tokens, Total_tokens int }
			Tools           []struct {
				ID, Type, Output, Status string
				Function                 struct{ Name, Arguments string }
			}
		}
		Streamed struct {
			Content, Finish string
			Chunks          int
			Usage           *struct{ Total_tokens int }
		}
		Responses struct {
			First, Second, ReadBack struct {
				ID, Status, Text, Previous string
				Conversation               struct{ ID string }
				Items                      []string
			}
		}
		ResponseStream struct {
			Deltas, Text, Status string
			Types                []string
		}
		Errors map[string]struct {
			Status            int
			Type, Code, Param string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	const answer = "Done. The token was " + e2eSecret + ", all good."
	if !strings.Contains(strings.Join(got.Models, ","), "chat") {
		t.Errorf("models %v", got.Models)
	}
	if got.Plain.Content != answer || got.Plain.Finish != "stop" || got.Plain.Usage.Total_tokens != got.Plain.Usage.Prompt_tokens+got.Plain.Usage.Completion_tokens {
		t.Errorf("plain %+v", got.Plain)
	}
	if len(got.Plain.Tools) != 1 || got.Plain.Tools[0].Function.Name != "echo" || got.Plain.Tools[0].Function.Arguments != `{"text":"ping"}` ||
		got.Plain.Tools[0].Status != "completed" || got.Plain.Tools[0].Output == "" {
		t.Errorf("plain tool calls %+v", got.Plain.Tools)
	}
	if got.Streamed.Content != answer || got.Streamed.Finish != "stop" || got.Streamed.Usage == nil || got.Streamed.Chunks < 4 {
		t.Errorf("streamed %+v", got.Streamed)
	}
	r := got.Responses
	if r.First.Text != answer || r.First.Status != "completed" || r.Second.Text != answer || r.Second.Previous != r.First.ID ||
		r.Second.Conversation.ID == "" || r.Second.Conversation.ID != r.First.Conversation.ID {
		t.Errorf("responses %+v", r)
	}
	if strings.Join(r.Second.Items, " ") != "mcp_call message" {
		t.Errorf("output items %v", r.Second.Items)
	}
	if r.ReadBack.ID != r.Second.ID || r.ReadBack.Text != answer || r.ReadBack.Status != "completed" {
		t.Errorf("read back %+v", r.ReadBack)
	}
	rs := got.ResponseStream
	if rs.Deltas != answer || rs.Text != answer || rs.Status != "completed" || rs.Types[0] != "response.created" ||
		rs.Types[len(rs.Types)-1] != "response.completed" {
		t.Errorf("response stream %+v", rs)
	}
	want := map[string][2]any{"unknownModel": {404, "model_not_found"}, "badKey": {401, "invalid_api_key"}, "badRequest": {400, ""}}
	for name, w := range want {
		e := got.Errors[name]
		if e.Status != w[0] || e.Code != w[1] {
			t.Errorf("%s: %+v, want status %v code %v", name, e, w[0], w[1])
		}
	}
	// Every turn ran on a thread of the key's user, visible through /api.
	var threads struct{ Total int }
	s.must("GET", "/api/threads", key, "", 200, &threads)
	if threads.Total != 3 { // plain, streamed, and the responses' one thread
		t.Errorf("threads %d, want 3", threads.Total)
	}
}
