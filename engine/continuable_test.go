package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/schema"
)

// TestS003_6_lifecycle_tools walks the rows of the lifecycle result table (subagents.md §3) with
// blocking instances: list none, unknown agent, create, list, message, unknown reference,
// a second instance and the instance cap.
func TestS003_6_lifecycle_tools(t *testing.T) {
	reg := subagentRegistry(weft.ToolEntry{Resumable: &weft.Resumable{Enabled: true, ReceivesMessages: "side_a", MaxInstances: 2}}, nil)
	var mu sync.Mutex
	var offered [][]string
	step := 0
	ref := ""
	calls := []func() weft.ToolCall{
		func() weft.ToolCall { return weft.ToolCall{Name: "subagents", Arguments: `{}`} },
		func() weft.ToolCall {
			return weft.ToolCall{Name: "subagent_create", Arguments: `{"agent":"nope","message":"x"}`}
		},
		func() weft.ToolCall {
			return weft.ToolCall{Name: "subagent_create", Arguments: `{"agent":"review","message":"Draft 1","name":"first"}`}
		},
		func() weft.ToolCall { return weft.ToolCall{Name: "subagents", Arguments: `{}`} },
		func() weft.ToolCall {
			return weft.ToolCall{Name: "subagent_message", Arguments: fmt.Sprintf(`{"referenceId":%q,"message":"Draft 2"}`, ref)}
		},
		func() weft.ToolCall {
			return weft.ToolCall{Name: "subagent_message", Arguments: `{"referenceId":"thr_bogus","message":"hi"}`}
		},
		func() weft.ToolCall {
			return weft.ToolCall{Name: "subagent_create", Arguments: `{"agent":"review","message":"Draft 3"}`}
		},
		func() weft.ToolCall {
			return weft.ToolCall{Name: "subagent_create", Arguments: `{"agent":"review","message":"Draft 4"}`}
		},
	}
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		if req.Prompt == "reviewer" {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "a" + fmt.Sprint(len(req.Messages)), Name: "approve",
				Arguments: fmt.Sprintf(`{"summary":"ok: %s"}`, last.Content)}}}, nil
		}
		if i := strings.LastIndex(last.Content, "Reference: "); i >= 0 && ref == "" {
			ref = strings.TrimSpace(last.Content[i+len("Reference: "):])
		}
		var names []string
		for _, s := range req.Tools {
			names = append(names, s.Name)
		}
		offered = append(offered, names)
		if step == len(calls) {
			return &weft.Response{Text: "done"}, nil
		}
		c := calls[step]()
		c.ID = fmt.Sprint("c", step)
		step++
		return &weft.Response{ToolCalls: []weft.ToolCall{c}}, nil
	})
	h := newHarnessWith(t, reg, model)
	th, res := h.run("assistant", "Review my drafts.", nil)
	if res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("%+v", res.Stops)
	}
	kids, _, _ := h.store.Threads(context.Background(), weft.ThreadQuery{ParentID: th.ID, Sort: "oldest"})
	if len(kids) != 2 || kids[0].ID != ref {
		t.Fatalf("children %d, first %s, ref %s", len(kids), kids[0].ID, ref)
	}
	r2 := kids[1].ID
	var got []string
	msgs, _ := h.store.Messages(context.Background(), th.ID, weft.MessageQuery{Limit: -1, Roles: []weft.Role{weft.RoleTool}})
	for _, m := range msgs {
		got = append(got, string(m.ToolStatus)+": "+m.Content)
	}
	want := []string{
		"success: No active subagent instances.",
		`error: Failed to execute tool: Agent "nope" is not available for this prompt. Use one of: review`,
		"success: ok: Draft 1\n\nReference: " + ref,
		"success: - " + ref + `: review "first" — idle`,
		"success: ok: Draft 2\n\nReference: " + ref,
		`error: Failed to execute tool: Subagent reference "thr_bogus" is not active.`,
		"success: ok: Draft 3\n\nReference: " + r2,
		fmt.Sprintf(`error: Failed to execute tool: Maximum instances (2) of "review" reached. Active references: %s, %s. Use subagent_message to continue one of them.`, ref, r2),
	}
	if strings.Join(got, "\n---\n") != strings.Join(want, "\n---\n") {
		t.Errorf("results:\n%s\nwant:\n%s", strings.Join(got, "\n---\n"), strings.Join(want, "\n---\n"))
	}
	if o := offered[0]; slices.Contains(o, "review") || slices.Contains(o, "subagent_message") || !slices.Contains(o, "subagent_create") || !slices.Contains(o, "subagents") {
		t.Errorf("tools before any child: %v", o)
	}
	if o := offered[3]; !slices.Contains(o, "subagent_message") {
		t.Errorf("tools with a live child: %v", o)
	}
	// Resumable children stay alive after answering.
	for _, k := range kids {
		if k.Status == weft.ThreadTerminated {
			t.Errorf("resumable child %s was terminated", k.ID)
		}
	}
}

