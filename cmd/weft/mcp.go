package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/mcp"
)

type mcpFlags struct {
	db     string
	script string
}

func newMCPCmd(g *globals) *cobra.Command {
	f := &mcpFlags{}
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the project's agents and prompts as MCP tools on stdin/stdout",
		Long: `Serve the Model Context Protocol on stdin/stdout for an MCP client (Claude Desktop, an IDE,
an MCP inspector). Each agent, and each prompt that may be used as a tool, is an MCP tool: its
input is side A's requiredSchema, else {"message": "..."}; a call runs it in a new thread to its
answer and sends progress notifications while it runs. An agent and a prompt of the same name:
the prompt is offered as prompt_NAME.

Threads are kept in --db (default .weft/weft.db; env WEFT_DB; :memory: keeps none). Logs go to
stderr; stdout carries only the protocol. With --model-script every model call is answered from
a model script, for offline tests. The same server is served over streamable HTTP at /mcp by
weft serve, behind its authentication.

Example client configuration (Claude Desktop's mcpServers):
  {"weft": {"command": "weft", "args": ["mcp", "--dir", "/path/to/agents", "--db", "/path/to/weft.db"]}}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serveMCP(cmd, g, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.db, "db", defaultDB(), "store: SQLite file, :memory: or postgres:// URL (env WEFT_DB)")
	fl.StringVar(&f.script, "model-script", os.Getenv("WEFT_MODEL_SCRIPT"), "answer every model call from a model script (env WEFT_MODEL_SCRIPT)")
	return c
}

func serveMCP(cmd *cobra.Command, g *globals, f *mcpFlags) error {
	reg, err := loadProject(g.dir)
	if err != nil {
		return err
	}
	log := newLogger(g.logLevel, os.Stderr)
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.db != ":memory:" {
		if err := mkParent(f.db); err != nil {
			return err
		}
	}
	rt, err := openLocal(ctx, reg, f.db, f.script, log, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	preloadMCP(ctx, rt.mcp, reg, log)
	mcp.AddPromptAgents(reg)
	eng, err := engine.New(rt.opt)
	if err != nil {
		return exit(exitFailure, err)
	}
	srv := mcp.NewServer(mcp.ServerOptions{Engine: eng, Version: version(), Logger: log, TracerProvider: tracerOf(rt.opt.Observer)})
	stdio := newDrainingStdio(ctx, cmd.InOrStdin(), cmd.OutOrStdout())
	err = srv.Run(ctx, &sdk.IOTransport{Reader: stdio.reader(), Writer: stdio.writer()})
	eng.Wait()
	if err != nil && ctx.Err() == nil && !errors.Is(err, sdk.ErrConnectionClosed) && !strings.Contains(err.Error(), "EOF") {
		return exit(exitFailure, err)
	}
	return nil
}

// newMCPClient is the process's MCP client: stdio servers start in the project directory.
func newMCPClient(reg *weft.Registry, log *slog.Logger) *mcp.Client {
	return mcp.NewClient(mcp.ClientOptions{Root: reg.Root, Logger: log, Version: version()})
}

// preloadMCP lists the tools of every declared server that needs no thread variable, so that a
// server that cannot start, or a tool whose schema Weft cannot check, is reported when the
// command starts rather than in the middle of a run. Problems are logged as warnings: the server
// is tried again when a run needs it.
func preloadMCP(ctx context.Context, c *mcp.Client, reg *weft.Registry, log *slog.Logger) {
	for _, d := range checkMCP(ctx, c, reg) {
		log.Warn("MCP: "+d.Message, "file", d.Source, "field", d.Path)
	}
}

// checkMCP starts every declared server that needs no thread variable, in parallel, lists its
// tools and reports: a server that cannot start (error), a tool whose input schema is outside the
// subset (warning: it is not offered), allow-list names and mcp:SERVER/TOOL entries the server
// does not list (warning, error).
func checkMCP(ctx context.Context, c *mcp.Client, reg *weft.Registry) weft.Diagnostics {
	servers := reg.MCPServers()
	if len(servers) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var out weft.Diagnostics
	listed := map[string]map[string]bool{}
	add := func(d weft.Diagnostic) {
		mu.Lock()
		out = append(out, d)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		if mcpNeedsThreadEnv(s) {
			continue
		}
		wg.Go(func() {
			src := reg.Source("mcp", s.Name)
			probe := *s
			probe.Tools = nil // list everything, to check the allow-list against it
			tools, err := c.Tools(ctx, &probe, nil)
			if err != nil {
				add(weft.Diagnostic{Source: src, Path: "server", Severity: weft.SeverityError, Message: err.Error()})
				return
			}
			names := map[string]bool{}
			for _, t := range tools {
				names[t.Remote] = true
				if t.Problem != "" && (s.Tools == nil || slices.Contains(s.Tools, t.Remote)) {
					add(weft.Diagnostic{Source: src, Path: "tools." + t.Remote, Severity: weft.SeverityWarning,
						Message: "the tool's input schema is outside the subset Weft checks, so it is not offered: " + t.Problem})
				}
			}
			for i, name := range s.Tools {
				if !names[name] {
					add(weft.Diagnostic{Source: src, Path: fmt.Sprintf("tools[%d]", i), Severity: weft.SeverityWarning,
						Message: fmt.Sprintf("the server lists no tool %q", name)})
				}
			}
			mu.Lock()
			listed[s.Name] = names
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, p := range reg.Prompts() {
		for i, e := range p.Tools {
			if e.Kind != weft.EntryMCP {
				continue
			}
			server, tool := weft.SplitMCPEntry(e.Name)
			if names, ok := listed[server]; ok && tool != "" && !names[tool] {
				out = append(out, weft.Diagnostic{Source: reg.Source("prompt", p.Name), Path: fmt.Sprintf("tools[%d]", i), Severity: weft.SeverityError,
					Message: fmt.Sprintf("MCP server %q lists no tool %q", server, tool)})
			}
		}
	}
	return out
}

// mcpNeedsThreadEnv reports whether a server's declaration reads thread variables (${env:}).
func mcpNeedsThreadEnv(s *weft.MCPServer) bool {
	parts := append([]string{s.URL}, s.Command...)
	for _, v := range s.Env {
		parts = append(parts, v)
	}
	for _, v := range s.Headers {
		parts = append(parts, v)
	}
	for _, p := range parts {
		if strings.Contains(p, "${env:") {
			return true
		}
	}
	return false
}
