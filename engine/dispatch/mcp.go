package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/weft-agents/weft"
)

// defaultMCPTimeout bounds one MCP call when the server declaration sets no timeout.
const defaultMCPTimeout = 60 * time.Second

// MCP lists and calls the tools of MCP servers for a run.
type MCP struct {
	// Client reaches the servers (nil: the engine has none, and their tools are not offered).
	Client weft.MCPClient
	// Log gets why a server's tools are not offered.
	Log *slog.Logger
}

// Tools lists an MCP server's tools, bounded by its timeout; env resolves the declaration's
// variables. A server that cannot be reached is logged.
func (m MCP) Tools(ctx context.Context, srv *weft.MCPServer, env weft.EnvLookup) ([]weft.MCPTool, error) {
	if m.Client == nil {
		m.Log.Warn("MCP tools omitted: this engine has no MCP client (engine.Options.MCP)", "server", srv.Name)
		return nil, errors.New("this engine has no MCP client")
	}
	ctx, cancel := context.WithTimeout(ctx, MCPTimeout(srv))
	defer cancel()
	tools, err := m.Client.Tools(ctx, srv, env)
	if err != nil {
		m.Log.Warn("MCP server's tools could not be listed", "server", srv.Name, "error", err)
	}
	return tools, err
}

// Open resolves a bare tool name against the servers without an allow-list, whose tools are known
// only from their listing.
func (m MCP) Open(ctx context.Context, servers []*weft.MCPServer, name string, env weft.EnvLookup) (weft.Target, bool) {
	for _, srv := range servers {
		if srv.Tools != nil {
			continue
		}
		tools, _ := m.Tools(ctx, srv, env)
		for _, t := range tools {
			if t.Name == name {
				return weft.Target{Kind: weft.EntryTool, Name: t.Name, MCP: srv, MCPTool: t.Remote}, true
			}
		}
	}
	return weft.Target{}, false
}

// Call runs one call of the MCP tool t with ctx (the call's), bounded by the server's timeout;
// run is the run's context: a timeout is the call's only while the run goes on.
func (m MCP) Call(ctx, run context.Context, t weft.Target, args map[string]any, env weft.EnvLookup) weft.ToolResult {
	if m.Client == nil {
		return weft.Failure(fmt.Sprintf("Tool %q belongs to MCP server %q, and this engine has no MCP client.", t.Name, t.MCP.Name))
	}
	raw, _ := json.Marshal(args)
	if args == nil {
		raw = []byte("{}")
	}
	limit := MCPTimeout(t.MCP)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	out, err := m.Client.Call(ctx, t.MCP, t.MCPTool, raw, env)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && run.Err() == nil {
			return weft.Failure(fmt.Sprintf("tool %s timed out after %s (MCP server %s)", t.Name, weft.Duration(limit), t.MCP.Name))
		}
		return weft.ToolResult{Status: weft.ToolError, Error: err.Error(), Attachments: out.Attachments}
	}
	if out.Status == "" {
		out.Status = weft.ToolSuccess
	}
	return out
}

// MCPTimeout is the bound of one call of the server's tools: its declaration's, else 60 s.
func MCPTimeout(s *weft.MCPServer) time.Duration {
	if s.Timeout > 0 {
		return s.Timeout.D()
	}
	return defaultMCPTimeout
}
