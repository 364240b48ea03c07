package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/schema"
)

// subagentRegistry is reviewRegistry's dual_ai "review" agent offered as a tool to "assistant".
func subagentRegistry(entry weft.ToolEntry, mod func(a *weft.Agent)) *weft.Registry {
	reg := reviewRegistry(func(a *weft.Agent) {
		a.ExposeAsTool, a.ToolDescription = true, "Have a reviewer check a draft."
		if mod != nil {
			mod(a)
		}
	})
	entry.Name, entry.Kind = "review", weft.EntryAgent
	reg.AddPrompt(&weft.Prompt{Name: "assistant", ToolDescription: "Helps.", Model: "fast", Prompt: weft.Text("You coordinate."),
		Tools: []weft.ToolEntry{entry}})
	reg.AddAgent(&weft.Agent{Name: "assistant", SideA: weft.AgentSide{Prompt: "assistant"}})
	return reg
}

func childOf(t *testing.T, h *harness, parentID string) *weft.Thread {
	t.Helper()
	kids, _, err := h.store.Threads(context.Background(), weft.ThreadQuery{ParentID: parentID})
	if err != nil || len(kids) != 1 {
		t.Fatalf("children of %s: %v %d", parentID, err, len(kids))
	}
	return kids[0]
}

func TestS003_5_subagent_blocking(t *testing.T) {
	cases := []struct {
		name, script string
		wantResult   string
	}{
		{"session_stop_success", `
- match: {agent: assistant}
  expect: {tools: [review]}
  tool_calls: [{name: review, arguments: {message: "Draft: 'Teh cat sat.'"}}]
- match: {agent: review, prompt: reviewer}
  expect: {system_contains: You review drafts., roles: [user], last_contains: Teh cat}
  tool_calls: [{name: approve, arguments: {summary: Fine after one typo.}}]
- match: {agent: assistant}
  expect: {last_contains: Fine after one typo.}
  text: The reviewer approved it.
`, "tool:review: Fine after one typo."},
		{"session_fail_is_error", `
- tool_calls: [{name: review, arguments: {message: "Draft: x"}}]
- match: {prompt: reviewer}
  tool_calls: [{name: reject, arguments: {reason: Too short.}}]
- text: The reviewer rejected it.
`, "tool:review: Failed to execute tool: Too short."},
		{"ended_without_session_tool", `
- tool_calls: [{name: review, arguments: {message: "Draft: x"}}]
- {match: {prompt: reviewer}, text: "Looks fine to me."}
- {match: {prompt: author}, text: "Thanks."}
- {match: {prompt: reviewer}, text: "Still fine."}
- {match: {prompt: author}, text: "Ok."}
- {match: {prompt: reviewer}, text: "Fine."}
- {match: {prompt: author}, text: "Ok."}
- {match: {prompt: reviewer}, text: "Fine."}
- {match: {prompt: author}, text: "Ok."}
- {match: {prompt: reviewer}, text: "Fine."}
- {match: {prompt: author}, text: "Ok."}
- text: No verdict.
`, "tool:review: Failed to execute tool: Subagent ended without calling a session tool."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, subagentRegistry(weft.ToolEntry{}, nil), tc.script)
			th, res := h.run("assistant", "Get my draft reviewed.", nil)
			if res.Last().Reason != weft.StopOnResponse {
				t.Fatalf("%+v", res.Stops)
			}
			if got := h.transcript(th.ID); len(got) != 4 || got[2] != tc.wantResult {
				t.Fatalf("parent transcript:\n%s", strings.Join(got, "\n"))
			}
			child := childOf(t, h, th.ID)
			if child.RootID != th.ID || child.Agent != "review" || child.Status != weft.ThreadTerminated ||
				!slices.Contains(child.Tags, "name:review") || child.Arguments["message"] == nil {
				t.Errorf("child thread: %+v", child)
			}
			if got := h.transcript(child.ID); !strings.HasPrefix(got[0], "user: Draft:") {
				t.Errorf("child transcript: %s", strings.Join(got, "\n"))
			}
		})
	}
}

