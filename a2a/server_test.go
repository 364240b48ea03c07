package a2a_test

import (
	"context"
	"encoding/json"
	"github.com/weft-agents/weft/validate"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/a2a"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/scripted"
)

const testKey = "a2a-test-admin-key-0123456789"

// bearer adds the API key to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// testRegistry: agent "helper" (prompt helper: tools save_report, and risky which needs approval).
func testRegistry(t *testing.T) *weft.Registry {
	t.Helper()
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "m", Provider: "test", Model: "x"})
	reg.AddTool(&weft.Tool{Name: "save_report", Description: "Saves the report as /out/report.md.",
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
			if _, err := st.Files().WriteFile(ctx, "/out/report.md", []byte("# Report\n"), weft.WriteOptions{}); err != nil {
				return weft.ToolResult{}, err
			}
			return weft.ToolResult{Status: weft.ToolSuccess, Result: "saved"}, nil
		})})
	reg.AddTool(&weft.Tool{Name: "risky", Description: "Does something a person approves.", Approval: weft.ApprovalRequired,
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
			return weft.ToolResult{Status: weft.ToolSuccess, Result: "done"}, nil
		})})
	reg.AddPrompt(&weft.Prompt{Name: "helper", ToolDescription: "Writes reports.", Model: "m", Prompt: weft.Text("Help."), IncludeChat: true,
		Tools: []weft.ToolEntry{{Name: "save_report"}, {Name: "risky"}}})
	reg.AddAgent(&weft.Agent{Name: "helper", Description: "A helpful agent.", SideA: weft.AgentSide{Prompt: "helper"}})
	if d := validate.Registry(reg); d.HasErrors() {
		t.Fatal(d.Err())
	}
	return reg
}

// startServer serves the registry's agents over A2A behind the API's auth, answering model calls
// from the script.
func startServer(t *testing.T, script string) (*httptest.Server, *engine.Engine) {
	t.Helper()
	sc, err := scripted.Parse("s", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	store, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Options{Registry: testRegistry(t), Store: store, Override: scripted.New(sc), RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Serve(ctx, engine.ServeOptions{Workers: 4}) }()
	get := func() *engine.Engine { return eng }
	api := httpapi.New(httpapi.Options{Engine: eng, NoAuth: false, Auth: nil, AdminKey: testKey,
		A2A: a2a.NewServer(a2a.ServerOptions{Engine: get, Version: "test"})})
	api.SetReady(true)
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() { srv.Close(); cancel(); <-done })
	return srv, eng
}

func newClient(t *testing.T, ctx context.Context, base string) (*a2aclient.Client, *sdk.AgentCard) {
	t.Helper()
	hc := &http.Client{Transport: bearer{testKey}}
	card, err := agentcard.NewResolver(hc).Resolve(ctx, base+"/a2a/helper")
	if err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatal(err)
	}
	return c, card
}

