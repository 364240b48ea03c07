package main

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/sqlite"
)

// The browser tests drive the real weft binary's inspector in headless Chromium. They need
// WEFT_TEST_CHROMIUM (the path of a Chromium binary; .ci/run sets /usr/bin/chromium): unset, they
// skip; set to something that does not start, they fail.

// inspectorSecret is a thread secret the scripted model repeats: no page may show it.
const inspectorSecret = "tok-9f8e7d6c5b4a"

// inspectorProject is a project whose helper agent calls a command tool, a sub-prompt and a
// subagent in one reply; chat only talks.
var inspectorProject = map[string]string{
	"models/fast.yaml":   "name: fast\nprovider: openai\nmodel: gpt-4o-mini\ninputPrice: 0.15\noutputPrice: 0.60\n",
	"tools/echo.yaml":    "kind: command\ndescription: Echo the arguments back.\nargs: {type: object, properties: {text: {type: string}}, required: [text]}\ncommand: [cat]\ntimeout: 5s\nidempotent: true\n",
	"tools/refund.yaml":  "kind: command\ndescription: Refund an order.\napproval: required\nargs: {type: object, properties: {order_id: {type: integer}}, required: [order_id]}\ncommand: [cat]\ntimeout: 5s\n",
	"agents/helper.yaml": "name: helper\ntype: ai_human\ndescription: Looks things up\nsideA: {prompt: helper, maxSteps: 8}\n",
	"prompts/helper.yaml": "name: helper\nmodel: fast\ntoolDescription: Helps\nincludeChat: true\nprompt: You help with orders.\n" +
		"tools: [echo, summarize, refund, \"agent:review\", \"agent:auditor\"]\n",
	"prompts/summarize.yaml": "name: summarize\nmodel: fast\ntoolDescription: Summarize a text.\nprompt: Summarize briefly.\n" +
		"requiredSchema: {type: object, properties: {text: {type: string}}, required: [text]}\n",
	"agents/review.yaml": "name: review\ntype: dual_ai\nexposeAsTool: true\ntoolDescription: Have a reviewer check a draft\nmaxSessionTurns: 2\n" +
		"sideA: {prompt: reviewer, stopOnResponse: true}\nsideB: {prompt: reviewer}\n",
	"prompts/reviewer.yaml": "name: reviewer\nmodel: fast\ntoolDescription: Reviews a draft\nincludeChat: true\nprompt: You review drafts.\n",
	"agents/auditor.yaml": "name: auditor\ntype: dual_ai\nexposeAsTool: true\ntoolDescription: Audit an order\nmaxSessionTurns: 1\n" +
		"sideA: {prompt: auditor, stopOnResponse: true}\nsideB: {prompt: auditor}\n",
	"prompts/auditor.yaml": "name: auditor\nmodel: fast\ntoolDescription: Audits\nincludeChat: true\nprompt: You audit orders.\n" +
		"variables:\n  - {name: AUDIT_KEY, type: secret, required: true, scoped: true, description: The auditor's key}\n",
	"agents/chat.yaml":  "name: chat\ntype: ai_human\ndescription: Talks\nsideA: {prompt: chat, maxSteps: 4}\n",
	"prompts/chat.yaml": "name: chat\nmodel: fast\ntoolDescription: Talks\nincludeChat: true\nprompt: You chat.\n",
}

// browser starts headless Chromium for one test and returns its context (one tab), with a
// deadline; JavaScript exceptions and console errors fail the test at its end.
func browser(t *testing.T) context.Context {
	t.Helper()
	return browserWithin(t, 50*time.Second)
}

// browserWithin is browser with a deadline of d.
func browserWithin(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	path := os.Getenv("WEFT_TEST_CHROMIUM")
	if path == "" {
		t.Skip("browser test: set WEFT_TEST_CHROMIUM=/usr/bin/chromium to run it (Debian: apt-get install chromium)")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("WEFT_TEST_CHROMIUM=%s: %v", path, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.Flag("disable-quic", true),
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, d)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium (%s): %v", path, err)
	}
	// Uncaught exceptions and console.error calls of the page fail the test (the browser's own
	// log, which reports the 404 answers the not-found pages rely on, does not).
	var problems syncBuffer
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source == "") {
				fmt.Fprintf(&problems, "%s\n", m)
			}
		}
	}()
	t.Cleanup(func() {
		if p := problems.String(); p != "" {
			t.Errorf("the page reported errors:\n%s", p)
		}
	})
	return ctx
}

// shot saves a screenshot of the window under the test's artifact directory.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", p)
}

// act runs browser actions, failing the test with the step that failed.
func act(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		shot(t, ctx, "failed")
		t.Fatalf("%s: %v", what, err)
	}
}

// js runs a JavaScript expression for its effect.
func js(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](expr)(ctx, t)
		return err
	})
}

