package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// TestSecretsNeverPrintedOrStored: a secret the user pastes into a message, and the model puts
// into tool-call arguments, is printed by no output path (threads show, export, list), and the
// tool-call arguments are stored redacted (before the fix, show/export/list printed it and the
// messages' and tool_calls' arguments held it in plaintext).
func TestSecretsNeverPrintedOrStored(t *testing.T) {
	const secret = "Klingon-secret-value-77"
	dir := t.TempDir()
	files := map[string]string{
		"agents/models/fast.yaml":  "name: fast\nprovider: openai\nmodel: gpt-4o-mini\n",
		"agents/agents/desk.yaml":  "name: desk\ntype: ai_human\nsideA: {prompt: desk}\n",
		"agents/prompts/desk.yaml": "name: desk\ntoolDescription: Works\nmodel: fast\nprompt: You work.\ntools: [note]\n",
		"agents/tools/note.yaml":   "kind: command\ndescription: Notes a text.\nargs:\n  type: object\n  properties:\n    text: {type: string}\ncommand: [sh, -c, 'cat > /dev/null; echo noted']\n",
		"script.yaml":              "- tool_calls: [{name: note, arguments: {text: 'token " + secret + "'}}]\n- text: Done.\n",
	}
	writeFiles(t, dir, files)
	db := filepath.Join(dir, "weft.db")
	out, errOut, _ := runWeft(t, dir, "run", "--dir", "agents", "--db", db, "desk", "My token is "+secret, "--model-script", "script.yaml",
		"--env", "API_TOKEN="+secret, "--json")
	if strings.Contains(out+errOut, secret) {
		t.Fatalf("weft run printed the secret:\n%s\n%s", out, errOut)
	}
	list, _, _ := runWeft(t, dir, "threads", "list", "--db", db)
	id := ""
	for _, f := range strings.Fields(list) {
		if strings.HasPrefix(f, "thr_") {
			id = f
		}
	}
	if id == "" {
		t.Fatalf("no thread listed:\n%s", list)
	}
	for _, args := range [][]string{{"threads", "list"}, {"threads", "show", id}, {"threads", "export", id}} {
		out, errOut, code := runWeft(t, dir, append(args, "--db", db)...)
		if code != 0 || strings.Contains(out+errOut, secret) {
			t.Errorf("%v: exit %d, secret printed:\n%s%s", args, code, out, errOut)
		}
	}
	show, _, _ := runWeft(t, dir, "threads", "show", id, "--db", db)
	if !strings.Contains(show, "[redacted]") {
		t.Errorf("show does not mark what it hid:\n%s", show)
	}
	// At rest: the tool call's arguments, in the message and in the call record.
	st, err := openStore(context.Background(), db, newLogger("warn", os.Stderr), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	msgs, _ := st.Messages(context.Background(), id, weft.MessageQuery{Limit: 100})
	recs, _ := st.ToolCalls(context.Background(), id)
	var stored []string
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			stored = append(stored, c.Arguments)
		}
	}
	for _, r := range recs {
		stored = append(stored, r.Arguments)
	}
	if len(stored) != 2 || strings.Contains(strings.Join(stored, " "), secret) || !strings.Contains(stored[0], "[redacted]") {
		t.Errorf("stored tool-call arguments: %q", stored)
	}
	// The model calls' logs: the request bodies carry the conversation, the tool call included.
	logs, err := st.Logs(context.Background(), id, weft.LogQuery{})
	if err != nil || len(logs) != 2 {
		t.Fatalf("logs: %d, %v", len(logs), err)
	}
	for _, l := range logs {
		full, err := st.Log(context.Background(), id, l.ID)
		if err != nil || len(full.RequestBody) == 0 {
			t.Fatalf("log %s: %d request bytes, %v", l.ID, len(full.RequestBody), err)
		}
		if strings.Contains(string(full.RequestBody)+string(full.ResponseBody), secret) {
			t.Errorf("log %s stores the secret in its bodies", l.ID)
		}
	}
}
