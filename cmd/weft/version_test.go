package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
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

// TestLogsJSONSnakeCase: weft logs --json uses snake_case keys like every other JSON output.
func TestLogsJSONSnakeCase(t *testing.T) {
	dir := t.TempDir()
	runWeft(t, dir, "init", "p")
	proj := dir + "/p"
	out, _, _ := runWeft(t, proj, "run", "assistant", "What time is it?", "--model-script", "examples/hello.script.yaml", "--json")
	var doc struct{ Thread struct{ ID string } }
	json.Unmarshal([]byte(out), &doc)
	out, errOut, code := runWeft(t, proj, "logs", doc.Thread.ID, "--json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 2 {
		t.Fatalf("exit %d, %v: %s%s", code, err, out, errOut)
	}
	for _, k := range []string{"thread_id", "input_tokens", "output_tokens", "cost_total", "latency_ms", "created_at"} {
		if _, ok := rows[0][k]; !ok {
			t.Errorf("no %s in %v", k, rows[0])
		}
	}
	if _, ok := rows[0]["InputTokens"]; ok {
		t.Errorf("CamelCase keys: %v", rows[0])
	}
}

// TestBadLogLevel: an unknown --log-level is a usage error naming the choices.
func TestBadLogLevel(t *testing.T) {
	_, errOut, code := runWeft(t, t.TempDir(), "--log-level", "loud", "validate", "--dir", repo("examples/support/agents"))
	if code != 2 || !strings.Contains(errOut, `--log-level "loud": want debug, info, warn or error`) {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// TestRunTimeoutWithFile: --timeout on a file store stops the run as aborted and still prints the
// JSON document (it printed "sqlite: list threads: context deadline exceeded" and no document),
// and the tool's result says the run's time limit ended it.
func TestRunTimeoutWithFile(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"agents/models/fast.yaml":  "name: fast\nprovider: openai\nmodel: gpt-4o-mini\n",
		"agents/agents/desk.yaml":  "name: desk\ntype: ai_human\nsideA: {prompt: desk}\n",
		"agents/prompts/desk.yaml": "name: desk\ntoolDescription: Works\nmodel: fast\nprompt: You work.\ntools: [slow]\n",
		"agents/tools/slow.yaml":   "kind: command\ndescription: Takes long.\ncommand: [sleep, '30']\n",
		"script.yaml":              "- tool_calls: [{name: slow, arguments: {}}]\n- text: done\n",
	}
	for name, body := range files {
		p := dir + "/" + name
		os.MkdirAll(p[:strings.LastIndex(p, "/")], 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	out, errOut, code := runWeft(t, dir, "run", "desk", "Go", "--model-script", "script.yaml", "--db", dir+"/w.db", "--timeout", "1s", "--json")
	var doc struct {
		Result   struct{ Reason string }
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("exit %d, no document (%v):\n%s\n%s", code, err, out, errOut)
	}
	if doc.Result.Reason != "aborted" || strings.Contains(errOut, "deadline exceeded") {
		t.Errorf("exit %d, reason %q, stderr %s", code, doc.Result.Reason, errOut)
	}
	found := false
	for _, m := range doc.Messages {
		if m.Role == "tool" {
			found = true
			if !strings.Contains(m.Content, "the run's time limit ended the command") {
				t.Errorf("tool result %q", m.Content)
			}
		}
	}
	if !found {
		t.Errorf("no tool result in %+v", doc.Messages)
	}
}

// TestLogsFullAligned: weft logs --full keeps the table's columns aligned (the bodies follow it),
// and counts read right.
func TestLogsFullAligned(t *testing.T) {
	dir := t.TempDir()
	runWeft(t, dir, "init", "p")
	proj := dir + "/p"
	out, _, _ := runWeft(t, proj, "run", "assistant", "What time is it?", "--model-script", "examples/hello.script.yaml", "--json", "--no-color")
	var doc struct{ Thread struct{ ID string } }
	json.Unmarshal([]byte(out), &doc)
	out, errOut, code := runWeft(t, proj, "logs", doc.Thread.ID, "--full", "--no-color")
	if code != 0 || strings.Contains(out, "\x1b[") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "TIME") {
		t.Fatalf("output:\n%s", out)
	}
	col := strings.Index(lines[0], "COST")
	for _, l := range lines[1:3] {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("misaligned row %q (COST at %d)", l, col)
		}
	}
	if !strings.Contains(out, "2 calls, total cost") {
		t.Errorf("bodies or total missing:\n%s", out)
	}
}

// TestInterruptSaysHowToContinue: SIGINT stops the run and prints one line naming the thread and
// the command that continues it.
func TestInterruptSaysHowToContinue(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"agents/models/fast.yaml":  "name: fast\nprovider: openai\nmodel: gpt-4o-mini\n",
		"agents/agents/desk.yaml":  "name: desk\ntype: ai_human\nsideA: {prompt: desk}\n",
		"agents/prompts/desk.yaml": "name: desk\ntoolDescription: Works\nmodel: fast\nprompt: You work.\ntools: [slow]\n",
		"agents/tools/slow.yaml":   "kind: command\ndescription: Takes long.\ncommand: [sh, -c, 'touch started; sleep 30']\ncwd: .\n",
		"script.yaml":              "- tool_calls: [{name: slow, arguments: {}}]\n- text: done\n",
	})
	cmd := exec.Command(binary, "run", "desk", "Go", "--model-script", "script.yaml")
	cmd.Dir = dir
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(dir + "/started"); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(errOut.String(), "weft: interrupted: the run of thread thr_") ||
		!strings.Contains(errOut.String(), "continue it with: weft run desk --thread thr_") {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
}

