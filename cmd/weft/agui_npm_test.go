package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAGUINpmClient drives the AG-UI endpoint with @ag-ui/client's HttpAgent (runAgent checks
// the event order as it applies the events): two runs on one threadId, the second sending the
// whole conversation back; then a run whose stream drops mid-answer and is resumed from
// GET …/ag-ui/{threadId}/stream: the messages rebuilt from the two streams hold every text once.
func TestAGUINpmClient(t *testing.T) {
	npm := npmPackages(t, "agui", "@ag-ui/client")
	dir := t.TempDir()
	writeFiles(t, dir, slowProject(3))
	db := filepath.Join(dir, "weft.db")
	key := createKey(t, dir, db, "alice")
	s := startServer(t, dir, nil, "--dir", filepath.Join(dir, "agents"), "--db", db, "--model-script", filepath.Join(dir, "slow.script.yaml"))
	out := runNode(t, "agui", "client.mjs", npm, s.base, key, "slow", "t1")
	type message struct {
		Role, Content, ToolCallID string
		ToolCalls                 []string
	}
	var got struct {
		Turns []struct {
			Types       []string
			Result      struct{ WeftStopReason string }
			NewMessages []message
		}
		Messages []message
		Refused  string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Turns) != 2 {
		t.Fatalf("turns: %s", out)
	}
	for i, turn := range got.Turns {
		types := dedupe(turn.Types)
		want := "RUN_STARTED STATE_SNAPSHOT STEP_STARTED REASONING_START REASONING_MESSAGE_START REASONING_MESSAGE_CONTENT REASONING_MESSAGE_END REASONING_END " +
			"TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END TOOL_CALL_RESULT STEP_FINISHED " +
			"STEP_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END STEP_FINISHED RUN_FINISHED"
		if types != want || turn.Result.WeftStopReason != "stop_on_response" {
			t.Errorf("turn %d events\n got %s\nwant %s\nresult %+v", i+1, types, want, turn.Result)
		}
	}
	var convo []string
	for _, m := range got.Messages {
		switch m.Role {
		case "user", "assistant":
			convo = append(convo, m.Role+": "+m.Content+strings.Join(m.ToolCalls, ","))
		case "tool":
			convo = append(convo, "tool: "+m.Content)
		}
	}
	want := `user: hello|assistant: Let me check.wait {"text":"ping"}|tool: {"text":"ping"}|assistant: Done: order 42 shipped.|` +
		`user: and again|assistant: Let me check.wait {"text":"ping"}|tool: {"text":"ping"}|assistant: Done: order 42 shipped.`
	if strings.Join(convo, "|") != want {
		t.Errorf("conversation\n got %s\nwant %s", strings.Join(convo, "|"), want)
	}
	if !strings.Contains(got.Refused, "400") || !strings.Contains(got.Refused, "the last message") {
		t.Errorf("a run with nothing new: %s", got.Refused)
	}

	// A third run: the stream drops after the first text; the resumed stream gives the rest.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := `{"threadId":"t1","runId":"r3","messages":[{"id":"u3","role":"user","content":"a third time"}],"tools":[],"context":[]}`
	first := aguiEvents(t, ctx, s, key, "POST", "/api/agents/slow/ag-ui", body, "TEXT_MESSAGE_CONTENT")
	resumed := aguiEvents(t, ctx, s, key, "GET", "/api/agents/slow/ag-ui/t1/stream?runId=r3", "", "RUN_FINISHED")
	if resumed[0]["type"] != "RUN_STARTED" || resumed[0]["runId"] != "r3" {
		t.Errorf("resumed stream starts with %v", resumed[0])
	}
	// The resumed stream first resynchronises the client: the conversation up to the run's message.
	var snapshot []any
	for _, ev := range resumed {
		if ev["type"] == "MESSAGES_SNAPSHOT" {
			snapshot = ev["messages"].([]any)
		}
	}
	if n := len(snapshot); n != 9 || snapshot[n-1].(map[string]any)["id"] != "u3" || snapshot[0].(map[string]any)["id"] != "u1" {
		t.Errorf("resumed MESSAGES_SNAPSHOT %v", snapshot)
	}
	texts := map[string]string{}
	var order []string
	for _, ev := range resumed {
		if ev["type"] == "TEXT_MESSAGE_CONTENT" {
			id := ev["messageId"].(string)
			if _, ok := texts[id]; !ok {
				order = append(order, id)
			}
			texts[id] += ev["delta"].(string)
		}
	}
	if len(order) != 2 || texts[order[0]] != "Let me check." || texts[order[1]] != "Done: order 42 shipped." {
		t.Errorf("resumed texts %q (first stream: %d events)", texts, len(first))
	}
	if code, _ := s.call("GET", "/api/agents/slow/ag-ui/t1/stream", key, ""); code != 204 {
		t.Errorf("nothing to resume: %d", code)
	}
}

