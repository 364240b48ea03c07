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