// setField sets a form field's value and fires the event the page listens to (input or change).
func setField(sel, value, event string) chromedp.Action[chromedp.Void] {
	return js(fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event(%q)); })()`, sel, value, event))
}

// center scrolls an element to the middle of the window, clear of the sticky header and composer.
func center(sel string) chromedp.Action[chromedp.Void] {
	return js(fmt.Sprintf(`document.querySelector(%q).scrollIntoView({block: 'center'})`, sel))
}

// eval returns a JavaScript expression's value.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// waitJS polls a JavaScript expression until it is true.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		// A page that reloads (the login does) fails an evaluation made while it navigates; the
		// next one reads the new page.
		if err != nil && !strings.Contains(err.Error(), "navigated or closed") {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('main').innerText.slice(0, 3000)`))
			shot(t, ctx, "failed")
			t.Fatalf("%s: %s stayed false; the page shows:\n%s", what, expr, html)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// inspectorServer starts weft inspect on a fresh project and store with the model script.
func inspectorServer(t *testing.T, script string, seed func(db string)) (*server, string) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "agents"), inspectorProject)
	scriptPath := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "weft.db")
	if seed != nil {
		seed(db)
	}
	return startInspect(t, dir, "--dir", filepath.Join(dir, "agents"), "--db", db, "--model-script", scriptPath), db
}

// startInspect runs weft inspect and waits for the URL it prints.
func startInspect(t *testing.T, dir string, args ...string) *server {
	t.Helper()
	return startProcess(t, dir, nil, "weft: inspector at ", append([]string{"inspect"}, args...)...)
}

// createThread creates a thread over the API and returns its id.
func (s *server) createThread(body string) string {
	s.t.Helper()
	return s.createThreadAs("", body)
}

// createThreadAs creates a thread over the API with a key and returns its id.
func (s *server) createThreadAs(key, body string) string {
	s.t.Helper()
	var created struct {
		Thread struct{ ID string } `json:"thread"`
	}
	s.must("POST", "/api/threads", key, body, 201, &created)
	return created.Thread.ID
}

// waitIdle waits until the thread's run stopped with the reason.
func (s *server) waitStopped(id, reason string) {
	s.t.Helper()
	s.waitStoppedAs("", id, reason)
}

