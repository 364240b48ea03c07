package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// What a newcomer meets in the inspector (issue 46 §2.8 and §3, issue 50 §3): a failed run's
// error at the end of the conversation, the empty list and the New thread form, the run timeline,
// Weft's words explained, and a thread's A2A tasks.

// TestInspectorRunError: a run that failed shows its error text at the end of the conversation,
// not only "Stopped: step_error": for a thread run by weft run (whose engine records no events,
// so the text comes from its model call's log) and for one run by the server (from its
// run_stopped event).
func TestInspectorRunError(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	agents := filepath.Join(dir, "agents")
	writeFiles(t, agents, inspectorProject)
	db := filepath.Join(dir, "weft.db")
	cliScript := filepath.Join(dir, "cli.yaml")
	if err := os.WriteFile(cliScript, []byte("version: 1\nresponses:\n  - match: {prompt: chat}\n"+
		"    error: {status: 400, message: \"quota for project p-77 is spent\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runWeft(t, dir, "run", "chat", "Hi from the terminal", "--dir", agents, "--db", db, "--model-script", cliScript)
	if code == 0 || !strings.Contains(errOut, "p-77") {
		t.Fatalf("weft run: exit %d, want a failure naming the error:\n%s", code, errOut)
	}
	serveScript := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(serveScript, []byte("version: 1\nresponses:\n  - match: {prompt: chat}\n"+
		"    error: {status: 400, message: \"the served model is out of tokens\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startInspect(t, dir, "--dir", agents, "--db", db, "--model-script", serveScript)
	var page struct {
		Items []struct{ ID string }
	}
	s.must("GET", "/api/threads", "", "", 200, &page)
	if len(page.Items) != 1 {
		t.Fatalf("%d threads, want the one weft run made", len(page.Items))
	}
	cli := page.Items[0].ID
	served := s.createThread(`{"agent":"chat","message":{"content":"Hi from the page"}}`)
	s.waitStopped(served, "step_error")

	for _, tc := range []struct{ name, id, text, step string }{
		{"the thread weft run ran", cli, "quota for project p-77 is spent", ""},
		{"the thread the server ran", served, "the served model is out of tokens", "after step 1"},
	} {
		act(t, ctx, "open "+tc.name, chromedp.Navigate(s.base+"/threads/"+tc.id), chromedp.WaitVisible(`#timeline .msg`))
		waitJS(t, ctx, tc.name+": the error at the end of the conversation", `(() => {
			const end = document.getElementById('run-end');
			return end && !end.hidden && end.previousElementSibling === document.getElementById('timeline') &&
				end.textContent.includes('The run stopped: step_error') && end.textContent.includes(`+jsString(tc.step)+`) &&
				document.getElementById('run-error').textContent.includes(`+jsString(tc.text)+`) })()`)
		waitJS(t, ctx, tc.name+": the reason explained", `document.querySelector('#run-end .term').title.includes('A step failed')`)
		shot(t, ctx, "run-error-"+tc.id)
	}
	// A thread whose run went well shows no such box.
	ok := s.createThread(`{"agent":"chat","label":"Never ran"}`)
	act(t, ctx, "open a thread that never ran", chromedp.Navigate(s.base+"/threads/"+ok), chromedp.WaitVisible(`#composer`))
	waitJS(t, ctx, "no error box", `document.body.dataset.ready === 'thread' && document.getElementById('run-end').hidden`)
}

// TestInspectorNewThread: with no threads the list says what to do — a button, a curl command
// and a weft run command that work as shown; the curl command, run as printed, creates a thread
// that appears live; the New thread form lists the agents the caller may run, creates a thread
// with the first message and opens it, where the reply arrives.
func TestInspectorNewThread(t *testing.T) {
	ctx := browser(t)
	if _, err := exec.LookPath("curl"); err != nil {
		// The browser tests were asked for (WEFT_TEST_CHROMIUM): this one runs the curl command the
		// empty list shows, so a missing curl fails it rather than hiding the check.
		t.Fatalf("this browser test runs the curl command the empty list shows: %v (Debian: apt-get install curl)", err)
	}
	s, db := inspectorServer(t, helperScript, nil)
	dir := filepath.Dir(db)
	act(t, ctx, "open the empty list", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(`#empty`))
	waitJS(t, ctx, "the empty state, not an empty table", `document.getElementById('thread-table').hidden &&
		document.querySelector('#empty h1').textContent === 'No threads yet' && document.getElementById('empty-new') !== null`)
	curl := eval[string](t, ctx, `document.getElementById('empty-curl').textContent`)
	cli := eval[string](t, ctx, `document.getElementById('empty-cli').textContent`)
	if !strings.HasPrefix(curl, "curl -s -X POST "+s.base+"/api/threads ") || !strings.Contains(curl, `"agent":"chat"`) ||
		cli != `weft run chat "Hello"` {
		t.Fatalf("the empty state shows:\n%s\n%s", curl, cli)
	}
	shot(t, ctx, "empty")

	// The curl command, as shown.
	out, err := exec.Command("sh", "-c", curl).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"agent":"chat"`) {
		t.Fatalf("%s: %v\n%s", curl, err, out)
	}
	waitJS(t, ctx, "the thread it made appears; the empty state goes", `document.querySelectorAll('#threads tr.thread-row').length === 1 &&
		document.getElementById('empty').hidden && !document.getElementById('thread-table').hidden`)
	// The weft run command, as shown (with the server's store), works too.
	args := strings.Fields(strings.ReplaceAll(cli, `"`, ""))[1:]
	if _, errOut, code := runWeft(t, dir, append(args, "--dir", filepath.Join(dir, "agents"), "--db", db,
		"--model-script", filepath.Join(dir, "script.yaml"))...); code != 0 {
		t.Fatalf("%s: exit %d\n%s", cli, code, errOut)
	}

	act(t, ctx, "open the form", chromedp.Click(`#new-thread`))
	waitJS(t, ctx, "the agents the caller may run", `!document.getElementById('new-thread-form').hidden &&
		[...document.querySelectorAll('#nt-agent option')].map(o => o.value).join(',') === 'auditor,chat,helper,review'`)
	act(t, ctx, "pick chat, write, create", setField("#nt-agent", "chat", "change"))
	waitJS(t, ctx, "the agent described", `document.getElementById('nt-about').textContent.includes('Talks')`)
	act(t, ctx, "write and create", chromedp.SendKeys(`#nt-label`, "From the form"), chromedp.SendKeys(`#nt-message`, "Hello from the form"),
		chromedp.Click(`#nt-create`))
	waitJS(t, ctx, "the new thread's page, with its message and the reply", `location.pathname.startsWith('/threads/thr_') &&
		document.querySelector('#thread-head h1') && document.querySelector('#thread-head h1').textContent === 'From the form' &&
		[...document.querySelectorAll('#timeline .msg.role-user .content')].some(c => c.textContent === 'Hello from the form') &&
		[...document.querySelectorAll('#timeline .msg.role-assistant .content')].length === 1`)
	id := strings.TrimPrefix(eval[string](t, ctx, `location.pathname`), "/threads/")
	var th struct{ Agent, Label string }
	s.must("GET", "/api/threads/"+id, "", "", 200, &th)
	if th.Agent != "chat" || th.Label != "From the form" {
		t.Fatalf("the form made %+v", th)
	}
	shot(t, ctx, "new-thread")
}

// TestInspectorTimelineAndTerms: the run timeline lists each run's steps, each with its model
// call and tool calls and their durations (a model reply that takes 400 ms shows at least that
// long); Weft's words carry explanations: the sides, the owner, the stop reason, statuses,
// Continue, a sub-prompt, a waiting approval.
func TestInspectorTimelineAndTerms(t *testing.T) {
	ctx := browser(t)
	s, _ := inspectorServer(t, `version: 1
options: {real_time: true}
responses:
  - match: {prompt: helper, depth: 0}
    delay: 400ms
    tool_calls:
      - {name: echo, arguments: {text: "order 7"}}
      - {name: summarize, arguments: {text: "Order 7 shipped late."}}
  - match: {prompt: summarize}
    text: Shipped late.
  - match: {prompt: helper, depth: 0}
    tool_calls: [{name: refund, arguments: {order_id: 7}}]
  - match: {prompt: helper, depth: 0}
    text: Refunded.
`, nil)
	id := s.createThread(`{"agent":"helper","message":{"content":"Look up order 7"}}`)
	s.waitStopped(id, "awaiting_approval")

	act(t, ctx, "open the thread", chromedp.Navigate(s.base+"/threads/"+id), chromedp.WaitVisible(`#timeline .msg`))
	waitJS(t, ctx, "one run of three steps (two at the top, the sub-prompt's)", `document.querySelectorAll('#run-timeline .tl-run').length === 1 &&
		document.querySelectorAll('#run-timeline .tl-step').length === 3`)
	steps := eval[[]any](t, ctx, `[...document.querySelectorAll('#run-timeline .tl-step')].map(r => [r.dataset.depth, Number(r.dataset.ms), r.querySelector('.dur').textContent])`)
	first := steps[0].([]any)
	if first[0] != "0" || first[1].(float64) < 400 || !regexp.MustCompile(`^\d+(\.\d)? s$|^\d+ ms$`).MatchString(first[2].(string)) {
		t.Fatalf("the first step %v, want depth 0 lasting 400 ms or more", first)
	}
	if ms := eval[float64](t, ctx, `Number(document.querySelector('#run-timeline .tl-model').dataset.ms)`); ms < 400 {
		t.Fatalf("the first model call lasted %v ms on the timeline, want 400 or more", ms)
	}
	if sub := steps[1].([]any); sub[0] != "1" {
		t.Fatalf("the second step %v, want the sub-prompt's (depth 1)", sub)
	}
	calls := eval[[]any](t, ctx, `[...document.querySelectorAll('#run-timeline .tl-call')].map(r => r.dataset.tool + ' ' + r.dataset.ms + ' ' + r.querySelector('.dur').textContent)`)
	var names []string
	for _, c := range calls {
		f := strings.Fields(c.(string))
		names = append(names, f[0])
		if f[0] == "refund" {
			if f[1] != "" && f[1] != "0" && !strings.Contains(c.(string), "awaiting") {
				t.Fatalf("the refund waits for approval, yet the timeline shows %q", c)
			}
			continue
		}
		if ms, err := strconv.Atoi(f[1]); err != nil || ms < 0 || !regexp.MustCompile(`\d+ ms$|\d s$`).MatchString(c.(string)) {
			t.Fatalf("tool call row %q: want its duration", c)
		}
	}
	if strings.Join(names, ",") != "echo,summarize,refund" {
		t.Fatalf("tool calls on the timeline: %v", names)
	}
	// The steps' bars sit on the run's span, from its start.
	if left := eval[string](t, ctx, `document.querySelector('#run-timeline .tl-step .tl-bar').style.marginLeft`); left != "0%" {
		t.Fatalf("the first step's bar starts at %q", left)
	}

	// Tooltips.
	for _, c := range []struct{ what, expr, want string }{
		{"side B on the user's message", `document.querySelector('#timeline .msg.role-user .who .term').title`, "the human in an ai_human agent"},
		{"side A on the reply", `document.querySelector('#timeline .msg.role-assistant .who .term').title`, "Side A is the agent"},
		{"the owner", `[...document.querySelectorAll('#thread-head .fact .term')].find(e => e.textContent === 'Owner').title`, "only they (and admins)"},
		{"the status", `document.querySelector('#thread-head .badge').title`, "approve or deny"},
		{"the stop reason", `document.querySelector('#stop-reason .term').title`, "approve or deny"},
		{"Continue", `document.getElementById('continue').title`, "runs the thread again"},
		{"the sub-prompt", `document.querySelector('.call[data-tool=summarize] details.subprompt summary .term').title`, "A prompt called as a tool"},
		{"the approval", `document.querySelector('.call[data-tool=refund] .approval .term').title`, "approval: required"},
		{"the timeline", `document.querySelector('#run-timeline').previousElementSibling.querySelector('.term').title`, "model call log"},
	} {
		waitJS(t, ctx, c.what, `(() => { try { return (`+c.expr+`).includes(`+jsString(c.want)+`) } catch { return false } })()`)
	}
	shot(t, ctx, "timeline")

	// Approving lets the run go on; the timeline follows without a reload.
	act(t, ctx, "approve", center(`.call[data-tool=refund] .approval button.approve`), chromedp.Click(`.call[data-tool=refund] .approval button.approve`))
	waitJS(t, ctx, "four steps, the refund done", `document.querySelectorAll('#run-timeline .tl-step').length === 4 &&
		/\d+ ms$|\d s$/.test(document.querySelector('#run-timeline .tl-call[data-tool=refund] .dur').textContent)`)
}

// TestInspectorA2ATasks: a thread an A2A client talks to shows its tasks — each with its state,
// its message and the agent's reply — and follows a new task live; a thread only /api used shows
// none; another user's thread's tasks are not theirs to read.
func TestInspectorA2ATasks(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "agents"), inspectorProject)
	db := filepath.Join(dir, "weft.db")
	alice := createKey(t, dir, db, "alice")
	bob := createKey(t, dir, db, "bob")
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte("version: 1\nresponses:\n  - match: {prompt: chat}\n    text: Sure, here is a short answer.\n"+
		"  - match: {prompt: chat}\n    text: Hello to you.\n  - match: {prompt: chat}\n    text: The second answer.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, nil, "--dir", filepath.Join(dir, "agents"), "--db", db, "--model-script", script)
	send := func(text, contextID string) (task, context, state string) {
		t.Helper()
		msg := `{"messageId":"m-` + strconv.Itoa(len(text)) + `","role":"ROLE_USER","parts":[{"text":` + jsString(text) + `}]`
		if contextID != "" {
			msg += `,"contextId":"` + contextID + `"`
		}
		var resp struct {
			Result struct {
				Task struct {
					ID, ContextID string
					Status        struct{ State string }
				}
			}
			Error any
		}
		s.must("POST", "/a2a/chat", alice, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":`+msg+`}}}`, 200, &resp)
		if resp.Error != nil {
			t.Fatalf("SendMessage: %v", resp.Error)
		}
		tk := resp.Result.Task
		return tk.ID, tk.ContextID, tk.Status.State
	}
	task1, thread, state := send("Hello over A2A", "")
	if state != "TASK_STATE_COMPLETED" || !strings.HasPrefix(task1, thread+":") {
		t.Fatalf("task %s of %s: %s", task1, thread, state)
	}
	plain := s.createThreadAs(alice, `{"agent":"chat","label":"Only the API","message":{"content":"Hi"}}`)
	s.waitStoppedAs(alice, plain, "stop_on_response")
	if code, _ := s.call("GET", "/api/threads/"+thread+"/a2a/tasks", bob, ""); code != 404 {
		t.Fatalf("bob reads alice's tasks: %d, want 404", code)
	}

	act(t, ctx, "open the inspector with alice's key", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(`#login`),
		chromedp.SendKeys(`#api-key`, alice), chromedp.Click(`#login button`))
	waitJS(t, ctx, "the list", `document.querySelectorAll('#threads tr.thread-row').length === 2`)
	act(t, ctx, "open the A2A thread", chromedp.Navigate(s.base+"/threads/"+thread), chromedp.WaitVisible(`#timeline .msg`))
	waitJS(t, ctx, "its task, completed, with the message and the reply", `(() => {
		const card = document.getElementById('a2a-tasks'); const li = document.querySelector('#a2a-tasks li.task');
		return card && !card.hidden && document.querySelectorAll('#a2a-tasks li.task').length === 1 && li.dataset.task === `+jsString(task1)+` &&
			li.dataset.state === 'TASK_STATE_COMPLETED' && li.querySelector('.badge').textContent === 'completed' &&
			li.querySelector('.task-text').textContent === 'Hello over A2A' &&
			li.querySelector('.task-status').textContent === 'Sure, here is a short answer.' })()`)
	waitJS(t, ctx, "the stream is live", `document.body.dataset.stream === 'live'`)
	// A second task in the same context appears without a reload.
	task2, _, _ := send("And a second question", thread)
	waitJS(t, ctx, "the second task", `[...document.querySelectorAll('#a2a-tasks li.task')].map(li => li.dataset.task + ' ' + li.dataset.state).join(',') === `+
		jsString(task1+" TASK_STATE_COMPLETED,"+task2+" TASK_STATE_COMPLETED"))
	shot(t, ctx, "a2a-tasks")
	act(t, ctx, "open the thread only /api used", chromedp.Navigate(s.base+"/threads/"+plain), chromedp.WaitVisible(`#timeline .msg`))
	waitJS(t, ctx, "no tasks card", `document.body.dataset.stream === 'live' && document.querySelectorAll('#model-calls details.log').length === 1 &&
		document.getElementById('a2a-tasks').hidden`)
}
