package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestThreadsAndLogs(t *testing.T) {
	dir := t.TempDir()
	runWeft(t, dir, "init", "p")
	proj := filepath.Join(dir, "p")
	db := filepath.Join(dir, "w.db")
	out, errOut, code := runWeft(t, proj, "run", "assistant", "What time is it?", "--model-script", "examples/hello.script.yaml", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	var doc struct{ Thread struct{ ID string } }
	json.Unmarshal([]byte(out), &doc)
	id := doc.Thread.ID

	out, _, code = runWeft(t, proj, "threads", "list", "--db", db)
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "awaiting_human") {
		t.Errorf("list: %d %s", code, out)
	}
	out, _, code = runWeft(t, proj, "threads", "show", id, "--db", db)
	if code != 0 || !strings.Contains(out, "[1] user: What time is it?") || !strings.Contains(out, "→ current_time({})") {
		t.Errorf("show: %d %s", code, out)
	}
	out, _, code = runWeft(t, proj, "threads", "export", id, "--db", db)
	if code != 0 || !strings.Contains(out, `"reason": "stop_on_response"`) || !strings.Contains(out, `"calls": 2`) {
		t.Errorf("export: %d %s", code, out)
	}
	out, _, code = runWeft(t, proj, "logs", id, "--db", db)
	if code != 0 || !strings.Contains(out, "tool_calls") || !strings.Contains(out, "2 calls, total cost $") {
		t.Errorf("logs: %d %s", code, out)
	}
	out, _, code = runWeft(t, proj, "logs", id, "--db", db, "--json")
	var rows []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 2 {
		t.Errorf("logs --json: %d %s", code, out)
	}
	// The thread is idle (awaiting the human): there is nothing to stop, and it says so.
	if _, errOut, code := runWeft(t, proj, "threads", "stop", id, "--db", db); code != 1 || !strings.Contains(errOut, "is not running (status awaiting_human): nothing to stop") {
		t.Errorf("stop on an idle thread: %d %s", code, errOut)
	}
	if _, errOut, code = runWeft(t, proj, "threads", "show", "thr_nope", "--db", db); code != 2 || !strings.Contains(errOut, "not found") {
		t.Errorf("unknown thread: %d %s", code, errOut)
	}
	if out, _, code = runWeft(t, proj, "threads", "delete", id, "--db", db); code != 0 {
		t.Errorf("delete: %d %s", code, out)
	}
	if out, _, _ = runWeft(t, proj, "threads", "list", "--db", db); strings.Contains(out, id) {
		t.Errorf("deleted thread still listed: %s", out)
	}
	if _, errOut, code = runWeft(t, proj, "threads", "list", "--db", filepath.Join(dir, "missing.db")); code != 2 {
		t.Errorf("missing db: %d %s", code, errOut)
	}
}

// TestThreadsFork: `weft threads fork` makes a thread of the messages up to one (or before it),
// linked to the original, which keeps its messages.
func TestThreadsFork(t *testing.T) {
	dir := t.TempDir()
	runWeft(t, dir, "init", "p")
	proj := filepath.Join(dir, "p")
	db := filepath.Join(dir, "w.db")
	out, errOut, code := runWeft(t, proj, "run", "assistant", "What time is it?", "--model-script", "examples/hello.script.yaml", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	var doc struct {
		Thread   struct{ ID string }
		Messages []struct{ ID, Role string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Messages) < 3 {
		t.Fatalf("run --json: %v %s", err, out)
	}
	id, user := doc.Thread.ID, doc.Messages[0]
	showBefore, _, _ := runWeft(t, proj, "threads", "show", id, "--db", db)

	out, errOut, code = runWeft(t, proj, "threads", "fork", id, "--at", user.ID, "--db", db)
	if code != 0 || !strings.HasPrefix(out, "forked "+id+" at "+user.ID+": thr_") {
		t.Fatalf("fork: %d %s %s", code, out, errOut)
	}
	fork := strings.TrimSpace(out[strings.LastIndex(out, " ")+1:])
	shown, _, code := runWeft(t, proj, "threads", "show", fork, "--db", db)
	if code != 0 || shown != "[1] user: What time is it?\n" {
		t.Errorf("the fork: %d %q", code, shown)
	}
	var exported struct {
		Thread struct {
			ForkedFrom struct{ Thread, Message string } `json:"forked_from"`
		}
	}
	out, _, _ = runWeft(t, proj, "threads", "export", fork, "--db", db)
	if err := json.Unmarshal([]byte(out), &exported); err != nil || exported.Thread.ForkedFrom.Thread != id || exported.Thread.ForkedFrom.Message != user.ID {
		t.Errorf("the fork's link: %v %s", err, out)
	}
	out, _, code = runWeft(t, proj, "threads", "fork", id, "--at", user.ID, "--before", "--db", db)
	empty := strings.TrimSpace(out[strings.LastIndex(out, " ")+1:])
	if shown, _, _ := runWeft(t, proj, "threads", "show", empty, "--db", db); code != 0 || shown != "" {
		t.Errorf("a fork before the first message: %d %q", code, shown)
	}
	if _, errOut, code = runWeft(t, proj, "threads", "fork", id, "--at", "msg_nope", "--db", db); code != 2 || !strings.Contains(errOut, "not found") {
		t.Errorf("unknown message: %d %s", code, errOut)
	}
	if _, _, code = runWeft(t, proj, "threads", "fork", id, "--db", db); code != 2 {
		t.Errorf("no --at: %d", code)
	}
	if showAfter, _, _ := runWeft(t, proj, "threads", "show", id, "--db", db); showAfter != showBefore {
		t.Errorf("the original changed:\n%s\nwas\n%s", showAfter, showBefore)
	}
}
