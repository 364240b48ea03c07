package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestVersion: weft --version names the build, and the JSON documents carry it.
func TestVersion(t *testing.T) {
	out, _, code := runWeft(t, t.TempDir(), "--version")
	if code != 0 || !strings.HasPrefix(out, "weft ") || len(strings.TrimSpace(out)) <= len("weft ") {
		t.Fatalf("exit %d: %q", code, out)
	}
	v := strings.TrimSpace(strings.TrimPrefix(out, "weft "))
	out, _, _ = runWeft(t, t.TempDir(), "run", "--dir", repo("examples/support/agents"), "support", "Where is order 42?",
		"--model-script", repo("examples/support/demo.script.yaml"), "--json")
	var doc struct{ Version string }
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Version != v {
		t.Errorf("run --json version %q, want %q (%v)", doc.Version, v, err)
	}
	out, _, _ = runWeft(t, t.TempDir(), "validate", "--dir", repo("examples/support/agents"), "--json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Version != v {
		t.Errorf("validate --json version %q (%v)", doc.Version, err)
	}
}

// TestOnePlaceForRuns: with no flag, a run's thread is where threads and logs look (.weft/weft.db
// in the current directory); with no store yet, they say which path they looked for.
func TestOnePlaceForRuns(t *testing.T) {
	dir := t.TempDir()
	runWeft(t, dir, "init", "p")
	proj := dir + "/p"
	_, errOut, code := runWeft(t, proj, "threads", "list")
	if code != 2 || !strings.Contains(errOut, "no store at "+proj+"/.weft/weft.db") {
		t.Errorf("list before any run: exit %d: %s", code, errOut)
	}
	out, errOut, code := runWeft(t, proj, "run", "assistant", "What time is it?", "--model-script", "examples/hello.script.yaml", "--json")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	var doc struct{ Thread struct{ ID string } }
	json.Unmarshal([]byte(out), &doc)
	list, _, code := runWeft(t, proj, "threads", "list")
	if code != 0 || !strings.Contains(list, doc.Thread.ID) {
		t.Errorf("threads list does not show the run's thread %s:\n%s", doc.Thread.ID, list)
	}
	if _, errOut, code := runWeft(t, proj, "threads", "show", doc.Thread.ID); code != 0 {
		t.Errorf("threads show: exit %d: %s", code, errOut)
	}
	if out, errOut, code := runWeft(t, proj, "logs", doc.Thread.ID); code != 0 || !strings.Contains(out, "fast") {
		t.Errorf("logs: exit %d: %s%s", code, out, errOut)
	}
	// :memory: opts out: nothing new is kept.
	runWeft(t, proj, "run", "assistant", "Again?", "--model-script", "examples/hello.script.yaml", "--db", ":memory:")
	if list2, _, _ := runWeft(t, proj, "threads", "list"); strings.Count(list2, "thr_") != 1 {
		t.Errorf("a :memory: run was kept:\n%s", list2)
	}
}

// TestThreadFiles: the chart the research example's tool returns can be listed and saved.
func TestThreadFiles(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runWeft(t, dir, "run", "--dir", repo("examples/research/agents"), "researcher", "Chart my quarterly sales.",
		"--attach", repo("examples/research/data/sales.csv"), "--model-script", repo("examples/research/demo.script.yaml"), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct{ Thread struct{ ID string } }
	json.Unmarshal([]byte(out), &doc)
	list, errOut, code := runWeft(t, dir, "threads", "files", doc.Thread.ID)
	if code != 0 || !strings.Contains(list, "image/svg+xml") || !strings.Contains(list, "text/csv") {
		t.Fatalf("files: exit %d\n%s%s", code, list, errOut)
	}
	var chart string
	for _, f := range strings.Fields(list) {
		if strings.HasSuffix(f, ".svg") {
			chart = f
		}
	}
	_, errOut, code = runWeft(t, dir, "threads", "file", doc.Thread.ID, chart, "-o", dir+"/chart.svg")
	b, _ := os.ReadFile(dir + "/chart.svg")
	if code != 0 || !strings.Contains(string(b), "<svg") {
		t.Errorf("file: exit %d: %s (%d bytes)", code, errOut, len(b))
	}
	if _, errOut, code := runWeft(t, dir, "threads", "file", doc.Thread.ID, "/nope.txt"); code != 2 || !strings.Contains(errOut, "not found") {
		t.Errorf("missing file: exit %d: %s", code, errOut)
	}
}
