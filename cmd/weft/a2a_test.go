package main

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// a2aSDK is the dist folder of @a2a-js/sdk as .ci/run installs testdata/npm-a2a: unset
// WEFT_TEST_NPM_ROOT skips, a missing install fails.
func a2aSDK(t *testing.T) string {
	t.Helper()
	root := os.Getenv("WEFT_TEST_NPM_ROOT")
	if root == "" {
		t.Skip("WEFT_TEST_NPM_ROOT is unset: install testdata/npm-a2a/package.json into $WEFT_TEST_NPM_ROOT/npm-a2a with npm (as .ci/run does) to run the A2A reference SDK against weft serve")
	}
	dist := filepath.Join(root, "npm-a2a", "node_modules", "@a2a-js", "sdk", "dist")
	if _, err := os.Stat(filepath.Join(dist, "client", "index.js")); err != nil {
		t.Fatalf("WEFT_TEST_NPM_ROOT=%s is set but @a2a-js/sdk is not installed there: %v", root, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("WEFT_TEST_NPM_ROOT is set but node is not in PATH: %v", err)
	}
	return dist
}

// a2aLine is one line the JS client prints.
type a2aLine struct {
	Check   string     `json:"check"`
	Name    string     `json:"name"`
	URL     string     `json:"url"`
	Binding string     `json:"binding"`
	Skills  []string   `json:"skills"`
	Schemes []string   `json:"schemes"`
	Stream  bool       `json:"streaming"`
	State   string     `json:"state"`
	Text    string     `json:"text"`
	Task    string     `json:"task"`
	Context string     `json:"context"`
	History int        `json:"history"`
	IDs     []string   `json:"ids"`
	Events  []a2aEvent `json:"events"`
	Before  []a2aEvent `json:"before"`
	After   []a2aEvent `json:"after"`
}

type a2aEvent struct {
	Kind  string `json:"kind"`
	State string `json:"state"`
	Seq   int64  `json:"seq"`
	Text  string `json:"text"`
	Task  string `json:"task"`
	// The final event of a task a new message interrupted (mode interrupt): its metadata.
	Stop       string   `json:"stop"`
	By         string   `json:"by"`
	RolledBack bool     `json:"rolledBack"`
	Removed    []string `json:"removed"`
}

// runA2AClient starts testdata/a2a/client.mjs in a mode (with env, NAME=VALUE, added) and
// returns its lines as they come.
func runA2AClient(t *testing.T, sdk, base, key, mode string, env ...string) <-chan a2aLine {
	t.Helper()
	cmd := exec.Command("node", repo("cmd/weft/testdata/a2a/client.mjs"))
	cmd.Env = append(append(os.Environ(), "SDK="+sdk, "BASE="+base, "KEY="+key, "MODE="+mode), env...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan a2aLine)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l a2aLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("client printed %q: %v", sc.Text(), err)
				continue
			}
			lines <- l
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("the A2A client failed: %v\n%s", err, stderr.String())
		}
	}()
	return lines
}

func collectA2A(t *testing.T, lines <-chan a2aLine) map[string]a2aLine {
	t.Helper()
	got := map[string]a2aLine{}
	timeout := time.After(90 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return got
			}
			got[l.Check] = l
		case <-timeout:
			t.Fatal("the A2A client did not finish in 90s")
		}
	}
}

