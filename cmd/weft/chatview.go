package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// The text of a conversation as `weft chat` (its terminal UI and its line mode) and the progress
// line of `weft run` show it. Everything a model or a tool wrote passes through inert first.

// lineKind tells what a transcript line shows; the terminal UI colours by it.
type lineKind int

const (
	lineYou    lineKind = iota // a message typed here
	lineReply                  // a reply of the agent (or a message of the other side)
	lineTool                   // a tool call the model made
	lineResult                 // a tool's result
	lineNote                   // a notice: a stop, a subagent, a command's answer
	lineError                  // something failed
)

// chatLine is one finished entry of a transcript (it may span several terminal lines).
type chatLine struct {
	kind lineKind
	text string
}

// toolLineRunes bounds a tool call or result line: they are shown compactly, on one line.
const toolLineRunes = 110

// transcript turns the events of a conversation into transcript lines and keeps the counts of a
// status line. Only the thread it follows shows messages; its subagents show as notices.
type transcript struct {
	// agent names the replies.
	agent string
	// thread is the thread followed ("" until it exists).
	thread string
	// sent holds messages typed here whose stored copies are not shown again.
	sent []string
	// live is the text of the reply streaming now (already inert).
	live strings.Builder
	// shown holds the messages already shown, by id (a row may be sent again when it changes).
	shown map[string]bool
	// steps, tools, tokensIn and tokensOut count the followed thread's work since reset.
	steps, tools, tokensIn, tokensOut int
	// activity says what runs now ("" when idle).
	activity string
	// awaiting: the followed thread's run stopped before calls that wait for approval (the chat
	// asks about them, and clears it).
	awaiting bool
}

func newTranscript(agent, thread string) *transcript {
	return &transcript{agent: agent, thread: thread, shown: map[string]bool{}}
}

// reset starts the counts of a new conversation turn.
func (t *transcript) reset() {
	t.steps, t.tools, t.tokensIn, t.tokensOut, t.activity = 0, 0, 0, 0, ""
}

// add reads one event: the lines it completes and the text it streams into the live reply.
func (t *transcript) add(e engine.Event) (lines []chatLine, delta string) {
	if t.thread == "" || e.ThreadID != t.thread {
		return nil, ""
	}
	d, _ := e.Data.(engine.Fields) // plainEvent's, or a server's
	switch e.Type {
	case "message_chunk":
		if intIn(d, "depth") != 0 {
			return nil, ""
		}
		delta = inert(strIn(d, "delta"))
		t.live.WriteString(delta)
		t.activity = "writing"
		return nil, delta
	case "message":
		m, _ := d["message"].(map[string]any)
		return t.message(m), ""
	case "step_started":
		if intIn(d, "depth") == 0 {
			t.steps++
		}
		t.activity = "thinking"
	case "tool_started":
		if intIn(d, "depth") == 0 {
			t.tools++
		}
		t.activity = "running " + inert(strIn(d, "name"))
	case "tool_completed":
		t.activity = "thinking"
	case "llm_response":
		t.tokensIn += intIn(d, "input_tokens")
		t.tokensOut += intIn(d, "output_tokens")
	case "fallback_triggered":
		return []chatLine{{lineNote, fmt.Sprintf("-- model %s failed (%s); trying %s", inert(strIn(d, "from_model")),
			inert(strIn(d, "error_type")), inert(strIn(d, "to_model")))}}, ""
	case "context_summarized":
		return []chatLine{{lineNote, fmt.Sprintf("-- %d older messages folded into the summary (%d in all)",
			intIn(d, "folded_messages"), intIn(d, "summary_messages"))}}, ""
	case "context_summary_failed":
		return []chatLine{{lineNote, "-- the summarizer failed; older messages were left out instead: " + clip(inert(strIn(d, "error")), 300)}}, ""
	case "handoff":
		t.agent = strIn(d, "to_agent")
		return []chatLine{{lineNote, fmt.Sprintf("-- handed over from %s to %s", inert(strIn(d, "from_agent")), inert(t.agent))}}, ""
	case "subagent":
		text := fmt.Sprintf("-- subagent %s (%s): %s", inert(strIn(d, "agent")), inert(strIn(d, "reference")), inert(strIn(d, "status")))
		if s := strIn(d, "status_text"); s != "" {
			text += " - " + clip(inert(s), toolLineRunes)
		}
		return []chatLine{{lineNote, text}}, ""
	case "approval_required":
		return []chatLine{{lineNote, fmt.Sprintf("-- %s waits for approval: weft threads approve %s %s (or deny)",
			inert(strIn(d, "name")), t.thread, inert(strIn(d, "call_id")))}}, ""
	case "env_required":
		return []chatLine{{lineNote, fmt.Sprintf("-- subagent %s needs variables %s: weft threads provide-env %s %s NAME=VALUE...",
			inert(strIn(d, "agent")), inert(fmt.Sprint(d["missing"])), t.thread, inert(strIn(d, "request_id")))}}, ""
	case "run_stopped":
		t.activity = ""
		lines = t.flushLive(" [cut off]")
		reason := weft.StopReason(strIn(d, "reason"))
		switch {
		case reason == weft.StopAwaitingApproval:
			t.awaiting = true
			lines = append(lines, chatLine{lineNote, "-- the run waits for tool approvals"})
		case !reason.OK():
			text := "-- run stopped: " + inert(string(reason))
			if e := strIn(d, "error"); e != "" {
				text += ": " + clip(inert(e), 300)
			}
			lines = append(lines, chatLine{lineNote, text})
		}
		return lines, ""
	}
	return nil, ""
}