func TestSubagentChildInputs(t *testing.T) {
	t.Run("S003_7_attachments_across_threads_parent_to_child", func(t *testing.T) {
		h := newHarness(t, subagentRegistry(weft.ToolEntry{}, nil), `
- tool_calls: [{name: review, arguments: {message: "Review the file", attachments: [/attachments/draft.txt]}}]
- match: {prompt: reviewer}
  tool_calls: [{name: approve, arguments: {summary: ok}}]
- text: done
`)
		ctx := context.Background()
		th, _ := h.eng.CreateThread(ctx, engineThread("assistant"))
		data := []byte("Teh cat sat.\x00\xff")
		writeFile(t, h, th.ID, "/attachments/draft.txt", data)
		h.send(th.ID, "review my file")
		child := childOf(t, h, th.ID)
		msgs, _ := h.store.Messages(ctx, child.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleUser}})
		if len(msgs) == 0 || len(msgs[0].Attachments) != 1 {
			t.Fatalf("child init message: %+v", msgs)
		}
		p := msgs[0].Attachments[0].Path
		if p == "/attachments/draft.txt" || !strings.HasPrefix(p, "/attachments/") {
			t.Errorf("child path %q should be the child's own", p)
		}
		got, err := h.store.Files().ReadFile(ctx, child.ID, p)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("copied bytes %q %v", got, err)
		}
	})
	t.Run("unknown_attachment_creates_nothing", func(t *testing.T) {
		h := newHarness(t, subagentRegistry(weft.ToolEntry{}, nil), `
- tool_calls: [{name: review, arguments: {message: "x", attachments: [/attachments/missing.txt]}}]
- text: done
`)
		th, _ := h.run("assistant", "go", nil)
		if got := h.transcript(th.ID)[2]; got != "tool:review: Failed to execute tool: Attachment not found: /attachments/missing.txt" {
			t.Errorf("got %s", got)
		}
		if kids, _, _ := h.store.Threads(context.Background(), weft.ThreadQuery{ParentID: th.ID}); len(kids) != 0 {
			t.Errorf("a child was created: %+v", kids)
		}
	})
	t.Run("required_variable_inherited_unless_scoped", func(t *testing.T) {
		for _, scoped := range []bool{false, true} {
			reg := subagentRegistry(weft.ToolEntry{}, nil)
			p, _ := reg.Prompt("reviewer")
			p.Variables = []weft.VariableDefinition{{Name: "STYLE_GUIDE", Type: weft.VarText, Required: true, Scoped: scoped, Description: "d"}}
			script := `
- tool_calls: [{name: review, arguments: {message: "x"}}]
- match: {prompt: reviewer}
  tool_calls: [{name: approve, arguments: {summary: ok}}]
- text: done
`
			if scoped {
				script = "- tool_calls: [{name: review, arguments: {message: \"x\"}}]\n- text: done\n"
			}
			h := newHarness(t, reg, script)
			th, _ := h.run("assistant", "go", map[string]string{"STYLE_GUIDE": "AP"})
			want := "tool:review: ok"
			if scoped {
				want = `tool:review: Failed to execute tool: Subagent "review" needs values for: STYLE_GUIDE. Provide them via POST /api/threads/`
			}
			if got := h.transcript(th.ID)[2]; !strings.HasPrefix(got, want) {
				t.Errorf("scoped=%v: got %s", scoped, got)
			}
		}
	})
}

func engineThread(agent string) engine.NewThread { return engine.NewThread{Agent: agent} }

