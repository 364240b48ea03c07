package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/pgtest"
)

// TestRunIfBusyAgainstServer: weft run --server --thread posts with --if-busy. While the
// thread's story streams, reject exits 2 (a conflict, as for a terminated thread) with the server's refusal naming the running run, and
// interrupt stops that run and prints the new run's answer (not the interrupted run's end); a
// local weft run on the server's database is refused by the store the same way; a value that is no policy is a usage
// error before anything is sent.
func TestRunIfBusyAgainstServer(t *testing.T) {
	dir, db, key, args := storyProject(t)
	s := startServer(t, dir, nil, args...)
	remote := []string{"--server", s.base, "--api-key", key}
	out, errOut, code := runWeft(t, dir, append([]string{"run", "slow", "hello"}, remote...)...)
	if code != 0 || strings.TrimSpace(out) != "Hello." {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	id := strings.Fields(errOut[strings.Index(errOut, "thread thr_")+len("thread "):])[0]

	if _, errOut, code := runWeft(t, dir, append([]string{"run", "slow", "x", "--thread", id, "--if-busy", "later"}, remote...)...); code != 2 ||
		!strings.Contains(errOut, `--if-busy "later"`) {
		t.Errorf("--if-busy later: exit %d, %s", code, errOut)
	}
	tellStory(t, s, key, id)
	_, errOut, code = runWeft(t, dir, append([]string{"run", "slow", "not now", "--thread", id, "--if-busy", "reject"}, remote...)...)
	if code != 2 || !strings.Contains(errOut, "has a run in progress (run_") {
		t.Errorf("--if-busy reject: exit %d, %s", code, errOut)
	}
	// Locally, on the server's database: the store refuses it the same way.
	_, errOut, code = runWeft(t, dir, "run", "slow", "not now", "--thread", id, "--if-busy", "reject", "--db", db, "--dir", filepath.Join(dir, "agents"))
	if code != 2 || !strings.Contains(errOut, "has a run in progress") {
		t.Errorf("--if-busy reject, local: exit %d, %s", code, errOut)
	}
	out, errOut, code = runWeft(t, dir, append([]string{"run", "slow", "a haiku please", "--thread", id, "--if-busy", "interrupt"}, remote...)...)
	if code != 0 || strings.TrimSpace(out) != "A haiku instead." {
		t.Errorf("--if-busy interrupt: exit %d\n%s\n%s", code, out, errOut)
	}
	if rows := rowsOf(t, s, key, id); !slicesEqual(rows, wantRows("interrupt")) {
		t.Errorf("the thread:\n%q\nwant\n%q", rows, wantRows("interrupt"))
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// TestChatIfBusyAgainstServer: weft chat --server --if-busy rollback, fed a line while another
// client's story streams on the thread: the story's run is rolled back, and the chat shows the
// new run's answer only.
func TestChatIfBusyAgainstServer(t *testing.T) {
	dir, _, key, args := storyProject(t)
	s := startServer(t, dir, nil, args...)
	var th struct{ Thread struct{ ID string } }
	s.must("POST", "/api/threads", key, `{"agent":"slow"}`, 201, &th)
	id := th.Thread.ID
	s.must("POST", "/api/threads/"+id+"/messages", key, `{"content":"hello"}`, 202, nil)
	waitMessages(t, s, key, id, 2)
	tellStory(t, s, key, id)

	cmd := exec.Command(binary, "chat", "slow", "--server", s.base, "--api-key", key, "--thread", id, "--if-busy", "rollback")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader("a haiku please\n")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "A haiku instead.") || strings.Contains(string(out), "Once upon") {
		t.Fatalf("weft chat: %v\n%s", err, out)
	}
	if rows := rowsOf(t, s, key, id); !slicesEqual(rows, wantRows("rollback")) {
		t.Errorf("the thread:\n%q\nwant\n%q", rows, wantRows("rollback"))
	}
}

// waitMessages waits until the thread holds n messages.
func waitMessages(t *testing.T, s *server, key, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(rowsOf(t, s, key, id)) != n {
		if time.Now().After(deadline) {
			t.Fatalf("the thread holds %q, not %d messages", rowsOf(t, s, key, id), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunIfBusyLocalPostgres: a local weft run --if-busy interrupt --wait on the PostgreSQL
// database a weft serve runs the thread on: the serve's run is interrupted (the store's
// notification reaches it), and the local process prints the new run's answer.
func TestRunIfBusyLocalPostgres(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	dir, _, _, _ := storyProject(t)
	agents, script := filepath.Join(dir, "agents"), filepath.Join(dir, "slow.script.yaml")
	keyText := envcrypt.EncodeKey(envcrypt.NewKey())
	t.Setenv("WEFT_ENCRYPTION_KEY", keyText) // the local weft run's, as the server's
	s := startServer(t, dir, []string{"WEFT_ENCRYPTION_KEY=" + keyText, "WEFT_ADMIN_KEY=" + clusterAdminKey},
		"--dir", agents, "--db", dsn, "--model-script", script)
	key := clusterAdminKey
	var th struct{ Thread struct{ ID string } }
	s.must("POST", "/api/threads", key, `{"agent":"slow"}`, 201, &th)
	id := th.Thread.ID
	s.must("POST", "/api/threads/"+id+"/messages", key, `{"content":"hello"}`, 202, nil)
	waitMessages(t, s, key, id, 2)
	tellStory(t, s, key, id)
	out, errOut, code := runWeft(t, dir, "run", "slow", "a haiku please", "--thread", id, "--if-busy", "interrupt", "--wait",
		"--db", dsn, "--dir", agents)
	if code != 0 || strings.TrimSpace(out) != "A haiku instead." {
		t.Errorf("weft run --if-busy interrupt: exit %d\n%s\n%s", code, out, errOut)
	}
	if rows := rowsOf(t, s, key, id); !slicesEqual(rows, wantRows("interrupt")) {
		t.Errorf("the thread:\n%q\nwant\n%q", rows, wantRows("interrupt"))
	}
}

// tellStory posts "tell a story" to the thread and returns once the story streams (after the
// slow tool): the thread's run is in its model call, which an interrupt cancels.
func tellStory(t *testing.T, s *server, key, id string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	frames := openSSE(t, ctx, s.base+"/api/threads/"+id+"/events", key, "")
	s.must("POST", "/api/threads/"+id+"/messages", key, `{"content":"tell a story"}`, 202, nil)
	var text string
	timeout := time.After(20 * time.Second)
	for !strings.Contains(text, "Once") {
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatal("the thread's stream ended before the story")
			}
			if f.typ == "message_chunk" {
				d, _ := f.data["delta"].(string)
				text += d
			}
		case <-timeout:
			t.Fatalf("the story did not stream: %q", text)
		}
	}
}

// TestInputFilter: a follower of a posted message prints only the run that takes it — a chunk of
// the interrupted run's reply that the stream delivers after the message (chunks are not recorded
// events, so they may come late) is not part of the answer. TestRunIfBusyAgainstServer printed
// "timeA haiku instead." so, 1 run in 20 under load.
func TestInputFilter(t *testing.T) {
	chunk := func(msg, delta string) (string, map[string]any) {
		return "message_chunk", map[string]any{"message_id": msg, "delta": delta, "depth": 0.0}
	}
	message := func(id, role string) (string, map[string]any) {
		return "message", map[string]any{"message": map[string]any{"id": id, "role": role}}
	}
	type ev struct {
		typ  string
		data map[string]any
	}
	e := func(typ string, data map[string]any) ev { return ev{typ, data} }
	cases := []struct {
		name  string
		input string
		evs   []ev
		want  []string // the deltas and message ids that pass
	}{
		{"a late chunk of the interrupted reply", "msg_in", []ev{
			e(chunk("msg_old", "Once upon a ")), e("run_stopped", map[string]any{"reason": "interrupted"}),
			e(message("msg_in", "user")), e(chunk("msg_old", "time")), e(chunk("msg_new", "A haiku")),
			e(message("msg_new", "assistant"))},
			[]string{"msg_in", "A haiku", "msg_new"}},
		{"nothing before the input", "msg_in", []ev{
			e(message("msg_in", "user")), e(chunk("msg_new", "Hi")), e(message("msg_new", "assistant"))},
			[]string{"msg_in", "Hi", "msg_new"}},
		{"no input: every event", "", []ev{
			e(chunk("msg_a", "x")), e(message("msg_a", "assistant"))},
			[]string{"x", "msg_a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := inputFilter{input: tc.input}
			var got []string
			for _, ev := range tc.evs {
				if !f.pass(ev.typ, ev.data) {
					continue
				}
				switch ev.typ {
				case "message_chunk":
					got = append(got, ev.data["delta"].(string))
				case "message":
					got = append(got, ev.data["message"].(map[string]any)["id"].(string))
				}
			}
			if !slicesEqual(got, tc.want) {
				t.Errorf("passed %q, want %q", got, tc.want)
			}
		})
	}
}
