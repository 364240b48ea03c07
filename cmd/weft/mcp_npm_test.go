package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// npmDir is where .ci/run installs the npm packages of the MCP interop tests
// (testdata/npm-mcp/package.json): set but broken fails, unset skips.
func npmDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("WEFT_TEST_MCP_NPM")
	if dir == "" {
		t.Skip("WEFT_TEST_MCP_NPM is unset: install testdata/npm-mcp/package.json with npm (as .ci/run does into .ci/npm) and set WEFT_TEST_MCP_NPM to that directory to run the MCP interop tests against npm's MCP SDK")
	}
	for _, p := range []string{"node_modules/@modelcontextprotocol/sdk/package.json", "node_modules/@modelcontextprotocol/server-everything/dist/index.js"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("WEFT_TEST_MCP_NPM=%s is set but broken: %v", dir, err)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("WEFT_TEST_MCP_NPM is set but node is not in PATH: %v", err)
	}
	return dir
}

// TestMCPNpmClient: `weft mcp` driven by the TypeScript SDK's client (an MCP client that is not
// Weft's or the Go SDK's code): initialize, tools/list shows the agents, tools/call runs one to
// its answer.
func TestMCPNpmClient(t *testing.T) {
	npm := npmDir(t)
	dir := t.TempDir()
	writeFiles(t, dir, innerProject)
	repoRoot, _ := filepath.Abs("../..")
	cmd := exec.Command("node", filepath.Join(repoRoot, "testdata/npm-mcp/client.mjs"), npm, "lookup", `{"message":"Where is order 42?"}`, "--",
		binary, "mcp", "--dir", filepath.Join(dir, "agents"), "--db", ":memory:", "--model-script", filepath.Join(dir, "inner.script.yaml"))
	cmd.Env = append(os.Environ(), "WEFT_DIR=", "OPENAI_API_KEY=")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("npm client: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		Server struct{ Name string }
		Tools  []struct{ Name, Description string }
		Result struct {
			IsError bool
			Content []struct{ Type, Text string }
		}
		Progress []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var names []string
	for _, tl := range got.Tools {
		names = append(names, tl.Name)
	}
	if got.Server.Name != "weft" || !strings.Contains(strings.Join(names, ","), "lookup") || !strings.Contains(strings.Join(names, ","), "greet") {
		t.Fatalf("initialize/list: %s", out)
	}
	if got.Result.IsError || len(got.Result.Content) != 1 || got.Result.Content[0].Text != "Order 42 shipped yesterday." {
		t.Fatalf("tools/call: %s", out)
	}
	// Progress is asserted with the Go SDK's client (checkServer). This client's onprogress saw
	// the notifications in about half of the runs although weft mcp writes them before the result
	// every time (checked on the wire), so it is only logged here.
	t.Logf("progress seen by the npm client: %q", got.Progress)
}