// newHarnessWith is newHarness driven by a Go model instead of a script.
func newHarnessWith(t *testing.T, reg *weft.Registry, model weft.Provider) *harness {
	t.Helper()
	h := newHarness(t, reg, "- text: unused\n")
	eng, err := engine.New(engine.Options{Registry: reg, Store: h.store, Override: model})
	if err != nil {
		t.Fatal(err)
	}
	h.eng = eng
	return h
}

// TestExplicitParentCommunication: a non-blocking resumable child with explicit reporting sends
// notify_parent and State.NotifyParent messages (a file copied byte-identical into the parent's
// /attachments/) and no automatic report; the parent lists it with its status text.
func TestExplicitParentCommunication(t *testing.T) {
	blocking := false
	reg := subagentRegistry(weft.ToolEntry{Blocking: &blocking,
		Resumable: &weft.Resumable{Enabled: true, ReceivesMessages: "side_a", ParentCommunication: "explicit"}}, nil)
	data := []byte("findings\x00\x01")
	reg.AddTool(&weft.Tool{Name: "share", Description: "Share findings.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		if _, err := st.Files().WriteFile(ctx, "/notes/findings.bin", data, weft.WriteOptions{}); err != nil {
			return weft.ToolResult{}, err
		}
		if err := st.SetStatus(ctx, "shared findings"); err != nil {
			return weft.ToolResult{}, err
		}
		return weft.Success("shared"), st.NotifyParent(ctx, "see the file", "/notes/findings.bin")
	})})
	p, _ := reg.Prompt("reviewer")
	p.Tools = append(p.Tools, weft.ToolEntry{Name: "share"})
	gate := make(chan struct{})
	var mu sync.Mutex
	var childTools []string
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if req.Prompt == "reviewer" {
			switch last.Role {
			case weft.RoleUser:
				<-gate // the parent's first run has stopped
				mu.Lock()
				for _, s := range req.Tools {
					childTools = append(childTools, s.Name)
				}
				mu.Unlock()
				return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "n1", Name: "notify_parent", Arguments: `{"message":"halfway"}`}}}, nil
			case weft.RoleTool:
				if last.Name == "notify_parent" {
					return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "s1", Name: "share", Arguments: `{}`}}}, nil
				}
				return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "a1", Name: "approve", Arguments: `{"summary":"all good"}`}}}, nil
			}
		}
		if last.Content == "Review in the background." {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "subagent_create", Arguments: `{"agent":"review","message":"Draft","name":"bg"}`}}}, nil
		}
		if last.Role == weft.RoleTool && last.Name == "subagent_create" {
			return &weft.Response{Text: "started"}, nil
		}
		return &weft.Response{Text: "noted"}, nil
	})
	h := newHarnessWith(t, reg, model)
	th, _ := h.run("assistant", "Review in the background.", nil)
	close(gate)
	h.eng.Wait()
	ctx := context.Background()
	msgs, _ := h.store.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1, Roles: []weft.Role{weft.RoleUser}})
	var notes []weft.Message
	for _, m := range msgs {
		if m.Metadata["kind"] != nil {
			notes = append(notes, m)
		}
	}
	if len(notes) != 2 {
		t.Logf("parent:\n%s", strings.Join(h.transcript(th.ID), "\n"))
		if ks, _, _ := h.store.Threads(ctx, weft.ThreadQuery{ParentID: th.ID}); len(ks) > 0 {
			t.Logf("child:\n%s", strings.Join(h.transcript(ks[0].ID), "\n"))
		}
		t.Fatalf("parent got %d subagent messages: %+v", len(notes), notes)
	}
	kids, _, _ := h.store.Threads(ctx, weft.ThreadQuery{ParentID: th.ID})
	ref := kids[0].ID
	if notes[0].Content != "Subagent (reference: "+ref+") sent a message:\n\nhalfway" || notes[0].Metadata["kind"] != "subagent_message" || !notes[0].Silent {
		t.Errorf("first: %+v", notes[0])
	}
	if len(notes[1].Attachments) != 1 || !strings.HasPrefix(notes[1].Content, "Subagent (reference: "+ref+") sent a message:\n\nsee the file\n\nAttachments:\n- /attachments/") {
		t.Fatalf("second: %+v", notes[1])
	}
	got, err := h.store.Files().ReadFile(ctx, th.ID, notes[1].Attachments[0].Path)
	if err != nil || string(got) != string(data) {
		t.Errorf("parent copy %q %v", got, err)
	}
	if !slices.Contains(childTools, "notify_parent") {
		t.Errorf("child tools: %v", childTools)
	}
	infos, err := h.eng.State(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	children, _ := infos.Children(ctx)
	if len(children) != 1 || children[0].StatusText != "shared findings" || children[0].Label != "bg" || children[0].ParentCommunication != "explicit" || children[0].Status != "idle" {
		t.Errorf("children: %+v", children)
	}
}

