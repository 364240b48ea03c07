package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRunStructuredValue: a prompt with outputSchema answers a JSON object; weft run --json returns
// it as result.value, and an answer that never matches fails the run with the validation error.
func TestRunStructuredValue(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"agents/models/fast.yaml":  "name: fast\nprovider: openai\nmodel: gpt-4o-mini\n",
		"agents/agents/desk.yaml":  "name: desk\ntype: ai_human\nsideA: {prompt: desk}\n",
		"agents/prompts/desk.yaml": "name: desk\ntoolDescription: Classifies\nmodel: fast\nprompt: Classify the request.\noutputSchema:\n  type: object\n  properties:\n    category: {type: string, enum: [billing, shipping]}\n    urgent: {type: boolean}\n  required: [category]\n",
		"good.yaml":                "- text: '{\"category\": \"billing\", \"urgent\": true}'\n",
		"bad.yaml":                 "- text: '{\"category\": \"weather\"}'\n- text: 'plain words'\n- text: '{\"urgent\": 1}'\n",
	}
	writeFiles(t, dir, files)
	out, errOut, code := runWeft(t, dir, "run", "--dir", "agents", "desk", "My invoice is wrong!", "--model-script", "good.yaml", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		Result struct {
			Value map[string]any
			Text  string
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Result.Value["category"] != "billing" || doc.Result.Value["urgent"] != true {
		t.Errorf("result.value = %v (text %q)", doc.Result.Value, doc.Result.Text)
	}
	_, errOut, code = runWeft(t, dir, "run", "--dir", "agents", "desk", "Hm", "--model-script", "bad.yaml")
	if code != 1 || !strings.Contains(errOut, "no valid structured answer after 3 attempts") {
		t.Errorf("never valid: exit %d: %s", code, errOut)
	}
}

// TestRenderShowsOutputSchema: weft render --json shows the structured answer's shape.
func TestRenderShowsOutputSchema(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"agents/models/fast.yaml":  "name: fast\nprovider: openai\nmodel: gpt-4o-mini\n",
		"agents/prompts/desk.yaml": "name: desk\ntoolDescription: Classifies\nmodel: fast\nprompt: Classify.\noutputSchema:\n  type: object\n  properties:\n    category: {type: string}\n",
	}
	writeFiles(t, dir, files)
	out, errOut, code := runWeft(t, dir, "render", "--dir", "agents", "desk", "--json")
	if code != 0 || !strings.Contains(out, `"output": {`) || !strings.Contains(out, `"category"`) {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
}
