package weft

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/weft-agents/weft/schema"
)

// MCPTool is one tool an MCP server lists, as Weft offers it to models.
type MCPTool struct {
	// Name is the name offered to the model: the server declaration's Prefix + Remote.
	Name string
	// Remote is the tool's name on the server.
	Remote string
	// Description is the server's description of the tool.
	Description string
	// Args is the tool's input schema, checked against the argument-schema subset of JSON Schema
	// with local $refs inlined; nil when Problem is set.
	Args *schema.Schema
	// Problem, when not empty, says why the tool is not offered (its schema is outside the subset).
	Problem string
}

// MCPClient reaches the servers MCP declarations name: one session per server (and resolved
// configuration) per process, started on first use and restarted when it dies.
// Implementations must be safe for concurrent use; package mcp provides one.
type MCPClient interface {
	// Tools lists the server's tools that its allow-list admits, from a cache refreshed when the
	// server reports that its list changed. env resolves ${env:NAME} references of the declaration.
	Tools(ctx context.Context, s *MCPServer, env EnvLookup) ([]MCPTool, error)
	// Call calls the server's tool remote with args (a JSON object the tool's schema validated)
	// and maps its reply to a ToolResult: text joined by "\n", images and resources as
	// attachments, isError as an error result. A failed call (the server died, a protocol error,
	// ctx expired) is an error.
	Call(ctx context.Context, s *MCPServer, remote string, args json.RawMessage, env EnvLookup) (ToolResult, error)
}

// SplitMCPEntry splits the name of an `mcp:` tool entry, SERVER or SERVER/TOOL, into the server's
// name and the tool's name on the server ("" = every tool of the server).
func SplitMCPEntry(name string) (server, tool string) {
	server, tool, _ = strings.Cut(name, "/")
	return server, tool
}

// InheritedEnv is all of Weft's own environment that a process it starts sees — a command
// tool's or a stdio MCP server's: PATH, HOME, LANG, TMPDIR, TZ and LC_*.
// Everything else (API keys, database URLs) stays with Weft; declared variables are added by the
// caller.
func InheritedEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH", k == "HOME", k == "LANG", k == "TMPDIR", k == "TZ", strings.HasPrefix(k, "LC_"):
			out = append(out, kv)
		}
	}
	return out
}

// LookProgram finds the program of a command: a name without a slash in PATH, a relative path
// against root (the project directory). The error names the program and says where it looked.
func LookProgram(root, prog string) (string, error) {
	if prog == "" {
		return "", errors.New("the command is empty")
	}
	if !strings.Contains(prog, "/") {
		p, err := exec.LookPath(prog)
		if err != nil {
			return "", fmt.Errorf("program %q not found in PATH", prog)
		}
		return p, nil
	}
	p := prog
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return "", fmt.Errorf("program %q not found (looked for %s)", prog, p)
	case st.IsDir() || st.Mode()&0o111 == 0:
		return "", fmt.Errorf("program %q is not an executable file", prog)
	}
	return p, nil
}
