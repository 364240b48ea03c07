package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/weft-agents/weft/envcrypt"
)

// The end-to-end tests of weft chat and of weft run's progress line run the binary in a real
// terminal: a tmux session of 120×40, driven with send-keys and read with capture-pane.

// chatSecret is a thread secret the tests set with /env; no screen may show it.
const chatSecret = "sk-live-abc123456789"

// chatProject writes a project whose helper agent calls an echo tool, and a model script: a tool
// call, a reply quoting the secret and carrying escape sequences, two replies that stall after two
// chunks (for /stop and Ctrl-C), a reply for /continue, and one more that stalls (for /exit).
func chatProject(t *testing.T, dir string) (agents, script string) {
	writeFiles(t, dir, map[string]string{
		"agents/agents/helper.yaml": "name: helper\ntype: ai_human\nsideA: {prompt: helper, maxSteps: 8}\n",
		"agents/prompts/helper.yaml": "name: helper\nmodel: fast\ntoolDescription: Helps\nincludeChat: true\n" +
			"prompt: \"You help.\"\ntools: [echo]\n",
		"agents/models/fast.yaml": "name: fast\nprovider: test\nmodel: test\n",
		"agents/tools/echo.yaml": "kind: command\ndescription: Echo the arguments back.\nargs:\n  type: object\n" +
			"  properties:\n    text: {type: string}\n  required: [text]\ncommand: [cat]\ntimeout: 5s\n",
		"chat.script.yaml": `version: 1
options: {real_time: true, chunk_size: 4}
responses:
  - delay: 20ms
    text: Let me check.
    tool_calls:
      - {name: echo, arguments: {text: ping}}
  - text: "All done, pong. Token ` + chatSecret + ` here. \e]0;pwned\a\e[2J\e[HXX"
  - text: "Streaming slowly and more"
    stall_after: 2
  - text: "Another slow one"
    stall_after: 2
  - text: "Back again."
  - text: "Final words here"
    stall_after: 2
`,
	})
	return filepath.Join(dir, "agents"), filepath.Join(dir, "chat.script.yaml")
}

// term is a tmux session running one shell command.
type term struct {
	t    *testing.T
	sock string
}

