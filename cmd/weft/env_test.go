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

// TestRunStreamsOnTerminal: on a terminal weft run shows the reply as it streams, once; piped, it
// prints the final text as before.
func TestRunStreamsOnTerminal(t *testing.T) {
	scriptCmd, err := exec.LookPath("script")
	if err != nil {
		t.Skip("needs script(1) from util-linux to run weft on a pseudo-terminal")
	}
	dir := t.TempDir()
	runWeft(t, dir, "init", "p")
	proj := dir + "/p"
	writeFiles(t, dir, map[string]string{"long.yaml": "options: {chunk_size: 5}\nresponses:\n- text: 'Streaming a reply in small pieces.'\n"})
	cmd := exec.Command(scriptCmd, "-qfec", binary+" run assistant hello --model-script "+dir+"/long.yaml --db :memory:", "/dev/null")
	cmd.Dir = proj
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.Count(string(out), "Streaming a reply in small pieces."); got != 1 {
		t.Errorf("the reply appears %d times on the terminal:\n%q", got, out)
	}
	piped, _, code := runWeft(t, proj, "run", "assistant", "hello", "--model-script", dir+"/long.yaml", "--db", ":memory:")
	if code != 0 || strings.TrimSpace(piped) != "Streaming a reply in small pieces." {
		t.Errorf("piped: exit %d %q", code, piped)
	}
	// A reply that stalls after two chunks is never stored, yet its first pieces were shown: the
	// terminal got them as they came.
	writeFiles(t, dir, map[string]string{"stall.yaml": "options: {chunk_size: 5}\nresponses:\n- {text: 'Streaming a reply in small pieces.', stall_after: 2}\n"})
	cmd = exec.Command(scriptCmd, "-qfc", binary+" run assistant hello --model-script "+dir+"/stall.yaml --db :memory:", "/dev/null")
	cmd.Dir = proj
	cmd.Env = append(os.Environ(), "WEFT_STALL_TIMEOUT=200ms")
	out, _ = cmd.CombinedOutput()
	if !strings.Contains(string(out), "Streaming ") || strings.Contains(string(out), "small pieces") {
		t.Errorf("stalled reply on the terminal:\n%q", out)
	}
}