// writeFile stores a file in a thread outside any run.
func writeFile(t *testing.T, h *harness, threadID, path string, data []byte) {
	t.Helper()
	fi := weft.FileInfo{Path: path, Name: path[strings.LastIndex(path, "/")+1:], MimeType: "text/plain", Size: int64(len(data))}
	if err := h.store.Tx(context.Background(), threadID, nil, func(tx weft.Tx) error { return tx.WriteFile(&fi, data) }); err != nil {
		t.Fatal(err)
	}
}

// TestSubagentTree runs coordinator → domain agent → leaf, each child blocking on its own.
func TestSubagentTree(t *testing.T) {
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fast", Provider: "test"})
	reg.AddTool(&weft.Tool{Name: "finish", Description: "Report the result.", Args: schema.Object(schema.Field("summary", schema.String())),
		Execute: weft.ToolFunc(func(context.Context, weft.State, json.RawMessage) (weft.ToolResult, error) {
			return weft.Success("done"), nil
		})})
	dual := func(name string, tools ...weft.ToolEntry) {
		reg.AddPrompt(&weft.Prompt{Name: name + "_a", ToolDescription: "d", Model: "fast", Prompt: weft.Text("You are " + name + "."),
			Tools: append(tools, weft.ToolEntry{Name: "finish"})})
		reg.AddPrompt(&weft.Prompt{Name: name + "_b", ToolDescription: "d", Model: "fast", Prompt: weft.Text("You assist " + name + ".")})
		reg.AddAgent(&weft.Agent{Name: name, Type: weft.DualAI, ExposeAsTool: true, ToolDescription: "Ask " + name + ".", MaxSessionTurns: 3,
			SideA: weft.AgentSide{Prompt: name + "_a", SessionStop: &weft.SessionTool{Name: "finish", MessageProperty: "summary"}},
			SideB: &weft.AgentSide{Prompt: name + "_b"}})
	}
	dual("leaf")
	dual("domain", weft.ToolEntry{Name: "leaf", Kind: weft.EntryAgent})
	reg.AddPrompt(&weft.Prompt{Name: "assistant", ToolDescription: "Helps.", Model: "fast", Prompt: weft.Text("You coordinate."),
		Tools: []weft.ToolEntry{{Name: "domain", Kind: weft.EntryAgent}}})
	reg.AddAgent(&weft.Agent{Name: "assistant", SideA: weft.AgentSide{Prompt: "assistant"}})
	h := newHarness(t, reg, `
- {match: {agent: assistant}, tool_calls: [{name: domain, arguments: {message: "Price the order."}}]}
- {match: {agent: domain}, expect: {last_contains: Price the order.}, tool_calls: [{name: leaf, arguments: {message: "Look up SKU 42."}}]}
- {match: {agent: leaf}, expect: {last_contains: SKU 42}, tool_calls: [{name: finish, arguments: {summary: "SKU 42 costs 7 EUR."}}]}
- {match: {agent: domain}, expect: {last_contains: costs 7 EUR}, tool_calls: [{name: finish, arguments: {summary: "The order costs 14 EUR."}}]}
- {match: {agent: assistant}, expect: {last_contains: 14 EUR}, text: "Your order costs 14 EUR."}
`)
	root, res := h.run("assistant", "What does my order cost?", nil)
	if res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("%+v", res.Stops)
	}
	domain := childOf(t, h, root.ID)
	leaf := childOf(t, h, domain.ID)
	if domain.RootID != root.ID || leaf.RootID != root.ID || leaf.ParentID != domain.ID {
		t.Errorf("tree: domain %+v leaf %+v", domain, leaf)
	}
	wantTranscript(t, h.transcript(root.ID),
		"user: What does my order cost?",
		`assistant:  [domain {"message":"Price the order."}]`,
		"tool:domain: The order costs 14 EUR.",
		"assistant: Your order costs 14 EUR.")
}

