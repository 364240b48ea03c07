package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func repo(p string) string {
	abs, _ := filepath.Abs(filepath.Join("..", "..", filepath.FromSlash(p)))
	return abs
}

// TestRunSupportExample is README's main command: the support example answers offline.
func TestRunSupportExample(t *testing.T) {
	out, errOut, code := runWeft(t, t.TempDir(), "run", "--dir", repo("examples/support/agents"), "support", "Where is order 42?",
		"--model-script", repo("examples/support/demo.script.yaml"))
	if code != 0 || strings.TrimSpace(out) != "Good news, your order 42 shipped on November 20 with ParcelCo! You can follow it with tracking number PC-77812." {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

func TestRunResearchExampleJSON(t *testing.T) {
	out, errOut, code := runWeft(t, t.TempDir(), "run", "--dir", repo("examples/research/agents"), "researcher", "Chart my quarterly sales.",
		"--attach", repo("examples/research/data/sales.csv"), "--model-script", repo("examples/research/demo.script.yaml"), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Result struct {
			Reason, Text string
			OK           bool
			Steps        int
		}
		Messages []struct {
			Role, Content string
			Attachments   []struct {
				Path, Name string
				MimeType   string `json:"mime_type"`
			}
		}
		Usage  struct{ Calls int }
		Script *struct{ Consumed, Remaining int }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !doc.Result.OK || doc.Result.Reason != "stop_on_response" || doc.Result.Steps != 2 || doc.Usage.Calls != 2 ||
		doc.Script == nil || doc.Script.Consumed != 2 || doc.Script.Remaining != 0 {
		t.Errorf("document: %+v usage=%+v script=%+v", doc.Result, doc.Usage, doc.Script)
	}
	if len(doc.Messages) != 4 || len(doc.Messages[0].Attachments) != 1 || doc.Messages[0].Attachments[0].Name != "sales.csv" {
		t.Fatalf("messages %+v", doc.Messages)
	}
	chart := doc.Messages[2].Attachments
	if len(chart) != 1 || chart[0].MimeType != "image/svg+xml" || !strings.HasPrefix(chart[0].Path, "/attachments/") {
		t.Errorf("chart attachment %+v", chart)
	}
}

func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	if _, _, code := runWeft(t, dir, "init", "p"); code != 0 {
		t.Fatal("init")
	}
	proj := filepath.Join(dir, "p")
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	mismatch := write("mismatch.yaml", "- expect: {system_contains: nonsense}\n  text: hi\n")
	failing := write("failing.yaml", "- error: {status: 400, message: bad request}\n")
	leftover := write("leftover.yaml", "version: 1\noptions: {strict: true}\nresponses:\n- text: one\n- text: two\n")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"ok", []string{"run", "assistant", "What time is it?", "--model-script", "examples/hello.script.yaml"}, 0, "I asked the current_time tool", ""},
		{"expectation_failed", []string{"run", "assistant", "hi", "--model-script", mismatch}, 5, "", `expected system prompt to contain "nonsense"`},
		{"strict_leftovers", []string{"run", "assistant", "hi", "--model-script", leftover}, 5, "one", "1 responses left over"},
		{"step_error", []string{"run", "assistant", "hi", "--model-script", failing}, 1, "", "run stopped: step_error: Model fast failed (invalid_request is not retried) and 0 fallbacks: invalid_request (400): bad request"},
		{"unknown_agent", []string{"run", "nobody", "hi"}, 2, "", `no agent named "nobody"`},
		{"unreadable_script", []string{"run", "assistant", "hi", "--model-script", "nope.yaml"}, 2, "", "nope.yaml"},
		{"invalid_arguments", []string{"run", "assistant", "hi", "--args", "[1]"}, 2, "", "--args: not a JSON object"},
		{"no_api_key", []string{"run", "assistant", "hi"}, 1, "", `No API key found for provider "openai" (set OPENAI_API_KEY)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runWeft(t, proj, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
		})
	}
	t.Run("missing_required_variable_exit_4", func(t *testing.T) {
		p := filepath.Join(proj, "agents", "prompts", "assistant.yaml")
		orig, _ := os.ReadFile(p)
		defer os.WriteFile(p, orig, 0o644)
		os.WriteFile(p, bytes.Replace(orig, []byte("LANGUAGE: English"), []byte("OTHER: x"), 1), 0o644)
		_, errOut, code := runWeft(t, proj, "run", "assistant", "hi", "--model-script", "examples/hello.script.yaml")
		if code != 4 || !strings.Contains(errOut, "missing required variables: LANGUAGE (prompt assistant)") {
			t.Errorf("exit %d: %s", code, errOut)
		}
		if _, _, code := runWeft(t, proj, "run", "assistant", "hi", "--env", "LANGUAGE=French", "--model-script", "examples/hello.script.yaml"); code != 0 {
			t.Errorf("with --env: exit %d", code)
		}
	})
}

func TestRunStdinAndTrace(t *testing.T) {
	dir := t.TempDir()
	runWeft(t, dir, "init", "p")
	proj := filepath.Join(dir, "p")
	trace := filepath.Join(dir, "trace.jsonl")
	// An undeclared --env value is a secret; the user pastes it into the message. The last-line
	// pass catches it: traces are redacted and, under a model script, the run exits 5.
	cmd := exec.Command(binary, "run", "assistant", "-", "--model-script", "examples/hello.script.yaml", "--trace-requests", trace,
		"--env", "API_TOKEN=Klingon-secret-value")
	cmd.Dir = proj
	cmd.Stdin = strings.NewReader("What time is it? My token is Klingon-secret-value\n")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 5 || !strings.Contains(string(out), "caught by the last redaction pass") {
		t.Errorf("exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a line per request, got %d", len(lines))
	}
	var first struct {
		Model, Prompt, Agent, Side string
		Depth                      int
		ToolChoice                 string `json:"tool_choice"`
		Tools                      []struct{ Name string }
		Messages                   []struct{ Role, Content string }
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first.Model != "fast" || first.Prompt != "assistant" || first.Side != "a" || first.ToolChoice != "auto" || len(first.Tools) != 2 ||
		first.Messages[1].Content != "What time is it? My token is [redacted]" {
		t.Errorf("trace line %+v", first)
	}
	if strings.Contains(string(data), "Klingon-secret-value") || strings.Contains(string(out), "Klingon-secret-value") {
		t.Error("the secret leaked into the trace or the output")
	}
}
