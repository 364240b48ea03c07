package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// defaultMCPTimeout bounds one MCP call when the server declaration sets no timeout.
const defaultMCPTimeout = 60 * time.Second

// mcpTools lists an MCP server's tools for a scope; a server that cannot be reached is logged.
func (r *run) mcpTools(s *scope, e weft.ToolEntry, srv *weft.MCPServer) ([]weft.MCPTool, error) {
	if r.e.opt.MCP == nil {
		r.e.log.Warn("MCP tools omitted: this engine has no MCP client (engine.Options.MCP)", "server", srv.Name)
		return nil, errors.New("this engine has no MCP client")
	}
	ctx, cancel := context.WithTimeout(r.ctx, mcpTimeout(srv))
	defer cancel()
	tools, err := r.e.opt.MCP.Tools(ctx, srv, envLookup(s.env.With(s.prompt.Env, e.Env)))
	if err != nil {
		r.e.log.Warn("MCP server's tools could not be listed", "server", srv.Name, "error", err)
	}
	return tools, err
}

// openMCPTool resolves a bare tool name against the servers without an allow-list, whose tools are
// known only from their listing.
func (r *run) openMCPTool(s *scope, e weft.ToolEntry) (weft.Target, bool) {
	for _, srv := range r.e.reg.MCPServers() {
		if srv.Tools != nil {
			continue
		}
		tools, _ := r.mcpTools(s, e, srv)
		for _, t := range tools {
			if t.Name == e.Name {
				return weft.Target{Kind: weft.EntryTool, Name: t.Name, MCP: srv, MCPTool: t.Remote}, true
			}
		}
	}
	return weft.Target{}, false
}

// offerMCP offers the tools of an MCP entry: one tool, or every tool of the server for
// `mcp:SERVER`. A tool whose schema is outside the allowed subset is not offered; the log says why.
// A tool named explicitly whose server cannot be reached is still offered, with any object as its
// arguments: its call returns the server's error, which the model and the thread then see.
func (r *run) offerMCP(s *scope, e weft.ToolEntry, t weft.Target) {
	tools, err := r.mcpTools(s, e, t.MCP)
	if err != nil && t.MCPTool != "" {
		if _, dup := s.offered[t.Name]; !dup {
			o := &offered{entry: e, target: t, spec: weft.ToolSpec{Name: t.Name, Parameters: &schema.Schema{Type: "object"},
				Description: fmt.Sprintf("Tool %s of MCP server %s (the server is not available now).", t.MCPTool, t.MCP.Name)}}
			s.offered[t.Name] = o
			s.specs = append(s.specs, o.spec)
		}
		return
	}
	found := false
	for _, mt := range tools {
		if t.MCPTool != "" && mt.Remote != t.MCPTool {
			continue
		}
		found = true
		if mt.Problem != "" {
			r.e.log.Warn("MCP tool omitted: its input schema is outside the subset Weft checks", "server", t.MCP.Name, "tool", mt.Remote, "problem", mt.Problem)
			continue
		}
		if _, dup := s.offered[mt.Name]; dup {
			continue
		}
		o := &offered{entry: e, target: weft.Target{Kind: weft.EntryTool, Name: mt.Name, MCP: t.MCP, MCPTool: mt.Remote},
			spec: weft.ToolSpec{Name: mt.Name, Description: mt.Description, Parameters: argsSchema(mt.Args)}}
		s.offered[mt.Name] = o
		s.specs = append(s.specs, o.spec)
	}
	if !found && t.MCPTool != "" {
		r.e.log.Warn("MCP tool omitted: the server does not list it", "server", t.MCP.Name, "tool", t.MCPTool)
	}
}

// callMCP runs one MCP tool call, bounded by the server's timeout.
func (r *run) callMCP(ctx context.Context, s *scope, o *offered, args map[string]any) weft.ToolResult {
	t := o.target
	if r.e.opt.MCP == nil {
		return weft.Failure(fmt.Sprintf("Tool %q belongs to MCP server %q, and this engine has no MCP client.", t.Name, t.MCP.Name))
	}
	raw, _ := json.Marshal(args)
	if args == nil {
		raw = []byte("{}")
	}
	limit := mcpTimeout(t.MCP)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	out, err := r.e.opt.MCP.Call(ctx, t.MCP, t.MCPTool, raw, envLookup(s.env.With(s.prompt.Env, o.entry.Env)))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && r.ctx.Err() == nil {
			return weft.Failure(fmt.Sprintf("tool %s timed out after %s (MCP server %s)", t.Name, weft.Duration(limit), t.MCP.Name))
		}
		return weft.ToolResult{Status: weft.ToolError, Error: err.Error(), Attachments: out.Attachments}
	}
	if out.Status == "" {
		out.Status = weft.ToolSuccess
	}
	return out
}

func mcpTimeout(s *weft.MCPServer) time.Duration {
	if s.Timeout > 0 {
		return s.Timeout.D()
	}
	return defaultMCPTimeout
}