func TestNonBlockingSubagent(t *testing.T) {
	cases := []struct {
		name, childScript, wantReport string
	}{
		{"success_reported", `
- match: {prompt: reviewer}
  tool_calls: [{name: approve, arguments: {summary: Approved.}}]
`, "Subagent (reference: %s) has returned the following result:\n\nApproved."},
		{"failure_reported", `
- match: {prompt: reviewer}
  tool_calls: [{name: reject, arguments: {reason: Too vague.}}]
`, "Subagent (reference: %s) has reported a failure:\n\nToo vague."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			blocking := false
			reg := subagentRegistry(weft.ToolEntry{Blocking: &blocking}, nil)
			// The child's verdict waits until the parent's own run has stopped, so the report
			// starts a new parent run (a report arriving mid-run joins that run instead).
			gate := make(chan struct{})
			for _, name := range []string{"approve", "reject"} {
				tl, _ := reg.Tool(name)
				tl.Execute = weft.ToolFunc(func(ctx context.Context, _ weft.State, _ json.RawMessage) (weft.ToolResult, error) {
					<-gate
					return weft.Success("recorded"), nil
				})
			}
			h := newHarness(t, reg, `
- match: {agent: assistant}
  tool_calls: [{name: review, arguments: {message: "Draft: x"}}]
- match: {agent: assistant}
  expect: {last_contains: initiated successfully}
  text: I started a review.
`+tc.childScript+`
- match: {agent: assistant}
  expect: {last_contains: "Subagent (reference:"}
  text: The review is back.
`)
			th, _ := h.run("assistant", "Review my draft in the background.", nil)
			close(gate)
			h.eng.Wait()
			if f := h.script.Failures(); len(f) > 0 {
				t.Fatal(f)
			}
			child := childOf(t, h, th.ID)
			got := h.transcript(th.ID)
			wantTranscript(t, got,
				"user: Review my draft in the background.",
				`assistant:  [review {"message":"Draft: x"}]`,
				"tool:review: The subagent was initiated successfully. Reference: "+child.ID,
				"assistant: I started a review.",
				"user: "+fmt.Sprintf(tc.wantReport, child.ID),
				"assistant: The review is back.")
			msgs, _ := h.store.Messages(context.Background(), th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleUser}})
			last := msgs[len(msgs)-1]
			if !last.Silent || last.Metadata["subagent_id"] != child.ID || last.Metadata["kind"] != "subagent_result" {
				t.Errorf("report row: %+v", last)
			}
			if c, _ := h.store.Thread(context.Background(), child.ID); c.Status != weft.ThreadTerminated {
				t.Errorf("child status %s", c.Status)
			}
		})
	}
}

// TestTerminateCascades: terminating the root stops a running non-blocking child, which then
// refuses messages; the parent's data stays.
func TestTerminateCascades(t *testing.T) {
	blocking := false
	reg := subagentRegistry(weft.ToolEntry{Blocking: &blocking}, nil)
	started := make(chan struct{})
	tl, _ := reg.Tool("approve")
	tl.Execute = weft.ToolFunc(func(ctx context.Context, _ weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		close(started)
		<-ctx.Done()
		return weft.Failure("stopped"), nil
	})
	h := newHarness(t, reg, `
- {match: {agent: assistant}, tool_calls: [{name: review, arguments: {message: "Draft: x"}}]}
- {match: {agent: assistant}, text: Started.}
- {match: {prompt: reviewer}, tool_calls: [{name: approve, arguments: {summary: ok}}]}
- {match: {agent: assistant}, text: "Report seen."}
`)
	th, _ := h.run("assistant", "go", nil)
	<-started
	ctx := context.Background()
	if err := h.eng.Terminate(ctx, th.ID); err != nil {
		t.Fatal(err)
	}
	h.eng.Wait()
	child := childOf(t, h, th.ID)
	for _, id := range []string{th.ID, child.ID} {
		if got, _ := h.store.Thread(ctx, id); got.Status != weft.ThreadTerminated {
			t.Errorf("%s: status %s", id, got.Status)
		}
		if _, err := h.eng.Send(ctx, id, weft.NewMessage{Content: "hello?"}); weft.ErrorCode(err) != weft.EConflict {
			t.Errorf("%s: send to a terminated thread: %v", id, err)
		}
	}
	if got := h.transcript(th.ID); len(got) != 4 {
		t.Errorf("parent transcript kept, no report run:\n%s", strings.Join(got, "\n"))
	}
}

