package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// slowProject is an agent whose answer is two messages around a tool that takes a second, so
// that a stream can be dropped mid-answer.
func slowProject(turns int) map[string]string {
	var script strings.Builder
	script.WriteString("version: 1\noptions: {real_time: true, chunk_size: 4}\nresponses:\n")
	for range turns {
		script.WriteString("  - match: {prompt: slow}\n    expect: {last_role: user}\n    reasoning: Look it up.\n    text: Let me check.\n    tool_calls:\n      - {name: wait, arguments: {text: ping}}\n")
		script.WriteString("  - match: {prompt: slow}\n    expect: {last_role: tool}\n    text: \"Done: order 42 shipped.\"\n")
	}
	return map[string]string{
		"agents/agents/slow.yaml":  "name: slow\ntype: ai_human\ndescription: Answers after a slow tool\nsideA: {prompt: slow, maxSteps: 8}\n",
		"agents/prompts/slow.yaml": "name: slow\nmodel: fast\ntoolDescription: A slow helper\nincludeChat: true\nprompt: Use wait.\ntools: [wait]\n",
		"agents/models/fast.yaml":  "name: fast\nprovider: openai\nmodel: gpt-4o-mini\n",
		"agents/tools/wait.yaml": "kind: command\ndescription: Waits a second, then echoes the arguments.\nargs:\n  type: object\n  properties:\n    text: {type: string}\n" +
			"command: [sh, -c, \"sleep 1; cat\"]\ntimeout: 10s\n",
		"slow.script.yaml": script.String(),
	}
}

// TestAISDKNpmClient drives the UI message stream with the AI SDK's DefaultChatTransport and
// readUIMessageStream: two turns on one chat (the client sends the whole history; the thread
// holds each message once), then a third whose connection drops after its first text and is
// resumed with reconnectToStream: the message rebuilt holds every part once.
func TestAISDKNpmClient(t *testing.T) {
	npm := npmPackages(t, "ai", "ai")
	dir := t.TempDir()
	writeFiles(t, dir, slowProject(3))
	db := filepath.Join(dir, "weft.db")
	key := createKey(t, dir, db, "alice")
	s := startServer(t, dir, nil, "--dir", filepath.Join(dir, "agents"), "--db", db, "--model-script", filepath.Join(dir, "slow.script.yaml"))
	out := runNode(t, "ai", "client.mjs", npm, s.base, key, "slow", "chat-1")
	type message struct {
		ID, Role         string
		Texts, Reasoning []string
		Tools            []struct {
			Name, State   string
			Input, Output any
		}
		Steps    int
		Metadata struct{ WeftStopReason string }
	}
	var got struct {
		First, Second, Resumed *message
		Dropped                struct{ Before []string }
		Afterwards             string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for name, m := range map[string]*message{"first": got.First, "second": got.Second, "resumed": got.Resumed} {
		if m == nil {
			t.Fatalf("%s: no message: %s", name, out)
		}
		desc := fmt.Sprintf("%s %q %q %d tools %+v %s", m.Role, m.Texts, m.Reasoning, m.Steps, m.Tools, m.Metadata.WeftStopReason)
		want := `assistant ["Let me check." "Done: order 42 shipped."] ["Look it up."] 2 tools [{Name:wait State:output-available Input:map[text:ping] Output:map[text:ping]}] stop_on_response`
		if desc != want {
			t.Errorf("%s:\n got %s\nwant %s", name, desc, want)
		}
		if !strings.HasPrefix(m.ID, "answer-msg_") {
			t.Errorf("%s: message id %q", name, m.ID)
		}
	}
	// Dropped mid-answer: after the first text of the first message, before the tool's output.
	if b := strings.Join(got.Dropped.Before, " "); !strings.HasPrefix(b, "start start-step reasoning-start reasoning-delta") ||
		!strings.HasSuffix(b, "reasoning-end text-start text-delta") {
		t.Errorf("before the drop: %v", got.Dropped.Before)
	}
	if got.Afterwards != "none" {
		t.Errorf("after the turn: %s", got.Afterwards)
	}
	// One thread, holding each message once: per turn the user's, the call, its result, the answer.
	var threads struct {
		Items []struct{ ID string }
		Total int
	}
	s.must("GET", "/api/threads", key, "", 200, &threads)
	if threads.Total != 1 {
		t.Fatalf("%d threads", threads.Total)
	}
	var msgs struct{ Total int }
	s.must("GET", "/api/threads/"+threads.Items[0].ID+"/messages", key, "", 200, &msgs)
	if msgs.Total != 12 {
		t.Errorf("%d messages, want 12", msgs.Total)
	}
	// Another user does not see the chat.
	bob := createKey(t, dir, db, "bob")
	if code, body := s.call("GET", "/api/agents/slow/chat/chat-1/stream", bob, ""); code != 404 {
		t.Errorf("bob resumes alice's chat: %d %s", code, body)
	}
}
