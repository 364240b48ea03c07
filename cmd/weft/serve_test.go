package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

const e2eSecret = "s3cr3t-value-123"

// chatScript writes a model script answering n turns of the httpapi test agent: each an echo
// call, then a reply quoting the thread's secret.
func chatScript(t *testing.T, n int) string {
	var b strings.Builder
	b.WriteString("version: 1\noptions: {real_time: true, chunk_size: 8}\nresponses:\n")
	for range n {
		b.WriteString("  - match: {prompt: chat}\n    delay: 20ms\n    tool_calls:\n      - {name: echo, arguments: {text: ping}}\n")
		b.WriteString("  - match: {prompt: chat}\n    delay: 20ms\n    text: \"Done. The token was " + e2eSecret + ", all good.\"\n")
	}
	p := filepath.Join(t.TempDir(), "chat.script.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// syncBuffer is a bytes.Buffer safe for the process's writer and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// server is a running weft serve process.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	stderr *syncBuffer
	done   chan error
}

// startServer runs weft serve in dir with args and waits for its address.
func startServer(t *testing.T, dir string, env []string, args ...string) *server {
	t.Helper()
	return startProcess(t, dir, env, "weft: serving ", append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
}

// startProcess runs the binary with args in dir and waits for the line starting with banner that
// gives its base URL (the rest of the line, less a trailing /api or /).
func startProcess(t *testing.T, dir string, env []string, banner string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"WEFT_DIR=", "OPENAI_API_KEY="}, env...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	addr := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if a, ok := strings.CutPrefix(lines.Text(), banner); ok {
				addr <- strings.TrimSuffix(strings.TrimSuffix(a, "/api"), "/")
			}
		}
	}()
	go func() { s.done <- cmd.Wait() }()
	select {
	case s.base = <-addr:
	case err := <-s.done:
		t.Fatalf("weft %s exited: %v\n%s", args[0], err, s.stderr)
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("weft %s did not start\n%s", args[0], s.stderr)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop() {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Fatalf("weft serve after SIGTERM: %v\n%s", err, s.stderr)
		}
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		s.t.Fatalf("weft serve ignored SIGTERM\n%s", s.stderr)
	}
}

// call sends a plain HTTP request and returns status and body.
func (s *server) call(method, path, key, body string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// must is call expecting a status, decoding the JSON answer into dst when non-nil.
func (s *server) must(method, path, key, body string, want int, dst any) {
	s.t.Helper()
	code, out := s.call(method, path, key, body)
	if code != want {
		s.t.Fatalf("%s %s: %d, want %d: %.400s", method, path, code, want, out)
	}
	if dst != nil {
		if err := json.Unmarshal([]byte(out), dst); err != nil {
			s.t.Fatalf("%s %s: %v: %s", method, path, err, out)
		}
	}
}

// createKey runs weft keys create and returns the key.
func createKey(t *testing.T, dir, db, user string) string {
	t.Helper()
	out, errOut, code := runWeft(t, dir, "keys", "create", "--db", db, "--user", user)
	key := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(key, "wft_") || strings.Contains(errOut, key) {
		t.Fatalf("keys create: exit %d\n%s\n%s", code, out, errOut)
	}
	return key
}

type sseFrame struct {
	typ, id string
	data    map[string]any
}

// openSSE starts reading an SSE stream with plain HTTP.
func openSSE(t *testing.T, ctx context.Context, url, key, lastID string) <-chan sseFrame {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	ch := make(chan sseFrame, 1024)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var f sseFrame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.typ != "" {
					ch <- f
				}
				f = sseFrame{}
			case strings.HasPrefix(line, "event: "):
				f.typ = line[7:]
			case strings.HasPrefix(line, "id: "):
				f.id = line[4:]
			case strings.HasPrefix(line, "data: "):
				json.Unmarshal([]byte(line[6:]), &f.data)
			}
		}
	}()
	return ch
}

func framesUntil(t *testing.T, ch <-chan sseFrame, typ string) []sseFrame {
	t.Helper()
	var got []sseFrame
	timeout := time.After(20 * time.Second)
	for {
		select {
		case f, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended before %s", typ)
			}
			got = append(got, f)
			if f.typ == typ {
				return got
			}
		case <-timeout:
			t.Fatalf("no %s; got %d frames", typ, len(got))
		}
	}
}