// waitStoppedAs is waitStopped with a key.
func (s *server) waitStoppedAs(key, id, reason string) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var th struct {
			Status     string
			StopReason string `json:"stop_reason"`
		}
		s.must("GET", "/api/threads/"+id, key, "", 200, &th)
		if th.Status != "running" && th.StopReason == reason {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("thread %s: %s / %s, want it stopped with %s", id, th.Status, th.StopReason, reason)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const helperScript = `version: 1
responses:
  - match: {prompt: helper, depth: 0}
    tool_calls:
      - {name: echo, arguments: {text: "order 7"}}
      - {name: summarize, arguments: {text: "Order 7 shipped late."}}
      - {name: review, arguments: {message: "Draft: refund order 7"}}
  - match: {prompt: summarize}
    text: Shipped late; a refund is due.
  - match: {prompt: reviewer, side: a}
    text: Looks fine to me.
  - match: {prompt: reviewer, side: b}
    text: Agreed, ship it.
  - match: {prompt: reviewer}
    text: Nothing more.
  - match: {prompt: reviewer}
    text: Nothing more.
  - match: {prompt: reviewer}
    text: Nothing more.
  - match: {prompt: helper, depth: 0}
    text: "All done. The token was ` + inspectorSecret + `, as asked."
  - match: {prompt: helper, depth: 0}
    text: Noted the review.
  - match: {prompt: helper, depth: 0}
    text: Noted again.
  - match: {prompt: chat}
    text: Sure, here is a short answer.
  - match: {prompt: chat}
    text: A second short answer, a little longer than the first one so that it costs more.
`

// TestInspectorList: the list shows the seeded threads with their agents, statuses, tags and
// costs; search, the agent, status and tag filters and the cost sort narrow and order it; a
// thread created meanwhile appears without a reload.
func TestInspectorList(t *testing.T) {
	ctx := browser(t)
	s, _ := inspectorServer(t, helperScript, nil)
	helper := s.createThread(`{"agent":"helper","tags":["orders","vip"],"env":{"TOKEN":"` + inspectorSecret + `"},"message":{"content":"Look up order 7"}}`)
	s.waitStopped(helper, "stop_on_response")
	chat1 := s.createThread(`{"agent":"chat","tags":["smalltalk"],"message":{"content":"Say hi"}}`)
	s.waitStopped(chat1, "stop_on_response")
	chat2 := s.createThread(`{"agent":"chat","tags":["smalltalk"],"message":{"content":"Say more about the weather today"}}`)
	s.waitStopped(chat2, "stop_on_response")
	idle := s.createThread(`{"agent":"chat","label":"Untouched"}`)

	rows := `[...document.querySelectorAll('#threads tr.thread-row')].map(r => r.dataset.id).join(',')`
	act(t, ctx, "open the list", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(`#threads tr.thread-row`))
	waitJS(t, ctx, "all four threads, newest activity first", rows+` === '`+strings.Join([]string{idle, chat2, chat1, helper}, ",")+`'`)
	waitJS(t, ctx, "live", `document.getElementById('conn').textContent === 'live'`)
	shot(t, ctx, "list")

	act(t, ctx, "filter by agent", setField("#f-agent", "helper", "change"))
	waitJS(t, ctx, "only the helper thread", rows+` === '`+helper+`'`)
	waitJS(t, ctx, "the URL keeps the filter", `location.search === '?agent=helper'`)
	act(t, ctx, "clear the agent, type a tag", setField("#f-agent", "", "change"), chromedp.SendKeys(`#f-tag`, "smalltalk"))
	waitJS(t, ctx, "the smalltalk threads", rows+` === '`+chat2+","+chat1+`'`)
	act(t, ctx, "sort by cost", setField("#f-sort", "cost", "change"))
	waitJS(t, ctx, "the costlier chat first", rows+` === '`+chat2+","+chat1+`' && document.querySelector('#threads tr .num').textContent.startsWith('$')`)
	act(t, ctx, "clear the tag, type a search", setField("#f-tag", "", "input"), chromedp.SendKeys(`#f-search`, "weather"))
	waitJS(t, ctx, "the thread that speaks of the weather", rows+` === '`+chat2+`'`)
	act(t, ctx, "clear the search and sort, filter by status", setField("#f-search", "", "input"), setField("#f-sort", "activity", "change"),
		setField("#f-status", "idle", "change"))
	waitJS(t, ctx, "the idle thread", rows+` === '`+idle+`'`)

	// Live: a thread created now shows up in the open list (status idle matches).
	fresh := s.createThread(`{"agent":"helper","label":"Arrived live"}`)
	waitJS(t, ctx, "the new thread appears", rows+` === '`+fresh+","+idle+`'`)
	text := eval[string](t, ctx, `document.body.innerText`)
	if strings.Contains(text, inspectorSecret) {
		t.Fatalf("the list shows the thread's secret")
	}
}

// TestInspectorThread: a thread whose reply called a command tool, a sub-prompt and a subagent
// shows each call paired with its result, the sub-prompt's rows folded under its call, the
// subagent linked (and in the tree), the stop reason with its step, and the model calls; a
// model call opens to its redacted request body. The thread's secret appears nowhere.
func TestInspectorThread(t *testing.T) {
	ctx := browser(t)
	s, _ := inspectorServer(t, helperScript, nil)
	id := s.createThread(`{"agent":"helper","env":{"TOKEN":"` + inspectorSecret + `"},"message":{"content":"Look up order 7"}}`)
	s.waitStopped(id, "stop_on_response")

	act(t, ctx, "open the thread", chromedp.Navigate(s.base+"/threads/"+id), chromedp.WaitVisible(`#timeline .msg`))
	waitJS(t, ctx, "three calls with their results", `document.querySelectorAll('.call .result').length === 3`)
	waitJS(t, ctx, "echo's result", `document.querySelector('.call[data-tool=echo] .result').textContent.includes('order 7')`)
	waitJS(t, ctx, "the sub-prompt folded under its call",
		`(() => { const d = document.querySelector('.call[data-tool=summarize] details.subprompt');
		  return d && !d.open && d.querySelector('summary').textContent.startsWith('Sub-prompt · ') &&
		    d.querySelector('.nested > .msg.role-assistant > .content').textContent === 'Shipped late; a refund is due.' })()`)
	waitJS(t, ctx, "the subagent in the tree", `document.querySelectorAll('#subagents li[data-thread]').length === 1`)
	child := eval[string](t, ctx, `document.querySelector('#subagents li[data-thread]').dataset.thread`)
	waitJS(t, ctx, "the stop reason with its step", `/Stopped: awaiting_human after step \d+/.test(document.getElementById('stop-reason').textContent) ||
		/Stopped: stop_on_response after step \d+/.test(document.getElementById('stop-reason').textContent)`)
	waitJS(t, ctx, "the secret redacted in the reply", `document.body.innerText.includes('[redacted]')`)
	waitJS(t, ctx, "the model calls listed", `document.querySelectorAll('#model-calls details.log').length >= 2`)

	act(t, ctx, "open the sub-prompt", center(`.call[data-tool=summarize] details.subprompt summary`), chromedp.Click(`.call[data-tool=summarize] details.subprompt summary`))
	waitJS(t, ctx, "the sub-prompt shows its rows", `document.querySelector('.call[data-tool=summarize] details.subprompt').open`)
	act(t, ctx, "open the first model call", center(`#model-calls details.log:last-child summary`), chromedp.Click(`#model-calls details.log:last-child summary`))
	waitJS(t, ctx, "its stats", `/Provider\s*scripted|Provider\s*openai/.test(document.querySelector('#model-calls details.log:last-child .stats').innerText)`)
	waitJS(t, ctx, "its request body", `(() => { const p = document.querySelector('#model-calls details.log:last-child .request-body pre');
		return p && p.textContent.includes('You help with orders.') && p.textContent.includes('Look up order 7') })()`)
	act(t, ctx, "scroll to the top", js(`window.scrollTo(0, 0)`))
	shot(t, ctx, "thread")
	text := eval[string](t, ctx, `document.documentElement.outerHTML`)
	if strings.Contains(text, inspectorSecret) {
		t.Fatalf("the thread page shows the secret")
	}

	// The subagent's own page links back to its parent.
	act(t, ctx, "open the child", chromedp.Navigate(s.base+"/threads/"+child), chromedp.WaitVisible(`#timeline .msg`))
	waitJS(t, ctx, "the child's reply and its parent link", `document.body.innerText.includes('Looks fine to me.') &&
		document.querySelector('#subagents a[href="/threads/`+id+`"]') !== null`)
}

// TestInspectorSendAndStop: a message sent from the page (with an image attached) gets its reply
// streamed in as it arrives, the image shown inline; a second message starts a slow run that the
// Stop button stops, and the page shows why it stopped. A dropped event stream reconnects by
// itself and resumes where it left off: a message posted meanwhile, and the reply Continue
// brings, appear once each, without a reload.
func TestInspectorSendAndStop(t *testing.T) {
	ctx := browser(t)
	s, _ := inspectorServer(t, `version: 1
options: {real_time: true, chunk_size: 3}
responses:
  - match: {prompt: chat}
    delay: 100ms
    text: Streaming back to you, a few words at a time, until the reply is whole.
  - match: {prompt: chat}
    delay: 30s
    text: Too late.
  - match: {prompt: chat}
    text: Back after the dropped stream.
`, nil)
	id := s.createThread(`{"agent":"chat","label":"Live chat"}`)
	img := filepath.Join(t.TempDir(), "dot.png")
	writePNG(t, img, 40, 30)

	act(t, ctx, "open the thread", chromedp.Navigate(s.base+"/threads/"+id), chromedp.WaitVisible(`#composer`))
	waitJS(t, ctx, "the stream is live", `document.body.dataset.stream === 'live'`)
	act(t, ctx, "write a message with an image", chromedp.SendKeys(`#message`, "Hello there"), chromedp.SetUploadFiles(`#files`, []string{img}),
		chromedp.Click(`#send`))
	reply := `[...document.querySelectorAll('#timeline .msg.role-assistant')].find(m => m.querySelector('.content').textContent.startsWith('Streaming back'))`
	waitJS(t, ctx, "the reply, streamed in chunks", `(() => { const m = `+reply+`; return m && m.querySelector('.content').textContent ===
		'Streaming back to you, a few words at a time, until the reply is whole.' && Number(m.dataset.chunks) > 5 })()`)
	waitJS(t, ctx, "the message and its image, shown inline", `(() => { const u = [...document.querySelectorAll('#timeline .msg.role-user')].find(m => m.textContent.includes('Hello there'));
		const i = u && u.querySelector('img.thumb'); return i && i.src.startsWith('blob:') && i.complete && i.naturalWidth === 40 })()`)
	shot(t, ctx, "streamed")

	act(t, ctx, "send a message whose reply is slow", chromedp.SendKeys(`#message`, "Take your time"), chromedp.Click(`#send`))
	waitJS(t, ctx, "the run is under way", `!document.getElementById('stop').disabled && document.body.innerText.includes('Running step')`)
	act(t, ctx, "stop it", chromedp.Click(`#stop`))
	waitJS(t, ctx, "stopped by the user", `document.getElementById('stop-reason') && document.getElementById('stop-reason').textContent.includes('aborted_by_user') &&
		document.getElementById('stop').disabled`)
	shot(t, ctx, "stopped")

	// A stopped thread keeps new messages until it is continued: post one while the page's stream
	// is down, then continue from the page.
	act(t, ctx, "mark the page, drop the stream", js(`window.samePage = true; window.weftStream.drop()`))
	s.must("POST", "/api/threads/"+id+"/messages", "", `{"content":"Still there?"}`, 202, nil)
	act(t, ctx, "continue", chromedp.Click(`#continue`))
	waitJS(t, ctx, "the message and the reply after the reconnect, once each, on the same page", `window.samePage === true &&
		[...document.querySelectorAll('#timeline .msg .content')].filter(c => c.textContent === 'Still there?').length === 1 &&
		[...document.querySelectorAll('#timeline .msg .content')].filter(c => c.textContent === 'Back after the dropped stream.').length === 1 &&
		document.body.dataset.stream === 'live'`)
	ids := eval[[]any](t, ctx, `[...document.querySelectorAll('#timeline .msg')].map(m => m.dataset.id)`)
	seen := map[any]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("message %v shown twice", id)
		}
		seen[id] = true
	}
}