// startTerm runs command (a shell line) in a new 120×40 terminal in dir. When it ends, the
// terminal shows "[exited CODE]".
func startTerm(t *testing.T, dir, command string) *term {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("WEFT_TEST_TERMINAL") != "" {
			t.Fatal("tmux is needed for the terminal tests (apt-get install tmux)")
		}
		t.Skip("no tmux: the terminal tests need it (CI sets WEFT_TEST_TERMINAL=1 and installs it)")
	}
	tmp := t.TempDir()
	tm := &term{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	// No test may reach a real provider: blank every provider key a developer may have exported.
	// The shell outlives a Ctrl-C that interrupts its command (a trap, unlike an ignored signal,
	// is not inherited).
	script := "trap : INT\nexport WEFT_DIR= WEFT_ENCRYPTION_KEY= OPENAI_API_KEY= ANTHROPIC_API_KEY= OPENROUTER_API_KEY= GOOGLE_API_KEY= GEMINI_API_KEY= LANG=C.UTF-8\n" +
		"cd " + shellQuote(dir) + "\n" + command + "\necho \"[exited $?]\"\nexec cat\n"
	sh := filepath.Join(tmp, "term.sh")
	if err := os.WriteFile(sh, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tm.tmux("new-session", "-d", "-s", "weft", "-x", "120", "-y", "40", "sh "+shellQuote(sh))
	t.Cleanup(func() { exec.Command("tmux", "-S", tm.sock, "kill-server").Run() })
	return tm
}

func (tm *term) tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-u", "-f", "/dev/null", "-S", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// typeLine types text and Enter.
func (tm *term) typeLine(text string) {
	tm.tmux("send-keys", "-t", "weft", "-l", text)
	tm.tmux("send-keys", "-t", "weft", "Enter")
}

// keys sends named keys (C-c, C-d, Enter).
func (tm *term) keys(keys ...string) {
	tm.tmux(append([]string{"send-keys", "-t", "weft"}, keys...)...)
}

// screen is the terminal's text, its history included.
func (tm *term) screen() string {
	return tm.tmux("capture-pane", "-p", "-J", "-t", "weft", "-S", "-2000")
}

// waitFor waits until the screen holds every want (n times for the first, when n > 1).
func (tm *term) waitFor(n int, want ...string) string {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := tm.screen()
		ok := strings.Count(s, want[0]) >= max(n, 1)
		for _, w := range want[1:] {
			ok = ok && strings.Contains(s, w)
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the terminal does not show %q:\n%s", want, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func shellQuote(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// checkChatScreen asserts what no chat screen may show: the secret, or the effects of the escape
// sequences in the model's reply (a new title, a cleared screen).
func checkChatScreen(t *testing.T, tm *term, s string) {
	t.Helper()
	if strings.Contains(s, chatSecret) {
		t.Errorf("the screen shows the secret:\n%s", s)
	}
	if title := strings.TrimSpace(tm.tmux("display-message", "-p", "-t", "weft", "#{pane_title}")); strings.Contains(title, "pwned") {
		t.Errorf("a reply retitled the terminal: %q", title)
	}
}

// TestChatTerminal is weft chat on a local database in a real terminal: a message, the tool call
// and result, the streamed reply, /stop and Ctrl-C mid-run (the chat stays), /continue, /thread,
// /json and /exit (mid-run: the run stops). Escape sequences in a reply stay text, and the secret
// never shows.
func TestChatTerminal(t *testing.T) {
	dir := t.TempDir()
	agents, script := chatProject(t, dir)
	tm := startTerm(t, dir, shellQuote(binary, "chat", "helper", "--dir", agents, "--db", filepath.Join(dir, "chat.db"), "--model-script", script))
	tm.waitFor(1, "idle · /help for commands")

	tm.typeLine("/env TOKEN=" + chatSecret)
	tm.waitFor(1, "-- TOKEN (secret) will be set when the thread is created")
	tm.typeLine("hello there")
	s := tm.waitFor(1, "you> hello there", "helper> Let me check.", `  -> echo {"text":"ping"}`, `  <- echo: {"text":"ping"}`,
		"helper> All done, pong. Token [redacted] here. ␛]0;pwned␇␛[2J␛[HXX", "thr_")
	checkChatScreen(t, tm, s)

	// A reply streams: its first chunks show before it is complete; /stop ends it.
	tm.typeLine("tell me more")
	tm.waitFor(1, "helper> Streamin", "Ctrl-C stops")
	tm.typeLine("/stop")
	tm.waitFor(1, "helper> Streamin [cut off]", "-- run stopped: aborted_by_user")

	// Ctrl-C stops the run, not the chat.
	tm.typeLine("once more")
	tm.waitFor(1, "helper> Another")
	tm.keys("C-c")
	tm.waitFor(2, "-- run stopped: aborted_by_user", "helper> Another [cut off]")
	tm.typeLine("/continue a")
	tm.waitFor(1, "helper> Back again.")

	tm.typeLine("/thread")
	s = tm.waitFor(1, "-- thread thr_")
	id := strings.Fields(s[strings.Index(s, "-- thread thr_")+len("-- thread "):])[0]
	tm.typeLine("/json")
	s = tm.waitFor(1, `"id": "`+id+`"`, `"consumed": 5`)
	checkChatScreen(t, tm, s)
	// Leaving mid-run stops the run.
	tm.typeLine("last one")
	tm.waitFor(1, "helper> Final w")
	tm.typeLine("/exit")
	tm.waitFor(1, "[exited 0]")

	// The conversation was kept, with its three stops.
	out, errOut, code := runWeft(t, dir, "threads", "show", id, "--db", filepath.Join(dir, "chat.db"))
	if code != 0 || !strings.Contains(out, "All done, pong.") || !strings.Contains(out, "Back again.") || strings.Contains(out, chatSecret) ||
		strings.Count(out, "system: Execution stopped by user.") != 3 {
		t.Fatalf("threads show: exit %d\n%s%s", code, out, errOut)
	}
}

// TestChatServer is weft chat against weft serve: the same conversation over the API and its
// event stream, /stop mid-run, /exit.
func TestChatServer(t *testing.T) {
	dir := t.TempDir()
	agents, script := chatProject(t, dir)
	s := startServer(t, dir, nil, "--dir", agents, "--db", filepath.Join(dir, "serve.db"), "--model-script", script, "--no-auth")
	tm := startTerm(t, dir, shellQuote(binary, "chat", "helper", "--server", s.base))
	tm.waitFor(1, "idle · /help for commands")
	tm.typeLine("/env TOKEN=" + chatSecret)
	tm.waitFor(1, "-- TOKEN (secret) will be set when the thread is created")
	tm.typeLine("hello there")
	screen := tm.waitFor(1, "you> hello there", "helper> Let me check.", `  -> echo {"text":"ping"}`, `  <- echo: {"text":"ping"}`,
		"helper> All done, pong. Token [redacted] here. ␛]0;pwned␇␛[2J␛[HXX")
	checkChatScreen(t, tm, screen)
	tm.typeLine("tell me more")
	tm.waitFor(1, "helper> Streamin", "Ctrl-C stops")
	tm.typeLine("/stop")
	tm.waitFor(1, "helper> Streamin [cut off]", "-- run stopped: aborted_by_user")
	tm.typeLine("/thread")
	tm.waitFor(1, "-- thread thr_")
	tm.typeLine("/exit")
	tm.waitFor(1, "[exited 0]")
}

// TestChatLineMode is weft chat with standard input and output piped: a message or command per
// line in, plain transcript lines out, no terminal control sequences.
func TestChatLineMode(t *testing.T) {
	dir := t.TempDir()
	agents, script := chatProject(t, dir)
	cmd := exec.Command(binary, "chat", "helper", "--dir", agents, "--db", ":memory:", "--model-script", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WEFT_DIR=", "OPENAI_API_KEY=")
	cmd.Stdin = strings.NewReader("/env TOKEN=" + chatSecret + "\nhello there\n/thread\n/bogus\n/exit\nnever sent\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	got := out.String()
	want := "-- TOKEN (secret) will be set when the thread is created\n" +
		"helper> Let me check.\n" +
		"  -> echo {\"text\":\"ping\"}\n" +
		"  <- echo: {\"text\":\"ping\"}\n" +
		"helper> All done, pong. Token [redacted] here. ␛]0;pwned␇␛[2J␛[HXX\n" +
		"-- thread thr_"
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "\n!! unknown command /bogus (try /help)\n") {
		t.Errorf("stdout:\n%s\nwant it to start with:\n%s", got, want)
	}
	if strings.ContainsAny(got, "\x1b\a\r") || strings.Contains(got+errOut.String(), chatSecret) || strings.Contains(got, "never sent") {
		t.Errorf("stdout has control characters, the secret, or went past /exit: %q", got)
	}
}

// TestChatLineModeInterrupt: in line mode an interrupt stops the run, and the chat goes on.
func TestChatLineModeInterrupt(t *testing.T) {
	dir := t.TempDir()
	agents, _ := chatProject(t, dir)
	writeFiles(t, dir, map[string]string{"stall.script.yaml": `version: 1
options: {real_time: true, chunk_size: 4}
responses:
  - tool_calls: [{name: echo, arguments: {text: ping}}]
  - {text: "Streaming slowly and more", stall_after: 2}
  - text: Still here.
`})
	cmd := exec.Command(binary, "chat", "helper", "--dir", agents, "--db", ":memory:", "--model-script", "stall.script.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WEFT_DIR=", "OPENAI_API_KEY=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut syncBuffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	waitLine := func(prefix string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stdout ended before %q:\n%s\nstderr: %s", prefix, strings.Join(got, "\n"), errOut.String())
				}
				got = append(got, l)
				if strings.HasPrefix(l, prefix) {
					return
				}
			case <-timeout:
				t.Fatalf("no line %q:\n%s", prefix, strings.Join(got, "\n"))
			}
		}
	}
	io.WriteString(stdin, "hello\n")
	waitLine("  <- echo:") // the run is in its second step now
	cmd.Process.Signal(os.Interrupt)
	waitLine("-- run stopped: aborted_by_user")
	io.WriteString(stdin, "again\n")
	waitLine("helper> Still here.")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s\nstderr: %s", err, strings.Join(got, "\n"), errOut.String())
	}
}

