package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binary is the weft binary built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "weft-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "weft")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("building weft: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runWeft runs the binary in dir and returns stdout, stderr and the exit code.
func runWeft(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	// No test may reach a real provider: blank every provider key a developer may have exported.
	cmd.Env = append(os.Environ(), "WEFT_DIR=", "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "OPENROUTER_API_KEY=",
		"GOOGLE_API_KEY=", "GEMINI_API_KEY=", "GROQ_API_KEY=", "XAI_API_KEY=", "DEEPINFRA_API_KEY=", "CEREBRAS_API_KEY=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func testdata(name string) string {
	p, _ := filepath.Abs(filepath.Join("..", "..", "project", "testdata", name))
	return p
}

func TestValidateCommand(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string
		stderr   string
		notInOut string
	}{
		{"full_project_valid", []string{"validate", "--dir", testdata("full")}, 0, "", "definitions are valid", ""},
		{"broken_project", []string{"validate", "--dir", testdata("broken")}, 3, "prompts/cycle_a.yaml: prompt[1].prompt: circular include cycle_a → cycle_b → cycle_a", "38 errors, 2 warnings", ""},
		{"strict_makes_warnings_fatal", []string{"validate", "--strict", "--dir", testdata("broken")}, 3, "tools/BadName.yaml: name: tool name", "", "warning:"},
		{"missing_dir", []string{"validate", "--dir", "/nonexistent/agents"}, 2, "", "weft: cannot read the definitions directory", ""},
		{"unknown_flag", []string{"validate", "--bogus"}, 2, "", "unknown flag: --bogus", ""},
		{"unknown_command", []string{"frobnicate"}, 2, "", "unknown command", ""},
		{"extra_args", []string{"validate", "x"}, 2, "", "unknown command \"x\"", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runWeft(t, t.TempDir(), tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, out)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, errOut)
			}
			if tc.notInOut != "" && strings.Contains(out, tc.notInOut) {
				t.Errorf("stdout has %q:\n%s", tc.notInOut, out)
			}
		})
	}
}

func TestValidateJSON(t *testing.T) {
	out, _, code := runWeft(t, t.TempDir(), "validate", "--json", "--dir", testdata("broken"))
	if code != 3 {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		OK       bool `json:"ok"`
		Errors   []struct{ File, Path, Message string }
		Warnings []struct{ File, Path, Message string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if doc.OK || len(doc.Errors) != 38 || len(doc.Warnings) != 2 {
		t.Fatalf("ok=%v errors=%d warnings=%d", doc.OK, len(doc.Errors), len(doc.Warnings))
	}
	e := doc.Errors[0]
	if e.File == "" || e.Message == "" {
		t.Errorf("every error names file and message: %+v", e)
	}
	out, _, code = runWeft(t, t.TempDir(), "validate", "--json", "--dir", testdata("full"))
	if code != 0 || !strings.Contains(out, `"ok": true`) || !strings.Contains(out, `"errors": []`) {
		t.Errorf("exit %d: %s", code, out)
	}
}

func TestInitCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "proj")
	out, errOut, code := runWeft(t, t.TempDir(), "init", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	for _, f := range []string{"agents/models/fast.yaml", "agents/prompts/assistant.yaml", "agents/agents/assistant.yaml", "agents/tools/current_time.yaml", "examples/hello.script.yaml", ".env.example", "README.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("scaffold lacks %s", f)
		}
	}
	// The scaffold validates with the default --dir (./agents).
	if _, errOut, code := runWeft(t, dir, "validate"); code != 0 {
		t.Errorf("scaffold does not validate: %s", errOut)
	}
	// A non-empty directory is refused without --force.
	if _, errOut, code := runWeft(t, t.TempDir(), "init", dir); code != 2 || !strings.Contains(errOut, "not empty") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if _, _, code := runWeft(t, t.TempDir(), "init", "--force", dir); code != 0 {
		t.Errorf("--force exit %d", code)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"validate", "--help"}, {"init", "--help"}, {"help", "validate"}, {"chat", "--help"}} {
		out, _, code := runWeft(t, t.TempDir(), args...)
		if code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	// weft chat's help lists its commands.
	out, _, _ := runWeft(t, t.TempDir(), "chat", "--help")
	for _, c := range []string{"/stop", "/continue [a|b]", "/env NAME=VALUE", "/thread", "/json", "/exit", "--server", "--thread"} {
		if !strings.Contains(out, c) {
			t.Errorf("weft chat --help lacks %s:\n%s", c, out)
		}
	}
}

// writeFiles writes a test project: each name (a /-separated path under dir) gets its body.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