// TestS003_5_optional_flag: an optional subagent entry (and a resumable one's lifecycle tools) is
// offered only when its flag resolves to true, 1 or yes.
func TestS003_5_optional_flag(t *testing.T) {
	for _, tc := range []struct {
		flag string
		set  bool
		on   bool
	}{{"true", true, true}, {"1", true, true}, {"YES", true, true}, {"no", true, false}, {"0", true, false}, {"", false, false}} {
		for _, resumable := range []bool{false, true} {
			entry := weft.ToolEntry{Optional: "USE_REVIEW"}
			want := "review"
			if resumable {
				entry.Resumable, want = &weft.Resumable{Enabled: true, ReceivesMessages: "side_a"}, "subagent_create"
			}
			var tools []string
			model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
				for _, s := range req.Tools {
					tools = append(tools, s.Name)
				}
				return &weft.Response{Text: "ok"}, nil
			})
			h := newHarnessWith(t, subagentRegistry(entry, nil), model)
			env := map[string]string{}
			if tc.set {
				env["USE_REVIEW"] = tc.flag
			}
			h.run("assistant", "hi", env)
			if got := slices.Contains(tools, want); got != tc.on {
				t.Errorf("flag %q (set %v) resumable %v: offered %v", tc.flag, tc.set, resumable, tools)
			}
		}
	}
}

// TestMessageBusyChild: the parent messages a non-blocking resumable child while the child's run is
// still going; the message queues, the child handles it after the current step, and both outcomes
// reach the parent.
func TestMessageBusyChild(t *testing.T) {
	blocking := false
	reg := subagentRegistry(weft.ToolEntry{Blocking: &blocking, Resumable: &weft.Resumable{Enabled: true, ReceivesMessages: "side_a"}}, nil)
	busy, release := holdFirstApprove(reg)
	var mu sync.Mutex
	var ref string
	var childSaw []string
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		if req.Prompt == "reviewer" {
			return approveEach(last, &childSaw), nil
		}
		switch {
		case last.Content == "start":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "subagent_create", Arguments: `{"agent":"review","message":"Draft 1"}`}}}, nil
		case last.Role == weft.RoleTool && last.Name == "subagent_create":
			ref = strings.TrimPrefix(last.Content, "The subagent was initiated successfully. Reference: ")
			return &weft.Response{Text: "started"}, nil
		case last.Content == "more":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c2", Name: "subagent_message", Arguments: fmt.Sprintf(`{"referenceId":%q,"message":"Draft 2"}`, ref)}}}, nil
		case last.Role == weft.RoleTool && last.Name == "subagent_message":
			return &weft.Response{Text: "sent: " + last.Content}, nil
		}
		return &weft.Response{Text: "noted"}, nil
	})
	h := newHarnessWith(t, reg, model)
	th, _ := h.run("assistant", "start", nil)
	<-busy // the child is inside its first approve call
	res := h.send(th.ID, "more")
	if res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("%+v", res.Stops)
	}
	close(release)
	h.eng.Wait()
	got := h.transcript(th.ID)
	joined := strings.Join(got, "\n")
	if !strings.Contains(joined, "tool:subagent_message: Message sent to subagent "+ref+".") {
		t.Errorf("parent transcript:\n%s", joined)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(childSaw) != 2 || childSaw[1] != "Draft 2" {
		kids, _, _ := h.store.Threads(context.Background(), weft.ThreadQuery{ParentID: th.ID})
		t.Errorf("child saw %q; child:\n%s", childSaw, strings.Join(h.transcript(kids[0].ID), "\n"))
	}
	for _, want := range []string{"has returned the following result:\n\nok 1", "has returned the following result:\n\nok 2"} {
		if !strings.Contains(joined, want) {
			kids, _, _ := h.store.Threads(context.Background(), weft.ThreadQuery{ParentID: th.ID})
			t.Errorf("missing report %q in:\n%s\nchild:\n%s", want, joined, strings.Join(h.transcript(kids[0].ID), "\n"))
		}
	}
}

