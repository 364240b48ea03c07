package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunBudget: weft run --budget-tokens pauses the thread at the cap (exit 1, reason
// budget_exceeded); weft threads budget shows the spend the logs add up to, raises the cap, and
// the same thread continues.
func TestRunBudget(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"agents/models/fast.yaml":  "name: fast\nprovider: openai\nmodel: gpt-4o-mini\ninputPrice: 1000\noutputPrice: 1000\n",
		"agents/agents/desk.yaml":  "name: desk\ntype: ai_human\nsideA: {prompt: desk}\n",
		"agents/prompts/desk.yaml": "name: desk\ntoolDescription: Answers\nmodel: fast\nprompt: You answer.\n",
		"script.yaml":              "- {text: One., usage: {input_tokens: 40, output_tokens: 20}}\n- {text: Two., usage: {input_tokens: 40, output_tokens: 20}}\n",
		"more.yaml":                "- {text: Three., usage: {input_tokens: 40, output_tokens: 20}}\n",
	}
	writeFiles(t, dir, files)
	db := filepath.Join(dir, "weft.db")
	out, errOut, code := runWeft(t, dir, "run", "--dir", "agents", "--db", db, "desk", "First?", "--model-script", "script.yaml",
		"--budget-tokens", "50", "--json")
	if code != 0 {
		t.Fatalf("first run: exit %d\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		Thread struct{ ID string }
	}
	json.Unmarshal([]byte(out), &doc)
	out, errOut, code = runWeft(t, dir, "run", "--dir", "agents", "--db", db, "desk", "Second?", "--thread", doc.Thread.ID,
		"--model-script", "script.yaml")
	if code != 1 || !strings.Contains(errOut, "budget_exceeded: the thread used 60 of its 50 tokens") {
		t.Fatalf("second run: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runWeft(t, dir, "threads", "budget", doc.Thread.ID, "--dir", "agents", "--db", db, "--tokens", "1000")
	if code != 0 || !strings.Contains(out, "spent: $0.0600, 60 tokens, 1 model call") || !strings.Contains(out, "budget: 1000 tokens") {
		t.Fatalf("threads budget: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runWeft(t, dir, "run", "--dir", "agents", "--db", db, "desk", "--thread", doc.Thread.ID, "--model-script", "more.yaml")
	if code != 0 || strings.TrimSpace(out) != "Three." {
		t.Fatalf("continue: exit %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = runWeft(t, dir, "run", "--dir", "agents", "--db", db, "desk", "x", "--budget-usd", "-1", "--model-script", "more.yaml")
	if code != 4 || !strings.Contains(errOut, "budget.maxCostUsd") {
		t.Errorf("negative budget: exit %d: %s", code, errOut)
	}
}