// TestS003_5_immediate: an immediate entry starts before the prompt's first model step, once per
// thread; a blocking result and a start error are stored as a synthetic call and result.
func TestS003_5_immediate(t *testing.T) {
	yes := true
	t.Run("blocking_result_seen_by_the_model", func(t *testing.T) {
		h := newHarness(t, subagentRegistry(weft.ToolEntry{Immediate: &yes}, nil), `
- match: {prompt: reviewer}
  expect: {last_contains: You were started automatically when this thread was created. Begin your task.}
  tool_calls: [{name: approve, arguments: {summary: Nothing to review yet.}}]
- match: {agent: assistant}
  expect: {last_contains: Nothing to review yet.}
  text: The reviewer is ready.
- match: {agent: assistant}
  expect: {last_contains: second}
  text: Still here.
`)
		th, _ := h.run("assistant", "hello", nil)
		h.send(th.ID, "second")
		got := h.transcript(th.ID)
		wantTranscript(t, got,
			"user: hello",
			`assistant:  [review {"message":"You were started automatically when this thread was created. Begin your task."}]`,
			"tool:review: Nothing to review yet.",
			"assistant: The reviewer is ready.",
			"user: second",
			"assistant: Still here.")
		if kids, n, _ := h.store.Threads(context.Background(), weft.ThreadQuery{ParentID: th.ID}); n != 1 {
			t.Errorf("children: %d %v", n, kids)
		}
	})
	t.Run("start_error_stored", func(t *testing.T) {
		reg := subagentRegistry(weft.ToolEntry{Immediate: &yes}, nil)
		p, _ := reg.Prompt("reviewer")
		p.Variables = []weft.VariableDefinition{{Name: "STYLE_GUIDE", Type: weft.VarText, Required: true, Scoped: true, Description: "d"}}
		h := newHarness(t, reg, `
- match: {agent: assistant}
  expect: {last_contains: needs values for}
  text: The reviewer needs configuration.
`)
		th, _ := h.run("assistant", "hello", nil)
		if got := h.transcript(th.ID); len(got) != 4 || !strings.HasPrefix(got[2], `tool:review: Failed to execute tool: Subagent "review" needs values for: STYLE_GUIDE. Provide them via POST`) {
			t.Errorf("transcript:\n%s", strings.Join(got, "\n"))
		}
	})
	t.Run("non_blocking_reports_later", func(t *testing.T) {
		no := false
		reg := subagentRegistry(weft.ToolEntry{Immediate: &yes, Blocking: &no}, nil)
		gate := make(chan struct{}) // the child's verdict waits for the parent's first run to stop
		tl, _ := reg.Tool("approve")
		tl.Execute = weft.ToolFunc(func(context.Context, weft.State, json.RawMessage) (weft.ToolResult, error) {
			<-gate
			return weft.Success("recorded"), nil
		})
		h := newHarness(t, reg, `
- {match: {agent: assistant}, expect: {last_contains: hello}, text: Hi.}
- {match: {prompt: reviewer}, tool_calls: [{name: approve, arguments: {summary: Ready.}}]}
- {match: {agent: assistant}, expect: {last_contains: Ready.}, text: Reviewer reported.}
`)
		th, _ := h.run("assistant", "hello", nil)
		close(gate)
		h.eng.Wait()
		if f := h.script.Failures(); len(f) > 0 {
			t.Fatal(f)
		}
		got := h.transcript(th.ID)
		if len(got) != 4 || !strings.HasSuffix(got[2], "has returned the following result:\n\nReady.") {
			t.Errorf("transcript:\n%s", strings.Join(got, "\n"))
		}
	})
}

