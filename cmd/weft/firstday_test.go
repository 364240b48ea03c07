package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runInProcess runs the CLI in this process (no binary, no store) and returns its output and code.
func runInProcess(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestUnknownSubcommand: a mistyped subcommand fails with a suggestion, as an unknown top-level
// command does; a group alone still prints its help.
func TestUnknownSubcommand(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stderr []string
		stdout string
	}{
		{[]string{"threads", "lst"}, 2, []string{`unknown command "lst" for "weft threads"`, "Did you mean this?\n\tlist"}, ""},
		{[]string{"keys", "craete"}, 2, []string{`unknown command "craete" for "weft keys"`, "create"}, ""},
		{[]string{"env", "provide"}, 2, []string{`unknown command "provide" for "weft env"`, "weft env has: list, set, unset"}, ""},
		{[]string{"db", "zzz"}, 2, []string{`unknown command "zzz" for "weft db"`, "weft db has: migrate, status"}, ""},
		{[]string{"frobnicate"}, 2, []string{`unknown command "frobnicate"`}, ""},
		{[]string{"threads"}, 0, nil, "Usage:"},
		{[]string{"env", "--help"}, 0, nil, "Usage:"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			out, errOut, code := runInProcess(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut)
				}
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, out)
			}
		})
	}
}

// docCommand finds `weft WORD WORD …` in Markdown: in inline code and at the start of code lines.
var docCommand = regexp.MustCompile("(?m)(?:`|^\\$? ?)weft((?: [a-z][a-z-]*)+)")