// TestRunProgress: on a terminal, weft run's standard error shows the run's progress (steps,
// tool calls, tokens) while it runs, and clears it, for a local run and with --server; piped, it
// shows nothing.
func TestRunProgress(t *testing.T) {
	dir := t.TempDir()
	agents, _ := chatProject(t, dir)
	writeFiles(t, dir, map[string]string{
		"slow.script.yaml": "version: 1\noptions: {real_time: true}\nresponses:\n" +
			"  - tool_calls: [{name: echo, arguments: {text: ping}}]\n" +
			"  - {delay: 100s, text: late}\n",
		"quick.script.yaml": "- tool_calls: [{name: echo, arguments: {text: ping}}]\n- text: Quick answer.\n",
	})

	t.Run("terminal", func(t *testing.T) {
		tm := startTerm(t, dir, shellQuote(binary, "run", "helper", "hello", "--dir", agents, "--db", ":memory:", "--model-script", "slow.script.yaml")+" > out.txt")
		// Tokens are ⌈chars/4⌉ of request and reply: the first call's count shows before the second answers.
		tm.waitFor(1, "weft: step 2 · 1 tool call · ", " tokens · thinking")
		tm.keys("C-c")
		s := tm.waitFor(1, "[exited 130]", "weft: interrupted")
		if strings.Contains(s, "· thinking") {
			t.Errorf("the progress line stayed after the run:\n%s", s)
		}
	})
	t.Run("server", func(t *testing.T) {
		sdir := t.TempDir()
		s := startServer(t, sdir, nil, "--dir", agents, "--db", filepath.Join(sdir, "serve.db"),
			"--model-script", filepath.Join(dir, "slow.script.yaml"), "--no-auth")
		tm := startTerm(t, dir, shellQuote(binary, "run", "helper", "hello", "--server", s.base)+" > out.txt")
		tm.waitFor(1, "weft: step 2 · 1 tool call · ", " tokens · thinking")
		tm.keys("C-c")
		if s := tm.waitFor(1, "[exited 130]"); strings.Contains(s, "· thinking") {
			t.Errorf("the progress line stayed after the run:\n%s", s)
		}
	})
	t.Run("pipe", func(t *testing.T) {
		out, errOut, code := runWeft(t, dir, "run", "helper", "hello", "--dir", agents, "--db", ":memory:", "--model-script", "quick.script.yaml")
		if code != 0 || out != "Quick answer.\n" || errOut != "" {
			t.Fatalf("exit %d\nstdout: %q\nstderr: %q", code, out, errOut)
		}
	})
}

