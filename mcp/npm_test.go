package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/mcp"
)

// everything declares @modelcontextprotocol/server-everything (an MCP server published on npm,
// neither Weft's nor the Go SDK's code) as a stdio server, run with the machine's Node through a
// shell that records its pid in pidFile. WEFT_TEST_MCP_NPM names the npm install of
// testdata/npm-mcp (.ci/run installs it into .ci/npm): set but broken fails, unset skips.
func everything(t *testing.T, pidFile string) *weft.MCPServer {
	t.Helper()
	dir := os.Getenv("WEFT_TEST_MCP_NPM")
	if dir == "" {
		t.Skip("WEFT_TEST_MCP_NPM is unset: install testdata/npm-mcp/package.json with npm (as .ci/run does into .ci/npm) and set WEFT_TEST_MCP_NPM to that directory to run the client against an npm MCP server")
	}
	index := filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(index); err != nil {
		t.Fatalf("WEFT_TEST_MCP_NPM=%s is set but broken: %v", dir, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("WEFT_TEST_MCP_NPM is set but node is not in PATH: %v", err)
	}
	return &weft.MCPServer{Name: "everything", Command: []string{"/bin/sh", "-c", `echo $$ > "$PID_FILE"; exec "$NODE" "$INDEX" stdio`},
		Env: map[string]string{"PID_FILE": pidFile, "NODE": node, "INDEX": index}}
}

// TestClientNpmEverything: the client against a third-party server: listing (each schema checked),
// a tool call, an error, an image result, and the server killed in the middle of a call (an error
// result, then a fresh server on the next call).
func TestClientNpmEverything(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	srv := everything(t, pidFile)
	c := newClient(t, mcp.ClientOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tools, err := c.Tools(ctx, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]weft.MCPTool{}
	for _, tl := range tools {
		byName[tl.Remote] = tl
		t.Logf("%s: problem=%q", tl.Remote, tl.Problem)
	}
	if e := byName["echo"]; e.Args == nil || e.Args.Properties["message"] == nil || e.Problem != "" {
		t.Fatalf("echo: %+v", e)
	}

	res, err := c.Call(ctx, srv, "echo", json.RawMessage(`{"message":"hello from weft"}`), nil)
	if err != nil || res.Status != weft.ToolSuccess || !strings.Contains(res.Result, "hello from weft") {
		t.Fatalf("echo: %+v %v", res, err)
	}

	res, err = c.Call(ctx, srv, "get-tiny-image", json.RawMessage(`{}`), nil)
	if err != nil || res.Status != weft.ToolSuccess {
		t.Fatalf("get-tiny-image: %+v %v", res, err)
	}
	images := 0
	for _, a := range res.Attachments {
		if strings.HasPrefix(a.MimeType, "image/") && len(a.Data) > 0 {
			images++
		}
	}
	if images != 1 {
		t.Fatalf("want one image attachment, got %+v", res.Attachments)
	}

	// Arguments the server rejects: an error either way, never a success.
	res, err = c.Call(ctx, srv, "get-sum", json.RawMessage(`{"a":"one","b":2}`), nil)
	if err == nil && res.Status != weft.ToolError {
		t.Fatalf("get-sum with a string: %+v", res)
	}

	// Killed mid-call: the call fails, naming the server; the next call starts a new one.
	before := readPid(t, pidFile)
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, srv, "trigger-long-running-operation", json.RawMessage(`{"duration":10,"steps":5}`), nil)
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	if err := syscall.Kill(before, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "MCP server everything") {
			t.Fatalf("want the killed call to fail naming the server, got %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the call outlived its killed server")
	}
	res, err = c.Call(ctx, srv, "echo", json.RawMessage(`{"message":"again"}`), nil)
	if err != nil || !strings.Contains(res.Result, "again") {
		t.Fatalf("after the kill: %+v %v", res, err)
	}
	if after := readPid(t, pidFile); after == before {
		t.Fatalf("the server was not restarted (pid %d)", after)
	}
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
