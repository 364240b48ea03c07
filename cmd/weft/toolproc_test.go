//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestToolDiesWithWeft: a command tool does not outlive a weft process killed by SIGKILL (before
// the fix it ran on, unsupervised and past its timeout, and could finish after a resumed run had
// reported it interrupted).
func TestToolDiesWithWeft(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "tool.pid")
	files := map[string]string{
		"agents/models/fast.yaml":  "name: fast\nprovider: openai\nmodel: gpt-4o-mini\n",
		"agents/agents/desk.yaml":  "name: desk\ntype: ai_human\nsideA: {prompt: desk}\n",
		"agents/prompts/desk.yaml": "name: desk\ntoolDescription: Works\nmodel: fast\nprompt: You work.\ntools: [slow]\n",
		"agents/tools/slow.yaml":   "kind: command\ndescription: Takes long.\ntimeout: 10m\ncommand: [sh, -c, 'echo $$ > " + pidFile + "; exec sleep 300']\n",
		"script.yaml":              "- tool_calls: [{name: slow, arguments: {}}]\n- text: done\n",
	}
	writeFiles(t, dir, files)
	cmd := exec.Command(binary, "run", "--dir", "agents", "--db", filepath.Join(dir, "weft.db"), "desk", "Go", "--model-script", "script.yaml")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(20 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the tool never started")
		}
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the tool (pid %d) is not running: %v", pid, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the tool (pid %d) outlived weft by 5 s", pid)
		}
	}
}
