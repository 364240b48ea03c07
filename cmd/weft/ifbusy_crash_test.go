package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/postgres"
	"github.com/weft-agents/weft/sqlite"
)

// ifBusyKills is how many times TestServeIfBusySIGKILL kills the server on each store: 18, or
// WEFT_IFBUSY_KILLS.
func ifBusyKills(t *testing.T) int {
	if v := os.Getenv("WEFT_IFBUSY_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("WEFT_IFBUSY_KILLS=%q", v)
		}
		return n
	}
	return 18
}

// Kill offsets. While the tool runs (it sleeps ifBusyToolSleep after noting its start): a spread
// over its rest, after the interrupting posts were answered.
var (
	ifBusyToolDelays = []time.Duration{0, 150 * time.Millisecond, 30 * time.Millisecond, 300 * time.Millisecond, 80 * time.Millisecond, 230 * time.Millisecond}
	// ifBusyWindowFractions place the kills as the tool ends and while the model call is cut short
	// over the window the calibration measured (from the line or the posts to both answers).
	ifBusyWindowFractions = []float64{0, 0.35, 0.1, 0.6, 0.2, 0.85, 0.05, 0.45, 0.3, 1}
	ifBusyPhases          = []string{"tool", "tool end", "model"}
)

const ifBusyToolSleep = "0.4"

// ifBusyModel is an OpenAI-compatible model for the kill test, deciding by the conversation it
// receives so that any process, restarted or not, gets the same answers: "go TAG" (the first user
// message) calls the record tool; a tool result is answered only once the request is cancelled (a
// slow model call, which it reports in inflight under TAG while it waits) or after 30 s; "second
// …" is answered "answered: second …".
type ifBusyModel struct {
	srv      *httptest.Server
	mu       sync.Mutex
	inflight map[string]int // TAG → slow calls waiting now
}