// TestRenderAndRunAgree: a prompt's missing required variable makes both render and run refuse
// with exit 4; a secret read by an env part renders as [redacted].
func TestRenderAndRunAgree(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"agents/models/fast.yaml": "name: fast\nprovider: openai\nmodel: gpt-4o-mini\n",
		"agents/agents/desk.yaml": "name: desk\ntype: ai_human\nsideA: {prompt: desk}\n",
		"agents/prompts/desk.yaml": "name: desk\ntoolDescription: W\nmodel: fast\nprompt:\n  - {type: text, content: 'Shop: '}\n  - {type: env, property: SHOP}\n" +
			"  - {type: text, content: ' key '}\n  - {type: env, property: TOKEN}\nvariables:\n  - {name: SHOP, type: text, required: true, description: s}\n" +
			"  - {name: TOKEN, type: secret, required: false, description: t}\n",
		"s.yaml": "- text: hi\n",
	})
	_, runErr, runCode := runWeft(t, dir, "run", "desk", "hi", "--model-script", "s.yaml", "--db", ":memory:")
	_, renderErr, renderCode := runWeft(t, dir, "render", "desk")
	if runCode != 4 || renderCode != 4 || !strings.Contains(renderErr, "missing required variables: SHOP") || !strings.Contains(runErr, "SHOP") {
		t.Errorf("run %d %s; render %d %s", runCode, runErr, renderCode, renderErr)
	}
	out, _, code := runWeft(t, dir, "render", "desk", "--env", "SHOP=Acme", "--env", "TOKEN=sekrit-value")
	if code != 0 || !strings.Contains(out, "Shop: Acme key [redacted]") || strings.Contains(out, "sekrit") {
		t.Errorf("render with values: exit %d\n%s", code, out)
	}
}

// TestLogsNoDoubledPrefix: a failed call's status names its error type once.
func TestLogsNoDoubledPrefix(t *testing.T) {
	dir := t.TempDir()
	runWeft(t, dir, "init", "p")
	proj := dir + "/p"
	writeFiles(t, dir, map[string]string{"fail.yaml": "- error: {status: 500, message: upstream broke}\n- error: {status: 500, message: upstream broke}\n"})
	out, _, _ := runWeft(t, proj, "run", "assistant", "hi", "--model-script", dir+"/fail.yaml", "--json")
	var doc struct{ Thread struct{ ID string } }
	json.Unmarshal([]byte(out), &doc)
	out, errOut, code := runWeft(t, proj, "logs", doc.Thread.ID)
	if code != 0 || !strings.Contains(out, "server_error") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if strings.Contains(out, "cost unknown") {
		t.Errorf("failed attempts that used nothing made the cost unknown:\n%s", out)
	}
	for _, typ := range []string{"server_error: server_error", "unknown: unknown"} {
		if strings.Contains(out, typ) {
			t.Errorf("doubled prefix %q:\n%s", typ, out)
		}
	}
}

// TestUnknownThreadSaidOnce: every command names an unknown thread once ("thread X: not found").
func TestUnknownThreadSaidOnce(t *testing.T) {
	dir := t.TempDir()
	runWeft(t, dir, "init", "p")
	proj := dir + "/p"
	runWeft(t, proj, "run", "assistant", "hi", "--model-script", "examples/hello.script.yaml")
	for _, args := range [][]string{
		{"run", "assistant", "hi", "--thread", "thr_missing", "--model-script", "examples/hello.script.yaml"},
		{"threads", "show", "thr_missing"}, {"threads", "export", "thr_missing"}, {"threads", "stop", "thr_missing"},
		{"threads", "approve", "thr_missing", "call_1"}, {"logs", "thr_missing"}, {"render", "assistant", "--thread", "thr_missing"},
	} {
		_, errOut, code := runWeft(t, proj, args...)
		if code == 0 || strings.Count(errOut, "thr_missing") != 1 || !strings.Contains(errOut, "not found") {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
}
