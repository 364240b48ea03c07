package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

const (
	crashRounds      = 80
	crashMaxDelay    = 200 * time.Millisecond
	crashModelDelay  = 25 * time.Millisecond
	crashLeaseTTL    = "300ms"
	crashLeaseRetry  = 350 * time.Millisecond
	crashRoundBudget = 20 * time.Second
	crashAnswerOK    = "done: appended"
	crashAnswerIntr  = "done: Failed to execute tool: Tool execution was interrupted by a restart; it may or may not have completed."
)

// crashServer is a fake OpenAI-compatible model that decides by the conversation it receives, so a
// restarted process sees the same behaviour: a user message last → one append_line call; a tool
// result last → the final text "done: <result>".
func crashServer(t *testing.T, requests *atomic.Int64) *httptest.Server {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		requests.Add(1)
		time.Sleep(crashModelDelay) // a window for kills during the model call
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Stream   bool `json:"stream"`
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(raw, &body); err != nil || len(body.Messages) == 0 || body.Stream {
			http.Error(w, "unexpected request: "+string(raw), http.StatusBadRequest)
			return
		}
		last := body.Messages[len(body.Messages)-1]
		var msg map[string]any
		finish := "stop"
		switch last.Role {
		case "user":
			id := "call_" + strconv.FormatInt(calls.Add(1), 10)
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": id, "type": "function", "function": map[string]any{"name": "append_line", "arguments": "{}"}}}}
			finish = "tool_calls"
		case "tool":
			msg = map[string]any{"role": "assistant", "content": "done: " + strings.TrimSpace(contentText(last.Content))}
		default:
			http.Error(w, "unexpected last role "+last.Role, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "cmpl", "object": "chat.completion", "model": "crash-llm",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// contentText flattens an OpenAI message content (a string or an array of text parts).
func contentText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, p := range v {
			if m, ok := p.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					b.WriteString(s)
				}
			}
		}
		return b.String()
	}
	return ""
}

// crashEnv is the environment of every weft child process of the crash test.
func crashEnv() []string {
	return append(os.Environ(), "WEFT_DIR=", "WEFT_DB=", "WEFT_MODEL_SCRIPT=", "WEFT_LEASE_TTL="+crashLeaseTTL,
		"OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "OPENROUTER_API_KEY=", "GOOGLE_API_KEY=", "GEMINI_API_KEY=",
		"GROQ_API_KEY=", "XAI_API_KEY=", "DEEPINFRA_API_KEY=", "CEREBRAS_API_KEY=")
}