// resize sets the terminal's size, as a user dragging the window does.
func (tm *term) resize(cols, rows int) {
	tm.tmux("resize-window", "-t", "weft", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows))
}

// replyLines returns the screen lines of the reply that starts with first and ends with a line
// holding last (the last such reply).
func replyLines(t *testing.T, screen, first, last string) []string {
	t.Helper()
	lines := strings.Split(screen, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ") // capture-pane -J keeps the cells' trailing spaces
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.HasPrefix(lines[i], first) {
			continue
		}
		for j := i; j < len(lines); j++ {
			if strings.Contains(lines[j], last) {
				return lines[i : j+1]
			}
		}
	}
	t.Fatalf("no reply %q…%q on the screen:\n%s", first, last, screen)
	return nil
}

// checkWrapped asserts that reply lines fit in width-1 columns, broke only between words (they
// join with single spaces into text), and, when wide is set, that some line is wider than wide
// (the new width is used).
func checkWrapped(t *testing.T, lines []string, text string, width, wide int) {
	t.Helper()
	longest := 0
	for _, l := range lines {
		longest = max(longest, utf8.RuneCountInString(l))
	}
	if longest > width-1 || longest <= wide || strings.Join(lines, " ") != text {
		t.Errorf("at %d columns the reply is (longest line %d, want > %d):\n%s\nwant the words of:\n%s",
			width, longest, wide, strings.Join(lines, "\n"), text)
	}
}