// TestA2ANpmClient: the A2A reference SDK's client against weft serve, as a user with a key: the
// card, a blocking send, get, a second message in the same context that needs the first (the
// model script expects it), a stream, a cancel, a dropped stream resumed by resubscribing, list.
func TestA2ANpmClient(t *testing.T) {
	sdk := a2aSDK(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "weft.db")
	key := createKey(t, dir, db, "alice")
	script := filepath.Join(dir, "tour.script.yaml")
	os.WriteFile(script, []byte(`version: 1
options: {real_time: true}
responses:
  - match: {prompt: chat}
    text: Noted.
  - match: {prompt: chat}
    expect: {contains: "codeword is heron", last_contains: "What was the codeword"}
    text: It was heron.
  - match: {prompt: chat}
    tool_calls:
      - {name: echo, arguments: {text: ping}}
  - match: {prompt: chat}
    text: Streamed.
  - match: {prompt: chat}
    delay: 5s
    text: Too late.
  - match: {prompt: chat}
    delay: 800ms
    tool_calls:
      - {name: echo, arguments: {text: pong}}
  - match: {prompt: chat}
    text: After the drop.
`), 0o644)
	s := startServer(t, dir, nil, "--dir", repo("httpapi/testdata/agents"), "--db", db, "--model-script", script)
	got := collectA2A(t, runA2AClient(t, sdk, s.base, key, "tour"))

	card := got["card"]
	if card.Name != "chat" || !card.Stream || card.URL != s.base+"/a2a/chat" || card.Binding != "JSONRPC" ||
		strings.Join(card.Skills, ",") != "prompt:chat,tool:echo" || strings.Join(card.Schemes, ",") != "weftApiKey" {
		t.Errorf("card: %+v", card)
	}
	send := got["send"]
	if send.State != "TASK_STATE_COMPLETED" || send.Text != "Noted." || !strings.HasPrefix(send.Task, send.Context+":msg_") {
		t.Errorf("send: %+v", send)
	}
	if g := got["get"]; g.State != "TASK_STATE_COMPLETED" || g.History != 2 || g.Task != send.Task {
		t.Errorf("get: %+v", g)
	}
	if c := got["context"]; c.State != "TASK_STATE_COMPLETED" || c.Text != "It was heron." || c.Context != send.Context || c.Task == send.Task {
		t.Errorf("second message in the context: %+v", c)
	}
	st := got["stream"].Events
	if len(st) < 3 || st[0].Kind != "task" || st[len(st)-1].State != "TASK_STATE_COMPLETED" || st[len(st)-1].Text != "Streamed." {
		t.Errorf("stream: %+v", st)
	}
	checkIncreasing(t, "stream", st)
	if c := got["cancel"]; c.State != "TASK_STATE_CANCELED" {
		t.Errorf("cancel: %+v", c)
	}
	rs := got["resubscribe"]
	if len(rs.Before) != 2 || len(rs.After) < 2 || rs.After[0].Kind != "task" || rs.After[len(rs.After)-1].State != "TASK_STATE_COMPLETED" ||
		rs.After[len(rs.After)-1].Text != "After the drop." {
		t.Errorf("resubscribe: %+v", rs)
	}
	checkIncreasing(t, "resubscribe", append(rs.Before, rs.After[1:]...))
	if l := got["list"]; len(l.IDs) != 2 || l.IDs[1] != send.Task || l.IDs[0] != got["context"].Task {
		t.Errorf("list: %+v", l)
	}
}

// checkIncreasing fails when the events' sequence numbers repeat or go back (nothing repeated).
func checkIncreasing(t *testing.T, what string, evs []a2aEvent) {
	t.Helper()
	var last int64 = -1
	for i, e := range evs {
		if e.Kind == "task" && i == 0 {
			last = e.Seq
			continue
		}
		if e.Seq <= last {
			t.Errorf("%s: event %d has seq %d after %d (a repeat): %+v", what, i, e.Seq, last, evs)
			return
		}
		last = e.Seq
	}
}

// TestA2ANpmKill: weft serve is SIGKILLed in the middle of a streamed A2A task; the reference
// client resubscribes to the restarted server and receives the rest, nothing repeated, and the
// tool inside the task ran once.
func TestA2ANpmKill(t *testing.T) {
	sdk := a2aSDK(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "weft.db")
	key := createKey(t, dir, db, "alice")
	script := filepath.Join(dir, "kill.script.yaml")
	os.WriteFile(script, []byte(`version: 1
options: {real_time: true}
responses:
  - match: {prompt: chat}
    delay: 2s
    tool_calls:
      - {name: echo, arguments: {text: once}}
  - match: {prompt: chat}
    text: Survived.
`), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"serve", "--addr", addr, "--dir", repo("httpapi/testdata/agents"), "--db", db, "--model-script", script}
	env := []string{"WEFT_LEASE_TTL=1s"}
	s := startProcess(t, dir, env, "weft: serving ", args...)
	lines := runA2AClient(t, sdk, s.base, key, "kill")
	var l a2aLine
	select {
	case l = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatal("the client saw no working task")
	}
	if l.Check != "kill-now" {
		t.Fatalf("first line: %+v", l)
	}
	// The model call is under way (it answers after 2s): kill the server now.
	s.cmd.Process.Kill()
	<-s.done
	// The killed process's lease lapses (WEFT_LEASE_TTL) before the restart.
	time.Sleep(1500 * time.Millisecond)
	s2 := startProcess(t, dir, env, "weft: serving ", args...)
	got := collectA2A(t, lines)
	k := got["kill"]
	if _, ok := got["dropped"]; !ok {
		t.Errorf("the first stream did not drop: %+v", got)
	}
	if len(k.Before) < 2 || len(k.After) < 2 || k.After[0].Kind != "task" {
		t.Fatalf("kill: %+v", k)
	}
	last := k.After[len(k.After)-1]
	if last.State != "TASK_STATE_COMPLETED" || last.Text != "Survived." || last.Task != l.Task {
		t.Fatalf("after the restart: %+v", k.After)
	}
	checkIncreasing(t, "across the restart", append(k.Before, k.After[1:]...))
	thread, _, _ := strings.Cut(l.Task, ":")
	var calls []struct{ Name, Status string }
	s2.must("GET", "/api/threads/"+thread+"/tool-calls", key, "", 200, &calls)
	if len(calls) != 1 || calls[0].Name != "echo" {
		t.Fatalf("tool calls after the restart: %+v", calls)
	}
	var msgs struct{ Total int }
	s2.must("GET", "/api/threads/"+thread+"/messages", key, "", 200, &msgs)
	if msgs.Total != 4 {
		t.Fatalf("after the restart the thread has %d messages, want 4 (user, call, result, reply)", msgs.Total)
	}
	s2.stop()
}