// TestInspectorRendersText: markup in a message, in tool arguments and in a tool result is shown
// as text — nothing of it runs or loads — in the list and in the thread; the pages carry a
// Content-Security-Policy.
func TestInspectorRendersText(t *testing.T) {
	ctx := browser(t)
	const userText = `<img src=x onerror="window.pwned='user'">`
	s, _ := inspectorServer(t, `version: 1
responses:
  - match: {prompt: helper, depth: 0}
    tool_calls: [{name: echo, arguments: {text: "<img src=x onerror=window.pwned='args'><script>window.pwned='script'</script>"}}]
  - match: {prompt: helper, depth: 0}
    text: "<b onmouseover=window.pwned='reply'>bold</b><iframe src=javascript:window.pwned='frame'></iframe>"
`, nil)
	id := s.createThread(`{"agent":"helper","label":"<img src=x onerror=window.pwned='label'>","message":{"content":"` + strings.ReplaceAll(userText, `"`, `\"`) + `"}}`)
	s.waitStopped(id, "stop_on_response")

	act(t, ctx, "open the list", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(`#threads tr.thread-row`))
	waitJS(t, ctx, "the label as text", `document.querySelector('#threads .thread-link').textContent === "<img src=x onerror=window.pwned='label'>"`)
	act(t, ctx, "open the thread", chromedp.Navigate(s.base+"/threads/"+id), chromedp.WaitVisible(`#timeline .msg`))
	waitJS(t, ctx, "the reply as text", `[...document.querySelectorAll('#timeline .content')].some(c => c.textContent.startsWith('<b onmouseover'))`)
	waitJS(t, ctx, "the user's markup as text", `document.querySelector('#timeline .msg.role-user .content').textContent === `+jsString(userText))
	waitJS(t, ctx, "the arguments and result as text", `document.querySelector('.call[data-tool=echo] .args').textContent.includes('<script>') &&
		document.querySelector('.call[data-tool=echo] .result').textContent.includes("<img src=x onerror=window.pwned='args'>")`)
	act(t, ctx, "hover everything", js(`document.querySelectorAll('#main *').forEach(e => e.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})))`),
		chromedp.Sleep(300*time.Millisecond))
	if got := eval[string](t, ctx, `String(window.pwned)`); got != "undefined" {
		t.Fatalf("markup from the thread ran: window.pwned = %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#main img:not(.thumb), #main script, #main iframe, #main b').length`); n != 0 {
		t.Fatalf("the page made %d elements out of thread text", n)
	}
	shot(t, ctx, "as-text")
	code, body := s.call("GET", "/threads/"+id, "", "")
	if code != 200 || strings.Contains(body, "pwned") {
		t.Fatalf("the shell: %d, or it holds thread data", code)
	}
	resp, err := http.Get(s.base + "/threads/" + id)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("Content-Security-Policy %q", csp)
	}
}