// weftCmd runs the binary in dir to completion with the crash environment.
func weftCmd(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env = dir, crashEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

type crashDoc struct {
	Thread struct {
		Status string `json:"status"`
	} `json:"thread"`
	Messages []weft.Message `json:"messages"`
}

// crashState is what the store holds for a round's thread at one moment.
type crashState struct {
	threadID string
	doc      crashDoc
	queued   []weft.QueuedMessage
	calls    []weft.ToolCallRecord
}

// crashThreadIDs lists the thread ids of db (none when the file does not exist yet).
func crashThreadIDs(t *testing.T, dir, db string) ([]string, error) {
	if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	out, errOut, code := weftCmd(t, dir, "threads", "list", "--db", db)
	if code != 0 {
		return nil, fmt.Errorf("threads list: exit %d: %s", code, errOut)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 {
			ids = append(ids, f[0])
		}
	}
	return ids, nil
}

// crashSnapshot reads the round's thread: messages through `weft threads export`, the queue and the
// tool-call records straight from the store (no weft process runs at that moment).
func crashSnapshot(t *testing.T, dir, db, threadID string) (crashState, error) {
	s := crashState{threadID: threadID}
	out, errOut, code := weftCmd(t, dir, "threads", "export", threadID, "--db", db)
	if code != 0 {
		return s, fmt.Errorf("threads export: exit %d: %s", code, errOut)
	}
	if err := json.Unmarshal([]byte(out), &s.doc); err != nil {
		return s, fmt.Errorf("threads export: %v in %s", err, out)
	}
	ctx := context.Background()
	st, err := openSQLite(ctx, db, slog.New(slog.DiscardHandler), nil, nil)
	if err != nil {
		return s, err
	}
	defer st.Close()
	if s.queued, err = st.Queued(ctx, threadID); err != nil {
		return s, err
	}
	s.calls, err = st.ToolCalls(ctx, threadID)
	return s, err
}

func (s crashState) final() string {
	if n := len(s.doc.Messages); n > 0 {
		if m := s.doc.Messages[n-1]; m.Role == weft.RoleAssistant && len(m.ToolCalls) == 0 && strings.HasPrefix(m.Content, "done: ") {
			return m.Content
		}
	}
	return ""
}

func (s crashState) hasUser() bool {
	if len(s.queued) > 0 {
		return true
	}
	for _, m := range s.doc.Messages {
		if m.Role == weft.RoleUser {
			return true
		}
	}
	return false
}

type crashFigures struct {
	rounds, killedMidRun, finishedBeforeKill                                                                        int
	failedRounds, runningAtKill, interrupted, interruptedUnrun, executions, duplicates, lost, resumes, leaseRetries int
	maxResumeWait                                                                                                   time.Duration
	// killPoints counts the mid-run kills by what the store held right after them.
	killPoints map[string]int
}

// killPoint names the stage a killed run had persisted.
func (s crashState) killPoint() string {
	msgs := s.doc.Messages
	switch {
	case s.threadID == "":
		return "before the thread"
	case len(msgs) == 0 && len(s.queued) == 0:
		return "before the message"
	case len(msgs) == 0:
		return "message queued"
	case s.final() != "":
		return "final answer stored"
	}
	last := msgs[len(msgs)-1]
	switch {
	case last.Role == weft.RoleUser:
		return "awaiting the model"
	case last.Role == weft.RoleTool:
		return "tool result stored"
	case len(last.ToolCalls) > 0:
		for _, c := range s.calls {
			if c.Status == weft.CallRunning {
				return "tool call running"
			}
		}
		return "tool call pending"
	}
	return "other"
}

// TestCrashResumeSIGKILL kills the real binary with SIGKILL at random points of a run whose tool
// is a non-idempotent command appending a line to a file, then resumes the thread with fresh
// processes: no persisted message may be lost, the tool may never run twice, and
// every thread ends with the final answer.
func TestCrashResumeSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: starts and SIGKILLs the weft binary dozens of times (skipped with -short)")
	}
	seed := time.Now().UnixNano()
	if v := os.Getenv("WEFT_CRASH_SEED"); v != "" {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("WEFT_CRASH_SEED=%q: %v", v, err)
		}
		seed = s
	}
	t.Logf("seed %d (replay the delays with WEFT_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))

	var requests atomic.Int64
	srv := crashServer(t, &requests)
	dir := t.TempDir()

	fig := crashFigures{killPoints: map[string]int{}}
	start := time.Now()
	for round := 0; round < crashRounds; round++ {
		delay := time.Duration(rng.Int63n(int64(crashMaxDelay)))
		if !crashRound(t, dir, srv.URL, round, delay, &fig) {
			fig.failedRounds++
			if fig.failedRounds >= 5 {
				t.Errorf("stopping after %d failed rounds", fig.failedRounds)
				break
			}
		}
	}
	t.Logf("rounds %d in %s (%d failed): kills mid-run %d, runs finished before the kill %d",
		fig.rounds, time.Since(start).Round(time.Millisecond), fig.failedRounds, fig.killedMidRun, fig.finishedBeforeKill)
	t.Logf("calls running at the kill %d, interrupted results %d (%d where the tool never ran), tool executions %d, duplicated executions %d, lost messages %d",
		fig.runningAtKill, fig.interrupted, fig.interruptedUnrun, fig.executions, fig.duplicates, fig.lost)
	t.Logf("mid-run kills by persisted stage: %v", fig.killPoints)
	t.Logf("resume processes %d (lease-held retries %d), longest kill→answer %s, model requests %d",
		fig.resumes, fig.leaseRetries, fig.maxResumeWait.Round(time.Millisecond), requests.Load())
	if fig.duplicates != 0 || fig.lost != 0 {
		t.Errorf("duplicated executions %d, lost messages %d: want 0 and 0", fig.duplicates, fig.lost)
	}
}

