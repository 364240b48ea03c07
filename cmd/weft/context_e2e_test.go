package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-agents/weft/tokens"
)

// windowModel is a fake OpenAI chat completions server whose model refuses, with OpenAI's
// context_length_exceeded, a request past its window. It answers the built-in summarizer with a
// summary that keeps the locker code and counts the turns folded, read from what it is given, and
// a chat request asking for the code from what the request holds; while block is set, it holds
// the next chat request until its client goes away.
type windowModel struct {
	window int
	mu     sync.Mutex
	// sizes are the accepted requests' tokens; refused counts refusals; summaries are the
	// summarizer's inputs.
	sizes     []int
	refused   int
	summaries []string
	// lastUser is the newest user message of each chat request.
	lastUser []string
	block    bool
	blocked  chan struct{}
}

var (
	e2eLocker = regexp.MustCompile(`locker code is (\d+)`)
	e2eFolded = regexp.MustCompile(`turns folded: (\d+)`)
)

func (w *windowModel) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || len(body.Messages) == 0 {
		http.Error(rw, "unexpected request", http.StatusBadRequest)
		return
	}
	n := 0
	var all strings.Builder
	for _, m := range body.Messages {
		text := contentText(m.Content)
		n += tokens.PerMessage + tokens.Text(text)
		all.WriteString(text + "\n")
	}
	text := all.String()
	w.mu.Lock()
	if n > w.window {
		w.refused++
		w.mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(rw, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, w.window, n)
		return
	}
	w.sizes = append(w.sizes, n)
	last := contentText(body.Messages[len(body.Messages)-1].Content)
	var reply string
	if strings.Contains(contentText(body.Messages[0].Content), "running summary") {
		w.summaries = append(w.summaries, last)
		folded := strings.Count(last, "\n[user] ")
		if m := e2eFolded.FindStringSubmatch(last); m != nil {
			var k int
			fmt.Sscan(m[1], &k)
			folded += k
		}
		reply = fmt.Sprintf("- turns folded: %d", folded)
		if m := e2eLocker.FindStringSubmatch(last); m != nil {
			reply += "\n- the user's locker code is " + m[1]
		}
	} else {
		for i := len(body.Messages) - 1; i >= 0; i-- {
			if body.Messages[i].Role == "user" {
				w.lastUser = append(w.lastUser, contentText(body.Messages[i].Content))
				break
			}
		}
		if w.block {
			w.block = false
			w.mu.Unlock()
			close(w.blocked)
			<-r.Context().Done() // the process is killed meanwhile
			return
		}
		reply = "Noted."
		if strings.Contains(last, "What is my locker code?") {
			reply = "I do not know your locker code."
			if m := e2eLocker.FindStringSubmatch(text); m != nil {
				reply = "Your locker code is " + m[1] + "."
			}
		}
	}
	w.mu.Unlock()
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(map[string]any{
		"id": "cmpl", "object": "chat.completion", "model": "window-llm",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": reply}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": n, "completion_tokens": 10, "total_tokens": n + 10},
	})
}

// TestLongThreadEndToEnd: the real binary, one process per turn, against an OpenAI-wire model
// that refuses past a 1,500-token window: 50 turns of long messages all succeed under window and
// under summarize, every request fits and ends with the turn's own message. Under summarize a
// process killed with SIGKILL at turn 25, after it folded older turns into the summary and while
// the model holds its reply, leaves the summary in the store; the next process goes on from it
// without summarizing again, and the locker code given at turn 1 is answered at turn 50 — which
// under window, that forgets, it is not.
func TestLongThreadEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs the weft binary a hundred times (skipped with -short)")
	}
	for _, strategy := range []string{"window", "summarize"} {
		t.Run(strategy, func(t *testing.T) { longThread(t, strategy) })
	}
}