func text(m *sdk.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

// TestGoClient drives the server with a2a-go's own client: the card, a blocking send whose run
// saves a file (an artifact), a second message in the same context that needs the first, get,
// list, a streamed task, a task that waits for an approval (input-required), and auth.
func TestGoClient(t *testing.T) {
	srv, _ := startServer(t, `
- expect: {last_contains: "codeword is heron"}
  tool_calls: [{name: save_report, id: c1}]
- text: Saved the report.
- expect: {contains: "codeword is heron", last_contains: "what was the codeword"}
  text: The codeword was heron.
- text: Streamed answer.
- tool_calls: [{name: risky, id: c2}]
`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Without the key: 401, as on /api.
	resp, err := http.Get(srv.URL + "/a2a/helper/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("card without a key: %d, want 401", resp.StatusCode)
	}

	c, card := newClient(t, ctx, srv.URL)
	if card.Name != "helper" || card.Description != "A helpful agent." || !card.Capabilities.Streaming ||
		len(card.SupportedInterfaces) != 1 || card.SupportedInterfaces[0].URL != srv.URL+"/a2a/helper" ||
		card.SupportedInterfaces[0].ProtocolBinding != sdk.TransportProtocolJSONRPC {
		t.Fatalf("card: %+v", card)
	}
	if s, ok := card.SecuritySchemes[a2a.BearerScheme].(sdk.HTTPAuthSecurityScheme); !ok || s.Scheme != "Bearer" {
		t.Fatalf("security scheme: %#v", card.SecuritySchemes)
	}
	var skills []string
	for _, s := range card.Skills {
		skills = append(skills, s.ID)
	}
	if strings.Join(skills, ",") != "prompt:helper,tool:save_report,tool:risky" {
		t.Fatalf("skills: %v", skills)
	}

	res, err := c.SendMessage(ctx, &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("The codeword is heron. Save a report."))})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*sdk.Task)
	if !ok || task.Status.State != sdk.TaskStateCompleted || text(task.Status.Message) != "Saved the report." {
		t.Fatalf("first task: %#v", res)
	}
	if len(task.Artifacts) != 1 || task.Artifacts[0].Name != "report.md" ||
		string(task.Artifacts[0].Parts[0].URL()) != srv.URL+"/api/threads/"+task.ContextID+"/fs/out/report.md" {
		t.Fatalf("artifacts: %+v", task.Artifacts)
	}
	if len(task.History) != 2 || task.History[0].Role != sdk.MessageRoleUser || task.History[1].Role != sdk.MessageRoleAgent {
		t.Fatalf("history: %+v", task.History)
	}

	// The same context: the model sees the first message.
	m := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("And what was the codeword?"))
	m.ContextID = task.ContextID
	res, err = c.SendMessage(ctx, &sdk.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	second := res.(*sdk.Task)
	if second.ContextID != task.ContextID || second.ID == task.ID || second.Status.State != sdk.TaskStateCompleted ||
		text(second.Status.Message) != "The codeword was heron." {
		t.Fatalf("second task: %+v %q", second, text(second.Status.Message))
	}

	got, err := c.GetTask(ctx, &sdk.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != sdk.TaskStateCompleted || len(got.Artifacts) != 1 {
		t.Fatalf("get: %+v %v", got, err)
	}
	list, err := c.ListTasks(ctx, &sdk.ListTasksRequest{ContextID: task.ContextID})
	if err != nil || len(list.Tasks) != 2 || list.Tasks[0].ID != second.ID || list.Tasks[1].ID != task.ID {
		t.Fatalf("list: %+v %v", list, err)
	}
	if _, err := c.GetTask(ctx, &sdk.GetTaskRequest{ID: "thr_nope:msg_nope"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("unknown task: %v", err)
	}

	// Streaming: the task first, then its updates, the last one completed.
	var states []sdk.TaskState
	var first sdk.Event
	for ev, err := range c.SendStreamingMessage(ctx, &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("Stream please."))}) {
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = ev
		}
		if u, ok := ev.(*sdk.TaskStatusUpdateEvent); ok {
			states = append(states, u.Status.State)
		}
	}
	if _, ok := first.(*sdk.Task); !ok || len(states) == 0 || states[len(states)-1] != sdk.TaskStateCompleted {
		t.Fatalf("stream: first %T, states %v", first, states)
	}

	// A tool that waits for an approval: the task needs input.
	res, err = c.SendMessage(ctx, &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("Do the risky thing."))})
	if err != nil {
		t.Fatal(err)
	}
	if tk := res.(*sdk.Task); tk.Status.State != sdk.TaskStateInputRequired {
		t.Fatalf("approval: %+v", tk.Status)
	}
	if _, err := c.CancelTask(ctx, &sdk.CancelTaskRequest{ID: task.ID}); err == nil || !strings.Contains(err.Error(), "cannot be canceled") {
		t.Fatalf("cancel a completed task: %v", err)
	}
}
