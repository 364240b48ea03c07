package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestEnvLayers: an instance variable set with weft env satisfies a prompt's required variable; a
// secret is listed without its value; unset takes it away again.
func TestEnvLayers(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"agents/models/fast.yaml": "name: fast\nprovider: openai\nmodel: gpt-4o-mini\n",
		"agents/agents/desk.yaml": "name: desk\ntype: ai_human\nsideA: {prompt: desk}\n",
		"agents/prompts/desk.yaml": "name: desk\ntoolDescription: W\nmodel: fast\nprompt:\n  - {type: text, content: 'Shop: '}\n  - {type: env, property: SHOP}\n" +
			"variables:\n  - {name: SHOP, type: text, required: true, description: s}\n",
		"s.yaml": "- {expect: {system_contains: 'Shop: Acme'}, text: hi}\n",
	})
	if _, errOut, code := runWeft(t, dir, "run", "desk", "hi", "--model-script", "s.yaml"); code != 4 {
		t.Fatalf("without the variable: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{{"env", "set", "SHOP", "Acme", "--type", "text", "--instance"}, {"env", "set", "TOKEN", "sekrit-value", "--instance"}} {
		if out, errOut, code := runWeft(t, dir, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errOut)
		}
	}
	if out, errOut, code := runWeft(t, dir, "run", "desk", "hi", "--model-script", "s.yaml"); code != 0 || strings.TrimSpace(out) != "hi" {
		t.Fatalf("with the instance variable: exit %d: %s%s", code, out, errOut)
	}
	out, _, code := runWeft(t, dir, "env", "list", "--instance")
	if code != 0 || !strings.Contains(out, "SHOP   text    Acme") || !strings.Contains(out, "TOKEN  secret  [redacted]") || strings.Contains(out, "sekrit") {
		t.Errorf("list: exit %d:\n%s", code, out)
	}
	runWeft(t, dir, "env", "unset", "SHOP", "--instance")
	if _, _, code := runWeft(t, dir, "run", "desk", "hi", "--model-script", "s.yaml"); code != 4 {
		t.Errorf("after unset: exit %d", code)
	}
	if _, errOut, code := runWeft(t, dir, "env", "list"); code != 2 || !strings.Contains(errOut, "--user NAME") {
		t.Errorf("no layer: exit %d: %s", code, errOut)
	}
}

// TestLogsFollow: weft logs --follow prints a thread's calls, then the calls of a run another
// process makes, as they happen; SIGINT ends it.
func TestLogsFollow(t *testing.T) {
	dir := t.TempDir()
	runWeft(t, dir, "init", "p")
	proj := dir + "/p"
	out, _, _ := runWeft(t, proj, "run", "assistant", "What time is it?", "--model-script", "examples/hello.script.yaml", "--json")
	id := between(out, `"id": "`, `"`)
	cmd := exec.Command(binary, "logs", id, "--follow")
	cmd.Dir = proj
	var buf syncBuffer
	cmd.Stdout = &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitLines := func(n int) {
		t.Helper()
		for i := 0; i < 200 && strings.Count(buf.String(), " llm ") < n; i++ {
			time.Sleep(25 * time.Millisecond)
		}
		if got := strings.Count(buf.String(), " llm "); got < n {
			t.Fatalf("%d calls followed, want %d:\n%s", got, n, buf.String())
		}
	}
	waitLines(2)
	runWeft(t, proj, "run", "assistant", "And now?", "--thread", id, "--model-script", "examples/hello.script.yaml")
	waitLines(4)
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Errorf("logs --follow after SIGINT: %v", err)
	}
}
