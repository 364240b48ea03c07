package mcp_test

import (
	"context"
	"github.com/weft-agents/weft/validate"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/mcp"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/scripted"
)

// TestEngineMCPTools runs an agent whose prompt lists a whole MCP server (mcp:SERVER) through the
// engine with a scripted model: the tool outside the schema subset is not offered; a call, an
// error result, a call that hangs (the server's timeout), a flood of output (refused by the result
// limit), the server dying mid-call and the call after it (a restarted server) each end as a
// tool message, and the run finishes.
func TestEngineMCPTools(t *testing.T) {
	srv := testServer("normal")
	srv.Timeout = weft.Duration(60 * time.Second) // a flood takes a while under the race detector
	// The same server again with a short timeout, for the call that hangs.
	slow := testServer("normal")
	slow.Name, slow.Prefix, slow.Timeout = "t_slow", "slow_", weft.Duration(time.Second)
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "m", Provider: "test", Model: "x"})
	reg.AddMCPServer(srv)
	reg.AddMCPServer(slow)
	reg.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "P.", Model: "m", Prompt: weft.Text("Use the tools."),
		Tools: []weft.ToolEntry{{Name: srv.Name, Kind: weft.EntryMCP}, {Name: "t_slow/hang", Kind: weft.EntryMCP}}})
	reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
	if d := validate.Registry(reg); d.HasErrors() {
		t.Fatal(d.Err())
	}
	script, err := scripted.Parse("s", []byte(`
- expect: {tools_include: [echo, fail, slow_hang, flood, die, picture], tools_exclude: [odd_schema, slow_echo]}
  tool_calls:
    - {name: echo, arguments: {text: hi}, id: c1}
    - {name: echo, arguments: {}, id: c2}
    - {name: fail, id: c3}
    - {name: slow_hang, id: c4}
    - {name: flood, id: c5}
    - {name: die, id: c6}
    - {name: picture, id: c7}
    - {name: echo, arguments: {text: again}, id: c8}
- expect: {tool_result_contains: "echo: again"}
  text: done
`))
	if err != nil {
		t.Fatal(err)
	}
	store, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	client := newClient(t, mcp.ClientOptions{})
	eng, err := engine.New(engine.Options{Registry: reg, Store: store, Override: scripted.New(script), MCP: client})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Role: weft.RoleUser, Content: "go"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Last(); !r.Reason.OK() {
		t.Fatalf("run stopped %s: %s", r.Reason, r.Error)
	}
	msgs, err := store.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleTool}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		status weft.ToolStatus
		text   string
		atts   int
	}{
		"c1": {weft.ToolSuccess, "echo: hi\ndone", 0},
		"c2": {weft.ToolError, "Tool argument validation failed", 0},
		"c3": {weft.ToolError, "the lookup failed: no such order", 0},
		"c4": {weft.ToolError, "tool slow_hang timed out after 1s (MCP server t_slow)", 0},
		"c5": {weft.ToolError, "the limit is 4 MiB", 0},
		"c6": {weft.ToolError, "MCP server t_normal stopped while calling die: exit status 3; stderr: fatal: out of cheese", 0},
		"c7": {weft.ToolSuccess, "here it is", 2},
		"c8": {weft.ToolSuccess, "echo: again", 0},
	}
	if len(msgs) != len(want) {
		t.Fatalf("%d tool messages, want %d", len(msgs), len(want))
	}
	for _, m := range msgs {
		w := want[m.ToolCallID]
		if m.ToolStatus != w.status || !strings.Contains(m.Content, w.text) || len(m.Attachments) != w.atts {
			t.Errorf("%s (%s): %s %q with %d attachments; want %s containing %q with %d", m.ToolCallID, m.Name, m.ToolStatus, m.Content, len(m.Attachments), w.status, w.text, w.atts)
		}
	}
}