// TestS003_6_env_required_bootstrap: a subagent whose scoped variable is missing is not created;
// the call's error names a request that the variables API answers, which creates and starts the
// child with the values in its own layer and reports its outcome to the parent.
func TestS003_6_env_required_bootstrap(t *testing.T) {
	reg := subagentRegistry(weft.ToolEntry{}, nil)
	p, _ := reg.Prompt("reviewer")
	p.Variables = []weft.VariableDefinition{{Name: "STYLE_GUIDE", Type: weft.VarSecret, Required: true, Scoped: true, Description: "The house style."}}
	p.Prompt = weft.Text("You review drafts.")
	h := newHarness(t, reg, `
- {match: {agent: assistant}, tool_calls: [{name: review, arguments: {message: "Draft: x"}}]}
- {match: {agent: assistant}, expect: {last_contains: needs values for}, text: I asked for the style guide.}
- {match: {prompt: reviewer}, tool_calls: [{name: approve, arguments: {summary: Styled.}}]}
- {match: {agent: assistant}, expect: {last_contains: Styled.}, text: Review done.}
`)
	ctx := context.Background()
	th, _ := h.run("assistant", "review", map[string]string{"STYLE_GUIDE": "inherited-not-allowed"})
	if kids, n, _ := h.store.Threads(ctx, weft.ThreadQuery{ParentID: th.ID}); n != 0 {
		t.Fatalf("a child was created: %+v", kids)
	}
	msgs, _ := h.store.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleTool}})
	if len(msgs) != 1 || msgs[0].Metadata["error_code"] != "subagent_env_required" {
		t.Fatalf("tool result: %+v", msgs)
	}
	data, _ := msgs[0].Metadata["error_data"].(map[string]any)
	reqID, _ := data["request_id"].(string)
	if reqID == "" || data["endpoint"] != "/api/threads/"+th.ID+"/variables/"+reqID || data["agent"] != "review" {
		t.Fatalf("error data: %+v", data)
	}
	req, err := h.eng.EnvRequest(ctx, th.ID, reqID)
	if err != nil || req.Status != "pending" || len(req.Missing) != 1 || req.Missing[0] != "STYLE_GUIDE" ||
		len(req.Required) != 1 || !req.Required[0].Scoped || req.Required[0].Description != "The house style." {
		t.Fatalf("request: %+v %v", req, err)
	}
	if _, err := h.eng.ProvideEnv(ctx, th.ID, reqID, map[string]string{"OTHER": "x"}); weft.ErrorCode(err) != weft.EMissingVariables {
		t.Errorf("still missing: %v", err)
	}
	if _, err := h.eng.ProvideEnv(ctx, th.ID, "envreq_unknown", nil); weft.ErrorCode(err) != weft.ENotFound {
		t.Errorf("unknown request: %v", err)
	}
	done, err := h.eng.ProvideEnv(ctx, th.ID, reqID, map[string]string{"STYLE_GUIDE": "AP style"})
	if err != nil || done.Status != "success" || done.ChildThreadID == "" {
		t.Fatalf("provide: %+v %v", done, err)
	}
	h.eng.Wait()
	if f := h.script.Failures(); len(f) > 0 {
		t.Fatal(f)
	}
	if _, err := h.eng.ProvideEnv(ctx, th.ID, reqID, map[string]string{"STYLE_GUIDE": "AP style"}); weft.ErrorCode(err) != weft.EConflict {
		t.Errorf("second answer: %v", err)
	}
	child, _ := h.store.Thread(ctx, done.ChildThreadID)
	if row, _ := child.Properties["weft.subagent"].(map[string]any); row["blocking"] != false {
		t.Errorf("the booted child's registry row: %+v", row)
	}
	env, _ := h.store.Env(ctx, weft.EnvThread, done.ChildThreadID)
	if len(env) != 1 || env[0].Name != "STYLE_GUIDE" || env[0].Value != "AP style" || env[0].Type != weft.VarSecret {
		t.Errorf("child env: %+v", env)
	}
	got := h.transcript(th.ID)
	if last := got[len(got)-1]; last != "assistant: Review done." {
		t.Errorf("parent transcript:\n%s", strings.Join(got, "\n"))
	}
}