// message shows a stored row of the followed thread: a reply, its tool calls, a tool's result.
func (t *transcript) message(m map[string]any) []chatLine {
	if m == nil || intIn(m, "depth") != 0 || m["silent"] == true {
		return nil
	}
	if id := strIn(m, "id"); id != "" {
		if t.shown[id] {
			return nil
		}
		t.shown[id] = true
	}
	content := strIn(m, "content")
	switch strIn(m, "role") {
	case "assistant":
		lines := t.flushLive("")
		if strings.TrimSpace(content) != "" {
			lines = append(lines, chatLine{lineReply, inert(t.agent) + "> " + inert(content)})
		}
		calls, _ := m["tool_calls"].([]any)
		for _, c := range calls {
			c, _ := c.(map[string]any)
			lines = append(lines, chatLine{lineTool, "  -> " + clip(inert(strIn(c, "name"))+" "+oneLineOf(strIn(c, "arguments")), toolLineRunes)})
		}
		return lines
	case "tool":
		name := inert(strIn(m, "name"))
		if st := strIn(m, "tool_status"); st != "" && st != string(weft.ToolSuccess) {
			return []chatLine{{lineError, "  <- " + clip(name+" "+st+": "+oneLineOf(content), toolLineRunes)}}
		}
		return []chatLine{{lineResult, "  <- " + clip(name+": "+oneLineOf(content), toolLineRunes)}}
	case "user":
		if len(t.sent) > 0 && t.sent[0] == content {
			t.sent = t.sent[1:]
			return nil
		}
		return []chatLine{{lineReply, "user> " + inert(content)}}
	}
	return nil
}

// flushLive ends the live reply: its text becomes a line (with mark) unless a stored reply
// replaces it.
func (t *transcript) flushLive(mark string) []chatLine {
	if t.live.Len() == 0 {
		return nil
	}
	text := t.live.String()
	t.live.Reset()
	if mark == "" {
		return nil // the stored message that follows holds the whole text
	}
	return []chatLine{{lineReply, inert(t.agent) + "> " + strings.TrimRight(text, " ") + mark}}
}

// status is the one-line summary of the work so far: steps, tool calls, tokens, activity.
func (t *transcript) status() string {
	s := fmt.Sprintf("step %d · %s · %d tokens", t.steps, plural(t.tools, "tool call"), t.tokensIn+t.tokensOut)
	if t.activity != "" {
		s += " · " + t.activity
	}
	return s
}

// inert makes text safe to write to a terminal: control characters (escape sequences, carriage
// returns, bells, C1 controls) and bidirectional overrides become visible symbols, so that text
// from a model or a tool cannot move the cursor, clear the screen or retitle the terminal.
// Newlines and tabs stay.
func inert(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s { // invalid UTF-8 reads as U+FFFD
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20:
			b.WriteRune(0x2400 + r) // ␛, ␇, ␍ …
		case r == 0x7f:
			b.WriteRune('␡')
		case unsafeRune(r):
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unsafeRune tells the runes inert replaces.
func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi embeddings and isolates
		return true
	}
	return false
}

// oneLineOf is text on one line, inert.
func oneLineOf(s string) string {
	return strings.Join(strings.Fields(inert(s)), " ")
}

// clip shortens s to n runes with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// plainEvent turns an event's payload into plain JSON values (maps, strings, float64), the shape
// a server's stream has, so that one transcript reads local and remote events.
func plainEvent(e engine.Event) engine.Event {
	b, err := json.Marshal(e.Data)
	if err != nil {
		return engine.Event{Type: e.Type, ThreadID: e.ThreadID}
	}
	var d engine.Fields
	_ = json.Unmarshal(b, &d)
	e.Data = d
	return e
}

func strIn(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func intIn(m map[string]any, k string) int {
	switch n := m[k].(type) {
	case float64:
		return int(n)
	case int:
		return n
	}
	return 0
}
