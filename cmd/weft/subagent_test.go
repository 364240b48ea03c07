package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWaitsForChildrenJSON drives the binary: a coordinator starts a non-blocking dual_ai
// subagent; `weft run` waits for the child and its report, and --json nests the child's document.
func TestRunWaitsForChildrenJSON(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"models/fast.yaml":         "name: fast\nprovider: anthropic\nmodel: claude-3-5-haiku-latest\n",
		"agents/coordinator.yaml":  "name: coordinator\nsideA: {prompt: coordinator}\n",
		"prompts/coordinator.yaml": "name: coordinator\ntoolDescription: Coordinates\nmodel: fast\nincludeChat: true\nprompt: You coordinate reviews.\ntools:\n  - {name: \"agent:review\", blocking: false}\n",
		"agents/review.yaml": "name: review\ntype: dual_ai\nexposeAsTool: true\ntoolDescription: Reviews a draft\nmaxSessionTurns: 3\n" +
			"sideA: {prompt: reviewer, sessionStop: {name: approve, messageProperty: summary}}\nsideB: {prompt: author}\n",
		"prompts/reviewer.yaml": "name: reviewer\ntoolDescription: Reviews\nmodel: fast\nincludeChat: true\nprompt: You review drafts.\ntools: [approve]\n",
		"prompts/author.yaml":   "name: author\ntoolDescription: Writes\nmodel: fast\nincludeChat: true\nprompt: You revise drafts.\n",
		"tools/approve.yaml": "kind: command\ndescription: Approve the draft.\n" +
			"args: {type: object, properties: {summary: {type: string}}, required: [summary]}\ncommand: [sh, -c, \"cat >/dev/null; echo approved\"]\ntimeout: 5s\n",
		"script.yaml": `version: 1
responses:
  - match: {agent: coordinator}
    expect: {last_contains: Check my draft}
    tool_calls: [{name: review, arguments: {message: "Draft: Teh cat."}}]
  - match: {agent: review, prompt: reviewer}
    expect: {last_contains: "Draft: Teh cat."}
    tool_calls: [{name: approve, arguments: {summary: Fix the typo.}}]
  - match: {agent: coordinator}
    text: Working on it.
  - match: {agent: coordinator}
    text: The review is back.
`,
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
	out, errOut, code := runWeft(t, dir, "run", "--dir", dir, "coordinator", "Check my draft.", "--model-script", filepath.Join(dir, "script.yaml"), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	var doc struct {
		Result struct {
			Reason, Text string
			Steps        int
		}
		Messages []struct {
			Role, Content string
			Silent        bool
			Metadata      map[string]any
		}
		Children []struct {
			Reference, Agent, Status string
			Document                 struct {
				Thread struct {
					ParentID string `json:"parent_id"`
				}
				Messages []struct{ Role, Content string }
				Result   struct{ Reason string }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Children) != 1 {
		t.Fatalf("children: %+v", doc.Children)
	}
	// The root's result covers the run the report started too: 2 steps of the command's own run
	// and 1 of the report's.
	if r := doc.Result; r.Reason != "stop_on_response" || r.Text != "The review is back." || r.Steps != 3 {
		t.Errorf("root result: %+v", r)
	}
	c := doc.Children[0]
	if c.Agent != "review" || c.Status != "terminated" || c.Document.Result.Reason != "session_stop" || len(c.Document.Messages) < 3 ||
		c.Document.Messages[0].Content != "Draft: Teh cat." {
		t.Errorf("child: %+v", c)
	}
	report := false
	for _, m := range doc.Messages {
		if m.Silent && m.Metadata["kind"] == "subagent_result" &&
			m.Content == "Subagent (reference: "+c.Reference+") has returned the following result:\n\nFix the typo." {
			report = true
		}
	}
	if !report {
		var lines []string
		for _, m := range doc.Messages {
			lines = append(lines, m.Role+": "+m.Content)
		}
		t.Errorf("no report in the root thread:\n%s", strings.Join(lines, "\n"))
	}
}