func newIfBusyModel(t *testing.T) *ifBusyModel {
	m := &ifBusyModel{inflight: map[string]int{}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *ifBusyModel) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || len(body.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	text := func(c json.RawMessage) string {
		var s string
		if json.Unmarshal(c, &s) == nil {
			return s
		}
		var parts []struct{ Text string }
		_ = json.Unmarshal(c, &parts)
		for _, p := range parts {
			s += p.Text
		}
		return s
	}
	var tag string
	for _, msg := range body.Messages {
		if t, ok := strings.CutPrefix(text(msg.Content), "go "); ok && msg.Role == "user" {
			tag = t
			break
		}
	}
	last := body.Messages[len(body.Messages)-1]
	reply := map[string]any{"role": "assistant", "content": "ok"}
	finish := "stop"
	switch lt := text(last.Content); {
	case last.Role == "tool":
		m.mu.Lock()
		m.inflight[tag]++
		m.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
		m.mu.Lock()
		m.inflight[tag]--
		m.mu.Unlock()
		if r.Context().Err() != nil {
			return
		}
		reply["content"] = "too slow"
	case last.Role == "user" && strings.HasPrefix(lt, "second"):
		reply["content"] = "answered: " + lt
	case last.Role == "user" && strings.HasPrefix(lt, "go "):
		reply = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_1", "type": "function", "function": map[string]any{"name": "record", "arguments": "{}"}}}}
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "cmpl", "object": "chat.completion", "model": "busy-llm",
		"choices": []any{map[string]any{"index": 0, "message": reply, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

// slow reports whether a slow model call of TAG is waiting.
func (m *ifBusyModel) slow(tag string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inflight[tag] > 0
}

// TestServeIfBusySIGKILL SIGKILLs weft serve during interrupts and rollbacks (on SQLite, and on
// PostgreSQL when WEFT_TEST_POSTGRES_URL is set), restarting it each time. Each round starts two
// conversations whose first reply calls a non-idempotent command tool (it notes its start, sleeps
// 0.4 s, writes a line), then waits for a slow model call. In turn, while the tool runs, as it
// ends (its line written) or while the model call waits, it posts "second" to one with if_busy
// interrupt and to the other with rollback, and kills the server a varied delay after both posts
// were answered (as the tool ends: after its line): 0–300 ms while the tool runs; otherwise a
// fraction of the window an unkilled round measured at the start, from the line or the posts to
// both answers (a few milliseconds on SQLite, ~100 ms on PostgreSQL here). Dead, each thread is in one of the two documented states — running with the message queued and
// the run's rows intact, or idle with the message queued (rows removed for rollback) — or past
// them (the new run took the message); never between, and a rollback never half removed. After
// the restart each message is answered exactly once, the tool ran at most once, its call is
// recorded once and done, and a rollback left either all of the stopped run's rows or none.
func TestServeIfBusySIGKILL(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, "weft.db")
		ifBusyKillRounds(t, dir, db, "SQLite", func(ctx context.Context, key []byte) (weft.Store, error) {
			return sqlite.Open(ctx, db, sqlite.Options{Key: key})
		})
	})
	t.Run("postgres", func(t *testing.T) {
		_, dsn := pgtest.Schema(t)
		ifBusyKillRounds(t, t.TempDir(), dsn, "PostgreSQL", func(ctx context.Context, key []byte) (weft.Store, error) {
			return postgres.Open(ctx, dsn, postgres.Options{Key: key})
		})
	})
}

// ifBusyFigures counts, per policy and phase, the states the kills left the threads in.
type ifBusyFigures struct {
	states map[string]int // "interrupt/tool: running, queued" → kills
	lines  int            // lines the tool wrote, over all threads
}

// ifBusyRig is one store's weft serve, its model and the files its tool writes.
type ifBusyRig struct {
	t             *testing.T
	c             *cluster
	n             *clusterNode
	st            weft.Store
	model         *ifBusyModel
	lines, starts string
}

func ifBusyKillRounds(t *testing.T, dir, db, storeName string, open func(context.Context, []byte) (weft.Store, error)) {
	kills := ifBusyKills(t)
	r := &ifBusyRig{t: t, lines: filepath.Join(dir, "records.txt"), starts: filepath.Join(dir, "starts.txt"), model: newIfBusyModel(t)}
	writeFiles(t, filepath.Join(dir, "agents"), map[string]string{
		"models/m.yaml": fmt.Sprintf("name: m\nprovider: openai-compatible\nmodel: busy-llm\n"+
			"providerOptions: {baseUrl: %q}\ncapabilities: {supportsStreaming: false}\n", r.model.srv.URL+"/v1"),
		"prompts/p.yaml": "{name: p, toolDescription: Records, model: m, prompt: 'Answer.', tools: [record]}\n",
		"agents/a.yaml":  "{name: a, sideA: {prompt: p}}\n",
		"tools/record.yaml": fmt.Sprintf(`kind: command
description: Record one line (not idempotent), slowly.
command: [sh, -c, 'echo "$WEFT_THREAD_ID" >> "$STARTS_FILE"; sleep %s; echo "$WEFT_THREAD_ID" >> "$LINES_FILE"; echo recorded']
env: {LINES_FILE: %q, STARTS_FILE: %q}
`, ifBusyToolSleep, r.lines, r.starts),
	})
	keyText := envcrypt.EncodeKey(envcrypt.NewKey())
	key, err := envcrypt.ParseKey(keyText)
	if err != nil {
		t.Fatal(err)
	}
	r.c = &cluster{t: t, dir: dir,
		env:  []string{"WEFT_ENCRYPTION_KEY=" + keyText, "WEFT_ADMIN_KEY=" + clusterAdminKey, "WEFT_LEASE_TTL=300ms"},
		args: []string{"--dir", filepath.Join(dir, "agents"), "--db", db, "--log-level", "warn"}}
	r.n = &clusterNode{id: "solo"}
	r.c.nodes = []*clusterNode{r.n}
	r.c.start(r.n)
	if r.st, err = open(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	defer r.st.Close()
	// The windows of the kills as the tool ends and while the model call is cut short: how long,
	// unkilled, this store and machine take from the line or the posts to both answers.
	delays := map[string][]time.Duration{"tool": ifBusyToolDelays}
	for _, phase := range []string{"tool end", "model"} {
		ids := r.begin(-1, phase)
		began := time.Now()
		for _, id := range ids {
			waitFor(t, 30*time.Second, time.Millisecond, "the calibration round's answers", func() bool {
				th, rows, queued := ifBusyRows(t, r.st, id)
				return queued == 0 && th.Status != weft.ThreadRunning && countRows(rows, "assistant: answered: second") > 0
			})
		}
		window := time.Since(began)
		for _, f := range ifBusyWindowFractions {
			delays[phase] = append(delays[phase], time.Duration(f*float64(window)))
		}
		t.Logf("%s: the interrupts and rollbacks take %v %s", storeName, window.Round(10*time.Microsecond),
			map[string]string{"tool end": "after the tool's line", "model": "after the posts while the model call waits"}[phase])
	}
	fig := &ifBusyFigures{states: map[string]int{}}
	began := time.Now()
	for round := range kills {
		phase, k := ifBusyPhases[round%len(ifBusyPhases)], round/len(ifBusyPhases)
		delay := delays[phase][k%len(delays[phase])]
		ids := r.begin(round, phase)
		time.Sleep(delay)
		r.c.kill(r.n)
		for i, p := range ifBusyPolicies {
			state := ifBusyCrashState(t, r.st, ids[i], p, round)
			t.Logf("round %d: %s/%s killed %v after the posts: %s", round, p, phase, delay, state)
			fig.states[fmt.Sprintf("%s/%s: %s", p, phase, state)]++
		}
		r.c.start(r.n)
		for i, p := range ifBusyPolicies {
			fig.lines += ifBusyFinal(t, r.st, ids[i], p, round, r.lines)
		}
	}
	t.Logf("%d SIGKILLs of weft serve (%s) during interrupts and rollbacks, restarted each time, in %v: %d threads, "+
		"each message answered once, the tool's %d lines each written once; states at the kills:",
		kills, storeName, time.Since(began).Round(time.Millisecond), 2*kills, fig.lines)
	for _, k := range slices.Sorted(maps.Keys(fig.states)) {
		t.Logf("  %-50s %d", k, fig.states[k])
	}
	r.n.srv.stop()
}

// ifBusyPolicies are the policies of a round's two threads.
var ifBusyPolicies = []weft.IfBusy{weft.IfBusyInterrupt, weft.IfBusyRollback}

// begin starts a round: two threads, one per policy of ifBusyPolicies, each with a run in its
// slow tool ("tool", "tool end") or its slow model call ("model"), and "second" posted to each
// with its policy; it returns once both posts were answered ("tool end": and once a tool wrote
// its line, that is, ended).
func (r *ifBusyRig) begin(round int, phase string) []string {
	t := r.t
	ids := make([]string, len(ifBusyPolicies))
	for i := range ifBusyPolicies {
		var created struct {
			Thread struct{ ID string } `json:"thread"`
		}
		r.n.srv.must("POST", "/api/threads", clusterAdminKey, `{"agent":"a"}`, 201, &created)
		ids[i] = created.Thread.ID
		r.n.srv.must("POST", "/api/threads/"+ids[i]+"/messages", clusterAdminKey, `{"content":"go `+ids[i]+`"}`, 202, nil)
	}
	for _, id := range ids {
		waitFor(t, 30*time.Second, 10*time.Millisecond, fmt.Sprintf("round %d: thread %s in its slow %s", round, id, phase), func() bool {
			if phase == "model" {
				return r.model.slow(id)
			}
			b, _ := os.ReadFile(r.starts)
			return strings.Contains(string(b), id)
		})
	}
	var wg sync.WaitGroup
	for i, p := range ifBusyPolicies {
		wg.Go(func() {
			r.n.srv.must("POST", "/api/threads/"+ids[i]+"/messages", clusterAdminKey,
				fmt.Sprintf(`{"content":"second %d","if_busy":%q}`, round, p), 202, nil)
		})
	}
	wg.Wait()
	if phase == "tool end" {
		waitFor(t, 10*time.Second, time.Millisecond, "a tool's line", func() bool {
			b, _ := os.ReadFile(r.lines)
			return strings.Contains(string(b), ids[0]) || strings.Contains(string(b), ids[1])
		})
	}
	return ids
}

// ifBusyRows is what the store holds for a round's thread: its rows as "role: content" (a reply's
// calls as "assistant: call"), and whether "second" is queued.
func ifBusyRows(t *testing.T, st weft.Store, id string) (th *weft.Thread, rows []string, queued int) {
	t.Helper()
	ctx := context.Background()
	th, err := st.Thread(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := st.Messages(ctx, id, weft.MessageQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		content := m.Content
		if len(m.ToolCalls) > 0 {
			content = "call"
		}
		rows = append(rows, string(m.Role)+": "+content)
	}
	q, err := st.Queued(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range q {
		if strings.HasPrefix(m.Content, "second") {
			queued++
		}
	}
	return th, rows, queued
}

// countRows returns how many rows start with prefix.
func countRows(rows []string, prefix string) int {
	n := 0
	for _, r := range rows {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

// ifBusyCrashState checks the thread the kill left (no weft process runs) and names its state.
func ifBusyCrashState(t *testing.T, st weft.Store, id string, p weft.IfBusy, round int) string {
	t.Helper()
	// A transaction the process sent whole before it died (PostgreSQL: a batch ending in COMMIT
	// in the socket's buffer) may still commit after the kill: the three reads below are not one
	// snapshot, so they are taken again until two in a row agree.
	th, rows, queued := ifBusyRows(t, st, id)
	for deadline := time.Now().Add(5 * time.Second); ; {
		time.Sleep(50 * time.Millisecond)
		th2, rows2, queued2 := ifBusyRows(t, st, id)
		if th2.Status == th.Status && slices.Equal(rows2, rows) && queued2 == queued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("round %d, thread %s: the store still changes 5 s after the kill", round, id)
		}
		th, rows, queued = th2, rows2, queued2
	}
	stored, calls, results := countRows(rows, "user: second"), countRows(rows, "assistant: call"), countRows(rows, "tool: ")
	bad := func(why string) string {
		t.Errorf("round %d, %s, thread %s after the kill: %s: %s, rows %q, \"second\" queued %d", round, p, id, why, th.Status, rows, queued)
		return "between: " + why
	}
	switch {
	case stored+queued != 1:
		return bad(fmt.Sprintf("\"second\" stored %d times and queued %d times", stored, queued))
	case calls > 1 || results > 1 || results > calls:
		return bad("replies doubled or a result without its call")
	case queued == 1 && th.Status == weft.ThreadRunning:
		// Before the stop committed: the run's rows all there (its reply; the result once stored).
		if calls != 1 {
			return bad("running, but the stopped run's reply is gone")
		}
		if results == 0 {
			return "running, queued, rows intact (no result yet)"
		}
		return "running, queued, rows intact (result stored)"
	case queued == 1 && th.Status == weft.ThreadIdle:
		// The stop committed: the result stored with it (interrupt), or the reply and result gone (rollback).
		if p == weft.IfBusyRollback && calls+results != 0 {
			return bad("idle after a rollback, but rows of the stopped run are left")
		}
		if p == weft.IfBusyInterrupt && (calls != 1 || results != 1) {
			return bad("idle after an interrupt, but the stopped run's reply or result is missing")
		}
		return "idle, queued, stop committed"
	case queued == 1:
		return bad("the message is queued on a thread neither running nor idle")
	case p == weft.IfBusyRollback && calls+results != 0:
		return bad("the new run took the message, but rows of the rolled back run are left")
	case countRows(rows, "assistant: answered: second") == 1 && th.Status != weft.ThreadRunning:
		return "past: answered"
	default:
		return "past: the new run took the message"
	}
}

// ifBusyFinal waits for the restarted server to answer the thread's "second" and checks what is
// left: the message answered once, the tool's line written at most once, its call recorded once and
// done, and its result kept (interrupt) or all the stopped run's rows kept or all removed
// (rollback). It returns the lines the tool wrote for the thread.
func ifBusyFinal(t *testing.T, st weft.Store, id string, p weft.IfBusy, round int, lines string) int {
	t.Helper()
	var th *weft.Thread
	var rows []string
	var queued int
	deadline := time.Now().Add(30 * time.Second)
	for {
		th, rows, queued = ifBusyRows(t, st, id)
		if queued == 0 && th.Status != weft.ThreadRunning && countRows(rows, "assistant: answered: second") > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("round %d, %s, thread %s: not answered 30 s after the restart: %s, rows %q, \"second\" queued %d",
				round, p, id, th.Status, rows, queued)
		}
		time.Sleep(10 * time.Millisecond)
	}
	calls, results := countRows(rows, "assistant: call"), countRows(rows, "tool: ")
	if countRows(rows, "user: second") != 1 || countRows(rows, "assistant: answered: second") != 1 {
		t.Errorf("round %d, %s, thread %s: \"second\" stored or answered more than once: %q", round, p, id, rows)
	}
	if calls > 1 || results != calls || (p == weft.IfBusyInterrupt && calls != 1) {
		t.Errorf("round %d, %s, thread %s: the stopped run's reply and result are not %s: %q", round, p, id,
			map[weft.IfBusy]string{weft.IfBusyInterrupt: "both kept", weft.IfBusyRollback: "both kept or both removed"}[p], rows)
	}
	recs, err := st.ToolCalls(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Status != weft.CallDone {
		t.Errorf("round %d, %s, thread %s: tool calls %+v, want one, done", round, p, id, recs)
	}
	b, _ := os.ReadFile(lines)
	n := strings.Count(string(b), id)
	if n > 1 {
		t.Errorf("round %d, %s, thread %s: the non-idempotent tool wrote %d lines", round, p, id, n)
	}
	return n
}

// waitFor polls ok every tick until it holds, failing the test after d.
func waitFor(t *testing.T, d, tick time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(tick)
	}
}
