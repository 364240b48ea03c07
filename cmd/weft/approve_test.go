package main

import (
	"context"
	"encoding/json"
	"github.com/weft-agents/weft/validate"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/schema"
)

// approvalProject writes a project whose agent may refund (approval: required) through a command
// tool that appends to a ledger, so every real run of the tool is counted.
func approvalProject(t *testing.T) (dir, ledger string) {
	t.Helper()
	dir = t.TempDir()
	ledger = filepath.Join(dir, "ledger.txt")
	files := map[string]string{
		"agents/models/fast.yaml":  "name: fast\nprovider: openai\nmodel: gpt-4o-mini\n",
		"agents/agents/desk.yaml":  "name: desk\ntype: ai_human\nsideA: {prompt: desk}\n",
		"agents/prompts/desk.yaml": "name: desk\ntoolDescription: Handles refunds\nmodel: fast\nprompt: You handle refunds.\ntools: [refund]\n",
		"agents/tools/refund.yaml": "kind: command\ndescription: Refund an order.\napproval: required\nargs:\n  type: object\n  properties:\n    order_id: {type: integer}\n  required: [order_id]\ncommand: [sh, -c, 'cat >> " + ledger + "; echo >> " + ledger + "; echo refunded']\n",
		"call.yaml":                "- tool_calls: [{name: refund, arguments: {order_id: 42}}]\n",
		"answer.yaml":              "- text: Done.\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, ledger
}

func ledgerLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestRunAwaitsApproval: without a terminal, weft run stops before a call that needs approval
// with exit 6 and the commands that decide; approve (with edited arguments) continues the thread in
// its own process and runs the tool once; deny gives the model the reason and never runs it.
func TestRunAwaitsApproval(t *testing.T) {
	for _, tc := range []struct {
		name       string
		decide     []string
		wantLedger []string
		wantResult string
		wantShow   string
	}{
		{"approve_edited", []string{"approve", "--args", `{"order_id": 43}`}, []string{`{"order_id":43}`}, "refunded",
			`[approved by cli, with arguments {"order_id":43}]`},
		{"deny", []string{"deny", "--reason", "needs a ticket"}, nil, "denied: needs a ticket", "[denied by cli: needs a ticket]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, ledger := approvalProject(t)
			db := filepath.Join(dir, "weft.db")
			out, errOut, code := runWeft(t, dir, "run", "--dir", "agents", "--db", db, "desk", "Refund order 42.",
				"--model-script", "call.yaml", "--json")
			if code != 6 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			var doc struct {
				Thread struct{ ID, Status string }
				Result struct{ Reason string }
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if doc.Result.Reason != "awaiting_approval" || doc.Thread.Status != "awaiting_approval" {
				t.Errorf("document: %+v", doc)
			}
			if !strings.Contains(errOut, "weft threads approve "+doc.Thread.ID+" call_") || !strings.Contains(errOut, `refund({"order_id":42})`) {
				t.Errorf("stderr does not say how to decide:\n%s", errOut)
			}
			if got := ledgerLines(t, ledger); len(got) != 0 {
				t.Fatalf("the tool ran before approval: %v", got)
			}
			var callID string
			for _, l := range strings.Split(errOut, "\n") {
				if f := strings.Fields(l); len(f) == 2 && strings.HasPrefix(f[0], "call_") {
					callID = f[0]
				}
			}
			if callID == "" {
				t.Fatalf("no call id in:\n%s", errOut)
			}
			args := append([]string{"threads", tc.decide[0], doc.Thread.ID, callID, "--db", db, "--model-script", "answer.yaml", "--json"}, tc.decide[1:]...)
			out, errOut, code = runWeft(t, dir, args...)
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s\n%s", tc.decide[0], code, out, errOut)
			}
			if !strings.Contains(out, tc.wantResult) || !strings.Contains(out, `"reason": "stop_on_response"`) {
				t.Errorf("%s output:\n%s", tc.decide[0], out)
			}
			if got := ledgerLines(t, ledger); strings.Join(got, ",") != strings.Join(tc.wantLedger, ",") {
				t.Errorf("ledger %v, want %v", got, tc.wantLedger)
			}
			if out, _, _ := runWeft(t, dir, "threads", "show", doc.Thread.ID, "--db", db); !strings.Contains(out, tc.wantShow) {
				t.Errorf("threads show lacks %q:\n%s", tc.wantShow, out)
			}
			// A second decision is refused; the tool does not run again.
			_, errOut, code = runWeft(t, dir, "threads", "approve", doc.Thread.ID, callID, "--db", db, "--model-script", "answer.yaml")
			if code != 2 || !strings.Contains(errOut, "already") {
				t.Errorf("second decision: exit %d: %s", code, errOut)
			}
			if got := ledgerLines(t, ledger); len(got) != len(tc.wantLedger) {
				t.Errorf("ledger after a second decision: %v", got)
			}
		})
	}
}

