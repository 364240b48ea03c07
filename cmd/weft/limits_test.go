package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputOverLimitRefused: a message on standard input one byte over the limit is refused (exit
// 2, the limit named, no thread stored) instead of cut, and so is an --attach file over its limit
// — before it is read.
func TestInputOverLimitRefused(t *testing.T) {
	dir := t.TempDir()
	runWeft(t, dir, "init", "p")
	proj := filepath.Join(dir, "p")
	db := filepath.Join(dir, "weft.db")

	cmd := exec.Command(binary, "run", "assistant", "-", "--model-script", "examples/hello.script.yaml", "--db", db)
	cmd.Dir = proj
	cmd.Stdin = bytes.NewReader(bytes.Repeat([]byte("x"), 20<<20+1))
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "over the 20 MiB limit; nothing was sent") {
		t.Errorf("stdin over the limit: exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
	if list, _, _ := runWeft(t, dir, "threads", "list", "--db", db); strings.Contains(list, "thr_") {
		t.Errorf("a refused message left a thread:\n%s", list)
	}

	big := filepath.Join(dir, "big.bin")
	f, _ := os.Create(big)
	f.Truncate(20<<20 + 1) // sparse: the size counts, not the bytes
	f.Close()
	_, errOut, code := runWeft(t, proj, "run", "assistant", "hi", "--attach", big, "--model-script", "examples/hello.script.yaml")
	if code != 2 || !strings.Contains(errOut, "the file is 20,971,521 bytes; the limit is 20 MiB") {
		t.Errorf("attachment over the limit: exit %d: %s", code, errOut)
	}
}

// TestRunThreadLengthLimit: WEFT_MAX_THREAD_MESSAGES refuses a message to a thread that long with
// exit 2 and the limit named.
func TestRunThreadLengthLimit(t *testing.T) {
	dir := t.TempDir()
	runWeft(t, dir, "init", "p")
	proj := dir + "/p"
	out, errOut, code := runWeft(t, proj, "run", "assistant", "What time is it?", "--model-script", "examples/hello.script.yaml", "--json")
	if code != 0 {
		t.Fatalf("first run: exit %d %s", code, errOut)
	}
	id := between(out, `"id": "`, `"`)
	t.Setenv("WEFT_MAX_THREAD_MESSAGES", "2")
	_, errOut, code = runWeft(t, proj, "run", "assistant", "And now?", "--thread", id, "--model-script", "examples/hello.script.yaml")
	if code != exitUsage || !strings.Contains(errOut, "the limit is 2") || !strings.Contains(errOut, "WEFT_MAX_THREAD_MESSAGES") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