// TestSessionStatusIsRegistryText: a child's sessionStatus call becomes its status text in the
// parent's registry.
func TestSessionStatusIsRegistryText(t *testing.T) {
	reg := subagentRegistry(weft.ToolEntry{Resumable: &weft.Resumable{Enabled: true, ReceivesMessages: "side_a"}}, func(a *weft.Agent) {
		a.SideA.SessionStatus = &weft.SessionTool{Name: "report", MessageProperty: "status"}
	})
	reg.AddTool(&weft.Tool{Name: "report", Description: "Report progress.", Args: schema.Object(schema.Field("status", schema.String())),
		Execute: weft.ToolFunc(func(context.Context, weft.State, json.RawMessage) (weft.ToolResult, error) {
			return weft.Success("ok"), nil
		})})
	p, _ := reg.Prompt("reviewer")
	p.Tools = append(p.Tools, weft.ToolEntry{Name: "report"})
	h := newHarness(t, reg, `
- {match: {agent: assistant}, tool_calls: [{name: subagent_create, arguments: {agent: review, message: "Draft"}}]}
- {match: {prompt: reviewer}, tool_calls: [{name: report, arguments: {status: "2 of 3 checks done"}}]}
- {match: {prompt: reviewer}, tool_calls: [{name: approve, arguments: {summary: ok}}]}
- {match: {agent: assistant}, tool_calls: [{name: subagents}]}
- {match: {agent: assistant}, expect: {last_contains: "— idle: 2 of 3 checks done"}, text: done}
`)
	ctx := context.Background()
	th, _ := h.run("assistant", "go", nil)
	st, _ := h.eng.State(ctx, th.ID)
	kids, _ := st.Children(ctx)
	if len(kids) != 1 || kids[0].StatusText != "2 of 3 checks done" || !kids[0].Resumable || kids[0].Status != "idle" {
		t.Errorf("registry: %+v", kids)
	}
}

// holdFirstApprove makes the registry's approve tool answer "recorded", holding its first call:
// busy closes once that call is inside the tool, which returns when release is closed.
func holdFirstApprove(reg *weft.Registry) (busy, release chan struct{}) {
	busy, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	tl, _ := reg.Tool("approve")
	tl.Execute = weft.ToolFunc(func(ctx context.Context, _ weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		once.Do(func() { close(busy); <-release })
		return weft.Success("recorded"), nil
	})
	return busy, release
}

// approveEach is the reviewer of the busy-child tests: it approves each user message as "ok N",
// recording what it saw.
func approveEach(last weft.LLMMessage, saw *[]string) *weft.Response {
	if last.Role != weft.RoleUser {
		return &weft.Response{Text: "waiting"}
	}
	*saw = append(*saw, last.Content)
	n := len(*saw)
	return &weft.Response{ToolCalls: []weft.ToolCall{{ID: fmt.Sprint("a", n), Name: "approve", Arguments: fmt.Sprintf(`{"summary":"ok %d"}`, n)}}}
}