// TestServeEndToEnd starts the real binary and drives it over plain HTTP: keys from the CLI,
// auth refusals, a thread's run watched over SSE and WebSocket, and the 409/413/422 cases; then a
// graceful SIGTERM. No response or log line shows a key or the thread's secret.
func TestServeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "data", "weft.db")
	alice := createKey(t, dir, db, "alice")
	bob := createKey(t, dir, db, "bob")
	admin := "wft_" + strings.Repeat("a", 52)
	s := startServer(t, dir, []string{"WEFT_ADMIN_KEY=" + admin}, "--dir", repo("httpapi/testdata/agents"), "--db", db,
		"--model-script", chatScript(t, 4), "--log-format", "json", "--workers", "2")

	s.must("GET", "/api/health", "", "", 200, nil)
	s.must("GET", "/api/threads", "", "", 401, nil)
	s.must("GET", "/api/threads?api_key="+alice, "", "", 401, nil)
	s.must("GET", "/api/users", alice, "", 403, nil)
	s.must("GET", "/api/users", admin, "", 200, nil)
	var created struct {
		Thread struct{ ID string } `json:"thread"`
	}
	s.must("POST", "/api/threads", alice, `{"agent":"chat","env":{"TOKEN":"`+e2eSecret+`"}}`, 201, &created)
	id := created.Thread.ID
	var bobs struct {
		Thread struct{ ID string } `json:"thread"`
	}
	s.must("POST", "/api/threads", bob, `{"agent":"chat"}`, 201, &bobs)
	s.must("GET", "/api/threads/"+bobs.Thread.ID, alice, "", 404, nil)
	s.must("POST", "/api/threads", alice, `{"agent":"vault"}`, 422, nil)
	s.must("POST", "/api/threads", alice, `{"agent":"chat","x":1}`, 400, nil)
	s.must("POST", "/api/threads/"+id+"/messages", alice, `{"content":"`+strings.Repeat("x", 21<<20)+`"}`, 413, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sse := openSSE(t, ctx, s.base+"/api/threads/"+id+"/events", alice, "")
	wsURL := "ws" + strings.TrimPrefix(s.base, "http") + "/api/threads/" + id + "/stream"
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + alice}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	time.Sleep(100 * time.Millisecond)
	s.must("POST", "/api/threads/"+id+"/messages", alice, `{"content":"hello"}`, 202, nil)

	var sseTypes []string
	for _, f := range framesUntil(t, sse, "run_stopped") {
		if f.typ != "message_chunk" {
			sseTypes = append(sseTypes, f.typ)
		}
		if f.data["thread_id"] != id {
			t.Fatalf("frame of another thread: %v", f.data)
		}
	}
	var wsTypes []string
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), e2eSecret) {
			t.Fatalf("a WebSocket frame shows the secret: %s", b)
		}
		var m struct{ Type string }
		json.Unmarshal(b, &m)
		if m.Type != "message_chunk" {
			wsTypes = append(wsTypes, m.Type)
		}
		if m.Type == "run_stopped" {
			break
		}
	}
	want := "thread_created run_started step_started llm_request message llm_response message tool_started message tool_completed step_completed step_started llm_request llm_response message run_stopped"
	if strings.Join(sseTypes, " ") != want || strings.Join(wsTypes, " ") != want {
		t.Fatalf("events\n sse %v\n  ws %v\nwant %s", sseTypes, wsTypes, want)
	}
	var msgs struct {
		Items []struct{ Role, Content string }
		Total int
	}
	s.must("GET", "/api/threads/"+id+"/messages", alice, "", 200, &msgs)
	if msgs.Total != 4 || !strings.Contains(msgs.Items[3].Content, "[redacted]") {
		t.Fatalf("messages %+v", msgs)
	}
	s.must("POST", "/api/threads/"+id+"/terminate", alice, "", 200, nil)
	var refused struct{ Error struct{ Code string } }
	s.must("POST", "/api/threads/"+id+"/messages", alice, `{"content":"again"}`, 409, &refused)
	if refused.Error.Code != "thread_terminated" {
		t.Fatalf("code %q", refused.Error.Code)
	}

	// The CLI lists and revokes keys against the same database, the server refuses it at once.
	out, _, code := runWeft(t, dir, "keys", "list", "--db", db)
	if code != 0 || strings.Count(out, "key_") != 2 || strings.Contains(out, bob) {
		t.Fatalf("keys list: %d\n%s", code, out)
	}
	var bobKey string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, " bob ") {
			bobKey = strings.Fields(line)[0]
		}
	}
	if _, errOut, code := runWeft(t, dir, "keys", "revoke", "--db", db, bobKey); code != 0 {
		t.Fatalf("keys revoke: %d %s", code, errOut)
	}
	s.must("GET", "/api/threads", bob, "", 401, nil)

	s.stop()
	logs := s.stderr.String()
	for _, secret := range []string{alice, bob, admin, e2eSecret} {
		if strings.Contains(logs, secret) {
			t.Fatalf("the log shows a secret:\n%s", logs)
		}
	}
	if !strings.Contains(logs, `"msg":"request"`) || !strings.Contains(logs, `"msg":"stopped"`) || !strings.Contains(logs, `"user":"usr_`) {
		t.Fatalf("want JSON request logs and a clean stop:\n%.2000s", logs)
	}
}