// TestDocsNameRealCommands: every `weft a b` the README and docs/ name is a command weft has (a
// doc promised `weft env provide`, which did not exist).
func TestDocsNameRealCommands(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	root := newRootCmd(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docCommand.FindAllStringSubmatch(string(data), -1) {
			words := strings.Fields(m[1])
			cmd := root
			for _, w := range words {
				if !cmd.HasSubCommands() {
					break
				}
				next := cmd
				for _, sub := range cmd.Commands() {
					if sub.Name() == w || sub.HasAlias(w) {
						next = sub
					}
				}
				if next == cmd {
					if cmd == root {
						break // prose such as "weft is", not a command
					}
					t.Errorf("%s names %q: %q has no subcommand %q", filepath.Base(f), "weft"+m[1], cmd.CommandPath(), w)
					break
				}
				cmd = next
				checked++
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d command words checked: the pattern no longer finds the docs' commands", checked)
	}
}

// TestApprovalHintWorksAsPrinted: the command weft run prints for a waiting call, run exactly as
// printed (call id, --dir, --db and --model-script filled in), approves it and finishes the thread
// offline: the script goes on after the entries the first process used.
func TestApprovalHintWorksAsPrinted(t *testing.T) {
	dir, ledger := approvalProject(t)
	writeFiles(t, dir, map[string]string{"both.yaml": "- tool_calls: [{name: refund, arguments: {order_id: 42}}]\n" +
		"- expect: {last_role: tool}\n  text: Refunded order 42.\n"})
	db := filepath.Join(dir, "weft.db")
	out, errOut, code := runWeft(t, dir, "run", "--dir", "agents", "--db", db, "desk", "Refund order 42.", "--model-script", "both.yaml")
	if code != 6 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	var hint []string
	for _, l := range strings.Split(errOut, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "weft threads approve "); ok {
			hint = strings.Fields(strings.TrimSuffix(rest, " [--args JSON]"))
		}
	}
	want := []string{"call_1", "--db", db, "--model-script", "both.yaml"} // --dir agents is the default
	if len(hint) != 1+len(want) || strings.Join(hint[1:], " ") != strings.Join(want, " ") {
		t.Fatalf("hint %q, want THREAD %q:\n%s", hint, want, errOut)
	}
	out, errOut, code = runWeft(t, dir, append([]string{"threads", "approve"}, hint...)...)
	if code != 0 || strings.TrimSpace(out) != "Refunded order 42." {
		t.Fatalf("the printed command: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if got := ledgerLines(t, ledger); len(got) != 1 {
		t.Errorf("ledger %v, want one refund", got)
	}
}

// TestServerBase: what a user passes as --server, the banner's URL included, becomes the root the
// API's paths go under.
func TestServerBase(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080/api":    "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/api/":   "http://127.0.0.1:8080",
		"http://127.0.0.1:8080":        "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/":       "http://127.0.0.1:8080",
		"127.0.0.1:8080":               "http://127.0.0.1:8080",
		"localhost:8080/api":           "http://localhost:8080",
		"https://weft.example.com":     "https://weft.example.com",
		"https://example.com/weft/api": "https://example.com/weft",
		" http://h:1/api ":             "http://h:1",
	} {
		if got := serverBase(in); got != want {
			t.Errorf("serverBase(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestServerFlagForms: --server takes the URL weft serve prints (with /api) and a bare
// host:port; without a key the error names --api-key and WEFT_API_KEY.
func TestServerFlagForms(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "weft.db")
	key := createKey(t, dir, db, "alice")
	s := startServer(t, dir, nil, "--dir", repo("httpapi/testdata/agents"), "--db", db, "--model-script", chatScript(t, 1))
	hostPort := strings.TrimPrefix(s.base, "http://")
	for _, server := range []string{s.base + "/api", hostPort, s.base + "/"} {
		out, errOut, code := runWeft(t, dir, "threads", "list", "--server", server, "--api-key", key)
		if code != 0 {
			t.Errorf("--server %s: exit %d\n%s%s", server, code, out, errOut)
		}
	}
	_, errOut, code := runWeft(t, dir, "threads", "list", "--server", hostPort)
	if code != exitUsage || !strings.Contains(errOut, "--api-key") || !strings.Contains(errOut, "WEFT_API_KEY") || strings.Contains(errOut, "Authorization") {
		t.Errorf("no key: exit %d: %s", code, errOut)
	}
	_, errOut, code = runWeft(t, dir, "threads", "list", "--server", hostPort, "--api-key", "wft_wrong")
	if code != exitUsage || !strings.Contains(errOut, "--api-key") {
		t.Errorf("wrong key: exit %d: %s", code, errOut)
	}
}

// TestScaffoldReadme: weft init writes a README whose commands work as written in the new project
// (weft chat, interactive, is left out), and the scripted reply's pointer holds: weft threads show
// prints the tool's answer the reply cannot contain.
func TestScaffoldReadme(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	if out, errOut, code := runWeft(t, t.TempDir(), "init", dir); code != 0 || !strings.Contains(out, "Created") {
		t.Fatalf("init: exit %d %s%s", code, out, errOut)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	if !ok || !strings.Contains(block, "weft run assistant") {
		t.Fatalf("README has no command block:\n%s", readme)
	}
	ran := 0
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		args := strings.Fields(line)
		if args[0] != "weft" {
			t.Fatalf("not a weft command: %q", line)
		}
		if args[1] == "chat" {
			continue
		}
		// The message is the one quoted argument of weft run.
		if q := strings.Index(line, `"`); q >= 0 {
			end := strings.LastIndex(line, `"`)
			args = append(strings.Fields(line[:q]), line[q+1:end])
			args = append(args, strings.Fields(line[end+1:])...)
		}
		out, errOut, code := runWeft(t, dir, args[1:]...)
		if code != 0 {
			t.Errorf("%s: exit %d\n%s%s", line, code, out, errOut)
		}
		if args[1] == "run" && !strings.Contains(out, "weft threads show") {
			t.Errorf("the scripted reply does not say where the tool's answer is: %s", out)
		}
		ran++
	}
	if ran < 4 {
		t.Fatalf("only %d commands ran", ran)
	}
	list, _, _ := runWeft(t, dir, "threads", "list")
	var id string
	for _, f := range strings.Fields(list) {
		if strings.HasPrefix(f, "thr_") {
			id = f
		}
	}
	show, _, code := runWeft(t, dir, "threads", "show", id)
	if code != 0 || !regexp.MustCompile(`tool\(current_time\): \d{4}-\d\d-\d\dT`).MatchString(show) {
		t.Errorf("threads show %s: exit %d\n%s", id, code, show)
	}
}

// TestPromptyTypoStrict: a typo in .prompty front matter is a warning naming the key it resembles,
// and an error under weft validate --strict.
func TestPromptyTypoStrict(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"agents/models/fast.yaml":       "name: fast\nprovider: openai\nmodel: gpt-4o-mini\n",
		"agents/prompts/helper.prompty": "---\nname: helper\ndescription: Helps.\nmodel: fast\nmodle: fast\n---\nsystem:\nHelp.\n",
	})
	out, errOut, code := runWeft(t, dir, "validate")
	want := `prompts/helper.prompty: modle: unknown front-matter key "modle" (did you mean "model"?)`
	if code != 0 || !strings.Contains(out+errOut, want) {
		t.Errorf("validate: exit %d, want 0 and %q:\n%s%s", code, want, out, errOut)
	}
	out, errOut, code = runWeft(t, dir, "validate", "--strict")
	if code != exitDefinitions || !strings.Contains(out+errOut, want) {
		t.Errorf("validate --strict: exit %d, want %d:\n%s%s", code, exitDefinitions, out, errOut)
	}
}

// TestFirstErrors: an unknown agent gets a suggestion and the list; a YAML syntax error names the
// file from the working directory, in plain words; a missing key says --model-script and keeps no
// empty failed thread.
func TestFirstErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	if _, errOut, code := runWeft(t, t.TempDir(), "init", dir); code != 0 {
		t.Fatal(errOut)
	}
	_, errOut, code := runWeft(t, dir, "run", "asistant", "hi", "--model-script", "examples/hello.script.yaml")
	if code != exitUsage || !strings.Contains(errOut, `no agent named "asistant" in agents (did you mean "assistant"?); agents: assistant`) {
		t.Errorf("unknown agent: exit %d: %s", code, errOut)
	}
	out, errOut, code := runWeft(t, dir, "run", "assistant", "hi")
	if code != exitFailure || !strings.Contains(errOut, "OPENAI_API_KEY") || !strings.Contains(errOut, "--model-script") {
		t.Errorf("missing key: exit %d: %s%s", code, out, errOut)
	}
	if list, _, _ := runWeft(t, dir, "threads", "list"); strings.Contains(list, "thr_") {
		t.Errorf("a failed empty thread was kept:\n%s", list)
	}
	writeFiles(t, dir, map[string]string{"agents/agents/assistant.yaml": "name: assistant\ntype: ai_human\nsideA:\n  prompt: assistant\n   maxSteps: 10\n"})
	for _, args := range [][]string{{"validate"}, {"run", "assistant", "hi"}} {
		out, errOut, code = runWeft(t, dir, args...)
		if code != exitDefinitions || !strings.Contains(out+errOut, "agents/agents/assistant.yaml:4:11: syntax error: a `key:` where none can start") {
			t.Errorf("%v: exit %d: %s%s", args, code, out, errOut)
		}
	}
}

// TestMCPAnswersBeforeEOF: requests piped to weft mcp are all answered when standard input
// closes (only initialize was).
func TestMCPAnswersBeforeEOF(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"support","arguments":{"message":"Where is order 42?"}}}
`
	cmd := exec.Command(binary, "mcp", "--dir", repo("examples/support/agents"), "--db", ":memory:",
		"--model-script", repo("examples/support/demo.script.yaml"))
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "WEFT_DIR=", "OPENAI_API_KEY=")
	cmd.Stdin = strings.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ids := map[float64]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m struct {
			ID     *float64        `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.ID != nil {
			ids[*m.ID] = string(m.Result)
		}
	}
	if len(ids) != 3 || !strings.Contains(ids[2], `"support"`) || !strings.Contains(ids[3], "PC-77812") {
		t.Fatalf("answers %v, want ids 1, 2 and 3:\n%s", ids, out)
	}
}