// TestInspectorNotFound: an unknown thread and an unknown page each say so clearly.
func TestInspectorNotFound(t *testing.T) {
	ctx := browser(t)
	s, _ := inspectorServer(t, helperScript, nil)
	act(t, ctx, "open an unknown thread", chromedp.Navigate(s.base+"/threads/thr_01nosuchthread0000000000000"), chromedp.WaitVisible(`#not-found`))
	waitJS(t, ctx, "the not-found page", `document.querySelector('#not-found h1').textContent === 'Thread not found' &&
		document.querySelector('#not-found').textContent.includes('thr_01nosuchthread0000000000000') && document.title.startsWith('Not found')`)
	shot(t, ctx, "not-found")
	act(t, ctx, "open an unknown page", chromedp.Navigate(s.base+"/nothing/here"), chromedp.WaitVisible(`#not-found`))
	waitJS(t, ctx, "the page not found", `document.querySelector('#not-found h1').textContent === 'Page not found'`)
	if code, _ := s.call("GET", "/nothing/here", "", ""); code != 404 {
		t.Fatalf("GET /nothing/here: %d", code)
	}
}

// TestInspectorFirstPaint: a thread of 2,000 messages paints as fast as a thread of 50 — its
// newest page, and nothing more, before the first frame — and scrolling up loads an earlier page
// and keeps the reader's place.
//
// It used to assert "under 300 ms" from navigation start, and failed once at 318 ms (the fastest
// of 24) on a loaded CI machine. The breakdown of a load (logged below) shows why no absolute bound
// can hold there: of ~200 ms on an idle machine, ~90 ms is loading the page's modules and ~50 ms
// the frame itself, costs of any thread, while the API answers the 2,000-message page in 1–5 ms
// and the 50 messages render in ~10 ms; all of it stretches with the machine's load. So the test
// measures what a long thread could cost — against a 50-message thread loaded alternately in the
// same browser, under the same load — and counts the work that does not depend on load: one
// request for the newest 50 messages before the paint, a body the size of the short thread's, 50
// messages in the page.
func TestInspectorFirstPaint(t *testing.T) {
	ctx := browserWithin(t, 4*time.Minute) // up to 48 page loads on a loaded machine
	var long, short string
	s, _ := inspectorServer(t, helperScript, func(db string) { long, short = seedThread(t, db, 2000), seedThread(t, db, 50) })
	act(t, ctx, "warm the browser", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(`#threads tr.thread-row`))
	type load struct {
		ms    float64 // navigation start to the first frame showing the messages
		shown int     // messages in the page at that frame
		// requests lists the message requests the rendered page was made from, with their body
		// sizes (the catch-up request that follows the stream going live is not among them).
		requests []string
		bytes    int
		detail   string
	}
	open := func(id string) load {
		act(t, ctx, "open a thread", chromedp.Navigate(s.base+"/threads/"+id))
		waitJS(t, ctx, "painted", `performance.getEntriesByName('weft-painted').length === 1`)
		got := eval[[]any](t, ctx, `(() => { const painted = performance.getEntriesByName('weft-painted')[0].startTime;
			const rendered = performance.getEntriesByName('weft-rendered')[0].startTime;
			const r = performance.getEntriesByType('resource');
			const msgs = r.filter(e => e.name.includes('/messages?') && e.startTime < rendered);
			const m = msgs[0] || {}; const a = r.find(e => e.name.endsWith('/assets/app.js')) || {};
			const mk = (k) => Math.round(performance.getEntriesByName(k)[0].startTime);
			return [painted, window.weftShownAtPaint, msgs.map(e => e.name.slice(e.name.indexOf('/messages?')) + ' ' + e.decodedBodySize),
			  'modules ' + Math.round(a.responseEnd) + ', API asked ' + Math.round(m.requestStart) + ' answered ' + Math.round(m.responseEnd) +
			  ', rendered ' + mk('weft-rendered') + ', painted ' + mk('weft-painted')] })()`)
		l := load{ms: got[0].(float64), shown: int(got[1].(float64)), detail: got[3].(string)}
		for _, r := range got[2].([]any) {
			f := strings.Fields(r.(string))
			l.requests = append(l.requests, f[0])
			n, _ := strconv.Atoi(f[1])
			l.bytes += n
		}
		return l
	}
	// Alternate the two threads, so that both see the same load; the fastest load of each is the
	// figure (noise only adds time). Up to 3 rounds of 8 pairs, until the long thread's is within
	// the bound: a long thread may cost 20% more than a 50-message one, and never less than 40 ms.
	var times []string
	bestLong, bestShort := -1.0, -1.0
	var atLong, atShort load
	within := func() bool { return bestLong >= 0 && bestLong <= bestShort+max(40, bestShort*0.2) }
	for round := 0; round < 3 && !within(); round++ {
		for range 8 {
			l, sh := open(long), open(short)
			times = append(times, fmt.Sprintf("%.0f/%.0f", l.ms, sh.ms))
			if bestLong < 0 || l.ms < bestLong {
				bestLong, atLong = l.ms, l
			}
			if bestShort < 0 || sh.ms < bestShort {
				bestShort, atShort = sh.ms, sh
			}
		}
	}
	t.Logf("first paint of a 2,000-message thread %.0f ms, of a 50-message one %.0f ms (the fastest of each; long/short per pair: %s ms)",
		bestLong, bestShort, strings.Join(times, ", "))
	t.Logf("the fastest loads, in ms from navigation start: 2,000 messages: %s; 50 messages: %s", atLong.detail, atShort.detail)
	if !within() {
		t.Errorf("a 2,000-message thread's first paint took %.0f ms, a 50-message one's %.0f: the long thread costs more than its first page", bestLong, bestShort)
	}
	// The work before the paint, load or no load: one request, for the newest 50 messages; a body
	// no bigger than the short thread's (bar its longer numbers); 50 messages in the page.
	for _, l := range []load{atLong, atShort} {
		if len(l.requests) != 1 || !strings.Contains(l.requests[0], "order=desc&limit=50&") || l.shown != 50 {
			t.Errorf("before the first paint: message requests %v, %d messages shown; want one request for the newest 50, 50 shown", l.requests, l.shown)
		}
	}
	if atLong.bytes > atShort.bytes*11/10 {
		t.Errorf("the first page of the long thread is %d bytes, the short thread's %d", atLong.bytes, atShort.bytes)
	}
	act(t, ctx, "open the long thread", chromedp.Navigate(s.base+"/threads/"+long))
	waitJS(t, ctx, "its newest page", `document.querySelectorAll('#timeline .msg').length === 50 &&
		document.querySelector('#timeline .msg:last-child .content').textContent === 'Message 2000'`)
	act(t, ctx, "scroll to the top", js(`window.scrollTo(0, 0)`))
	waitJS(t, ctx, "an earlier page loads", `document.querySelectorAll('#timeline .msg').length === 150 &&
		document.querySelector('#timeline .msg .content').textContent === 'Message 1851'`)
	waitJS(t, ctx, "the reader keeps their place", `window.scrollY > 0`)
}