// TestServeNoAuthOnlyOnLoopback: --no-auth on a non-loopback address is refused unless
// --insecure.
func TestServeNoAuthOnlyOnLoopback(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := runWeft(t, dir, "serve", "--no-auth", "--addr", "0.0.0.0:0", "--dir", repo("httpapi/testdata/agents"),
		"--db", filepath.Join(dir, "w.db"))
	if code != exitUsage || !strings.Contains(errOut, "--insecure") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	s := startServer(t, dir, nil, "--no-auth", "--dir", repo("httpapi/testdata/agents"), "--db", filepath.Join(dir, "w.db"))
	s.must("GET", "/api/threads", "", "", 200, nil)
	s.stop()
	// A weak admin key is refused at start.
	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--dir", repo("httpapi/testdata/agents"), "--db", filepath.Join(dir, "w.db"))
	cmd.Env = append(os.Environ(), "WEFT_ADMIN_KEY=short")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "at least 24") || strings.Contains(string(out), "short") {
		t.Fatalf("a weak admin key: %v\n%s", err, out)
	}
}

// TestServeResumeAcrossRestart: a subscriber watches a run, the server is killed (SIGKILL) in the
// middle of it and started again; the run resumes on its own, and the subscriber, reconnecting
// with the cursor of the last event it received, gets every recorded event of the thread exactly
// once, in order, through the run's end.
func TestServeResumeAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "weft.db")
	key := createKey(t, dir, db, "alice")
	script := filepath.Join(dir, "slow.script.yaml")
	os.WriteFile(script, []byte(`version: 1
options: {real_time: true}
responses:
  - match: {prompt: chat}
    delay: 1500ms
    tool_calls:
      - {name: echo, arguments: {text: ping}}
  - match: {prompt: chat}
    text: Done.
`), 0o644)
	args := []string{"--dir", repo("httpapi/testdata/agents"), "--db", db, "--model-script", script}
	s := startServer(t, dir, []string{"WEFT_LEASE_TTL=1s"}, args...)
	var created struct {
		Thread struct{ ID string } `json:"thread"`
	}
	s.must("POST", "/api/threads", key, `{"agent":"chat"}`, 201, &created)
	path := "/api/threads/" + created.Thread.ID + "/events"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first := openSSE(t, ctx, s.base+path, key, "")
	s.must("POST", "/api/threads/"+created.Thread.ID+"/messages", key, `{"content":"hello"}`, 202, nil)
	seen := framesUntil(t, first, "llm_request")
	// The model call is under way (it answers after 1.5s): kill the server now.
	s.cmd.Process.Kill()
	<-s.done
	for f := range first {
		seen = append(seen, f)
	}
	var kept []sseFrame
	for _, f := range seen {
		if f.id != "" {
			kept = append(kept, f)
		}
	}
	last := kept[len(kept)-1].id

	// The killed process's lease lapses (WEFT_LEASE_TTL) before the restart: the engine's
	// recovery at start skips a thread whose lease is still held.
	time.Sleep(1500 * time.Millisecond)
	s2 := startServer(t, dir, []string{"WEFT_LEASE_TTL=1s"}, args...)
	again := framesUntil(t, openSSE(t, ctx, s2.base+path, key, last), "run_stopped")
	for _, f := range again {
		if f.id != "" {
			kept = append(kept, f)
		}
	}
	all := framesUntil(t, openSSE(t, ctx, s2.base+path, key, ""), "run_stopped")
	var want []string
	for _, f := range all {
		if f.id != "" {
			want = append(want, f.id+" "+f.typ)
		}
	}
	var got []string
	for i, f := range kept {
		got = append(got, f.id+" "+f.typ)
		if f.id != strconv.Itoa(i+1) {
			t.Fatalf("cursor %s at position %d: a gap or a repeat\n%v", f.id, i+1, got)
		}
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("across the restart\n got %v\nwant %v", got, want)
	}
	var thread struct{ Status, StopReason string }
	s2.must("GET", "/api/threads/"+created.Thread.ID, key, "", 200, &thread)
	var msgs struct{ Total int }
	s2.must("GET", "/api/threads/"+created.Thread.ID+"/messages", key, "", 200, &msgs)
	if msgs.Total != 4 {
		t.Fatalf("after the restart the thread has %d messages, want 4 (user, call, result, reply)", msgs.Total)
	}
	s2.stop()
}