// TestChatTerminalStreams: a reply streams into the terminal chunk by chunk (its text grows on the
// screen before it is complete); printed lines wrap at word boundaries to the terminal's width and
// follow a resize; Ctrl-C at idle never leaves; /thread tells the thread's agent, messages and
// status and the command that resumes it, which works as printed. The key file the new database
// gets is announced in words before the chat starts, not as a log record inside it.
func TestChatTerminalStreams(t *testing.T) {
	dir := t.TempDir()
	chatProject(t, dir)
	const first = "Streaming arrives in small pieces while you watch, and every long line wraps between words rather than inside them, until THE-END."
	const second = "A second reply, printed after the terminal grew wider: its lines are as long as the new width allows, and still break between words, never inside a word like supercalifragilistic, up to SECOND-END."
	writeFiles(t, dir, map[string]string{"s.yaml": "version: 1\noptions: {real_time: true, chunk_size: 2, chunk_delay: 60ms}\nresponses:\n" +
		"  - text: \"" + first + "\"\n  - text: \"" + second + "\"\n"})
	tm := startTerm(t, dir, shellQuote(binary, "chat", "helper", "--db", "chat.db", "--model-script", "s.yaml"))
	tm.resize(60, 40)
	s := tm.waitFor(1, "idle · /help for commands")
	notice := "weft: created chat.db.key, the encryption key of chat.db: keep it with the database"
	if i := strings.Index(s, notice); i < 0 || i > strings.Index(s, "idle · /help") || strings.Contains(s, "level=WARN") {
		t.Errorf("the key file notice is not a line of its own above the chat:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(dir, "chat.db.key")); err != nil {
		t.Errorf("the database's key file: %v", err)
	}

	tm.typeLine("hello")
	partial := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for {
		s = tm.screen()
		if strings.Contains(s, "THE-END.") {
			break
		}
		if i := strings.LastIndex(s, "helper> "); i >= 0 {
			live, _, _ := strings.Cut(s[i:], "\nthr_")
			partial[live] = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reply never ended:\n%s", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(partial) < 3 {
		var seen []string
		for p := range partial {
			seen = append(seen, p)
		}
		t.Errorf("the reply did not stream in: %d partial states seen: %q", len(partial), seen)
	}
	s = tm.waitFor(1, "THE-END.", "idle · /help")
	checkWrapped(t, replyLines(t, s, "helper> Streaming", "THE-END."), "helper> "+first, 60, 0)

	tm.resize(90, 40)
	tm.typeLine("again")
	s = tm.waitFor(1, "SECOND-END.", "idle · /help")
	checkWrapped(t, replyLines(t, s, "helper> A second", "SECOND-END."), "helper> "+second, 90, 59)

	// Ctrl-C with nothing running, however often, keeps the chat and says how to leave.
	for range 3 {
		tm.keys("C-c")
	}
	tm.waitFor(1, "nothing runs · to leave: /exit or Ctrl-D")
	tm.tmux("send-keys", "-t", "weft", "-l", "draft")
	tm.waitFor(1, "> draft")
	tm.keys("C-c")
	if s := tm.waitFor(1, "line cleared · to leave: /exit or Ctrl-D"); strings.Contains(s, "> draft") {
		t.Errorf("Ctrl-C left the typed line:\n%s", s)
	}

	tm.resize(200, 40)
	tm.typeLine("/thread")
	s = tm.waitFor(1, "-- resume it with: weft chat helper --thread thr_")
	if strings.Contains(s, "[exited") {
		t.Fatalf("Ctrl-C left the chat:\n%s", s)
	}
	info := s[strings.LastIndex(s, "-- thread thr_"):]
	id := strings.Fields(info[len("-- thread "):])[0]
	if want := "-- thread " + id + " · agent helper · 4 messages · awaiting_human (stop_on_response)\n"; !strings.HasPrefix(info, want) {
		t.Errorf("/thread says:\n%s\nwant it to start with %q", info, want)
	}
	resume := s[strings.LastIndex(s, "-- resume it with: ")+len("-- resume it with: "):]
	resume, _, _ = strings.Cut(resume, "\n")
	resume = strings.TrimRight(resume, " ")
	if want := "weft chat helper --thread " + id + " --db chat.db --model-script s.yaml"; resume != want {
		t.Errorf("resume command %q, want %q", resume, want)
	}
	tm.keys("C-d")
	tm.waitFor(1, "[exited 0]")

	// The printed command resumes the thread.
	tm2 := startTerm(t, dir, shellQuote(binary)+strings.TrimPrefix(resume, "weft"))
	tm2.waitFor(1, id+" · idle · /help for commands")
	tm2.typeLine("/thread")
	tm2.waitFor(1, "-- thread "+id+" · agent helper · 4 messages")
	if s := tm2.screen(); strings.Contains(s, "weft: created") {
		t.Errorf("a second chat on the database created a key again:\n%s", s)
	}
	tm2.typeLine("/exit")
	tm2.waitFor(1, "[exited 0]")
}

// TestChatKeyNoticeLineMode: piped, the key file notice goes to standard error in words, and the
// transcript on standard output stays clean.
func TestChatKeyNoticeLineMode(t *testing.T) {
	dir := t.TempDir()
	agents, script := chatProject(t, dir)
	cmd := exec.Command(binary, "chat", "helper", "--dir", agents, "--db", filepath.Join(dir, "c.db"), "--model-script", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WEFT_DIR=", "OPENAI_API_KEY=", "WEFT_ENCRYPTION_KEY=")
	cmd.Stdin = strings.NewReader("/exit\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	want := "weft: created c.db.key, the encryption key of c.db: keep it with the database (its secrets cannot be read without it), or set WEFT_ENCRYPTION_KEY\n"
	if errOut.String() != want || out.Len() != 0 {
		t.Errorf("stderr %q\nwant %q\nstdout %q", errOut.String(), want, out.String())
	}
}

// TestKeyFileOfOldDatabase: a database made before databases had key files of their own, sealed
// with the weft.key its directory's databases shared, still decrypts its secrets; it gets its own
// key file with that key, weft.key stays, and a new database beside it gets a new key.
func TestKeyFileOfOldDatabase(t *testing.T) {
	dir := t.TempDir()
	key := envcrypt.NewKey()
	weft := func(env string, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "WEFT_ENCRYPTION_KEY="+env)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("weft %v: %v\n%s%s", args, err, out.String(), errOut.String())
		}
		return out.String(), errOut.String()
	}
	// The old layout: old.db sealed with the key in the directory's weft.key.
	weft(hex.EncodeToString(key), "env", "set", "MODE", "fast-and-loud", "--type", "text", "--instance", "--db", "old.db")
	if err := os.WriteFile(filepath.Join(dir, "weft.key"), []byte(envcrypt.EncodeKey(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut := weft("", "env", "list", "--instance", "--db", "old.db")
	if !strings.Contains(out, "fast-and-loud") || errOut != "" {
		t.Fatalf("the old database's value: stdout %q stderr %q", out, errOut)
	}
	own, err := envcrypt.ReadKeyFile(filepath.Join(dir, "old.db.key"))
	if err != nil || !bytes.Equal(own, key) {
		t.Fatalf("old.db.key: %v (same key: %v)", err, bytes.Equal(own, key))
	}
	if shared, err := envcrypt.ReadKeyFile(filepath.Join(dir, "weft.key")); err != nil || !bytes.Equal(shared, key) {
		t.Fatalf("weft.key changed: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "weft.key")); err != nil {
		t.Fatal(err)
	}
	if out, _ := weft("", "env", "list", "--instance", "--db", "old.db"); !strings.Contains(out, "fast-and-loud") {
		t.Fatalf("without weft.key: %q", out)
	}
	_, errOut = weft("", "env", "set", "MODE", "x", "--type", "text", "--instance", "--db", "new.db")
	if fresh, err := envcrypt.ReadKeyFile(filepath.Join(dir, "new.db.key")); err != nil || bytes.Equal(fresh, key) {
		t.Errorf("new.db.key: %v (the old key: %v)", err, bytes.Equal(fresh, key))
	}
	if !strings.Contains(errOut, "new.db.key") {
		t.Errorf("no warning naming the created key file: %q", errOut)
	}
}
