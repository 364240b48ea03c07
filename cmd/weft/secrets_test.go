package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsNeverPrintedOrStored: a secret the user pastes into a message, and the model puts
// into tool-call arguments, is printed by no output path (threads show, export, list) and is not
// in the database files (before the fix, show/export/list printed it and messages/tool_calls
// held it in plaintext).
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
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
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
	matches, _ := filepath.Glob(db + "*")
	for _, f := range matches {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), secret) {
			i := strings.Index(string(b), secret)
			t.Errorf("%s holds the secret in plaintext: %q", filepath.Base(f), b[max(0, i-300):i+30])
		}
	}
}