// TestBlockingMessageToBackgroundChild: a blocking subagent_message to a child whose run was
// started in the background (here: a blocking resumable immediate entry, started without waiting)
// receives the outcome of the run that answered its message as the call's result, and only the
// other run is reported (§4.1: no report while a blocking call awaits it) — exactly once each.
func TestBlockingMessageToBackgroundChild(t *testing.T) {
	yes := true
	reg := subagentRegistry(weft.ToolEntry{Immediate: &yes, Resumable: &weft.Resumable{Enabled: true, ReceivesMessages: "side_a"}}, nil)
	busy, gate := holdFirstApprove(reg)
	var mu sync.Mutex
	var ref string
	var childSaw []string
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		if req.Prompt == "reviewer" {
			return approveEach(last, &childSaw), nil
		}
		switch {
		case last.Content == "more":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c2", Name: "subagent_message", Arguments: fmt.Sprintf(`{"referenceId":%q,"message":"Draft 2"}`, ref)}}}, nil
		case last.Role == weft.RoleTool:
			return &weft.Response{Text: "tool said: " + last.Content}, nil
		}
		return &weft.Response{Text: "noted"}, nil
	})
	h := newHarnessWith(t, reg, model)
	ctx := context.Background()
	th, _ := h.run("assistant", "start", nil)
	<-busy // the immediate child's first run is inside approve
	mu.Lock()
	ref = childOf(t, h, th.ID).ID
	mu.Unlock()
	// The parent's blocking message waits for that run.
	sent := make(chan *engine.RunResult)
	go func() { sent <- h.send(th.ID, "more") }()
	for {
		q, _ := h.store.Queued(ctx, ref)
		if len(q) == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(gate)
	res := <-sent
	h.eng.Wait()
	if res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("%+v", res.Stops)
	}
	joined := strings.Join(h.transcript(th.ID), "\n")
	if !strings.Contains(joined, "tool:subagent_message: ok 2\n\nReference: "+ref) {
		t.Errorf("blocking result is not the answering run's outcome:\n%s", joined)
	}
	if n := strings.Count(joined, "has returned the following result:\n\nok 1"); n != 1 {
		t.Errorf("the background run reported %d times:\n%s", n, joined)
	}
	if strings.Contains(joined, "has returned the following result:\n\nok 2") {
		t.Errorf("the awaited run was reported too:\n%s", joined)
	}
	docs, _ := h.store.ExecState(ctx, ref)
	for k := range docs {
		if strings.HasPrefix(k, "subagent_held/") {
			t.Errorf("held report record left after the call: %s", k)
		}
	}
}

// TestResumableByName: calling a resumable subagent by its name says how to start it.
func TestResumableByName(t *testing.T) {
	reg := subagentRegistry(weft.ToolEntry{Resumable: &weft.Resumable{Enabled: true, ReceivesMessages: "side_a"}}, nil)
	h := newHarness(t, reg, `
- match: {agent: assistant}
  tool_calls: [{name: review, arguments: {message: "Draft"}}]
- match: {agent: assistant}
  text: ok
`)
	th, _ := h.run("assistant", "Review it.", nil)
	got := h.transcript(th.ID)
	if len(got) < 3 || !strings.Contains(got[2], `"review" must be started with subagent_create.`) {
		t.Errorf("transcript:\n%s", strings.Join(got, "\n"))
	}
}