// TestServeWatch: --watch picks up a new agent; an invalid change is logged and the previous
// definitions stay.
func TestServeWatch(t *testing.T) {
	dir := t.TempDir()
	project := filepath.Join(dir, "agents")
	if err := os.CopyFS(project, os.DirFS(repo("httpapi/testdata/agents"))); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, nil, "--dir", project, "--db", filepath.Join(dir, "w.db"), "--no-auth", "--watch")
	names := func() string {
		var agents []struct{ Name string }
		s.must("GET", "/api/agents", "", "", 200, &agents)
		var n []string
		for _, a := range agents {
			n = append(n, a.Name)
		}
		return strings.Join(n, ",")
	}
	if got := names(); got != "boss,careful,chat,review,vault" {
		t.Fatalf("agents %s", got)
	}
	waitFor := func(want string) {
		deadline := time.Now().Add(15 * time.Second)
		for names() != want {
			if time.Now().After(deadline) {
				t.Fatalf("agents %s, want %s\n%s", names(), want, s.stderr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var created struct {
		Thread struct{ ID string } `json:"thread"`
	}
	s.must("POST", "/api/threads", "", `{"agent":"chat"}`, 201, &created)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream := openSSE(t, ctx, s.base+"/api/threads/"+created.Thread.ID+"/events", "", "")
	framesUntil(t, stream, "thread_created")
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http")+"/api/threads/"+created.Thread.ID+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	wsEnd := make(chan websocket.StatusCode, 1)
	go func() {
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				wsEnd <- websocket.CloseStatus(err)
				return
			}
		}
	}()
	os.WriteFile(filepath.Join(project, "agents", "echoer.yaml"), []byte("name: echoer\ntype: ai_human\nsideA: {prompt: chat}\n"), 0o644)
	waitFor("boss,careful,chat,echoer,review,vault")
	// Streams opened on the previous engine end, so that their clients reconnect to the new one.
	select {
	case code := <-wsEnd:
		if code != websocket.StatusServiceRestart {
			t.Fatalf("the WebSocket ended with %v, want service restart (1012)", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a WebSocket of the previous engine stayed open after the reload")
	}
	deadline := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-stream:
		case <-deadline:
			t.Fatal("a stream of the previous engine stayed open after the reload")
		}
	}
	os.WriteFile(filepath.Join(project, "agents", "broken.yaml"), []byte("name: broken\ntype: ai_human\nsideA: {prompt: nowhere}\n"), 0o644)
	until := time.Now().Add(15 * time.Second)
	for !strings.Contains(s.stderr.String(), "definitions reload refused") {
		if time.Now().After(until) {
			t.Fatalf("no refusal logged:\n%s", s.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := names(); got != "boss,careful,chat,echoer,review,vault" {
		t.Fatalf("after an invalid change the agents are %s", got)
	}
	s.stop()
}

// TestCLIAgainstServer: run, threads and logs behave against a server (--server, --api-key or
// WEFT_SERVER, WEFT_API_KEY) as against a local store; run streams the reply.
func TestCLIAgainstServer(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "weft.db")
	key := createKey(t, dir, db, "alice")
	script := chatScript(t, 3)
	sf, _ := os.OpenFile(script, os.O_APPEND|os.O_WRONLY, 0)
	sf.WriteString("  - match: {prompt: careful}\n    tool_calls:\n      - {name: refund, arguments: {order_id: 42}}\n")
	sf.WriteString("  - match: {prompt: careful}\n    text: Refund done.\n")
	sf.WriteString("  - match: {prompt: vault}\n    delay: 3s\n    text: late\n")
	sf.Close()
	s := startServer(t, dir, nil, "--dir", repo("httpapi/testdata/agents"), "--db", db, "--model-script", script)
	remote := []string{"--server", s.base, "--api-key", key}

	out, errOut, code := runWeft(t, dir, append([]string{"run", "chat", "hello", "--env", "TOKEN=" + e2eSecret}, remote...)...)
	if code != 0 || strings.TrimSpace(out) != "Done. The token was [redacted], all good." || !strings.Contains(errOut, "thread thr_") {
		t.Fatalf("run: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	id := strings.TrimSpace(errOut[strings.Index(errOut, "thread thr_")+len("thread "):])
	// Continuing the thread streams only the new turn.
	out, errOut, code = runWeft(t, dir, append([]string{"run", "chat", "again", "--thread", id}, remote...)...)
	if code != 0 || strings.TrimSpace(out) != "Done. The token was [redacted], all good." {
		t.Fatalf("run --thread: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	cmd := exec.Command(binary, "threads", "list")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WEFT_SERVER="+s.base, "WEFT_API_KEY="+key, "WEFT_DB="+filepath.Join(dir, "none.db"))
	listed, err := cmd.Output()
	if err != nil || !strings.Contains(string(listed), id) || !strings.Contains(string(listed), "chat") {
		t.Fatalf("threads list from the environment: %v\n%s", err, listed)
	}
	out, _, code = runWeft(t, dir, append([]string{"threads", "show", id}, remote...)...)
	if code != 0 || strings.Count(out, "user: ") != 2 || !strings.Contains(out, "→ echo(") || strings.Contains(out, e2eSecret) {
		t.Fatalf("threads show: exit %d\n%s", code, out)
	}
	out, _, code = runWeft(t, dir, append([]string{"logs", id}, remote...)...)
	if code != 0 || !strings.Contains(out, "4 calls, total cost $") {
		t.Fatalf("logs: exit %d\n%s", code, out)
	}
	// The same commands against the server and against its database print the same.
	for _, args := range [][]string{{"logs", id}, {"logs", id, "--full"}, {"threads", "show", id}} {
		viaServer, _, code1 := runWeft(t, dir, append(args, remote...)...)
		local, _, code2 := runWeft(t, dir, append(args, "--db", db)...)
		if code1 != 0 || code2 != 0 || viaServer != local || strings.Contains(viaServer, e2eSecret) {
			t.Fatalf("%v: exit %d/%d\nserver:\n%s\nlocal:\n%s", args, code1, code2, viaServer, local)
		}
	}
	// A fork through the server holds the messages up to the one named.
	var msgs struct{ Items []struct{ ID string } }
	s.must("GET", "/api/threads/"+id+"/messages", key, "", 200, &msgs)
	out, errOut, code = runWeft(t, dir, append([]string{"threads", "fork", id, "--at", msgs.Items[0].ID}, remote...)...)
	if code != 0 || !strings.HasPrefix(out, "forked "+id+" at "+msgs.Items[0].ID+": thr_") {
		t.Fatalf("threads fork: exit %d %s %s", code, out, errOut)
	}
	fork := strings.TrimSpace(out[strings.LastIndex(out, " ")+1:])
	if shown, _, _ := runWeft(t, dir, append([]string{"threads", "show", fork}, remote...)...); shown != "[1] user: hello\n" {
		t.Fatalf("the fork through the server: %q", shown)
	}
	_, errOut, code = runWeft(t, dir, append([]string{"threads", "show", "thr_missing"}, remote...)...)
	if code != exitUsage || !strings.Contains(errOut, "not found") {
		t.Fatalf("unknown thread: exit %d %s", code, errOut)
	}
	_, errOut, code = runWeft(t, dir, "threads", "list", "--server", s.base, "--api-key", "wft_wrong")
	if code != exitUsage || !strings.Contains(errOut, "invalid API key") {
		t.Fatalf("bad key: exit %d %s", code, errOut)
	}
	_, errOut, code = runWeft(t, dir, append([]string{"run", "vault", "hi"}, remote...)...)
	if code != exitCreation || !strings.Contains(errOut, "VAULT_KEY") {
		t.Fatalf("missing variables: exit %d %s", code, errOut)
	}
	// Out of time: the run is stopped on the server and the command fails.
	_, errOut, code = runWeft(t, dir, append([]string{"run", "vault", "hi", "--env", "VAULT_KEY=abcd1234", "--timeout", "300ms"}, remote...)...)
	if code != exitFailure || !strings.Contains(errOut, "no answer within --timeout 300ms; its run was stopped") {
		t.Fatalf("timeout: exit %d %s", code, errOut)
	}
	late := strings.Fields(errOut[strings.Index(errOut, "thread thr_")+len("thread "):])[0]
	late = strings.TrimSuffix(late, ":")
	deadline := time.Now().Add(2 * time.Second) // before the model would have answered
	for {
		var th struct {
			Status     string
			StopReason string `json:"stop_reason"`
		}
		s.must("GET", "/api/threads/"+late, key, "", 200, &th)
		if th.Status != "running" {
			if th.StopReason == "stop_on_response" {
				t.Fatalf("the timed-out run was not stopped: %+v", th)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the timed-out thread still runs: %+v", th)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A call that needs approval: exit 6 with the call and how to decide it.
	_, errOut, code = runWeft(t, dir, append([]string{"run", "careful", "refund 42"}, remote...)...)
	if code != exitApproval || !strings.Contains(errOut, `refund({"order_id":42}) waits for approval: POST `+s.base) {
		t.Fatalf("awaiting approval: exit %d %s", code, errOut)
	}
	waiting := strings.Split(errOut[strings.Index(errOut, "/api/threads/")+len("/api/threads/"):], "/")[0]
	viaServer, _, code1 := runWeft(t, dir, append([]string{"threads", "show", waiting}, remote...)...)
	local, _, code2 := runWeft(t, dir, "threads", "show", waiting, "--db", db)
	if code1 != 0 || code2 != 0 || viaServer != local || !strings.Contains(local, "awaiting approval") {
		t.Fatalf("threads show of a waiting call: exit %d/%d\nserver:\n%s\nlocal:\n%s", code1, code2, viaServer, local)
	}
	// Approving it over the server runs the call and prints the reply, as locally.
	call := strings.Fields(errOut[strings.Index(errOut, "/approvals/")+len("/approvals/"):])[0]
	out, errOut, code = runWeft(t, dir, append([]string{"threads", "approve", waiting, call}, remote...)...)
	if code != 0 || strings.TrimSpace(out) != "Refund done." {
		t.Fatalf("threads approve: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	_, errOut, code = runWeft(t, dir, append([]string{"threads", "deny", waiting, call}, remote...)...)
	if code != exitUsage || !strings.Contains(errOut, "was already approved") {
		t.Fatalf("deciding twice: exit %d %s", code, errOut)
	}
	// export, budget, files and file print over the server what they print from the database.
	s.must("PUT", "/api/threads/"+id+"/fs/notes/today.txt", key, "remember the milk", 201, nil)
	if out, errOut, code = runWeft(t, dir, append([]string{"threads", "budget", id, "--usd", "5"}, remote...)...); code != 0 || !strings.Contains(out, "budget: $5") {
		t.Fatalf("threads budget: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{{"threads", "export", id}, {"threads", "budget", id}, {"threads", "files", id},
		{"threads", "file", id, "/notes/today.txt"}} {
		viaServer, errServer, code1 := runWeft(t, dir, append(args, remote...)...)
		local, errLocal, code2 := runWeft(t, dir, append(args, "--db", db, "--dir", repo("httpapi/testdata/agents"))...)
		if args[1] == "budget" {
			viaServer, local = firstLines(viaServer, 2), firstLines(local, 2) // the default budget's wording differs
		}
		if code1 != 0 || code2 != 0 || viaServer != local || strings.Contains(viaServer, e2eSecret) {
			t.Fatalf("%v: exit %d/%d\nserver:\n%s%s\nlocal:\n%s%s", args, code1, code2, viaServer, errServer, local, errLocal)
		}
	}
	if _, errOut, code = runWeft(t, dir, append([]string{"threads", "provide-env", id, "req_missing", "A=b"}, remote...)...); code != exitUsage || !strings.Contains(errOut, "no variables request req_missing") {
		t.Fatalf("provide-env of an unknown request: exit %d %s", code, errOut)
	}
	out, _, code = runWeft(t, dir, append([]string{"threads", "delete", id}, remote...)...)
	if code != 0 || !strings.Contains(out, "deleted "+id) {
		t.Fatalf("threads delete: exit %d %s", code, out)
	}
	s.stop()
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	return strings.Join(lines[:min(n, len(lines))], "")
}

// TestServeVariablesFlow: over plain HTTP against the binary, a subagent missing a scoped
// variable is announced on the parent's stream (env_required with the request's endpoint); GET
// describes the request, POST provides the value, the child runs at once and reports to the
// parent, which answers.
func TestServeVariablesFlow(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "weft.db")
	key := createKey(t, dir, db, "alice")
	script := filepath.Join(dir, "boss.script.yaml")
	os.WriteFile(script, []byte(`version: 1
responses:
  - match: {prompt: boss}
    tool_calls:
      - {name: review, arguments: {message: "Draft: x"}}
  - match: {prompt: boss}
    text: I asked for the style guide.
  - match: {prompt: reviewer}
    expect: {last_contains: "Draft: x"}
    text: Looks fine.
  - match: {prompt: boss}
    expect: {last_contains: Subagent}
    text: Review done.
`), 0o644)
	s := startServer(t, dir, nil, "--dir", repo("httpapi/testdata/agents"), "--db", db, "--model-script", script)
	var created struct {
		Thread struct{ ID string } `json:"thread"`
	}
	s.must("POST", "/api/threads", key, `{"agent":"boss"}`, 201, &created)
	id := created.Thread.ID
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream := openSSE(t, ctx, s.base+"/api/threads/"+id+"/events", key, "")
	s.must("POST", "/api/threads/"+id+"/messages", key, `{"content":"please review"}`, 202, nil)
	got := framesUntil(t, stream, "env_required")
	ev := got[len(got)-1].data
	reqID, _ := ev["request_id"].(string)
	endpoint, _ := ev["endpoint"].(string)
	if reqID == "" || endpoint != "/api/threads/"+id+"/variables/"+reqID {
		t.Fatalf("env_required %v", ev)
	}
	framesUntil(t, stream, "run_stopped")
	var req struct {
		Status  string
		Missing []string
	}
	s.must("GET", endpoint, key, "", 200, &req)
	if req.Status != "pending" || len(req.Missing) != 1 || req.Missing[0] != "STYLE_GUIDE" {
		t.Fatalf("request %+v", req)
	}
	s.must("POST", endpoint, key, `{"env":{}}`, 400, nil)
	var done struct {
		ChildThreadID string `json:"child_thread_id"`
		Status        string
	}
	s.must("POST", endpoint, key, `{"env":{"STYLE_GUIDE":"AP style"}}`, 201, &done)
	if done.Status != "success" || done.ChildThreadID == "" {
		t.Fatalf("fulfilled %+v", done)
	}
	s.must("POST", endpoint, key, `{"env":{"STYLE_GUIDE":"AP style"}}`, 409, nil)
	// The child reports; the parent answers.
	framesUntil(t, stream, "run_stopped")
	var msgs struct {
		Items []struct{ Role, Content string }
	}
	s.must("GET", "/api/threads/"+id+"/messages", key, "", 200, &msgs)
	if last := msgs.Items[len(msgs.Items)-1]; last.Content != "Review done." {
		t.Fatalf("the parent's last message %+v", last)
	}
	s.must("GET", "/api/threads/"+done.ChildThreadID, key, "", 200, nil)
	s.stop()
}
