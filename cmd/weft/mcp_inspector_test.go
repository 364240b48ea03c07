package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// inspectorCLI is the official MCP Inspector's CLI entry point, installed from
// testdata/npm-inspector/package.json into $WEFT_TEST_NPM_ROOT/npm-inspector: unset skips, set but
// missing fails.
func inspectorCLI(t *testing.T) string {
	t.Helper()
	root := os.Getenv("WEFT_TEST_NPM_ROOT")
	if root == "" {
		t.Skip("WEFT_TEST_NPM_ROOT is unset: install testdata/npm-inspector/package.json into .ci/npm-inspector (as .ci/run does) and set WEFT_TEST_NPM_ROOT=$PWD/.ci to run the MCP Inspector tests")
	}
	cli := filepath.Join(root, "npm-inspector", "node_modules", "@modelcontextprotocol", "inspector", "cli", "build", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("WEFT_TEST_NPM_ROOT=%s is set but the MCP Inspector is not installed: %v", root, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("WEFT_TEST_NPM_ROOT is set but node is not in PATH: %v", err)
	}
	return cli
}

// inspect runs `mcp-inspector --cli TARGET… ARGS…` and decodes its JSON answer.
func inspect(t *testing.T, cli string, target []string, args ...string) map[string]any {
	t.Helper()
	cmd := exec.Command("node", append(append([]string{cli, "--cli"}, target...), args...)...)
	cmd.Env = append(os.Environ(), "WEFT_DIR=", "OPENAI_API_KEY=")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("inspector %q: %v\n%s\n%s", args, err, out, stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("inspector %q: %v: %s", args, err, out)
	}
	return doc
}

// names lists the "name" (or "uri") of each object in doc[key].
func names(doc map[string]any, key, field string) []string {
	var out []string
	list, _ := doc[key].([]any)
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			s, _ := m[field].(string)
			out = append(out, s)
		}
	}
	return out
}

// TestMCPInspector drives `weft mcp` (stdio) and /mcp of `weft serve` (streamable HTTP, with an
// API key) with the official MCP Inspector CLI: tools/list and tools/call, prompts/list and
// prompts/get (a .prompty prompt with its inputs as arguments), resources/list (the thread the
// call made) and resources/read (its transcript).
func TestMCPInspector(t *testing.T) {
	cli := inspectorCLI(t)
	dir := t.TempDir()
	files := map[string]string{
		"agents/prompts/brief.prompty": "---\nname: brief\ndescription: Write a brief.\nmodel: m\n" +
			"inputs:\n  - {name: topic, kind: string, required: true, description: The topic}\n  - {name: points, kind: integer, default: 3}\n" +
			"template: mustache\n---\nsystem:\nYou write briefs of {{points}} points.\n\nuser:\nBrief me on {{topic}}.\n",
	}
	for k, v := range innerProject {
		files[k] = v
	}
	writeFiles(t, dir, files)
	const admin = "adm-0123456789abcdefghijklmnop"
	s := startServer(t, dir, []string{"WEFT_ADMIN_KEY=" + admin}, "--db", filepath.Join(dir, "serve.db"), "--model-script", "inner.script.yaml")
	defer s.stop()
	transports := []struct {
		name   string
		target []string
	}{
		{"stdio", []string{binary, "mcp", "--dir", filepath.Join(dir, "agents"), "--db", filepath.Join(dir, "stdio.db"),
			"--model-script", filepath.Join(dir, "inner.script.yaml")}},
		{"http", []string{s.base + "/mcp", "--transport", "http", "--header", "Authorization: Bearer " + admin}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			tools := names(inspect(t, cli, tr.target, "--method", "tools/list"), "tools", "name")
			if got := strings.Join(tools, ","); !strings.Contains(got, "lookup") || !strings.Contains(got, "greet") {
				t.Fatalf("tools/list: %v", tools)
			}
			call := inspect(t, cli, tr.target, "--method", "tools/call", "--tool-name", "lookup", "--tool-arg", "message=Where is order 42?")
			if b, _ := json.Marshal(call["content"]); call["isError"] == true || !strings.Contains(string(b), "Order 42 shipped yesterday.") {
				t.Fatalf("tools/call: %v", call)
			}
			prompts := names(inspect(t, cli, tr.target, "--method", "prompts/list"), "prompts", "name")
			if got := strings.Join(prompts, ","); !strings.Contains(got, "brief") || !strings.Contains(got, "greet") {
				t.Fatalf("prompts/list: %v", prompts)
			}
			got := inspect(t, cli, tr.target, "--method", "prompts/get", "--prompt-name", "brief", "--prompt-args", "topic=tides", "points=4")
			if b, _ := json.Marshal(got["messages"]); !strings.Contains(string(b), "You write briefs of 4 points.") || !strings.Contains(string(b), "Brief me on tides.") {
				t.Fatalf("prompts/get: %v", got)
			}
			uris := names(inspect(t, cli, tr.target, "--method", "resources/list"), "resources", "uri")
			var transcript string
			for _, u := range uris {
				if strings.HasSuffix(u, "/transcript") {
					transcript = u
				}
			}
			if transcript == "" {
				t.Fatalf("resources/list has no transcript: %v", uris)
			}
			read := inspect(t, cli, tr.target, "--method", "resources/read", "--uri", transcript)
			if b, _ := json.Marshal(read["contents"]); !strings.Contains(string(b), "Order 42 shipped yesterday.") {
				t.Fatalf("resources/read %s: %v", transcript, read)
			}
		})
	}
}
