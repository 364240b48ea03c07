package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// innerProject is the project `weft mcp` serves in these tests: an agent and a prompt of the same
// name (the prompt is offered as prompt_lookup) and a prompt with a requiredSchema.
var innerProject = map[string]string{
	"agents/models/m.yaml":       "{name: m, provider: test, model: scripted}\n",
	"agents/prompts/lookup.yaml": "{name: lookup, toolDescription: Looks an order up., model: m, prompt: You look orders up.}\n",
	"agents/prompts/greet.yaml": "name: greet\ntoolDescription: Greets someone by name.\nmodel: m\nprompt: You greet people.\n" +
		"requiredSchema: {type: object, properties: {who: {type: string}}, required: [who]}\n",
	"agents/agents/lookup.yaml": "{name: lookup, toolDescription: Answers questions about orders., sideA: {prompt: lookup}}\n",
	"inner.script.yaml": "- {match: {prompt: lookup}, text: Order 42 shipped yesterday.}\n- {match: {prompt: greet}, expect: {contains: Ada}, text: Hello Ada!}\n" +
		"- {match: {prompt: lookup}, text: Order 43 is late.}\n",
}

// TestMCPRoundTrip: a `kind: mcp` tool whose server is another Weft project served by `weft mcp`
// on stdio. The outer agent's model calls the inner agent as an MCP tool (mcp:SERVER/TOOL), and
// the answer comes back as the tool's result.
func TestMCPRoundTrip(t *testing.T) {
	inner := t.TempDir()
	writeFiles(t, inner, innerProject)
	outer := t.TempDir()
	server, _ := json.Marshal([]string{binary, "mcp", "--dir", filepath.Join(inner, "agents"), "--db", ":memory:",
		"--model-script", filepath.Join(inner, "inner.script.yaml")})
	writeFiles(t, outer, map[string]string{
		"agents/models/m.yaml":      "{name: m, provider: test, model: scripted}\n",
		"agents/tools/orders.yaml":  "kind: mcp\ndescription: The order desk, another Weft project.\nserver: {command: " + string(server) + "}\nprefix: desk_\n",
		"agents/prompts/front.yaml": "{name: front, toolDescription: Front desk., model: m, prompt: You help customers., tools: [\"mcp:orders/lookup\"]}\n",
		"agents/agents/front.yaml":  "{name: front, sideA: {prompt: front}}\n",
		"outer.script.yaml": "- expect: {tools: [desk_lookup]}\n  tool_calls: [{name: desk_lookup, arguments: {message: \"Where is order 42?\"}}]\n" +
			"- expect: {tool_result_contains: Order 42 shipped yesterday.}\n  text: Your order shipped yesterday.\n",
	})
	if out, errOut, code := runWeft(t, outer, "validate"); code != 0 {
		t.Fatalf("validate: %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := runWeft(t, outer, "run", "front", "Where is my order?", "--model-script", "outer.script.yaml", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		Result   struct{ Text string }
		Messages []struct {
			Role, Content, Name string
			ToolStatus          string `json:"tool_status"`
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Result.Text != "Your order shipped yesterday." {
		t.Fatalf("result %q\n%s", doc.Result.Text, errOut)
	}
	found := false
	for _, m := range doc.Messages {
		if m.Role == "tool" && m.Name == "desk_lookup" && m.Content == "Order 42 shipped yesterday." {
			found = true
		}
	}
	if !found {
		t.Fatalf("no tool message with the inner agent's answer: %+v", doc.Messages)
	}
}

// TestMCPValidation: a server command that does not exist is a validation error naming the file
// (issue 21 "Bad input"); an mcp: entry must name a declared server and a tool
// its allow-list admits.
func TestMCPValidation(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"agents/models/m.yaml":    "{name: m, provider: test, model: scripted}\n",
		"agents/tools/ghost.yaml": "kind: mcp\nserver: {command: [weft-no-such-mcp-server, --stdio]}\n",
		"agents/tools/kb.yaml":    "kind: mcp\nserver: {url: 'http://127.0.0.1:1/mcp'}\ntools: [search]\n",
		"agents/prompts/p.yaml":   "{name: p, toolDescription: P., model: m, prompt: Hi., tools: [\"mcp:nowhere\", \"mcp:kb/delete\", \"mcp:kb/search\"]}\n",
	})
	out, _, code := runWeft(t, dir, "validate")
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, out)
	}
	for _, want := range []string{
		`tools/ghost.yaml: server.command[0]: program "weft-no-such-mcp-server" not found in PATH`,
		`prompts/p.yaml: tools[0]: no MCP server named "nowhere"`,
		`prompts/p.yaml: tools[1]: MCP server "kb"'s tools allow-list does not include "delete"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "tools[2]") {
		t.Errorf("mcp:kb/search is valid:\n%s", out)
	}
}

// mcpCall calls a tool with a progress token and collects the progress messages.
func mcpCall(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &sdk.CallToolParams{Name: name, Arguments: args}
	p.SetProgressToken("tok-" + name)
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

type progressLog struct {
	mu   sync.Mutex
	msgs []string
}

func (p *progressLog) handler(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, req.Params.Message)
}

func (p *progressLog) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.msgs, "|")
}

func mcpText(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// checkServer runs the server checks every transport shares: tools/list shows the agents and
// prompts, tools/call runs them to their answers with progress on the way, and bad arguments are
// an error result.
func checkServer(t *testing.T, cs *sdk.ClientSession, progress *progressLog) {
	t.Helper()
	ctx := context.Background()
	tools := map[string]*sdk.Tool{}
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tl.Name] = tl
	}
	for _, name := range []string{"lookup", "prompt_lookup", "greet"} {
		if tools[name] == nil {
			t.Fatalf("tools/list lacks %s: %v", name, tools)
		}
	}
	if tools["lookup"].Description != "Answers questions about orders." {
		t.Errorf("lookup description %q", tools["lookup"].Description)
	}
	if s, _ := json.Marshal(tools["greet"].InputSchema); !strings.Contains(string(s), `"who"`) {
		t.Errorf("greet's input schema is not its requiredSchema: %s", s)
	}
	res := mcpCall(t, cs, "lookup", map[string]any{"message": "Where is order 42?"})
	if res.IsError || mcpText(t, res) != "Order 42 shipped yesterday." {
		t.Fatalf("lookup: %+v %q", res, mcpText(t, res))
	}
	if res.Meta["weft/thread"] == nil {
		t.Errorf("the result does not name its thread: %v", res.Meta)
	}
	res = mcpCall(t, cs, "greet", map[string]any{"who": "Ada"})
	if res.IsError || mcpText(t, res) != "Hello Ada!" {
		t.Fatalf("greet: %q", mcpText(t, res))
	}
	res = mcpCall(t, cs, "greet", map[string]any{"whom": "Ada"})
	if !res.IsError || !strings.Contains(mcpText(t, res), "who") {
		t.Fatalf("greet without who: %+v %q", res, mcpText(t, res))
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(progress.String(), "thinking") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(progress.String(), "thinking") {
		t.Errorf("no progress notifications: %q", progress)
	}
}

// TestMCPServerStdio drives `weft mcp` with the go-sdk's client over stdio: initialize,
// tools/list, tools/call with progress.
func TestMCPServerStdio(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, innerProject)
	progress := &progressLog{}
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, &sdk.ClientOptions{ProgressNotificationHandler: progress.handler})
	cmd := exec.Command(binary, "mcp", "--db", ":memory:", "--model-script", "inner.script.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WEFT_DIR=", "OPENAI_API_KEY=")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo.Name; got != "weft" {
		t.Errorf("server name %q", got)
	}
	checkServer(t, cs, progress)
}

// bearer adds an API key to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPServeHTTP drives /mcp of `weft serve` with the go-sdk's streamable-HTTP client: without a
// key it is refused like /api; with one, the same checks as over stdio.
func TestMCPServeHTTP(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, innerProject)
	const admin = "adm-0123456789abcdefghijklmnop"
	s := startServer(t, dir, []string{"WEFT_ADMIN_KEY=" + admin}, "--db", filepath.Join(dir, "w.db"), "--model-script", "inner.script.yaml")
	defer s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	anon := sdk.NewClient(&sdk.Implementation{Name: "anon", Version: "1"}, nil)
	if cs, err := anon.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.base + "/mcp", MaxRetries: -1}, nil); err == nil {
		cs.Close()
		t.Fatal("/mcp answered without an API key")
	}
	progress := &progressLog{}
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, &sdk.ClientOptions{ProgressNotificationHandler: progress.handler})
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{admin}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	checkServer(t, cs, progress)
}

// TestMCPPromptyKinds: Prompty 2 tool kinds in a .prompty file's front matter, run end to end:
// `kind: mcp` bound to a declared server (by reference, narrowed by allowedTools) and `kind:
// prompty` loading a child file as a sub-prompt.
func TestMCPPromptyKinds(t *testing.T) {
	inner := t.TempDir()
	writeFiles(t, inner, innerProject)
	outer := t.TempDir()
	server, _ := json.Marshal([]string{binary, "mcp", "--dir", filepath.Join(inner, "agents"), "--db", ":memory:",
		"--model-script", filepath.Join(inner, "inner.script.yaml")})
	writeFiles(t, outer, map[string]string{
		"agents/models/m.yaml":     "{name: m, provider: test, model: scripted}\n",
		"agents/tools/orders.yaml": "kind: mcp\nserver: {command: " + string(server) + "}\n",
		"agents/prompts/front.prompty": "---\nname: front\ndescription: Front desk.\nmodel: m\ntools:\n" +
			"  - {name: desk, kind: mcp, connection: {kind: reference, name: orders}, allowedTools: [lookup]}\n" +
			"  - {name: summarize, kind: prompty, path: _parts/summarize.prompty, description: Summarize a text.}\n" +
			"---\nsystem:\nYou help customers.\n",
		"agents/prompts/_parts/summarize.prompty": "---\nname: summary\ndescription: Summaries.\nmodel: m\n" +
			"inputs: [{name: text, kind: string}]\n---\nsystem:\nSummarize: {{text}}\n",
		"agents/agents/front.yaml": "{name: front, sideA: {prompt: front}}\n",
		"outer.script.yaml": "- match: {prompt: front}\n  expect: {tools: [lookup, summarize]}\n  tool_calls:\n" +
			"    - {name: lookup, arguments: {message: \"Where is order 42?\"}}\n    - {name: summarize, arguments: {text: \"A long text.\"}}\n" +
			"- match: {prompt: summarize}\n  expect: {system_contains: \"Summarize: A long text.\"}\n  text: Short summary.\n" +
			"- match: {prompt: front}\n  expect: {tool_result_contains: [Order 42 shipped yesterday., Short summary.]}\n  text: All done.\n",
	})
	out, errOut, code := runWeft(t, outer, "run", "front", "Help me.", "--model-script", "outer.script.yaml")
	if code != 0 || strings.TrimSpace(out) != "All done." {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestMCPHTTPSecretHeader: a streamable-HTTP MCP server (here /mcp of another weft serve) reached
// with a header built from a secret thread variable. The call works with the right key; with a
// wrong one it fails with a clear error; the key appears in no output, error or log either way.
func TestMCPHTTPSecretHeader(t *testing.T) {
	inner := t.TempDir()
	writeFiles(t, inner, innerProject)
	const admin = "adm-secret-0123456789abcdefghij"
	s := startServer(t, inner, []string{"WEFT_ADMIN_KEY=" + admin}, "--db", filepath.Join(inner, "w.db"), "--model-script", "inner.script.yaml")
	defer s.stop()
	outer := t.TempDir()
	writeFiles(t, outer, map[string]string{
		"agents/models/m.yaml": "{name: m, provider: test, model: scripted}\n",
		"agents/tools/orders.yaml": "kind: mcp\nserver: {url: '" + s.base + "/mcp', headers: {Authorization: 'Bearer ${env:DESK_KEY}'}}\n" +
			"tools: [lookup]\nvariables: [{name: DESK_KEY, type: secret, required: true}]\n",
		"agents/prompts/front.yaml": "{name: front, toolDescription: Front desk., model: m, prompt: You help., tools: [lookup]}\n",
		"agents/agents/front.yaml":  "{name: front, sideA: {prompt: front}}\n",
		"outer.script.yaml": "- tool_calls: [{name: lookup, arguments: {message: \"Where is order 43?\"}}]\n" +
			"- expect: {not_contains: " + admin + "}\n  text: Checked.\n",
	})
	cases := []struct {
		key, want string
	}{
		{admin, "Order 42 shipped yesterday."},
		{"wrong-key-0123456789abcdef", "MCP server orders could not be started"},
	}
	for _, tc := range cases {
		out, errOut, code := runWeftEnv(t, outer, []string{"WEFT_LOG_LEVEL=debug"}, "run", "front", "Where?", "--model-script", "outer.script.yaml",
			"--env", "DESK_KEY="+tc.key, "--json", "--verbose", "--log-level", "debug")
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Fatalf("key %s: exit %d, want %q in\n%s\n%s", tc.key, code, tc.want, out, errOut)
		}
		if strings.Contains(out+errOut, tc.key) {
			t.Fatalf("the key leaked:\n%s\n%s", out, errOut)
		}
	}
}

// TestMCPSupportExample is README's MCP command: an MCP client asks the support example, offline.
func TestMCPSupportExample(t *testing.T) {
	cmd := exec.Command(binary, "mcp", "--dir", repo("examples/support/agents"), "--db", ":memory:",
		"--model-script", repo("examples/support/demo.script.yaml"))
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "WEFT_DIR=", "OPENAI_API_KEY=")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "readme", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res := mcpCall(t, cs, "support", map[string]any{"message": "Where is order 42?"})
	if got := mcpText(t, res); res.IsError || got != "Good news, your order 42 shipped on November 20 with ParcelCo! You can follow it with tracking number PC-77812." {
		t.Fatalf("support answered %q (error %v)", got, res.IsError)
	}
}

// TestMCPValidateStartsServers: validate --mcp starts the servers and checks their tools against
// the declarations and the prompts' entries; a server that cannot start is an error naming its
// file.
func TestMCPValidateStartsServers(t *testing.T) {
	inner := t.TempDir()
	writeFiles(t, inner, innerProject)
	outer := t.TempDir()
	server, _ := json.Marshal([]string{binary, "mcp", "--dir", filepath.Join(inner, "agents"), "--db", ":memory:"})
	broken, _ := json.Marshal([]string{binary, "mcp", "--dir", filepath.Join(outer, "nowhere")})
	writeFiles(t, outer, map[string]string{
		"agents/models/m.yaml":     "{name: m, provider: test, model: scripted}\n",
		"agents/tools/orders.yaml": "kind: mcp\nserver: {command: " + string(server) + "}\ntools: [lookup, refund]\n",
		"agents/tools/broken.yaml": "kind: mcp\nserver: {command: " + string(broken) + "}\n",
		"agents/prompts/p.yaml":    "{name: p, toolDescription: P., model: m, prompt: Hi., tools: [\"mcp:orders/lookup\", \"mcp:orders/greet\"]}\n",
	})
	out, errOut, code := runWeft(t, outer, "validate")
	if code != 3 || !strings.Contains(out, `MCP server "orders"'s tools allow-list does not include "greet"`) {
		t.Fatalf("validate without --mcp: exit %d\n%s%s", code, out, errOut)
	}
	writeFiles(t, outer, map[string]string{
		"agents/prompts/p.yaml": "{name: p, toolDescription: P., model: m, prompt: Hi., tools: [\"mcp:orders/lookup\"]}\n",
	})
	if out, errOut, code := runWeft(t, outer, "validate"); code != 0 {
		t.Fatalf("validate (no servers started): exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runWeft(t, outer, "validate", "--mcp")
	if code != 3 {
		t.Fatalf("validate --mcp: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"tools/broken.yaml: server: MCP server broken could not be started",
		`warning: agents/tools/orders.yaml: tools[1]: the server lists no tool "refund"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// TestMCPStdioServerDiesWithWeft: a stdio MCP server started by weft serve (at start, to list its
// tools) is killed with it, even one that ignores the end of its stdin — by the kernel when weft
// is killed with SIGKILL, which it cannot intercept (Linux), and by a clean shutdown otherwise.
func TestMCPStdioServerDiesWithWeft(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux ties a child's life to its parent's (Pdeathsig)")
	}
	inner := t.TempDir()
	writeFiles(t, inner, innerProject)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			outer := t.TempDir()
			pidFile := filepath.Join(outer, "server.pid")
			// The shell outlives the server's end of stdin (it sleeps after), so only a signal ends it.
			script := `echo $$ > "$PID_FILE"; "$WEFT" mcp --dir "$INNER" --db :memory:; sleep 30`
			writeFiles(t, outer, map[string]string{
				"agents/models/m.yaml": "{name: m, provider: test, model: scripted}\n",
				"agents/tools/orders.yaml": "kind: mcp\nserver:\n  command: [/bin/sh, -c, '" + script + "']\n" +
					"  env: {PID_FILE: '" + pidFile + "', WEFT: '" + binary + "', INNER: '" + filepath.Join(inner, "agents") + "'}\n",
			})
			s := startServer(t, outer, nil, "--no-auth", "--db", filepath.Join(outer, "w.db"))
			var pid int
			deadline := time.Now().Add(20 * time.Second)
			for pid == 0 && time.Now().Before(deadline) {
				b, _ := os.ReadFile(pidFile)
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				time.Sleep(20 * time.Millisecond)
			}
			if pid == 0 || syscall.Kill(pid, 0) != nil {
				t.Fatalf("the MCP server did not start (pid %d)\n%s", pid, s.stderr)
			}
			if sig == syscall.SIGKILL {
				s.cmd.Process.Kill()
				<-s.done
			} else {
				s.stop()
			}
			deadline = time.Now().Add(10 * time.Second)
			for syscall.Kill(pid, 0) == nil {
				if time.Now().After(deadline) {
					t.Fatalf("MCP server %d outlived weft serve (%s)", pid, sig)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestMCPRender: `weft render` lists the tools a prompt takes from an MCP server (here another
// Weft project served by `weft mcp`), as a run offers them, instead of leaving them out.
func TestMCPRender(t *testing.T) {
	inner := t.TempDir()
	writeFiles(t, inner, innerProject)
	outer := t.TempDir()
	server, _ := json.Marshal([]string{binary, "mcp", "--dir", filepath.Join(inner, "agents"), "--db", ":memory:"})
	writeFiles(t, outer, map[string]string{
		"agents/models/m.yaml":      "{name: m, provider: test, model: scripted}\n",
		"agents/tools/orders.yaml":  "kind: mcp\nserver: {command: " + string(server) + "}\nprefix: desk_\n",
		"agents/prompts/front.yaml": "{name: front, toolDescription: Front desk., model: m, prompt: You help customers., tools: [\"mcp:orders\"]}\n",
	})
	out, errOut, code := runWeft(t, outer, "render", "front", "--tools")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{`"desk_lookup"`, `"desk_greet"`, "Answers questions about orders."} {
		if !strings.Contains(out, want) {
			t.Errorf("render --tools lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(errOut, "engine.Options.MCP") {
		t.Errorf("a warning for the Go API: %s", errOut)
	}
}
