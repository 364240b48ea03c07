package aguiapi_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft/aguiapi"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/turn"
	"github.com/weft-agents/weft/internal/turn/turntest"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/sqlite"
)

// clientScript calls the client's confirm tool; afterScript, the model after a restart, answers
// with what the client returned, and is not offered confirm in a thread without client tools.
const clientScript = `version: 1
options: {chunk_size: 5}
responses:
  - match: {prompt: helper}
    expect: {last_role: user, tools_include: confirm}
    text: "Let me ask."
    tool_calls: [{id: call_c, name: confirm, arguments: {question: "Ship order 42?"}}]
`

const afterScript = `version: 1
options: {chunk_size: 5}
responses:
  - match: {prompt: helper}
    expect: {last_role: tool, tool_result_contains: "yes, ship it"}
    text: "Shipping."
  - match: {prompt: helper}
    expect: {last_role: user, tools_exclude: confirm}
    text: "Plain."
`

const confirmTool = `{"name":"confirm","description":"Ask the user to confirm","parameters":{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}}`

// events decodes an AG-UI stream.
func events(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(body, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var ev map[string]any
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("%v: %s", err, data)
			}
			out = append(out, ev)
		}
	}
	return out
}

func types(evs []map[string]any) string {
	var ts []string
	for _, ev := range evs {
		if ty := ev["type"].(string); len(ts) == 0 || ts[len(ts)-1] != ty {
			ts = append(ts, ty)
		}
	}
	return strings.Join(ts, " ")
}

