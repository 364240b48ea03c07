package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// chatApprovalProject writes a project whose desk agent hands refunds to the sub-prompt clerk,
// whose refund tool (approval: required) appends to a ledger, and a model script: the desk calls
// the clerk, the clerk calls refund twice, then answers; the desk answers with the clerk's answer,
// and once more to the next message.
func chatApprovalProject(t *testing.T, dir string) (agents, script, ledger string) {
	ledger = filepath.Join(dir, "ledger.txt")
	writeFiles(t, dir, map[string]string{
		"agents/agents/desk.yaml":   "name: desk\ntype: ai_human\nsideA: {prompt: desk}\n",
		"agents/prompts/desk.yaml":  "name: desk\ntoolDescription: Handles refunds\nmodel: fast\nprompt: You handle refunds.\ntools: [clerk]\n",
		"agents/prompts/clerk.yaml": "name: clerk\ntoolDescription: Refunds orders\nmodel: fast\nprompt: You refund orders.\ntools: [refund]\n",
		"agents/models/fast.yaml":   "name: fast\nprovider: test\nmodel: test\n",
		"agents/tools/refund.yaml": "kind: command\ndescription: Refund an order.\napproval: required\nargs:\n  type: object\n" +
			"  properties:\n    order_id: {type: integer}\n  required: [order_id]\n" +
			"command: [sh, -c, 'cat >> " + ledger + "; echo >> " + ledger + "; echo refunded']\n",
		"chat.script.yaml": `version: 1
responses:
  - tool_calls: [{name: clerk, arguments: {}}]
  - tool_calls: [{name: refund, arguments: {order_id: 42}}, {name: refund, arguments: {order_id: 7}}]
  - text: Refunded one order.
  - text: The clerk refunded one order.
  - text: Anything else?
`,
	})
	return filepath.Join(dir, "agents"), filepath.Join(dir, "chat.script.yaml"), ledger
}

// chatApprovalAnswers answer the two refunds: the first edited (invalid arguments first, refused
// with the schema error and asked again), the second denied with a reason.
var chatApprovalAnswers = []string{"e", `{"order_id": "x"}`, `{"order_id": 43}`, "n", "not today"}

// checkChatApprovals asserts what the answers did: the edited refund ran once, the denied one never,
// and the clerk's model read the denial.
func checkChatApprovals(t *testing.T, dir, db, ledger string) {
	t.Helper()
	if got := ledgerLines(t, ledger); len(got) != 1 || got[0] != `{"order_id":43}` {
		t.Errorf("ledger %q, want the edited refund once", got)
	}
	out, errOut, code := runWeft(t, dir, "threads", "list", "--db", db)
	if code != 0 || !strings.Contains(out, "thr_") {
		t.Fatalf("threads list: exit %d\n%s%s", code, out, errOut)
	}
	id := strings.Fields(out[strings.Index(out, "thr_"):])[0]
	out, errOut, code = runWeft(t, dir, "threads", "show", id, "--db", db)
	if code != 0 || !strings.Contains(out, "denied: not today") || !strings.Contains(out, "The clerk refunded one order.") {
		t.Errorf("threads show: exit %d\n%s%s", code, out, errOut)
	}
}

// TestChatLineModeApprovals: in line mode, a call waiting for approval inside a sub-prompt is asked
// about inline — `Approve NAME(ARGS)? [y/N/e]`, then the arguments or a reason — one answer per input
// line; the last decision continues the thread and the chat goes on with the next message.
func TestChatLineModeApprovals(t *testing.T) {
	dir := t.TempDir()
	agents, script, ledger := chatApprovalProject(t, dir)
	db := filepath.Join(dir, "chat.db")
	cmd := exec.Command(binary, "chat", "desk", "--dir", agents, "--db", db, "--model-script", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WEFT_DIR=", "OPENAI_API_KEY=")
	cmd.Stdin = strings.NewReader("refund my orders\n" + strings.Join(chatApprovalAnswers, "\n") + "\nthanks\n/exit\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	got := out.String()
	want := []string{
		"-- the run waits for tool approvals\n",
		"Approve refund({\"order_id\":42})? [y/N/e]\n",
		"Arguments (JSON):\n",
		"!! Tool argument validation failed: /order_id: ",
		"Arguments (JSON):\n",
		"Approve refund({\"order_id\":7})? [y/N/e]\n",
		"Reason (optional):\n",
		"desk> The clerk refunded one order.\n",
		"desk> Anything else?\n",
	}
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("stdout lacks %q (in order):\n%s\nstderr: %s", w, got, errOut.String())
		}
		rest = rest[i+len(w):]
	}
	if strings.ContainsAny(got, "\x1b\a\r") {
		t.Errorf("stdout has control characters: %q", got)
	}
	checkChatApprovals(t, dir, db, ledger)
}