// TestA2ACardCommand: weft a2a card prints the card weft serve would serve.
func TestA2ACardCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"a2a", "card", "chat", "--url", "http://a.test:9"}, 0, `"url": "http://a.test:9/a2a/chat"`},
		{[]string{"a2a", "card", "nope"}, 2, `no agent named "nope"`},
		{[]string{"a2a", "card", "chat", "--url", "a.test"}, 2, "want the server's http(s) base URL"},
	} {
		out, errOut, code := runWeft(t, t.TempDir(), append(c.args, "--dir", repo("httpapi/testdata/agents"))...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%v: exit %d\n%s%s\nwant exit %d and %q", c.args, code, out, errOut, c.code, c.want)
		}
	}
}

// TestValidateA2A: validate --a2a fetches each kind: a2a tool's card with its headers.
func TestValidateA2A(t *testing.T) {
	card := `{"name":"remote","description":"r","version":"1","capabilities":{},"defaultInputModes":[],"defaultOutputModes":[],"skills":[],
"supportedInterfaces":[{"url":"http://127.0.0.1:1/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("X-Key") != "k-123":
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/good/agent-card.json":
			w.Write([]byte(card))
		case r.URL.Path == "/grpc/agent-card.json":
			w.Write([]byte(strings.ReplaceAll(card, "JSONRPC", "GRPC")))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, c := range []struct {
		name, tool string
		code       int
		want       string
	}{
		{"good", "card: " + srv.URL + "/good/agent-card.json\nheaders: {X-Key: \"${env:A2A_TEST_KEY}\"}", 0, "definitions are valid"},
		{"missing", "card: " + srv.URL + "/none/agent-card.json\nheaders: {X-Key: \"${env:A2A_TEST_KEY}\"}", 3, "404"},
		{"no key", "card: " + srv.URL + "/good/agent-card.json", 3, "401"},
		{"grpc only", "card: " + srv.URL + "/grpc/agent-card.json\nheaders: {X-Key: \"${env:A2A_TEST_KEY}\"}", 3, "no JSON-RPC interface"},
		{"a key in the URL never shows", "card: " + srv.URL + "/none/${env:A2A_TEST_KEY}/agent-card.json\nheaders: {X-Key: \"${env:A2A_TEST_KEY}\"}", 3, "[redacted]"},
		{"needs a variable", "card: " + srv.URL + "/good/agent-card.json\nheaders: {X-Key: \"${env:A2A_UNSET_VAR}\"}", 0, "not checked"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "tools"), 0o755)
			os.WriteFile(filepath.Join(dir, "tools", "remote.yaml"), []byte("kind: a2a\ndescription: A remote agent.\n"+c.tool+"\n"), 0o644)
			t.Setenv("A2A_TEST_KEY", "k-123")
			out, errOut, code := runWeft(t, dir, "validate", "--a2a", "--dir", dir)
			if code != c.code || !strings.Contains(out+errOut, c.want) || strings.Contains(out+errOut, "k-123") {
				t.Errorf("exit %d\n%s%s\nwant exit %d and %q", code, out, errOut, c.code, c.want)
			}
		})
	}
}