// TestFrontendTool: a tool the input passes is the thread's client tool. The model calls it; the
// run parks and the stream ends with the call for the client (RUN_FINISHED names it pending).
// The server restarts; another user cannot deliver the result; the owner's next input, with the
// tool message, continues the run, which answers with the client's result. The tool stays
// the thread's own: the owner's other thread is not offered it.
func TestFrontendTool(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weft.db")
	open := func() *sqlite.Store {
		st, err := sqlite.Open(context.Background(), path, sqlite.Options{Key: make([]byte, 32)})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	register := func(api *httpapi.Server) { aguiapi.Register(api) }
	st := open()
	keys := turntest.Users(t, st, "alice", "bob")
	s := turntest.Start(t, st, clientScript, keys, register)

	first := `{"threadId":"t1","runId":"r1","tools":[` + confirmTool + `],"messages":[{"id":"u1","role":"user","content":"Ship order 42"}]}`
	resp, body := s.Do("POST", "/api/agents/helper/ag-ui", "alice", first)
	evs := events(t, body)
	want := "RUN_STARTED STATE_SNAPSHOT STEP_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END " +
		"TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END STEP_FINISHED RUN_FINISHED"
	if resp.StatusCode != 200 || types(evs) != want {
		t.Fatalf("first run: %d\n got %s\nwant %s\n%s", resp.StatusCode, types(evs), want, body)
	}
	fin := evs[len(evs)-1]
	if turn.Encode(fin["outcome"]) != `{"pendingToolCallIds":["call_c"],"type":"success"}` ||
		turn.Encode(fin["result"]) != `{"weftStopReason":"awaiting_approval"}` {
		t.Errorf("first run ends %v", fin)
	}
	var assistant string
	for _, ev := range evs {
		if ev["type"] == "TOOL_CALL_START" {
			assistant = ev["parentMessageId"].(string)
			if ev["toolCallName"] != "confirm" || ev["toolCallId"] != "call_c" {
				t.Errorf("tool call %v", ev)
			}
		}
		if ev["type"] == "TOOL_CALL_ARGS" && ev["delta"] != `{"question":"Ship order 42?"}` {
			t.Errorf("arguments %v", ev)
		}
	}

	// A restart between the two requests: the tools and the waiting call are the thread's.
	s.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = open()
	defer st.Close()
	s = turntest.Start(t, st, afterScript, keys, register)

	second := `{"threadId":"t1","runId":"r2","tools":[` + confirmTool + `],"messages":[` +
		`{"id":"u1","role":"user","content":"Ship order 42"},` +
		`{"id":"` + assistant + `","role":"assistant","content":"Let me ask.","toolCalls":[{"id":"call_c","type":"function","function":{"name":"confirm","arguments":"{\"question\":\"Ship order 42?\"}"}}]},` +
		`{"id":"tm1","role":"tool","toolCallId":"call_c","content":"yes, ship it"}]}`
	if resp, body := s.Do("POST", "/api/agents/helper/ag-ui", "bob", second); resp.StatusCode != 404 {
		t.Errorf("bob delivers alice's result: %d %s", resp.StatusCode, body)
	}
	if msgs := s.Messages("alice"); strings.Contains(msgs, "yes, ship it") {
		t.Errorf("bob's result reached alice's thread: %s", msgs)
	}

	resp, body = s.Do("POST", "/api/agents/helper/ag-ui", "alice", second)
	evs = events(t, body)
	want = "RUN_STARTED STATE_SNAPSHOT STEP_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END STEP_FINISHED RUN_FINISHED"
	if resp.StatusCode != 200 || types(evs) != want || !strings.Contains(body, `"weftStopReason":"stop_on_response"`) ||
		!strings.Contains(body, `"delta":"Shipp"`) {
		t.Fatalf("second run: %d\n got %s\nwant %s\n%s", resp.StatusCode, types(evs), want, body)
	}
	msgs := s.Messages("alice")
	if !strings.Contains(msgs, `"content":"yes, ship it"`) || !strings.Contains(msgs, `"content":"Shipping."`) {
		t.Errorf("alice's thread: %s", msgs)
	}
	// The result is given once: the same input again finds no call waiting.
	if resp, body := s.Do("POST", "/api/agents/helper/ag-ui", "alice", second); resp.StatusCode != 409 {
		t.Errorf("the result again: %d %s", resp.StatusCode, body)
	}

	// Another thread of alice's, without tools: the model is not offered confirm.
	resp, body = s.Do("POST", "/api/agents/helper/ag-ui", "alice", `{"threadId":"t2","runId":"r3","messages":[{"id":"u9","role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"delta":"Plain"`) || !strings.Contains(body, `"weftStopReason":"stop_on_response"`) {
		t.Errorf("t2: %d %s", resp.StatusCode, body)
	}
}

// TestResumeAfterFrontendTool: a stream dropped while the run goes on after a client tool's
// result resumes the whole turn since the user's message: a MESSAGES_SNAPSHOT up to it, the
// call, the result as the thread stored it, and the answer, ending once.
func TestResumeAfterFrontendTool(t *testing.T) {
	st, _ := memstore.New(memstore.Options{})
	keys := turntest.Users(t, st, "alice")
	script := strings.Replace(clientScript, "options: {chunk_size: 5}", "options: {chunk_size: 5, real_time: true}", 1) + `  - match: {prompt: helper}
    expect: {last_role: tool, tool_result_contains: "yes"}
    delay: 3s
    text: "Shipping."
`
	s := turntest.Start(t, st, script, keys, func(api *httpapi.Server) { aguiapi.Register(api) })
	first := `{"threadId":"t1","runId":"r1","tools":[` + confirmTool + `],"messages":[{"id":"u1","role":"user","content":"Ship order 42"}]}`
	if resp, body := s.Do("POST", "/api/agents/helper/ag-ui", "alice", first); resp.StatusCode != 200 || !strings.Contains(body, `"pendingToolCallIds":["call_c"]`) {
		t.Fatalf("first run: %d %s", resp.StatusCode, body)
	}
	second := `{"threadId":"t1","runId":"r2","tools":[` + confirmTool + `],"messages":[{"id":"tm1","role":"tool","toolCallId":"call_c","content":"yes"}]}`
	done := make(chan string, 1)
	go func() {
		_, body := s.Do("POST", "/api/agents/helper/ag-ui", "alice", second)
		done <- body
	}()
	// The run goes on (its model call takes 3s): the resumed stream follows it to its end.
	var body string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, b := s.Do("GET", "/api/agents/helper/ag-ui/t1/stream?runId=r2", "alice", "")
		if resp.StatusCode == 200 {
			body = b
			break
		}
		select {
		case live := <-done:
			t.Fatalf("the run ended before a stream resumed (%d): %s", resp.StatusCode, live)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no run to resume: %d", resp.StatusCode)
		}
	}
	live := <-done
	evs := events(t, body)
	want := "RUN_STARTED STATE_SNAPSHOT MESSAGES_SNAPSHOT STEP_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END " +
		"TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END TOOL_CALL_RESULT STEP_FINISHED STEP_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END STEP_FINISHED RUN_FINISHED"
	if types(evs) != want || !strings.Contains(body, `"weftStopReason":"stop_on_response"`) ||
		!strings.Contains(body, `"messages":[{"content":"Ship order 42","id":"u1","role":"user"}]`) ||
		!strings.Contains(body, `"content":"yes"`) || !strings.Contains(body, `"runId":"r2"`) {
		t.Errorf("resumed:\n got %s\nwant %s\n%s", types(evs), want, body)
	}
	if !strings.Contains(live, `"delta":"Shipp"`) || strings.Contains(live, "TOOL_CALL_RESULT") {
		t.Errorf("the live stream: %s", live)
	}
}