// TestTerminateExpiresEnvRequests: terminating the parent expires its pending variables requests.
func TestTerminateExpiresEnvRequests(t *testing.T) {
	reg := subagentRegistry(weft.ToolEntry{}, nil)
	p, _ := reg.Prompt("reviewer")
	p.Variables = []weft.VariableDefinition{{Name: "STYLE_GUIDE", Type: weft.VarText, Required: true, Description: "d"}}
	h := newHarness(t, reg, "- tool_calls: [{name: review, arguments: {message: x}}]\n- text: asked\n")
	ctx := context.Background()
	th, _ := h.run("assistant", "go", nil)
	msgs, _ := h.store.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleTool}})
	data, _ := msgs[0].Metadata["error_data"].(map[string]any)
	reqID, _ := data["request_id"].(string)
	if _, err := h.eng.EnvRequest(ctx, th.ID, reqID); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Terminate(ctx, th.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.eng.ProvideEnv(ctx, th.ID, reqID, map[string]string{"STYLE_GUIDE": "AP"}); weft.ErrorCode(err) != weft.ENotFound {
		t.Errorf("provide after terminate: %v", err)
	}
}

// TestChildSecretStaysInChild: a secret given to a child alone (the variables API, its own
// layer) is redacted from what the child reports to its parent: the parent's rows, its model's
// request and the parent's events never carry it (env.md §6: a secret never leaves Weft except to
// the code that asked for it).
func TestChildSecretStaysInChild(t *testing.T) {
	const secret = "AP-style-7731"
	reg := subagentRegistry(weft.ToolEntry{}, nil)
	p, _ := reg.Prompt("reviewer")
	p.Variables = []weft.VariableDefinition{{Name: "STYLE_GUIDE", Type: weft.VarSecret, Required: true, Scoped: true, Description: "The house style."}}
	h := newHarness(t, reg, `
- {match: {agent: assistant}, tool_calls: [{name: review, arguments: {message: "Draft: x"}}]}
- {match: {agent: assistant}, text: I asked for the style guide.}
- {match: {prompt: reviewer}, tool_calls: [{name: approve, arguments: {summary: "Styled per `+secret+`."}}]}
- {match: {agent: assistant}, expect: {last_contains: "Styled per [redacted].", not_contains: `+secret+`}, text: Review done.}
`)
	ctx := context.Background()
	th, _ := h.run("assistant", "review", nil)
	msgs, _ := h.store.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleTool}})
	data, _ := msgs[0].Metadata["error_data"].(map[string]any)
	reqID, _ := data["request_id"].(string)
	if _, err := h.eng.ProvideEnv(ctx, th.ID, reqID, map[string]string{"STYLE_GUIDE": secret}); err != nil {
		t.Fatal(err)
	}
	h.eng.Wait()
	if f := h.script.Failures(); len(f) > 0 {
		t.Fatal(f)
	}
	all, _ := h.store.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1, MaxDepth: 5})
	for _, m := range all {
		if strings.Contains(m.Content, secret) {
			t.Errorf("parent row %d (%s) carries the child's secret: %q", m.Seq, m.Role, m.Content)
		}
	}
	h.evMu.Lock()
	defer h.evMu.Unlock()
	for _, ev := range h.events {
		if ev.ThreadID != th.ID {
			continue
		}
		b, _ := json.Marshal(ev.Data)
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("parent event %s carries the child's secret: %s", ev.Type, b)
		}
	}
}