func longThread(t *testing.T, strategy string) {
	model := &windowModel{window: 1500, blocked: make(chan struct{})}
	srv := httptest.NewServer(model)
	defer srv.Close()
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "agents"), map[string]string{
		"models/m.yaml": fmt.Sprintf("name: m\nprovider: openai-compatible\nmodel: window-llm\nproviderOptions: {baseUrl: %q}\n"+
			"capabilities: {supportsStreaming: false, maxContextTokens: 1500, maxOutputTokens: 100}\n", srv.URL+"/v1"),
		"prompts/p.yaml": "{name: p, toolDescription: Talks, model: m, includeChat: true, context: {strategy: " + strategy + "}, prompt: You are a concise helper.}\n",
		"agents/a.yaml":  "{name: a, sideA: {prompt: p}}\n",
	})
	db := filepath.Join(dir, "weft.db")
	const killed, last = 25, 50
	turn := func(i int) string {
		s := fmt.Sprintf("Turn %d. ", i) + strings.Repeat(fmt.Sprintf("The weather on day %d was mild and dry. ", i), 25)
		switch i {
		case 1:
			s = "My locker code is 4711. " + s
		case last:
			s = "What is my locker code? " + s
		}
		return s
	}
	summaryRows := func(thread string) int {
		out, errOut, code := weftCmd(t, dir, "threads", "show", thread, "--db", db)
		if code != 0 {
			t.Fatalf("threads show: exit %d %s", code, errOut)
		}
		return strings.Count(out, "[summary of ")
	}
	// checkLast checks that the chat requests since the n-th ended with the turn's message.
	checkLast := func(i, n int) {
		model.mu.Lock()
		defer model.mu.Unlock()
		for _, got := range model.lastUser[n:] {
			if got != turn(i) {
				t.Errorf("turn %d: a request ends with %.40q, want the turn's own message", i, got)
			}
		}
	}
	requests := func() int {
		model.mu.Lock()
		defer model.mu.Unlock()
		return len(model.lastUser)
	}
	out, errOut, code := weftCmd(t, dir, "run", "a", turn(1), "--db", db, "--json")
	if code != 0 {
		t.Fatalf("turn 1: exit %d %s", code, errOut)
	}
	var first struct{ Thread struct{ ID string } }
	if err := json.Unmarshal([]byte(out), &first); err != nil || first.Thread.ID == "" {
		t.Fatalf("turn 1: %v %s", err, out)
	}
	thread := first.Thread.ID
	for i := 2; i <= last; i++ {
		n := requests()
		if i != killed || strategy != "summarize" {
			out, errOut, code := weftCmd(t, dir, "run", "a", turn(i), "--thread", thread, "--db", db)
			if code != 0 {
				t.Fatalf("turn %d: exit %d %s", i, code, errOut)
			}
			checkLast(i, n)
			if i == last {
				want := "Your locker code is 4711."
				if strategy == "window" {
					want = "I do not know your locker code." // turn 1 left the window long ago
				}
				if !strings.Contains(out, want) {
					t.Errorf("turn %d answered %q, want %q", i, out, want)
				}
			}
			continue
		}
		// This turn's process is killed while the model holds its reply, after the turn folded.
		before := summaryRows(thread)
		model.mu.Lock()
		model.block = true
		model.mu.Unlock()
		cmd := exec.Command(binary, "run", "a", turn(i), "--thread", thread, "--db", db)
		cmd.Dir, cmd.Env = dir, crashEnv()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-model.blocked:
		case <-time.After(60 * time.Second):
			t.Fatalf("turn %d never reached the model: %s", i, stderr.String())
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		after := summaryRows(thread)
		if after <= before {
			t.Fatalf("turn %d folded nothing before the kill (%d summary rows, then %d): the test does not test the restart", i, before, after)
		}
		model.mu.Lock()
		summaries := len(model.summaries)
		model.mu.Unlock()
		// A new process continues the thread from the stored summary: the request fits without
		// another summarizer call.
		for attempt := 1; ; attempt++ {
			_, errOut, code := weftCmd(t, dir, "run", "a", "--thread", thread, "--db", db)
			if code == 0 {
				break
			}
			// The killed process's lease lapses after WEFT_LEASE_TTL (crashEnv).
			if !strings.Contains(errOut, "running elsewhere") || attempt == 20 {
				t.Fatalf("turn %d after the kill: exit %d %s", i, code, errOut)
			}
			time.Sleep(crashLeaseRetry)
		}
		checkLast(i, n)
		model.mu.Lock()
		again := len(model.summaries) - summaries
		model.mu.Unlock()
		if n := summaryRows(thread); n != after || again != 0 {
			t.Errorf("the run after the kill summarized again: %d summarizer calls, %d summary rows (%d before it)", again, n, after)
		}
	}
	// weft render shows the next request as the run would send it, and says what it left out.
	out, errOut, code = weftCmd(t, dir, "render", "p", "--thread", thread, "--db", db)
	want := map[string]string{"window": "older messages are left out so that the request fits model m's window",
		"summarize": "stands for"}[strategy]
	if code != 0 || !strings.Contains(out, "\ncontext ("+strategy+"): ") || !strings.Contains(out, want) {
		t.Errorf("render: exit %d %s\n%s", code, errOut, out)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if model.refused != 0 {
		t.Errorf("%d requests refused although the window was declared", model.refused)
	}
	for i, n := range model.sizes {
		if n > model.window {
			t.Errorf("request %d has %d tokens, past the window", i, n)
		}
	}
	if strategy == "summarize" && len(model.summaries) < 10 {
		t.Errorf("%d summarizer calls in 50 turns: the thread did not outgrow the window", len(model.summaries))
	}
	for i, in := range model.summaries {
		if i > 0 && strings.Contains(in, "My locker code is 4711") {
			t.Errorf("summarizer call %d folded turn 1 again", i+1)
		}
	}
}
