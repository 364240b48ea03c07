package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTwoProcessesOneThread: two weft processes continue the same thread of one SQLite file at the
// same moment; exactly one runs it (the lease), the other is refused, and the tool runs once.
func TestTwoProcessesOneThread(t *testing.T) {
	dir := t.TempDir()
	lines := filepath.Join(dir, "lines.txt")
	files := map[string]string{
		"models/m.yaml":   "{name: m, provider: test}\n",
		"prompts/p.yaml":  "{name: p, toolDescription: d, model: m, prompt: Work., tools: [work]}\n",
		"agents/a.yaml":   "{name: a, sideA: {prompt: p}}\n",
		"tools/work.yaml": "kind: command\ndescription: Slow work that leaves a line.\ncommand: [sh, -c, \"sleep 0.5; echo ran >> " + lines + "; echo done\"]\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, "agents", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	script := filepath.Join(dir, "s.yaml")
	os.WriteFile(script, []byte("options: {on_exhausted: repeat_last}\nresponses:\n- tool_calls: [{name: work}]\n- text: finished\n"), 0o644)
	db := filepath.Join(dir, "w.db")
	// Create the thread with a first quick exchange, then race two continuations of it.
	first := filepath.Join(dir, "first.yaml")
	os.WriteFile(first, []byte("- text: ready\n"), 0o644)
	out, errOut, code := runWeft(t, dir, "run", "a", "hello", "--db", db, "--model-script", first, "--json")
	if code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	id := between(out, `"id": "`, `"`)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	stderrs := make([]string, 2)
	for i := range 2 {
		wg.Go(func() {
			cmd := exec.Command(binary, "run", "a", "do the work", "--db", db, "--thread", id, "--model-script", script)
			cmd.Dir = dir
			var e bytes.Buffer
			cmd.Stderr = &e
			err := cmd.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				codes[i] = ee.ExitCode()
			}
			stderrs[i] = e.String()
		})
	}
	wg.Wait()
	ran, refused := 0, 0
	for i := range 2 {
		switch {
		case codes[i] == 0:
			ran++
		case strings.Contains(stderrs[i], "thread is running elsewhere"):
			refused++
		default:
			t.Errorf("process %d: exit %d: %s", i, codes[i], stderrs[i])
		}
	}
	data, _ := os.ReadFile(lines)
	// Both messages were queued; the process that holds the lease drains and answers both (the
	// refused one's message is not lost: it waits in the queue of the same thread).
	if ran < 1 || ran+refused != 2 || strings.Count(string(data), "ran") > 2 {
		t.Errorf("ran %d refused %d, tool lines %q, stderr %q", ran, refused, data, stderrs)
	}
	if refused == 0 {
		t.Logf("both processes ran one after the other (the second started after the first released the lease)")
	}
}

func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	if j := strings.Index(s, end); j >= 0 {
		return s[:j]
	}
	return s
}

// TestMessageToThreadRunningElsewhere: a weft run --thread whose thread another process is running
// queues its message, says that the running process will answer it, and exits 0; with --wait it
// waits for that answer and prints it.
func TestMessageToThreadRunningElsewhere(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	files := map[string]string{
		"models/m.yaml":   "{name: m, provider: test}\n",
		"prompts/p.yaml":  "{name: p, toolDescription: d, model: m, prompt: Work., tools: [work]}\n",
		"agents/a.yaml":   "{name: a, sideA: {prompt: p}}\n",
		"tools/work.yaml": "kind: command\ndescription: Slow work.\ncommand: [sh, -c, \"touch " + started + "; sleep 2; echo done\"]\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, "agents", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	db := filepath.Join(dir, "w.db")
	first := filepath.Join(dir, "first.yaml")
	os.WriteFile(first, []byte("- text: ready\n"), 0o644)
	out, errOut, code := runWeft(t, dir, "run", "a", "hello", "--db", db, "--model-script", first, "--json")
	if code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	id := between(out, `"id": "`, `"`)
	// The running process answers every message it drains: a tool call first, then text.
	script := filepath.Join(dir, "s.yaml")
	os.WriteFile(script, []byte("- tool_calls: [{name: work}]\n- text: all done\n- text: all done\n"), 0o644)
	holder := exec.Command(binary, "run", "a", "start the work", "--db", db, "--thread", id, "--model-script", script)
	holder.Dir = dir
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Wait()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(started); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	quiet := filepath.Join(dir, "none.yaml")
	os.WriteFile(quiet, []byte("- text: never asked\n"), 0o644)
	out, errOut, code = runWeft(t, dir, "run", "a", "and this too", "--db", db, "--thread", id, "--model-script", quiet)
	if code != 0 || !strings.Contains(errOut, "is running in another process; your message is queued") {
		t.Errorf("without --wait: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runWeft(t, dir, "run", "a", "and one more", "--db", db, "--thread", id, "--model-script", quiet, "--wait")
	if code != 0 || strings.TrimSpace(out) != "all done" {
		t.Errorf("with --wait: exit %d\nstdout %q\n%s", code, out, errOut)
	}
}