// TestToolSetKeptPerPrompt: a prompt's tools are resolved once and kept for every scope of it, and
// what one thread adds to them (notify_parent, for a child that reports explicitly) stays its own:
// the same prompt run at the top level before and after offers and runs only its own tools.
func TestToolSetKeptPerPrompt(t *testing.T) {
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fast", Provider: "test"})
	reg.AddTool(&weft.Tool{Name: "note", Description: "Take a note.", Execute: weft.ToolFunc(func(context.Context, weft.State, json.RawMessage) (weft.ToolResult, error) {
		return weft.Success("noted"), nil
	})})
	reg.AddTool(&weft.Tool{Name: "done", Description: "End the work.", Args: schema.Object(schema.Field("summary", schema.String())),
		Execute: weft.ToolFunc(func(context.Context, weft.State, json.RawMessage) (weft.ToolResult, error) {
			return weft.Success("ok"), nil
		})})
	reg.AddPrompt(&weft.Prompt{Name: "worker", ToolDescription: "Works.", Model: "fast", IncludeChat: true, Prompt: weft.Text("You work."),
		Tools: []weft.ToolEntry{{Name: "note"}, {Name: "done"}}})
	reg.AddPrompt(&weft.Prompt{Name: "client", ToolDescription: "Asks.", Model: "fast", IncludeChat: true, Prompt: weft.Text("You ask.")})
	reg.AddAgent(&weft.Agent{Name: "worker", Type: weft.DualAI, MaxSessionTurns: 3, ExposeAsTool: true, ToolDescription: "Does the work.",
		SideA: weft.AgentSide{Prompt: "worker", SessionStop: &weft.SessionTool{Name: "done", MessageProperty: "summary"}},
		SideB: &weft.AgentSide{Prompt: "client"}})
	reg.AddPrompt(&weft.Prompt{Name: "boss", ToolDescription: "Delegates.", Model: "fast", Prompt: weft.Text("You delegate."),
		Tools: []weft.ToolEntry{{Name: "worker", Kind: weft.EntryAgent, Resumable: &weft.Resumable{Enabled: true, ReceivesMessages: "side_a", ParentCommunication: "explicit"}}}})
	reg.AddAgent(&weft.Agent{Name: "boss", SideA: weft.AgentSide{Prompt: "boss"}})
	var mu sync.Mutex
	var workerTools, workerResults []string
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if req.Prompt == "worker" {
			var names []string
			for _, s := range req.Tools {
				names = append(names, s.Name)
			}
			mu.Lock()
			if last.Role != weft.RoleTool {
				workerTools = append(workerTools, strings.Join(names, ","))
				mu.Unlock()
				return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "n1", Name: "notify_parent", Arguments: `{"message":"halfway"}`}}}, nil
			}
			workerResults = append(workerResults, string(last.ToolStatus)+": "+last.Content)
			mu.Unlock()
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "d1", Name: "done", Arguments: `{"summary":"worked"}`}}}, nil
		}
		if last.Content == "Go." {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "subagent_create", Arguments: `{"agent":"worker","message":"Work."}`}}}, nil
		}
		return &weft.Response{Text: "delegated"}, nil
	})
	h := newHarnessWith(t, reg, model)
	for _, agent := range []string{"worker", "boss", "worker"} {
		if _, res := h.run(agent, "Go.", nil); !res.Last().Reason.OK() {
			t.Fatalf("%s: %+v", agent, res.Stops)
		}
	}
	h.eng.Wait()
	want := []string{"note,done", "note,done,notify_parent", "note,done"}
	if strings.Join(workerTools, " | ") != strings.Join(want, " | ") {
		t.Errorf("worker's tools by run: %q, want %q", workerTools, want)
	}
	// notify_parent runs only where it is offered.
	notOffered := `error: Failed to execute tool: Tool "notify_parent" is not available for this prompt. Available tools: note, done`
	if want := []string{notOffered, "success: Message sent to parent.", notOffered}; strings.Join(workerResults, "\n") != strings.Join(want, "\n") {
		t.Errorf("notify_parent's results by run: %q, want %q", workerResults, want)
	}
}

// TestResumableChildStopStreamed: when a resumable child's run stops, blocking or in the
// background, its parent's stream gets a subagent event with the child's status after it, as it
// does when a non-resumable child ends, so a client's tree of children follows it.
func TestResumableChildStopStreamed(t *testing.T) {
	for _, blocking := range []bool{true, false} {
		t.Run(fmt.Sprintf("blocking=%v", blocking), func(t *testing.T) {
			reg := subagentRegistry(weft.ToolEntry{Blocking: &blocking, Resumable: &weft.Resumable{Enabled: true, ReceivesMessages: "side_a"}}, nil)
			model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
				last := req.Messages[len(req.Messages)-1]
				switch {
				case req.Prompt == "reviewer":
					return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "a1", Name: "approve", Arguments: `{"summary":"Looks good."}`}}}, nil
				case last.Role == weft.RoleUser && last.Content == "Review it.":
					return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "subagent_create", Arguments: `{"agent":"review","message":"Draft"}`}}}, nil
				}
				return &weft.Response{Text: "ok"}, nil
			})
			h := newHarness(t, reg, "- text: unused\n")
			eng, err := engine.New(engine.Options{Registry: reg, Store: h.store, Override: model,
				OnEvent: func(e engine.Event) { h.evMu.Lock(); h.events = append(h.events, e); h.evMu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			h.eng = eng
			th, _ := h.run("assistant", "Review it.", nil)
			h.eng.Wait()
			child := childOf(t, h, th.ID)
			h.evMu.Lock()
			defer h.evMu.Unlock()
			var got []string
			for _, ev := range h.events {
				if f, ok := ev.Data.(engine.Fields); ok && ev.Type == "subagent" && ev.ThreadID == th.ID && f["reference"] == child.ID {
					got = append(got, fmt.Sprint(f["status"], ": ", f["status_text"]))
				}
			}
			want := []string{"running: created", "idle: Looks good."}
			if !slices.Equal(got, want) {
				t.Errorf("the parent's subagent events: %q, want %q", got, want)
			}
		})
	}
}
