package a2a_test

import (
	"bufio"
	"context"
	"github.com/weft-agents/weft/validate"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/a2a"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/scripted"
)

// booking is a remote agent built with a2a-go's own server: its first message in a context asks
// for a date (input-required), the answer in the same task completes it with a text artifact.
type booking struct {
	mu       sync.Mutex
	contexts []string
	tasks    []sdk.TaskID
}

func (b *booking) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		b.mu.Lock()
		b.contexts = append(b.contexts, ec.ContextID)
		b.tasks = append(b.tasks, ec.TaskID)
		b.mu.Unlock()
		if ec.StoredTask == nil {
			if !yield(sdk.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
		}
		if !yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateWorking, nil), nil) {
			return
		}
		var text string
		for _, p := range ec.Message.Parts {
			text += p.Text()
		}
		if ec.StoredTask == nil {
			yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateInputRequired, sdk.NewMessageForTask(sdk.MessageRoleAgent, ec, sdk.NewTextPart("Which date?"))), nil)
			return
		}
		art := sdk.NewArtifactEvent(ec, sdk.NewTextPart("booking for "+text))
		art.Artifact.Name = "booking"
		if !yield(art, nil) {
			return
		}
		yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateCompleted, sdk.NewMessageForTask(sdk.MessageRoleAgent, ec, sdk.NewTextPart("Booked."))), nil)
	}
}

func (b *booking) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateCanceled, nil), nil)
	}
}

// TestToolAgainstGoAgent: a kind: a2a tool calls a remote agent served by a2a-go: the key from
// ${env:…} reaches it, input-required comes back as a result that says so, and the next call
// answers in the same context and task, whose artifact is in the result.
func TestToolAgainstGoAgent(t *testing.T) {
	remote := &booking{}
	var mu sync.Mutex
	var auths []string
	mux := http.NewServeMux()
	var srvURL string
	mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(remote)))
	mux.HandleFunc("/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		a2asrv.NewStaticAgentCardHandler(&sdk.AgentCard{Name: "booker", Description: "Books.", Version: "1",
			SupportedInterfaces: []*sdk.AgentInterface{sdk.NewAgentInterface(srvURL+"/rpc", sdk.TransportProtocolJSONRPC)},
			Capabilities:        sdk.AgentCapabilities{Streaming: true}, Skills: []sdk.AgentSkill{}}).ServeHTTP(w, r)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	defer srv.Close()
	srvURL = srv.URL

	runBooking(t, srv.URL+"/.well-known/agent-card.json", map[string]string{"Authorization": "Bearer ${env:BOOKER_KEY}"}, "remote-secret-1234")
	remote.mu.Lock()
	defer remote.mu.Unlock()
	if len(remote.contexts) != 2 || remote.contexts[0] != remote.contexts[1] || remote.tasks[0] != remote.tasks[1] {
		t.Fatalf("the second call did not continue the task: contexts %v tasks %v", remote.contexts, remote.tasks)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range auths {
		if a != "Bearer remote-secret-1234" {
			t.Fatalf("a request went without the key: %q", a)
		}
	}
}

