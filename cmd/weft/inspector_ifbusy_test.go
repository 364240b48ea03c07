package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestInspectorIfBusy: the composer's if-busy control. While a story streams, a message sent
// with "reject" is refused (the page shows the server's error naming the run in progress, and
// nothing is stored); one sent with "rollback" stops the story (nothing of it stored) and is
// answered by a new run; the thread's default (queue) would have let the story finish.
func TestInspectorIfBusy(t *testing.T) {
	ctx := browser(t)
	s, _ := inspectorServer(t, `version: 1
options: {real_time: true, chunk_size: 3, chunk_delay: 60ms}
responses:
  - match: {prompt: chat}
    text: Once upon a time there was a story so long that nobody waited for its end, and it went on and on and on, past the hills and the sea.
  - match: {prompt: chat}
    text: A haiku instead.
`, nil)
	id := s.createThread(`{"agent":"chat","label":"Double-texting"}`)
	act(t, ctx, "open the thread", chromedp.Navigate(s.base+"/threads/"+id), chromedp.WaitVisible(`#composer`))
	waitJS(t, ctx, "the stream is live", `document.body.dataset.stream === 'live'`)
	if got := eval[string](t, ctx, `[...document.querySelectorAll('#if-busy option')].map(o => o.value + '=' + o.textContent).join('|')`); got !=
		"=if busy: thread default|queue=if busy: queue|reject=if busy: reject|interrupt=if busy: interrupt|rollback=if busy: rollback" {
		t.Errorf("the if-busy choices: %s", got)
	}
	act(t, ctx, "ask for a story", chromedp.SendKeys(`#message`, "tell a story"), chromedp.Click(`#send`))
	waitJS(t, ctx, "the story streams", `document.body.innerText.includes('Once upon')`)

	act(t, ctx, "send with reject", setField("#if-busy", "reject", "change"), chromedp.SendKeys(`#message`, "not now"), chromedp.Click(`#send`))
	waitJS(t, ctx, "the refusal, naming the run", `!document.getElementById('action-error').hidden &&
		document.getElementById('action-error').textContent.includes('has a run in progress (run_')`)
	shot(t, ctx, "if-busy-reject")

	act(t, ctx, "send with rollback", setField("#if-busy", "rollback", "change"), setField("#message", "", "input"),
		chromedp.SendKeys(`#message`, "a haiku please"), chromedp.Click(`#send`))
	waitJS(t, ctx, "the new run's answer", `[...document.querySelectorAll('#timeline .msg .content')].some(c => c.textContent === 'A haiku instead.')`)
	shot(t, ctx, "if-busy-rollback")
	var msgs struct {
		Items []struct{ Role, Content string }
	}
	s.must("GET", "/api/threads/"+id+"/messages", "", "", 200, &msgs)
	var rows []string
	for _, m := range msgs.Items {
		rows = append(rows, m.Role+": "+m.Content)
	}
	if got := strings.Join(rows, " | "); got != "user: tell a story | user: a haiku please | assistant: A haiku instead." {
		t.Errorf("the thread: %s", got)
	}
}