// TestAskApprovals: the terminal prompt approves (y), edits until the arguments are valid (e), and
// denies with a reason (anything else).
func TestAskApprovals(t *testing.T) {
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fast", Provider: "test"})
	var ran []string
	for _, name := range []string{"send", "refund", "wipe"} {
		reg.AddTool(&weft.Tool{Name: name, Description: name, Approval: weft.ApprovalRequired,
			Args: schema.Object(schema.Field("to", schema.String())),
			Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
				ran = append(ran, name+" "+string(args))
				return weft.Success("ok"), nil
			})})
	}
	reg.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "p", Model: "fast", Prompt: weft.Text("p"),
		Tools: []weft.ToolEntry{{Name: "send"}, {Name: "refund"}, {Name: "wipe"}}})
	reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
	if d := validate.Registry(reg); d.HasErrors() {
		t.Fatal(d.Err())
	}
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == weft.RoleUser {
			return &weft.Response{ToolCalls: []weft.ToolCall{
				{ID: "c1", Name: "send", Arguments: `{"to":"a"}`}, {ID: "c2", Name: "refund", Arguments: `{"to":"b"}`},
				{ID: "c3", Name: "wipe", Arguments: `{"to":"c"}`}}}, nil
		}
		return &weft.Response{Text: "ok"}, nil
	})
	st, _ := memstore.New(memstore.Options{})
	defer st.Close()
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: model})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "a"})
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "go"}}); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	in := strings.NewReader("y\ne\n{\"to\": 5}\n{\"to\":\"B\"}\nn\nnot today\n")
	decided, err := askApprovals(ctx, in, &out, eng, th.ID, func(s string) string { return s })
	if err != nil || !decided {
		t.Fatalf("%v %v", decided, err)
	}
	for _, want := range []string{`Approve send({"to":"a"})? [y/N/e]`, "Arguments (JSON): ", "Tool argument validation failed", "Reason (optional): "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("prompt lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := eng.Ask(ctx, th.ID, engine.Input{}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ran, ",") != `send {"to":"a"},refund {"to":"B"}` {
		t.Errorf("ran %v", ran)
	}
	msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleTool}})
	if len(msgs) != 3 || msgs[2].Content != "Failed to execute tool: denied: not today" {
		t.Errorf("tool messages %+v", msgs)
	}
}

// TestApprovalSurvivesSIGKILL: weft threads approve|deny killed at random points — before the
// decision is stored, after it, mid-tool — then the thread continued by a new process: an approved
// call runs at most once (the ledger has one line at most), a denied one never.
func TestApprovalSurvivesSIGKILL(t *testing.T) {
	t.Setenv("WEFT_LEASE_TTL", "500ms")
	var redecided, interrupted, ranOnce int
	defer func() {
		t.Logf("decisions lost to the kill (decided again) %d, calls interrupted mid-tool %d, approved calls that ran once %d",
			redecided, interrupted, ranOnce)
	}()
	for round, delay := range []time.Duration{0, 15 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond} {
		for _, approve := range []bool{true, false} {
			dir, ledger := approvalProject(t)
			// The tool leaves its line, then takes a while: a kill can land mid-tool.
			writeFiles(t, dir, map[string]string{"agents/tools/refund.yaml": "kind: command\ndescription: Refund an order.\napproval: required\n" +
				"args:\n  type: object\n  properties:\n    order_id: {type: integer}\n  required: [order_id]\n" +
				"command: [sh, -c, 'cat >> " + ledger + "; echo >> " + ledger + "; sleep 0.3; echo refunded']\n"})
			db := filepath.Join(dir, "weft.db")
			out, errOut, code := runWeft(t, dir, "run", "--dir", "agents", "--db", db, "desk", "Refund order 42.", "--model-script", "call.yaml", "--json")
			if code != 6 {
				t.Fatalf("round %d: exit %d: %s", round, code, errOut)
			}
			id := between(out, `"id": "`, `"`)
			verb := "deny"
			if approve {
				verb = "approve"
			}
			cmd := exec.Command(binary, "threads", verb, id, "call_1", "--db", db, "--model-script", "answer.yaml", "--dir", "agents")
			cmd.Dir = dir
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(delay)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			// Continue until the thread is done (a dead process's lease lasts until it expires).
			var last string
			for try := 0; try < 40; try++ {
				out, errOut, code = runWeft(t, dir, "run", "--dir", "agents", "--db", db, "desk", "--thread", id, "--model-script", "answer.yaml")
				last = out + errOut
				if code == 0 && !strings.Contains(errOut, "running") {
					break
				}
				if code == 6 { // the decision was not stored before the kill: decide again
					redecided++
					runWeft(t, dir, "threads", verb, id, "call_1", "--db", db, "--model-script", "answer.yaml", "--dir", "agents")
				}
				time.Sleep(100 * time.Millisecond)
			}
			lines := ledgerLines(t, ledger)
			switch {
			case approve && len(lines) > 1:
				t.Errorf("round %d (%v): the approved tool ran %d times", round, delay, len(lines))
			case !approve && len(lines) != 0:
				t.Errorf("round %d (%v): the denied tool ran", round, delay)
			}
			show, _, _ := runWeft(t, dir, "threads", "show", id, "--db", db)
			if strings.Contains(show, "interrupted by a restart") {
				interrupted++
			}
			if approve && len(lines) == 1 {
				ranOnce++
			}
			if !strings.Contains(show, "Done.") {
				t.Errorf("round %d (%v, approve %v): the thread did not finish; last output %q\n%s", round, delay, approve, last, show)
			}
		}
	}
}