// TestBlockingChildSecretStaysInChild: a secret a blocking child stores in its own layer
// (State.SetEnv) is redacted from the result its parent's call gets, and from the parent's model
// request.
func TestBlockingChildSecretStaysInChild(t *testing.T) {
	const secret = "vault-token-5521"
	reg := subagentRegistry(weft.ToolEntry{}, nil)
	reg.AddTool(&weft.Tool{Name: "fetch_token", Description: "Fetch the review token.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		return weft.Success("stored"), st.SetEnv(ctx, "REVIEW_TOKEN", secret, weft.VarSecret)
	})})
	p, _ := reg.Prompt("reviewer")
	p.Tools = append(p.Tools, weft.ToolEntry{Name: "fetch_token"})
	h := newHarness(t, reg, `
- {match: {agent: assistant}, tool_calls: [{name: review, arguments: {message: "Draft: x"}}]}
- {match: {prompt: reviewer}, tool_calls: [{name: fetch_token}]}
- {match: {prompt: reviewer}, tool_calls: [{name: approve, arguments: {summary: "Approved with `+secret+`."}}]}
- {match: {agent: assistant}, expect: {last_contains: "Approved with [redacted].", not_contains: `+secret+`}, text: Done.}
`)
	th, _ := h.run("assistant", "review", nil)
	if f := h.script.Failures(); len(f) > 0 {
		t.Fatal(f)
	}
	all, _ := h.store.Messages(context.Background(), th.ID, weft.MessageQuery{Limit: -1, MaxDepth: 5})
	for _, m := range all {
		if strings.Contains(m.Content, secret) {
			t.Errorf("parent row %d (%s) carries the child's secret: %q", m.Seq, m.Role, m.Content)
		}
	}
}

// TestChildStatusRedactedAndStreamed: a child's status text (State.SetStatus) is stored with the
// child's secrets redacted, since the parent's listing and model read it, and the parent's stream
// gets a subagent event with it.
func TestChildStatusRedactedAndStreamed(t *testing.T) {
	const secret = "vault-token-8832"
	reg := subagentRegistry(weft.ToolEntry{}, nil)
	reg.AddTool(&weft.Tool{Name: "progress", Description: "Report progress.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		if err := st.SetEnv(ctx, "REVIEW_TOKEN", secret, weft.VarSecret); err != nil {
			return weft.ToolResult{}, err
		}
		return weft.Success("reported"), st.SetStatus(ctx, "checking with "+secret)
	})})
	p, _ := reg.Prompt("reviewer")
	p.Tools = append(p.Tools, weft.ToolEntry{Name: "progress"})
	h := newHarness(t, reg, `
- {match: {agent: assistant}, tool_calls: [{name: review, arguments: {message: "Draft: x"}}]}
- {match: {prompt: reviewer}, tool_calls: [{name: progress}]}
- {match: {prompt: reviewer}, tool_calls: [{name: approve, arguments: {summary: Fine.}}]}
- {match: {agent: assistant}, text: Done.}
`)
	th, _ := h.run("assistant", "review", nil)
	if f := h.script.Failures(); len(f) > 0 {
		t.Fatal(f)
	}
	child := childOf(t, h, th.ID)
	row, _ := child.Properties["weft.subagent"].(map[string]any)
	if row["status_text"] != "checking with [redacted]" {
		t.Errorf("registry status text: %v", row["status_text"])
	}
	h.evMu.Lock()
	defer h.evMu.Unlock()
	var texts []any
	for _, ev := range h.events {
		if f, ok := ev.Data.(engine.Fields); ok && ev.Type == "subagent" && ev.ThreadID == th.ID && f["reference"] == child.ID {
			texts = append(texts, f["status_text"])
		}
	}
	if !slices.Contains(texts, any("checking with [redacted]")) {
		t.Errorf("the parent's subagent events: %v", texts)
	}
}