// seedThread writes a chat thread of n alternating user and assistant messages into the store.
func seedThread(t *testing.T, db string, n int) string {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db, sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	th := &weft.Thread{Agent: "chat", Label: "A long conversation"}
	if err := st.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	err = st.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		for i := 1; i <= n; i++ {
			m := &weft.Message{Role: weft.RoleUser, Side: weft.SideB, Content: fmt.Sprintf("Message %d", i), Status: weft.MessageCompleted}
			if i%2 == 0 {
				m.Role, m.Side = weft.RoleAssistant, weft.SideA
			}
			if err := tx.InsertMessage(m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return th.ID
}

// writePNG writes a w×h PNG.
func writePNG(t *testing.T, path string, w, h int) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestInspectorApproveAndVariables: a tool call that needs a person's approval shows Approve and
// Deny in its card, and approving it lets the run go on; a subagent that lacks a variable shows a
// form for it, and providing the value starts the subagent, which then appears in the tree.
func TestInspectorApproveAndVariables(t *testing.T) {
	ctx := browser(t)
	s, _ := inspectorServer(t, `version: 1
responses:
  - match: {prompt: helper, depth: 0}
    tool_calls: [{name: refund, arguments: {order_id: 7}}]
  - match: {prompt: helper, depth: 0}
    tool_calls: [{name: auditor, arguments: {message: "Audit order 7"}}]
  - match: {prompt: helper, depth: 0}
    text: I need the audit key first.
  - match: {prompt: auditor}
    text: Audit clean.
  - match: {prompt: auditor}
    text: Audit clean.
  - match: {prompt: helper, depth: 0}
    text: The audit is back.
  - match: {prompt: helper, depth: 0}
    text: Noted.
`, nil)
	id := s.createThread(`{"agent":"helper","message":{"content":"Refund order 7"}}`)
	s.waitStopped(id, "awaiting_approval")

	act(t, ctx, "open the thread", chromedp.Navigate(s.base+"/threads/"+id), chromedp.WaitVisible(`#timeline .msg`))
	waitJS(t, ctx, "the call waits for approval", `document.querySelector('.call[data-tool=refund] .approval button.approve') !== null &&
		document.querySelector('.call[data-tool=refund] .badge').textContent === 'awaiting approval'`)
	shot(t, ctx, "approval")
	act(t, ctx, "approve", chromedp.Click(`.call[data-tool=refund] .approval button.approve`))
	waitJS(t, ctx, "the refund ran", `document.querySelector('.call[data-tool=refund] .result') !== null &&
		document.querySelector('.call[data-tool=refund] .approval') === null`)
	waitJS(t, ctx, "the variables form", `document.querySelector('#pending form.env-request input[name=AUDIT_KEY]') !== null`)
	act(t, ctx, "provide the key", chromedp.SendKeys(`#pending input[name=AUDIT_KEY]`, "audit-key-123"),
		chromedp.Click(`#pending form.env-request button[type=submit]`))
	waitJS(t, ctx, "the subagent started, in the tree", `document.querySelector('#pending form.env-request') === null &&
		[...document.querySelectorAll('#subagents li[data-thread]')].some(li => li.textContent.includes('auditor'))`)
	waitJS(t, ctx, "the parent heard back", `document.body.innerText.includes('The audit is back.')`)
	if strings.Contains(eval[string](t, ctx, `document.documentElement.outerHTML`), "audit-key-123") {
		t.Fatalf("the page still shows the provided secret")
	}
}

// TestInspectorAuth: weft serve with keys serves the same pages; the page asks for a key, refuses
// a wrong one, keeps the right one in the tab's sessionStorage (never in the URL or a cookie),
// and then shows only what that key's user may see, live.
func TestInspectorAuth(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "agents"), inspectorProject)
	db := filepath.Join(dir, "weft.db")
	alice := createKey(t, dir, db, "alice")
	bob := createKey(t, dir, db, "bob")
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte(helperScript), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, nil, "--dir", filepath.Join(dir, "agents"), "--db", db, "--model-script", script)
	var mine, theirs struct {
		Thread struct{ ID string } `json:"thread"`
	}
	s.must("POST", "/api/threads", alice, `{"agent":"chat","label":"Alice's thread"}`, 201, &mine)
	s.must("POST", "/api/threads", bob, `{"agent":"chat","label":"Bob's thread"}`, 201, &theirs)

	act(t, ctx, "open the inspector", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(`#login`))
	act(t, ctx, "enter a wrong key", chromedp.SendKeys(`#api-key`, "wft_wrongwrongwrong"), chromedp.Click(`#login button`))
	waitJS(t, ctx, "refused", `document.querySelector('#login .error') !== null && document.querySelector('#login .error').textContent.includes('refused')`)
	act(t, ctx, "enter alice's key", js(`document.getElementById('api-key').value = ''`), chromedp.SendKeys(`#api-key`, alice), chromedp.Click(`#login button`))
	waitJS(t, ctx, "alice's threads only", `[...document.querySelectorAll('#threads tr.thread-row')].map(r => r.dataset.id).join(',') === '`+mine.Thread.ID+`'`)
	waitJS(t, ctx, "live", `document.getElementById('conn').textContent === 'live'`)
	if got := eval[string](t, ctx, `sessionStorage.getItem('weft.api_key')`); got != alice {
		t.Fatalf("sessionStorage holds %q", got)
	}
	if c := eval[string](t, ctx, `document.cookie + location.href`); strings.Contains(c, alice) {
		t.Fatalf("the key is in a cookie or the URL: %s", c)
	}
	act(t, ctx, "open bob's thread", chromedp.Navigate(s.base+"/threads/"+theirs.Thread.ID), chromedp.WaitVisible(`#not-found`))
	act(t, ctx, "open her thread", chromedp.Navigate(s.base+"/threads/"+mine.Thread.ID), chromedp.WaitVisible(`#composer`))
	waitJS(t, ctx, "her thread, live", `document.querySelector('#thread-head h1').textContent === "Alice's thread" && document.body.dataset.stream === 'live'`)
}