// TestRunAwaitsApprovalInSubPrompt: a scripted scenario of two calls waiting inside a sub-prompt:
// weft run exits 6 naming both, an unknown call is refused, the first decision leaves the thread
// waiting for the second (exit 6), and the second continues the thread: the nested run reads both
// decisions and the caller answers with the sub-prompt's answer.
func TestRunAwaitsApprovalInSubPrompt(t *testing.T) {
	dir := t.TempDir()
	agents, _, ledger := chatApprovalProject(t, dir)
	writeFiles(t, dir, map[string]string{
		"call.yaml":   "- tool_calls: [{name: clerk, arguments: {}}]\n- tool_calls: [{name: refund, arguments: {order_id: 42}}, {name: refund, arguments: {order_id: 7}}]\n",
		"answer.yaml": "- text: Refunded one order.\n- text: The clerk refunded one order.\n",
	})
	db := filepath.Join(dir, "weft.db")
	out, errOut, code := runWeft(t, dir, "run", "--dir", agents, "--db", db, "desk", "Refund my orders.", "--model-script", "call.yaml")
	if code != 6 || !strings.Contains(errOut, `refund({"order_id":42})`) || !strings.Contains(errOut, `refund({"order_id":7})`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	thread := strings.Fields(errOut[strings.Index(errOut, "weft threads approve ")+len("weft threads approve "):])[0]
	var calls []string
	for _, l := range strings.Split(errOut, "\n") {
		if f := strings.Fields(l); len(f) == 2 && strings.HasPrefix(f[0], "call_") {
			calls = append(calls, f[0])
		}
	}
	if len(calls) != 2 {
		t.Fatalf("calls %v in:\n%s", calls, errOut)
	}
	if _, errOut, code := runWeft(t, dir, "threads", "approve", thread, "call_404", "--db", db); code == 0 || !strings.Contains(errOut, "has no tool call call_404") {
		t.Errorf("unknown call: exit %d: %s", code, errOut)
	}
	_, errOut, code = runWeft(t, dir, "threads", "approve", thread, calls[0], "--db", db, "--args", `{"order_id": 43}`)
	if code != 6 || !strings.Contains(errOut, calls[1]) {
		t.Fatalf("first decision: exit %d\n%s", code, errOut)
	}
	out, errOut, code = runWeft(t, dir, "threads", "deny", thread, calls[1], "--db", db, "--reason", "not today", "--model-script", "answer.yaml")
	if code != 0 || !strings.Contains(out, "The clerk refunded one order.") {
		t.Fatalf("second decision: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := ledgerLines(t, ledger); len(got) != 1 || got[0] != `{"order_id":43}` {
		t.Errorf("ledger %q, want the edited refund once", got)
	}
	if out, _, _ := runWeft(t, dir, "threads", "show", thread, "--db", db); !strings.Contains(out, "denied: not today") {
		t.Errorf("threads show lacks the denial:\n%s", out)
	}
}