// runBooking runs an agent whose tool book is the remote booking agent at cardURL: the first call
// gets input-required, the second answers in the same task and gets the booking artifact; the
// key reaches the remote through the headers' ${env:BOOKER_KEY}; the calls stream progress and
// are recorded as not idempotent.
func runBooking(t *testing.T, cardURL string, headers map[string]string, key string) {
	t.Helper()
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "m", Provider: "test", Model: "x"})
	reg.AddTool(&weft.Tool{Name: "book", Description: "Books things.", A2A: &weft.A2ASpec{Card: cardURL, Headers: headers}})
	reg.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "P.", Model: "m", Prompt: weft.Text("Book."), IncludeChat: true,
		Tools: []weft.ToolEntry{{Name: "book"}}})
	reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
	a2a.Attach(reg)
	if d := validate.Registry(reg); d.HasErrors() {
		t.Fatal(d.Err())
	}
	sc, err := scripted.Parse("s", []byte(`
- tool_calls: [{name: book, arguments: {message: "a table"}, id: c1}]
- expect: {tool_result_contains: "needs input"}
  tool_calls: [{name: book, arguments: {message: "Friday"}, id: c2}]
- expect: {tool_result_contains: "booking for Friday"}
  text: All booked.
`))
	if err != nil {
		t.Fatal(err)
	}
	store, _ := memstore.New(memstore.Options{})
	eng, err := engine.New(engine.Options{Registry: reg, Store: store, Override: scripted.New(sc), RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "a", Env: map[string]string{"BOOKER_KEY": key}})
	if err != nil {
		t.Fatal(err)
	}
	progress := 0
	for ev, err := range eng.Converse(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Role: weft.RoleUser, Content: "book a table"}}) {
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := ev.Data.(engine.Fields); ok && ev.Type == "event" && f["name"] == "tool_progress" {
			progress++
		}
		if d, ok := ev.Data.(engine.RunStopped); ok && !d.Reason.OK() {
			t.Fatalf("run stopped %s: %s", d.Reason, d.Error)
		}
	}
	msgs, err := store.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleTool}})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("tool messages: %v %v", msgs, err)
	}
	if !strings.Contains(msgs[0].Content, "Which date?") || !strings.Contains(msgs[1].Content, "Booked.") || !strings.Contains(msgs[1].Content, "[artifact booking] booking for Friday") {
		t.Fatalf("results: %q / %q", msgs[0].Content, msgs[1].Content)
	}
	if progress < 4 {
		t.Fatalf("%d tool_progress events, want the streamed updates", progress)
	}
	calls, _ := store.ToolCalls(ctx, th.ID)
	for _, c := range calls {
		if c.Idempotent {
			t.Fatalf("an a2a call is recorded idempotent: %+v", c)
		}
	}
}

// TestToolAgainstJSAgent: the same conversation with a remote agent built with the reference
// JavaScript SDK's server classes (express).
func TestToolAgainstJSAgent(t *testing.T) {
	root := os.Getenv("WEFT_TEST_NPM_ROOT")
	if root == "" {
		t.Skip("WEFT_TEST_NPM_ROOT is unset: install testdata/npm-a2a/package.json into $WEFT_TEST_NPM_ROOT/npm-a2a with npm (as .ci/run does) to call an agent built with @a2a-js/sdk")
	}
	mods := filepath.Join(root, "npm-a2a", "node_modules")
	if _, err := os.Stat(filepath.Join(mods, "@a2a-js", "sdk", "dist", "server", "index.js")); err != nil {
		t.Fatalf("WEFT_TEST_NPM_ROOT=%s is set but @a2a-js/sdk is not installed there: %v", root, err)
	}
	cmd := exec.Command("node", "testdata/remote.mjs")
	cmd.Env = append(os.Environ(), "SDK="+filepath.Join(mods, "@a2a-js", "sdk", "dist"), "EXPRESS="+filepath.Join(mods, "express", "index.js"), "KEY=js-remote-key-42")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	port, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("the JS agent did not start: %q %v", line, err)
	}
	runBooking(t, "http://127.0.0.1:"+port+"/.well-known/agent-card.json", map[string]string{"X-Remote-Key": "${env:BOOKER_KEY}"}, "js-remote-key-42")
}

// TestToolKeepsKeysOut: a card URL that reads a key and cannot be reached gives an error result
// without the key.
func TestToolKeepsKeysOut(t *testing.T) {
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "m", Provider: "test", Model: "x"})
	reg.AddTool(&weft.Tool{Name: "book", Description: "Books things.", A2A: &weft.A2ASpec{Card: "http://127.0.0.1:1/${env:BOOKER_KEY}/agent-card.json"}})
	reg.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "P.", Model: "m", Prompt: weft.Text("Book."), Tools: []weft.ToolEntry{{Name: "book"}}})
	reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
	a2a.Attach(reg)
	if d := validate.Registry(reg); d.HasErrors() {
		t.Fatal(d.Err())
	}
	sc, err := scripted.Parse("s", []byte("- tool_calls: [{name: book, arguments: {message: hi}, id: c1}]\n- text: ok\n"))
	if err != nil {
		t.Fatal(err)
	}
	store, _ := memstore.New(memstore.Options{})
	eng, err := engine.New(engine.Options{Registry: reg, Store: store, Override: scripted.New(sc)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "a", Env: map[string]string{"BOOKER_KEY": "key-in-url-5678"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Role: weft.RoleUser, Content: "go"}}); err != nil {
		t.Fatal(err)
	}
	msgs, _ := store.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleTool}})
	if len(msgs) != 1 || msgs[0].ToolStatus != weft.ToolError || strings.Contains(msgs[0].Content, "key-in-url-5678") || !strings.Contains(msgs[0].Content, "[redacted]") {
		t.Fatalf("tool result: %+v", msgs)
	}
}