// TestInspectLoopbackOnly: weft inspect has no auth, so it refuses a non-loopback address; on a
// loopback one it prints the inspector's URL and serves the API without a key.
func TestInspectLoopbackOnly(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "agents"), inspectorProject)
	_, errOut, code := runWeft(t, dir, "inspect", "--addr", "0.0.0.0:0", "--dir", filepath.Join(dir, "agents"), "--db", filepath.Join(dir, "w.db"))
	if code != exitUsage || !strings.Contains(errOut, "loopback") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	s := startInspect(t, dir, "--dir", filepath.Join(dir, "agents"), "--db", filepath.Join(dir, "w.db"))
	if !strings.HasPrefix(s.base, "http://127.0.0.1:") {
		t.Fatalf("inspector URL %q", s.base)
	}
	s.must("GET", "/api/threads", "", "", 200, nil)
	if code, body := s.call("GET", "/", "", ""); code != 200 || !strings.Contains(body, "/assets/app.js") {
		t.Fatalf("GET /: %d %.200s", code, body)
	}
	s.stop()
}

// TestInspectorFork: "Fork from here" on a message opens the new thread, which holds the
// messages up to it and links back to the original; the original links to its fork.
func TestInspectorFork(t *testing.T) {
	ctx := browser(t)
	s, _ := inspectorServer(t, `version: 1
responses:
  - match: {prompt: chat}
    text: First answer.
  - match: {prompt: chat}
    text: Second answer.
  - match: {prompt: chat}
    text: Second answer, again.
  - match: {prompt: chat}
    text: Answer to the edit.
`, nil)
	id := s.createThread(`{"agent":"chat","label":"To fork"}`)
	s.must("POST", "/api/threads/"+id+"/messages", "", `{"content":"One"}`, 202, nil)
	s.must("POST", "/api/threads/"+id+"/messages", "", `{"content":"Two"}`, 202, nil)
	act(t, ctx, "open the thread", chromedp.Navigate(s.base+"/threads/"+id), chromedp.WaitVisible(`#composer`))
	waitJS(t, ctx, "both answers", `document.body.innerText.includes('Second answer.')`)
	act(t, ctx, "fork at the first answer", js(`[...document.querySelectorAll('#timeline .msg.role-assistant')]
		.find(m => m.querySelector('.content').textContent === 'First answer.').querySelector('a.fork').click()`))
	waitJS(t, ctx, "the fork, open, linking back", `location.pathname !== '/threads/`+id+`' && document.body && document.body.dataset.ready === 'thread' &&
		document.getElementById('forked-from') && document.getElementById('forked-from').textContent.startsWith('`+id+`')`)
	texts := eval[[]any](t, ctx, `[...document.querySelectorAll('#timeline .msg .content')].map(c => c.textContent)`)
	if fmt.Sprint(texts) != "[One First answer.]" {
		t.Errorf("the fork shows %v", texts)
	}
	shot(t, ctx, "fork")
	act(t, ctx, "back to the original", chromedp.Navigate(s.base+"/threads/"+id), chromedp.WaitVisible(`#composer`))
	waitJS(t, ctx, "the original lists its fork", `document.querySelectorAll('a.fork-link').length === 1`)

	act(t, ctx, "retry the second answer", js(`[...document.querySelectorAll('#timeline .msg.role-assistant')]
		.find(m => m.querySelector('.content').textContent === 'Second answer.').querySelector('a.retry').click()`))
	waitJS(t, ctx, "the retry's fork, answered again", `location.pathname !== '/threads/`+id+`' && document.body && document.body.dataset.ready === 'thread' &&
		[...document.querySelectorAll('#timeline .msg .content')].map(c => c.textContent).join('|') === 'One|First answer.|Two|Second answer, again.'`)

	act(t, ctx, "back to the original", chromedp.Navigate(s.base+"/threads/"+id), chromedp.WaitVisible(`#composer`))
	waitJS(t, ctx, "its messages", `document.body.innerText.includes('Second answer.')`)
	act(t, ctx, "edit the second message", js(`[...document.querySelectorAll('#timeline .msg.role-user')]
		.find(m => m.querySelector('.content').textContent === 'Two').querySelector('a.edit').click()`))
	act(t, ctx, "write the new text and send it", js(`document.querySelector('form.edit textarea').value = 'Two, edited'`),
		chromedp.Click(`form.edit button[type=submit]`))
	waitJS(t, ctx, "the edit's fork, answered", `location.pathname !== '/threads/`+id+`' && document.body && document.body.dataset.ready === 'thread' &&
		[...document.querySelectorAll('#timeline .msg .content')].map(c => c.textContent).join('|') === 'One|First answer.|Two, edited|Answer to the edit.'`)
}