// crashRound runs one round: start a run, SIGKILL its process group after delay, then resume with
// fresh processes until the thread has its final answer, and check the store. It reports whether
// the round passed.
func crashRound(t *testing.T, root, serverURL string, round int, delay time.Duration, fig *crashFigures) bool {
	t.Helper()
	roundFailed := false
	errorf := func(format string, a ...any) {
		t.Helper()
		roundFailed = true
		t.Errorf(format, a...)
	}
	fig.rounds++
	dir := filepath.Join(root, strconv.Itoa(round))
	db, lines := filepath.Join(dir, "weft.db"), filepath.Join(dir, "lines.txt")
	writeCrashProject(t, dir, serverURL, lines)
	if round == 0 {
		if out, errOut, code := weftCmd(t, dir, "validate"); code != 0 {
			t.Fatalf("the crash project does not validate: exit %d\n%s%s", code, out, errOut)
		}
	}
	where := fmt.Sprintf("round %d (delay %s)", round, delay)
	weftArgs := func(args ...string) []string { return append(args, "--db", db) }

	// 1. Start the run and kill its process group after delay.
	cmd := exec.Command(binary, weftArgs("run", "a", "go")...)
	cmd.Dir, cmd.Env = dir, crashEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	killedAt := time.Now()
	err := cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		fig.killedMidRun++
	} else {
		fig.finishedBeforeKill++
		if err != nil || strings.TrimSpace(out.String()) != crashAnswerOK {
			errorf("%s: the unkilled run ended with %v, stdout %q, stderr %q", where, err, out.String(), errOut.String())
			return false
		}
	}

	// 2. Snapshot what the kill left behind.
	ids, lerr := crashThreadIDs(t, dir, db)
	if lerr != nil {
		errorf("%s: after the kill: %v", where, lerr)
		return false
	}
	if len(ids) > 1 {
		errorf("%s: %d threads after the kill, want at most 1: %v", where, len(ids), ids)
		return false
	}
	var before crashState
	if len(ids) == 1 {
		if before, lerr = crashSnapshot(t, dir, db, ids[0]); lerr != nil {
			errorf("%s: after the kill: %v", where, lerr)
			return false
		}
		for _, c := range before.calls {
			if c.Status == weft.CallRunning {
				fig.runningAtKill++
			}
		}
	}

	if ws.Signaled() {
		fig.killPoints[before.killPoint()]++
	}

	// 3. Resume with fresh processes until the final answer is stored.
	after := before
	var log []string
	failures := 0
	for after.final() == "" {
		if time.Since(killedAt) > crashRoundBudget {
			errorf("%s: BUG? the thread never reached its final answer after %s; attempts:\n%s\nlast export: %s",
				where, crashRoundBudget, strings.Join(log, "\n"), dumpMessages(after.doc.Messages))
			return false
		}
		var args []string
		switch {
		case after.threadID == "":
			// The kill came before the thread was stored: nothing was persisted, start afresh.
			args = weftArgs("run", "a", "go")
		case !after.hasUser():
			// The thread was created but the message was never stored: post it to that thread.
			args = weftArgs("run", "a", "go", "--thread", after.threadID)
		default:
			args = weftArgs("run", "a", "--thread", after.threadID)
		}
		fig.resumes++
		rout, rerr, code := weftCmd(t, dir, args...)
		log = append(log, fmt.Sprintf("  %v → exit %d, stdout %q, stderr %q", args[:len(args)-2], code, rout, rerr))
		switch {
		case code == 0:
			failures = 0
		case strings.Contains(rerr, "running elsewhere"):
			fig.leaseRetries++
			time.Sleep(crashLeaseRetry)
		case strings.Contains(rerr, "empty encryption key"):
			// envcrypt.LoadOrCreateKeyFile once created the key file with O_EXCL and writes the key afterwards: a
			// kill in between leaves an empty key file that no later process can open.
			errorf("%s: BUG: the kill left an empty key file beside the database (envcrypt.LoadOrCreateKeyFile "+
				"creates it, then writes it: not atomic); the store can never be opened again:\n%s", where, strings.Join(log, "\n"))
			return false
		default:
			if failures++; failures >= 3 {
				errorf("%s: BUG? the resume keeps failing:\n%s", where, strings.Join(log, "\n"))
				return false
			}
			time.Sleep(crashLeaseRetry)
		}
		if ids, lerr = crashThreadIDs(t, dir, db); lerr != nil || len(ids) != 1 {
			errorf("%s: after a resume: threads %v, %v", where, ids, lerr)
			return false
		}
		if after, lerr = crashSnapshot(t, dir, db, ids[0]); lerr != nil {
			errorf("%s: after a resume: %v", where, lerr)
			return false
		}
	}
	if ws.Signaled() {
		if d := time.Since(killedAt); d > fig.maxResumeWait {
			fig.maxResumeWait = d
		}
	}

	// 4. Check the round.
	fail := func(format string, a ...any) {
		errorf("%s: %s\nbefore (after the kill): %s\nafter: %s\nresumes:\n%s", where, fmt.Sprintf(format, a...),
			dumpMessages(before.doc.Messages), dumpMessages(after.doc.Messages), strings.Join(log, "\n"))
	}
	data, rerr := os.ReadFile(lines)
	if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		t.Fatal(rerr)
	}
	executions := strings.Count(string(data), "\n")
	fig.executions += executions
	if executions > 1 {
		fig.duplicates += executions - 1
		fail("BUG: the non-idempotent tool ran %d times", executions)
	}

	msgs := after.doc.Messages
	byID := map[string]weft.Message{}
	for i, m := range msgs {
		if _, dup := byID[m.ID]; dup {
			fail("BUG: message id %s appears twice", m.ID)
		}
		byID[m.ID] = m
		if i > 0 && m.Seq != msgs[i-1].Seq+1 {
			fail("BUG: seq gap or disorder: %d after %d", m.Seq, msgs[i-1].Seq)
		}
	}
	for _, m := range before.doc.Messages {
		now, ok := byID[m.ID]
		switch {
		case !ok:
			fig.lost++
			fail("BUG: message %s (seq %d, %s) stored before the kill is gone", m.ID, m.Seq, m.Role)
		case now.Seq != m.Seq || now.Role != m.Role || (m.Status == weft.MessageCompleted && now.Content != m.Content):
			fig.lost++
			fail("BUG: message %s changed: seq %d→%d, role %s→%s, content %q→%q", m.ID, m.Seq, now.Seq, m.Role, now.Role, m.Content, now.Content)
		}
	}
	for _, q := range before.queued {
		if _, ok := byID[q.ID]; !ok {
			fig.lost++
			fail("BUG: the queued message %s (%q) stored before the kill never became a message", q.ID, q.Content)
		}
	}

	results := map[string]int{}
	var calls []string
	users := 0
	for _, m := range msgs {
		switch m.Role {
		case weft.RoleUser:
			users++
		case weft.RoleTool:
			results[m.ToolCallID]++
		case weft.RoleAssistant:
			for _, c := range m.ToolCalls {
				calls = append(calls, c.ID)
			}
		}
	}
	if users != 1 {
		fail("want exactly 1 user message, got %d", users)
	}
	if len(calls) != 1 {
		fail("want exactly 1 tool call, got %d", len(calls))
	}
	for _, id := range calls {
		if results[id] != 1 {
			fail("BUG: call %s has %d results, want 1", id, results[id])
		}
		delete(results, id)
	}
	if len(results) > 0 {
		fail("tool results without a call: %v", results)
	}

	wasRunning := false
	for _, c := range before.calls {
		wasRunning = wasRunning || c.Status == weft.CallRunning
	}
	switch after.final() {
	case crashAnswerOK:
		if executions != 1 {
			fail("BUG: the answer says the tool ran but the lines file has %d lines", executions)
		}
	case crashAnswerIntr:
		fig.interrupted++
		if executions == 0 {
			fig.interruptedUnrun++
		}
		if executions == 0 && !wasRunning {
			fail("BUG: interrupted result although the tool never ran and its call was not marked running")
		}
	default:
		fail("unexpected final answer %q", after.final())
	}
	return !roundFailed
}

