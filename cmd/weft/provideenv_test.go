package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestProvideEnv: a subagent that needs a variable nobody set answers its parent's call with a
// request naming the CLI command; weft threads provide-env stores the value, the subagent runs,
// and its report reaches the parent.
func TestProvideEnv(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"agents/models/fast.yaml":      "name: fast\nprovider: openai\nmodel: gpt-4o-mini\n",
		"agents/agents/desk.yaml":      "name: desk\ntype: ai_human\nsideA: {prompt: desk}\n",
		"agents/prompts/desk.yaml":     "name: desk\ntoolDescription: Coordinates\nmodel: fast\nprompt: You coordinate.\ntools: [agent:review]\n",
		"agents/agents/review.yaml":    "name: review\ntype: dual_ai\nexposeAsTool: true\ntoolDescription: Have a draft reviewed.\nmaxSessionTurns: 3\nsideA: {prompt: reviewer, sessionStop: {name: approve, messageProperty: summary}}\nsideB: {prompt: author}\n",
		"agents/prompts/reviewer.yaml": "name: reviewer\ntoolDescription: Reviews\nmodel: fast\nincludeChat: true\nprompt:\n  - {type: text, content: 'Review against: '}\n  - {type: env, property: STYLE_GUIDE}\ntools: [approve]\nvariables: [{name: STYLE_GUIDE, type: text, required: true, description: The style guide}]\n",
		"agents/prompts/author.yaml":   "name: author\ntoolDescription: Writes\nmodel: fast\nincludeChat: true\nprompt: You revise drafts.\n",
		"agents/tools/approve.yaml":    "kind: command\ndescription: Approve the draft.\nargs:\n  type: object\n  properties:\n    summary: {type: string}\ncommand: [sh, -c, 'cat > /dev/null; echo recorded']\n",
		"first.yaml":                   "- {match: {agent: desk}, tool_calls: [{name: review, arguments: {message: 'Draft: hello'}}]}\n- {match: {agent: desk}, text: I asked for the style guide.}\n",
		"second.yaml":                  "- {match: {agent: review}, expect: {system_contains: Be brief}, tool_calls: [{name: approve, arguments: {summary: Looks good.}}]}\n- {match: {agent: desk}, expect: {last_contains: Looks good.}, text: The review is back.}\n",
	}
	writeFiles(t, dir, files)
	out, errOut, code := runWeft(t, dir, "run", "desk", "Review my draft.", "--model-script", "first.yaml", "--json")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	m := regexp.MustCompile(`weft threads provide-env (thr_\w+) (envreq_\w+) NAME=VALUE`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the request does not name the command:\n%s", out)
	}
	out, errOut, code = runWeft(t, dir, "threads", "provide-env", m[1], m[2], "STYLE_GUIDE=Be brief.", "--model-script", "second.yaml")
	if code != 0 || !strings.Contains(out, "subagent thr_") || !strings.Contains(out, "The review is back.") {
		t.Fatalf("provide-env: exit %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = runWeft(t, dir, "threads", "provide-env", m[1], m[2], "STYLE_GUIDE=again")
	if code == 0 || !strings.Contains(errOut, "already fulfilled") {
		t.Errorf("a second answer: exit %d: %s", code, errOut)
	}
}