// TestChatTerminalApprovals is the same conversation in the terminal UI: each question is the
// input line's prompt, a refused edit shows the schema error and asks again, and the chat goes on.
func TestChatTerminalApprovals(t *testing.T) {
	dir := t.TempDir()
	agents, script, ledger := chatApprovalProject(t, dir)
	db := filepath.Join(dir, "chat.db")
	tm := startTerm(t, dir, shellQuote(binary, "chat", "desk", "--dir", agents, "--db", db, "--model-script", script))
	tm.waitFor(1, "idle · /help for commands")
	tm.typeLine("refund my orders")
	tm.waitFor(1, `Approve refund({"order_id":42})? [y/N/e]`, "a tool call waits for your decision")
	tm.typeLine(chatApprovalAnswers[0])
	tm.waitFor(1, "Arguments (JSON): ")
	tm.typeLine(chatApprovalAnswers[1])
	tm.waitFor(1, "!! Tool argument validation failed: /order_id")
	tm.typeLine(chatApprovalAnswers[2])
	tm.waitFor(1, `Approve refund({"order_id":7})? [y/N/e]`)
	tm.typeLine(chatApprovalAnswers[3])
	tm.waitFor(1, "Reason (optional): ")
	tm.typeLine(chatApprovalAnswers[4])
	tm.waitFor(1, "desk> The clerk refunded one order.", "idle · /help for commands")
	tm.typeLine("thanks")
	tm.waitFor(1, "desk> Anything else?")
	tm.typeLine("/exit")
	tm.waitFor(1, "[exited 0]")
	checkChatApprovals(t, dir, db, ledger)
}