// writeCrashProject writes a round's project: the fake model, a prompt with the append_line tool
// (a non-idempotent command appending one line to lines per execution) and agent a.
func writeCrashProject(t *testing.T, dir, serverURL, lines string) {
	t.Helper()
	files := map[string]string{
		"models/m.yaml": fmt.Sprintf("name: m\nprovider: openai-compatible\nmodel: crash-llm\n"+
			"providerOptions: {baseUrl: %q}\ncapabilities: {supportsStreaming: false}\n", serverURL+"/v1"),
		"prompts/p.yaml": "{name: p, toolDescription: Appends a line, model: m, prompt: Append a line with the tool then report its result., tools: [append_line]}\n",
		"agents/a.yaml":  "{name: a, sideA: {prompt: p}}\n",
		"tools/append_line.yaml": fmt.Sprintf(`kind: command
description: Append one line to the lines file (not idempotent).
command: [sh, -c, 'sleep 0.05; echo run >> "$LINES_FILE"; echo appended']
env: {LINES_FILE: %q}
`, lines),
	}
	for name, body := range files {
		p := filepath.Join(dir, "agents", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func dumpMessages(msgs []weft.Message) string {
	if len(msgs) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "\n  [%d] %s %s %s %q", m.Seq, m.ID, m.Role, m.Status, m.Content)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, " → %s id=%s", c.Name, c.ID)
		}
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " (for %s)", m.ToolCallID)
		}
	}
	return b.String()
}
