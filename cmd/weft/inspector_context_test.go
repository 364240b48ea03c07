package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// contextProject is a chat whose model has a small window and whose prompt summarizes what falls
// out of it.
var contextProject = map[string]string{
	"models/small.yaml": "name: small\nprovider: openai\nmodel: gpt-4o-mini\ninputPrice: 0.15\noutputPrice: 0.60\ncapabilities: {maxContextTokens: 700, maxOutputTokens: 100}\n",
	"agents/long.yaml":  "name: long\ntype: ai_human\ndescription: Talks at length\nsideA: {prompt: long, maxSteps: 4}\n",
	"prompts/long.yaml": "name: long\nmodel: small\ntoolDescription: Talks\nincludeChat: true\ncontext: {strategy: summarize}\nprompt: You chat.\n",
}

const contextScript = `version: 1
options: {on_exhausted: repeat_last}
responses:
  - match: {prompt: context_summarizer}
    text: "- the user's locker code is 4711"
  - match: {prompt: long}
    text: Noted.
  - match: {prompt: context_summarizer}
    text: "- the user's locker code is 4711"
  - match: {prompt: long}
    text: Noted.
  - match: {prompt: context_summarizer}
    text: "- the user's locker code is 4711"
  - match: {prompt: long}
    text: Noted.
`

// TestInspectorShowsContext: when a thread outgrows its model's window under context.strategy
// summarize, its page shows the summary row, marked as such with what it covers, and the run's
// report of what it folded.
func TestInspectorShowsContext(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "agents"), contextProject)
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte(contextScript), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startInspect(t, dir, "--dir", filepath.Join(dir, "agents"), "--db", filepath.Join(dir, "weft.db"), "--model-script", script)
	long := func(i int) string {
		return fmt.Sprintf("Turn %d: my locker code is 4711. ", i) + strings.Repeat("The weather was mild and dry all day. ", 30)
	}
	id := s.createThread(`{"agent":"long","message":{"content":"` + long(1) + `"}}`)
	s.waitStopped(id, "stop_on_response")
	act(t, ctx, "open the thread", chromedp.Navigate(s.base+"/threads/"+id), chromedp.WaitVisible(`#timeline .msg`))
	s.must("POST", "/api/threads/"+id+"/messages", "", `{"content":"`+long(2)+`"}`, 202, nil)
	waitJS(t, ctx, "the summary row, marked", `(() => { const m = document.querySelector('#timeline .msg.summary');
		return m && /summary of \d+ messages? through #\d+/.test(m.querySelector('.flag-summary').textContent) &&
		  m.querySelector('.content').textContent.includes('locker code is 4711') })()`)
	waitJS(t, ctx, "what the run folded", `(() => { const c = document.getElementById('context-note');
		return c && /Summarized: \d+ messages folded into the summary of long by context_summarizer/.test(c.textContent) })()`)
	shot(t, ctx, "context")
	// Opened again, the page shows the last run's report from the thread's details.
	act(t, ctx, "open the thread again", chromedp.Navigate(s.base+"/threads/"+id), chromedp.WaitVisible(`#timeline .msg`))
	waitJS(t, ctx, "what the run folded, after a reload", `(() => { const c = document.getElementById('context-note');
		return c && /Summarized: \d+ messages folded into the summary of long by context_summarizer/.test(c.textContent) })()`)
}
