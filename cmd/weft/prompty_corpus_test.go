package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/weft-agents/weft/internal/sharedtest"
	"github.com/weft-agents/weft/prompty"
)

// envRefPattern finds the `${env:NAME}` references of a file.
var envRefPattern = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)`)

// fileRefPattern finds the `${file:PATH}` references of a file and the OpenAPI documents its
// tools name (`specification: ./weather_spec.json`).
var fileRefPattern = regexp.MustCompile(`\$\{file:([^}]+)\}|specification:\s*(?:\./)?([^\s#]+)`)

// corpusFloor are the counts TestPromptyCorpus measured on the 73 files of the shared fixtures
// (render, validate, run; before issue 52: 44, 19, 16): fewer is a
// regression.
var corpusFloor = [3]int{48, 43, 30}

// TestPromptyCorpus tries every public .prompty file of the shared fixtures (Prompty's
// spec/fixtures and the test prompts of its Python, C# and TypeScript runtimes) as a new user
// would: `weft render FILE`; `weft validate` with the file (and the data files beside it) alone in
// prompts/; and `weft run` of an agent whose side is that prompt against a fake server speaking
// the chat-completions wire, every variable the file reads set (endpoints to the fake). It prints
// the counts and fails on a crash or when a count falls below corpusFloor.
func TestPromptyCorpus(t *testing.T) {
	root := sharedtest.Path(t, "prompty-fixtures")
	var files []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".prompty") {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("no .prompty files under %s", root)
	}
	fake := newFakeChat(t, "/chat/completions")
	var rendered, validated, ran int
	var report []string
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		env := []string{"OPENAI_API_KEY=sk-corpus-0123456789", "OPENAI_BASE_URL=" + fake.srv.URL + "/v1",
			"AZURE_OPENAI_ENDPOINT=" + fake.srv.URL, "AZURE_OPENAI_API_KEY=az-corpus-0123456789"}
		for _, m := range envRefPattern.FindAllStringSubmatch(string(data), -1) {
			v := "corpus-value"
			if n := strings.ToUpper(m[1]); strings.Contains(n, "ENDPOINT") || strings.Contains(n, "URL") {
				v = fake.srv.URL
			}
			env = append(env, m[1]+"="+v)
		}
		status := [3]string{"-", "-", "-"}
		var why string
		note := func(out, errOut string) {
			if why == "" {
				why = reason(errOut + "\n" + out)
			}
		}
		out, errOut, code := runWeftEnv(t, t.TempDir(), env, "render", file)
		crashed(t, rel, out+errOut)
		if code == 0 {
			rendered++
			status[0] = "R"
		} else {
			note(out, errOut)
		}
		// The file alone in prompts/, with the data files it reads (`${file:}`).
		proj := t.TempDir()
		prompts := filepath.Join(proj, "agents", "prompts")
		if err := os.MkdirAll(prompts, 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(prompts, filepath.Base(file)), data, 0o644)
		for _, m := range fileRefPattern.FindAllStringSubmatch(string(data), -1) {
			ref := m[1] + m[2]
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(file), ref)); err == nil && !strings.Contains(ref, "..") {
				_ = os.MkdirAll(filepath.Dir(filepath.Join(prompts, ref)), 0o755)
				_ = os.WriteFile(filepath.Join(prompts, ref), b, 0o644)
			}
		}
		out, errOut, code = runWeftEnv(t, proj, env, "validate")
		crashed(t, rel, out+errOut)
		if code == 0 {
			validated++
			status[1] = "V"
		} else {
			note(out, errOut)
		}
		if code == 0 {
			name := strings.TrimSuffix(filepath.Base(file), ".prompty")
			if f, err := prompty.Load(file, prompty.Options{LookupEnv: func(string) (string, bool) { return "x", true }}); err == nil {
				name = f.Name
			}
			writeFiles(t, proj, map[string]string{"agents/agents/corpus.yaml": fmt.Sprintf("{name: corpus, sideA: {prompt: %q}}\n", name)})
			before := len(fake.requests())
			out, errOut, code = runWeftEnv(t, proj, env, "run", "corpus", "Hello from the corpus test.")
			crashed(t, rel, out+errOut)
			if code == 0 && len(fake.requests()) > before {
				ran++
				status[2] = "X"
			} else {
				note(out, errOut)
			}
		}
		report = append(report, fmt.Sprintf("%s %s  %s", strings.Join(status[:], ""), rel, why))
	}
	n := len(files)
	t.Logf("prompty corpus (%s):\n%s", root, strings.Join(report, "\n"))
	t.Logf("render %d/%d, validate %d/%d, run against the fake server %d/%d", rendered, n, validated, n, ran, n)
	for i, got := range [3]int{rendered, validated, ran} {
		if got < corpusFloor[i] {
			t.Errorf("%s: %d, below the floor %d", [3]string{"render", "validate", "run"}[i], got, corpusFloor[i])
		}
	}
}

// crashed fails the test when output shows a panic or an internal error.
func crashed(t *testing.T, file, out string) {
	t.Helper()
	if strings.Contains(out, "panic:") || strings.Contains(out, "internal error") || strings.Contains(out, "goroutine ") {
		t.Errorf("%s: crash\n%s", file, out)
	}
}

// reason returns the first line of output that says why a command failed (not a log line or a
// heading).
func reason(out string) string {
	s := ""
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "time=") && !strings.HasSuffix(l, "invalid definitions:") {
			s = l
			break
		}
	}
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
