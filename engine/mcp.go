package engine

import (
	"fmt"
	"log/slog"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// offerMCP offers the tools of an MCP entry: one tool, or every tool of the server for
// `mcp:SERVER`. A tool whose schema is outside the allowed subset is not offered; the log says why.
// A tool named explicitly whose server cannot be reached is still offered, with any object as its
// arguments: its call returns the server's error, which the model and the thread then see.
// tools and err are the server's listing (dispatch.MCP.Tools); log gets why a tool is not offered.
func (s *scope) offerMCP(e weft.ToolEntry, t weft.Target, tools []weft.MCPTool, err error, log *slog.Logger) {
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
			log.Warn("MCP tool omitted: its input schema is outside the subset Weft checks", "server", t.MCP.Name, "tool", mt.Remote, "problem", mt.Problem)
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
		log.Warn("MCP tool omitted: the server does not list it", "server", t.MCP.Name, "tool", t.MCPTool)
	}
}