// TestChatServerApprovals: against weft serve, the line mode asks the same questions; decisions go
// through the API, and the run the server starts after the last one is followed to its end.
func TestChatServerApprovals(t *testing.T) {
	dir := t.TempDir()
	agents, script, ledger := chatApprovalProject(t, dir)
	db := filepath.Join(dir, "serve.db")
	s := startServer(t, dir, nil, "--dir", agents, "--db", db, "--model-script", script, "--no-auth")
	cmd := exec.Command(binary, "chat", "desk", "--server", s.base)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WEFT_DIR=", "OPENAI_API_KEY=")
	cmd.Stdin = strings.NewReader("refund my orders\n" + strings.Join(chatApprovalAnswers, "\n") + "\nthanks\n/exit\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	got := out.String()
	for _, w := range []string{"Approve refund({\"order_id\":42})? [y/N/e]\n", "!! Tool argument validation failed: /order_id: ",
		"Reason (optional):\n", "desk> The clerk refunded one order.\n", "desk> Anything else?\n"} {
		if !strings.Contains(got, w) {
			t.Fatalf("stdout lacks %q:\n%s\nstderr: %s", w, got, errOut.String())
		}
	}
	if got := ledgerLines(t, ledger); len(got) != 1 || got[0] != `{"order_id":43}` {
		t.Errorf("ledger %q, want the edited refund once", got)
	}
}

// approverBackend is a stub chat backend that also takes approval decisions.
type approverBackend struct {
	*stubBackend
	pending   []weft.ToolCallRecord
	decisions []string
}

func (a *approverBackend) Approvals(context.Context) ([]weft.ToolCallRecord, error) {
	return a.pending, nil
}

func (a *approverBackend) Decide(_ context.Context, callID string, d engine.Decision, emit func(engine.Event)) (bool, error) {
	if d.Arguments != nil && !json.Valid(d.Arguments) {
		return false, weft.Errorf(weft.EInvalid, "edited arguments must be a JSON object")
	}
	a.decisions = append(a.decisions, fmt.Sprintf("%s approve=%v args=%s reason=%q by=%s", callID, d.Approve, d.Arguments, d.Reason, d.By))
	if len(a.decisions) < len(a.pending) {
		return false, nil
	}
	emit(msgEv(map[string]any{"id": "m2", "role": "assistant", "content": "Done.", "depth": 0.0}))
	return true, nil
}

// TestChatModelApprovals drives the terminal UI's model through the questions about two waiting
// calls, without a terminal: a refused edit is asked again, the last decision's conversation shows,
// and the input line is for messages again.
func TestChatModelApprovals(t *testing.T) {
	b := &approverBackend{stubBackend: &stubBackend{thread: "thr_1"}, pending: []weft.ToolCallRecord{
		{CallID: "c1", Name: "refund", Arguments: `{"to":"a"}`}, {CallID: "c2", Name: "wipe", Arguments: `{}`}}}
	b.converse = func(emit func(engine.Event)) error {
		emit(ev("run_stopped", map[string]any{"reason": "awaiting_approval"}))
		return nil
	}
	m := newChatModel(context.Background(), b, newTranscript("helper", "thr_1"), false)
	enter := func(line string) {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(line)})
		_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
		pending := []tea.Cmd{cmd}
		for steps := 0; len(pending) > 0 && steps < 100; steps++ {
			c := pending[0]
			pending = pending[1:]
			if c == nil {
				continue
			}
			switch msg := c().(type) {
			case tea.BatchMsg:
				pending = append(pending, msg...)
			case chatEventMsg, chatDoneMsg, chatApprovalsMsg:
				_, next := m.Update(msg)
				pending = append(pending, next)
			}
		}
	}
	enter("refund it")
	if m.input.Prompt != `Approve refund({"to":"a"})? [y/N/e] ` || !strings.Contains(m.View(), "a tool call waits for your decision") {
		t.Fatalf("prompt %q, view:\n%s", m.input.Prompt, m.View())
	}
	// Ctrl-C while the question waits keeps it, and the chat.
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlC})
	if m.quitting || m.asking == nil || !strings.Contains(m.View(), "a tool call waits for your decision · to leave: /exit or Ctrl-D") {
		t.Fatalf("after Ctrl-C: quitting=%v asking=%v view:\n%s", m.quitting, m.asking != nil, m.View())
	}
	for _, line := range []string{"e", "{oops", `{"to":"b"}`, "", "no wipes"} {
		enter(line)
	}
	want := []string{`c1 approve=true args={"to":"b"} reason="" by=chat`, `c2 approve=false args= reason="no wipes" by=chat`}
	if strings.Join(b.decisions, "\n") != strings.Join(want, "\n") {
		t.Errorf("decisions:\n%s\nwant:\n%s", strings.Join(b.decisions, "\n"), strings.Join(want, "\n"))
	}
	var printed []string
	for _, l := range m.printed {
		printed = append(printed, l.text)
	}
	wantPrinted := []string{"you> refund it", "-- the run waits for tool approvals", `Approve refund({"to":"a"})? [y/N/e] e`,
		"Arguments (JSON): {oops", "!! edited arguments must be a JSON object", `Arguments (JSON): {"to":"b"}`,
		"Approve wipe({})? [y/N/e] ", "Reason (optional): no wipes", "helper> Done."}
	if strings.Join(printed, "\n") != strings.Join(wantPrinted, "\n") {
		t.Errorf("printed:\n%s\nwant:\n%s", strings.Join(printed, "\n"), strings.Join(wantPrinted, "\n"))
	}
	if m.asking != nil || m.running || m.input.Prompt != "> " {
		t.Errorf("after the decisions: asking=%v running=%v prompt %q", m.asking != nil, m.running, m.input.Prompt)
	}
}