// dedupe joins types, collapsing runs of the same type.
func dedupe(types []string) string {
	var out []string
	for _, ty := range types {
		if len(out) == 0 || out[len(out)-1] != ty {
			out = append(out, ty)
		}
	}
	return strings.Join(out, " ")
}

// aguiEvents reads an AG-UI SSE stream until an event of type until, then drops the connection.
func aguiEvents(t *testing.T, ctx context.Context, s *server, key, method, path, body, until string) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, s.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
	}
	var evs []map[string]any
	sc := bufio.NewScanner(resp.Body)
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
	t.Fatalf("%s %s ended before %s: %v", method, path, until, evs)
	return nil
}

// TestAGUINpmFrontendTool: HttpAgent.runAgent with a frontend tool. The first run ends with the
// agent's call of the client's tool pending (TOOL_CALL_START/ARGS/END, then RUN_FINISHED naming
// it); the client runs the tool and runs the agent again with its tool message; the agent
// answers with the client's result. The conversation holds every message once.
func TestAGUINpmFrontendTool(t *testing.T) {
	npm := npmPackages(t, "agui", "@ag-ui/client")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"agents/agents/front.yaml":  "name: front\ntype: ai_human\ndescription: Asks the user through the client's tool\nsideA: {prompt: front, maxSteps: 8}\n",
		"agents/prompts/front.yaml": "name: front\nmodel: fast\ntoolDescription: A front end's helper\nincludeChat: true\nprompt: Ask before shipping.\n",
		"agents/models/fast.yaml":   "name: fast\nprovider: openai\nmodel: gpt-4o-mini\n",
		"front.script.yaml": "version: 1\noptions: {chunk_size: 6}\nresponses:\n" +
			"  - match: {prompt: front}\n    expect: {last_role: user, tools_include: confirm}\n    text: Let me ask.\n" +
			"    tool_calls: [{id: call_c, name: confirm, arguments: {question: \"Ship order 42?\"}}]\n" +
			"  - match: {prompt: front}\n    expect: {last_role: tool, tool_result_contains: \"yes: Ship order 42?\"}\n    text: Shipping order 42.\n",
	})
	db := filepath.Join(dir, "weft.db")
	key := createKey(t, dir, db, "alice")
	s := startServer(t, dir, nil, "--dir", filepath.Join(dir, "agents"), "--db", db, "--model-script", filepath.Join(dir, "front.script.yaml"))
	out := runNode(t, "agui", "frontend.mjs", npm, s.base, key, "front", "t1")
	var got struct {
		Runs []struct {
			Types   []string
			Result  struct{ WeftStopReason string }
			Pending []string
		}
		Messages []struct {
			Role, Content, ToolCallID string
			ToolCalls                 []string
		}
		State map[string]any
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got.Runs) != 2 {
		t.Fatalf("%v: %s", err, out)
	}
	wants := []struct{ types, reason, pending string }{
		{"RUN_STARTED STATE_SNAPSHOT STEP_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END " +
			"TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END STEP_FINISHED RUN_FINISHED", "awaiting_approval", "call_c"},
		{"RUN_STARTED STATE_SNAPSHOT STEP_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END STEP_FINISHED RUN_FINISHED",
			"stop_on_response", ""},
	}
	for i, w := range wants {
		r := got.Runs[i]
		if dedupe(r.Types) != w.types || r.Result.WeftStopReason != w.reason || strings.Join(r.Pending, ",") != w.pending {
			t.Errorf("run %d:\n got %s %s %v\nwant %s %s %s", i+1, dedupe(r.Types), r.Result.WeftStopReason, r.Pending, w.types, w.reason, w.pending)
		}
	}
	var convo []string
	for _, m := range got.Messages {
		convo = append(convo, m.Role+": "+m.Content+strings.Join(m.ToolCalls, ",")+m.ToolCallID)
	}
	want := `user: Ship order 42|assistant: Let me ask.confirm {"question":"Ship order 42?"}|tool: yes: Ship order 42?call_c|assistant: Shipping order 42.`
	if strings.Join(convo, "|") != want || got.State == nil || len(got.State) != 0 {
		t.Errorf("conversation\n got %s\nwant %s\nstate %v", strings.Join(convo, "|"), want, got.State)
	}
}
