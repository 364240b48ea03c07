package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/schema"
)

// envTool returns a tool that reports the value of a variable it declares.
func envTool(name, variable string, required bool) *weft.Tool {
	return &weft.Tool{Name: name, Description: "d", Variables: []weft.VariableDefinition{{Name: variable, Type: weft.VarText, Required: required, Description: "v"}},
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			v, err := st.Env(ctx, variable)
			if err != nil {
				return weft.ToolResult{}, err
			}
			return weft.Success(variable + "=" + v), nil
		})}
}

func TestS002_9_3_required_tenvs_fail_creation(t *testing.T) {
	tenvTool := &weft.Tool{Name: "search", Description: "d", Execute: weft.ToolFunc(nil),
		Tenvs: schema.Object(schema.Field("VECTOR_STORE_ID", schema.String()), schema.OptionalField("REGION", schema.String()))}
	reg := registry([]*weft.Tool{tenvTool}, func(p *weft.Prompt) {
		p.Variables = []weft.VariableDefinition{{Name: "LANGUAGE", Type: weft.VarText, Required: true, Description: "d"}}
	})
	h := newHarness(t, reg, `[]`)
	ctx := context.Background()
	_, err := h.eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	var mv *engine.MissingVariablesError
	if !errors.As(err, &mv) || err.Error() != "thread creation failed: missing required variables: LANGUAGE (prompt assistant), VECTOR_STORE_ID (tool search)" {
		t.Fatalf("got %v", err)
	}
	if weft.ErrorCode(err) != weft.EMissingVariables {
		t.Errorf("code %s", weft.ErrorCode(err))
	}
	if _, n, _ := h.store.Threads(ctx, weft.ThreadQuery{}); n != 0 {
		t.Errorf("nothing is stored when creation fails; %d threads", n)
	}
	if _, err := h.eng.CreateThread(ctx, engine.NewThread{Agent: "assistant", Env: map[string]string{"LANGUAGE": "en", "VECTOR_STORE_ID": "vs1"}}); err != nil {
		t.Errorf("with the values: %v", err)
	}
	// Values from lower layers count: the prompt's own env and the tool entry's env.
	reg2 := registry([]*weft.Tool{tenvTool}, func(p *weft.Prompt) {
		p.Env = map[string]string{"VECTOR_STORE_ID": "vs_default"}
	})
	if _, err := newHarness(t, reg2, `[]`).eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"}); err != nil {
		t.Errorf("prompt env satisfies the requirement: %v", err)
	}
}

func TestS002_9_4_tenv_merge_order(t *testing.T) {
	// prompt → agent → thread, later wins (seed 002 §9.4); a tool entry's env sits between prompt
	// and agent (S000_3_2_tool_env_defaults).
	cases := []struct {
		name                      string
		prompt, entry, agent, thr string
		want                      string
	}{
		{"S002_9_4_tenv_merge_order/prompt_only", "p", "", "", "", "REGION=p"},
		{"S000_3_2_tool_env_defaults/entry_over_prompt", "p", "e", "", "", "REGION=e"},
		{"S002_9_4_tenv_merge_order/agent_over_prompt", "p", "e", "a", "", "REGION=a"},
		{"S002_9_4_tenv_merge_order/thread_wins", "p", "e", "a", "t", "REGION=t"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := weft.NewRegistry()
			reg.AddModel(&weft.Model{Name: "fast", Provider: "test"})
			reg.AddTool(envTool("where", "REGION", true))
			p := &weft.Prompt{Name: "assistant", ToolDescription: "d", Model: "fast", Prompt: weft.Text("x"), Tools: []weft.ToolEntry{{Name: "where"}}}
			if tc.prompt != "" {
				p.Env = map[string]string{"REGION": tc.prompt}
			}
			if tc.entry != "" {
				p.Tools[0].Env = map[string]string{"REGION": tc.entry}
			}
			reg.AddPrompt(p)
			a := &weft.Agent{Name: "assistant", SideA: weft.AgentSide{Prompt: "assistant"}}
			if tc.agent != "" {
				a.Env = map[string]string{"REGION": tc.agent}
			}
			reg.AddAgent(a)
			h := newHarness(t, reg, "- tool_calls: [{name: where}]\n- text: ok\n")
			var env map[string]string
			if tc.thr != "" {
				env = map[string]string{"REGION": tc.thr}
			}
			th, _ := h.run("assistant", "go", env)
			if got := h.transcript(th.ID)[2]; got != "tool:where: "+tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// subRegistry: an assistant offering the sub-prompt "summarize" (with a tool of its own).
func subRegistry(entry weft.ToolEntry, toolAnswer string) *weft.Registry {
	reg := registry(nil, func(p *weft.Prompt) { p.Tools = []weft.ToolEntry{entry} })
	var calls []string
	reg.AddTool(recorder("count_words", &calls, toolAnswer))
	reg.AddPrompt(&weft.Prompt{Name: "summarize", ToolDescription: "Summarize a text.", Model: "fast", Prompt: weft.Text("Summarize briefly."),
		RequiredSchema: schema.Object(schema.Field("text", schema.Describe(schema.String(), "The text")), schema.OptionalField("style", schema.Enum("short", "long"))),
		Tools:          []weft.ToolEntry{{Name: "count_words"}}})
	return reg
}

func TestS000_3_3_subprompt_result_string(t *testing.T) {
	script := `
- match: {depth: 0}
  tool_calls: [{name: summarize, arguments: {text: "a b c d"}}]
- match: {depth: 1, prompt: summarize}
  expect: {system_contains: Summarize briefly, roles: [user], last_contains: '"text": "a b c d"'}
  tool_calls: [{name: count_words, arguments: {text: "a b c d"}}]
- match: {depth: 1}
  expect: {last_role: tool}
  text: Four words about letters.
- match: {depth: 0}
  expect: {last_role: tool}
  text: done
`
	falseP := func() *bool { b := false; return &b }
	cases := []struct {
		name  string
		entry weft.ToolEntry
		want  string
	}{
		{"all", weft.ToolEntry{Name: "summarize"},
			"Four words about letters.\n\nTool Executions:\nTool Call: count_words({\"text\":\"a b c d\"})\nTool Response: 4"},
		{"text_only", weft.ToolEntry{Name: "summarize", IncludeToolCalls: falseP()}, "Four words about letters."},
		{"calls_only", weft.ToolEntry{Name: "summarize", IncludeTextResponse: falseP()},
			"Tool Executions:\nTool Call: count_words({\"text\":\"a b c d\"})\nTool Response: 4"},
		{"nothing", weft.ToolEntry{Name: "summarize", IncludeTextResponse: falseP(), IncludeToolCalls: falseP()}, "Prompt executed successfully"},
	}
	for _, tc := range cases {
		t.Run("S000_3_3_subprompt_result_string/"+tc.name, func(t *testing.T) {
			h := newHarness(t, subRegistry(tc.entry, "4"), script)
			th, res := h.run("assistant", "summarize please", nil)
			tr := h.transcript(th.ID)
			if res.Last().Reason != weft.StopOnResponse {
				t.Fatalf("stop %+v\n%s", res.Last(), strings.Join(tr, "\n"))
			}
			// Nested rows are stored at depth 1; the caller sees only the result string.
			wantTranscript(t, tr,
				"user: summarize please",
				`assistant:  [summarize {"text":"a b c d"}]`,
				">user: Arguments:\n{\n  \"text\": \"a b c d\"\n}",
				`>assistant:  [count_words {"text":"a b c d"}]`,
				">tool:count_words: 4",
				">assistant: Four words about letters.",
				"tool:summarize: "+tc.want,
				"assistant: done")
			msgs, _ := h.store.Messages(context.Background(), th.ID, weft.MessageQuery{Limit: 100, MaxDepth: 5})
			if msgs[2].ParentID != msgs[6].ID {
				t.Errorf("nested rows hang under the caller's tool message: %s vs %s", msgs[2].ParentID, msgs[6].ID)
			}
		})
	}
}

func TestS000_3_3_init_properties(t *testing.T) {
	reg := subRegistry(weft.ToolEntry{Name: "summarize", InitUserMessageProperty: "text", InitAttachmentsProperty: "style"}, "4")
	h := newHarness(t, reg, `
- match: {depth: 0}
  tool_calls: [{name: summarize, arguments: {text: "The quick brown fox."}}]
- match: {depth: 1}
  expect: {roles: [user], last_contains: The quick brown fox., message_count: 1}
  text: A fox.
- match: {depth: 0}
  text: done
`)
	th, _ := h.run("assistant", "go", nil)
	if tr := h.transcript(th.ID); tr[2] != ">user: The quick brown fox." || tr[4] != "tool:summarize: A fox." {
		t.Errorf("transcript:\n%s", strings.Join(tr, "\n"))
	}
}

func TestS000_5_2_validate_inputs(t *testing.T) {
	h := newHarness(t, subRegistry(weft.ToolEntry{Name: "summarize"}, "4"), `
- match: {depth: 0}
  expect: {tools: [summarize]}
  tool_calls: [{name: summarize, arguments: {style: tiny}}]
- match: {depth: 0}
  text: done
`)
	th, _ := h.run("assistant", "go", nil)
	if got := h.transcript(th.ID)[2]; got != `tool:summarize: Failed to execute tool: Tool argument validation failed: (root): missing required property "text"; /style: must be one of "short", "long"` {
		t.Errorf("got %s", got)
	}
}

func TestToolChoice(t *testing.T) {
	var calls []string
	t.Run("S000_4_2_required_tool_call", func(t *testing.T) {
		reg := registry([]*weft.Tool{recorder("lookup", &calls, "found")}, func(p *weft.Prompt) { p.ToolChoice = weft.ToolChoiceRequired })
		h := newHarness(t, reg, `
- expect: {tool_choice: required, tools: [lookup]}
  text: I refuse to call tools.
- expect: {tool_choice: required, system_contains: "concise helper", last_contains: "You must respond by calling one of the available tools."}
  tool_calls: [{name: lookup}]
- expect: {tool_choice: auto, last_role: tool}
  text: Found it.
`)
		th, res := h.run("assistant", "go", nil)
		if res.Last().Reason != weft.StopOnResponse {
			t.Fatalf("%+v", res.Last())
		}
		// The discarded reply is not stored, but its attempt is logged.
		wantTranscript(t, h.transcript(th.ID), "user: go", "assistant:  [lookup {}]", "tool:lookup: found", "assistant: Found it.")
		logs, _ := h.store.Logs(context.Background(), th.ID, weft.LogQuery{Limit: 100})
		if len(logs) != 3 || !strings.Contains(logs[0].Error, "discarded") {
			t.Errorf("logs %+v", logs)
		}
	})
	t.Run("S000_4_2_required_tool_call/gives_up", func(t *testing.T) {
		reg := registry([]*weft.Tool{recorder("lookup", &calls, "found")}, func(p *weft.Prompt) { p.ToolChoice = weft.ToolChoiceRequired })
		h := newHarness(t, reg, "- text: no\n- text: no\n- text: no\n")
		_, res := h.run("assistant", "go", nil)
		if res.Last().Reason != weft.StopStepError || res.Last().Error != `model did not call a tool although toolChoice is "required" (3 attempts)` {
			t.Errorf("%+v", res.Last())
		}
	})
	t.Run("S000_4_2_none_sends_no_tools", func(t *testing.T) {
		reg := registry([]*weft.Tool{recorder("lookup", &calls, "found")}, func(p *weft.Prompt) { p.ToolChoice = weft.ToolChoiceNone })
		h := newHarness(t, reg, `
- expect: {tools: [], tool_choice: none}
  tool_calls: [{name: lookup}]
- expect: {tools: []}
  text: ok
`)
		th, _ := h.run("assistant", "go", nil)
		if got := h.transcript(th.ID)[2]; got != `tool:lookup: Failed to execute tool: Tool "lookup" is not available for this prompt. Available tools: none` {
			t.Errorf("got %s", got)
		}
	})
}

func TestS000_6_reasoning(t *testing.T) {
	var reqs []*weft.Request
	for _, tc := range []struct {
		name      string
		reasoning weft.Reasoning
		stored    string
		replayed  bool
	}{
		{"kept", weft.Reasoning{Effort: "high", MaxTokens: 2048}, "thinking hard", false},
		{"excluded", weft.Reasoning{Effort: "low", Exclude: true}, "", false},
		{"included", weft.Reasoning{Effort: "medium", Include: true}, "thinking hard", true},
	} {
		t.Run("S000_6_reasoning/"+tc.name, func(t *testing.T) {
			reqs = nil
			r := tc.reasoning
			reg := registry(nil, func(p *weft.Prompt) { p.Reasoning = &r; p.IncludeChat = true })
			h := newHarness(t, reg, "- {text: first, reasoning: thinking hard}\n- {text: second}\n")
			h.eng, _ = engine.New(engine.Options{Registry: reg, Store: h.store, Override: h.script, Clock: h.script.Clock(),
				OnRequest: func(req *weft.Request) { c := *req; c.Messages = slices.Clone(req.Messages); reqs = append(reqs, &c) }})
			th, _ := h.run("assistant", "one", nil)
			h.send(th.ID, "two")
			msgs, _ := h.store.Messages(context.Background(), th.ID, weft.MessageQuery{Limit: 10})
			if msgs[1].Reasoning != tc.stored {
				t.Errorf("stored reasoning %q", msgs[1].Reasoning)
			}
			if reqs[0].Reasoning == nil || reqs[0].Reasoning.Effort != r.Effort || reqs[0].Reasoning.MaxTokens != r.MaxTokens {
				t.Errorf("reasoning not sent: %+v", reqs[0].Reasoning)
			}
			_, replayed := reqs[1].Messages[2].Metadata["reasoning"]
			if replayed != tc.replayed {
				t.Errorf("replayed=%v in %+v", replayed, reqs[1].Messages[2])
			}
		})
	}
}

func TestS000_7_recent_image_threshold(t *testing.T) {
	var reqs []*weft.Request
	reg := registry(nil, func(p *weft.Prompt) { p.IncludeChat = true; p.RecentImageThreshold = 2 })
	h := newHarness(t, reg, "- expect: {images: 1}\n  text: nice cat\n- expect: {images: 0}\n  text: noted\n")
	h.eng, _ = engine.New(engine.Options{Registry: reg, Store: h.store, Override: h.script, Clock: h.script.Clock(),
		OnRequest: func(req *weft.Request) { c := *req; c.Messages = slices.Clone(req.Messages); reqs = append(reqs, &c) }})
	ctx := context.Background()
	th, _ := h.eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	png := pngBytes(100)
	h.eng.Send(ctx, th.ID, weft.NewMessage{Content: "my cat", Attachments: []weft.ToolAttachment{{Name: "cat.png", MimeType: "image/png", Data: png, Width: 4, Height: 3}}})
	h.eng.Run(ctx, th.ID)
	h.send(th.ID, "and a dog")
	_ = h.send
	first, second := reqs[0].Messages[1], reqs[1].Messages
	if len(first.Parts) != 2 || first.Parts[1].Type != weft.PartImage || !strings.HasPrefix(first.Parts[1].URL, "data:image/png;base64,") {
		t.Errorf("recent image sent as a part: %+v", first)
	}
	// Three rows later the image is outside the last 2 messages: a text line instead.
	if second[1].Content != "my cat\n[Image: cat.png (4x3)]" || len(second[1].Parts) != 0 {
		t.Errorf("old image: %+v", second[1])
	}
}

func TestS004_provider_execution(t *testing.T) {
	web := &weft.Tool{Name: "web_search", Description: "Search the web.", ExecutionMode: weft.ExecProvider, ExecutionProvider: "test"}
	other := &weft.Tool{Name: "code_interpreter", Description: "Run code.", ExecutionMode: weft.ExecProvider, ExecutionProvider: "openai"}
	h := newHarness(t, registry([]*weft.Tool{web, other}, nil), `
- expect: {tools: [web_search]}
  tool_calls: [{name: web_search, arguments: {q: go}}]
- text: ok
`)
	th, _ := h.run("assistant", "go", nil)
	if got := h.transcript(th.ID)[2]; got != `tool:web_search: Failed to execute tool: Tool "web_search" is executed by the provider "test" and cannot run locally.` {
		t.Errorf("got %s", got)
	}
}

func TestS000_8_hook_scoping(t *testing.T) {
	var seen []string
	hook := func(id string) *weft.Hook {
		return &weft.Hook{ID: id, Point: weft.HookAfterSystemMessage, Fn: weft.SystemMessageFunc(func(ctx context.Context, st weft.State, text string) (string, error) {
			seen = append(seen, id)
			return text + " [" + id + "]", nil
		})}
	}
	for _, tc := range []struct {
		name   string
		hooks  []string
		want   string
		system string
	}{
		{"agent_hooks_when_omitted", nil, "agent_hook", "You are a concise helper. [agent_hook]"},
		{"prompt_hooks_replace", []string{"prompt_hook"}, "prompt_hook", "You are a concise helper. [prompt_hook]"},
		{"empty_means_none", []string{}, "", "You are a concise helper."},
	} {
		t.Run("S000_8_hook_scoping/"+tc.name, func(t *testing.T) {
			seen = nil
			reg := registry(nil, func(p *weft.Prompt) { p.Hooks = tc.hooks })
			reg.AddHook(hook("agent_hook"))
			reg.AddHook(hook("prompt_hook"))
			a, _ := reg.Agent("assistant")
			a.Hooks = []string{"agent_hook"}
			h := newHarness(t, reg, "- expect: {system_contains: '"+tc.system+"'}\n  text: ok\n")
			h.run("assistant", "go", nil)
			if strings.Join(seen, ",") != tc.want {
				t.Errorf("hooks run: %v", seen)
			}
		})
	}
}

func TestEmptyReplyAndCaps(t *testing.T) {
	t.Run("empty_reply", func(t *testing.T) {
		h := newHarness(t, registry(nil, nil), "- text: '  '\n- expect: {last_contains: Your response was empty}\n  text: Sorry, here it is.\n")
		th, res := h.run("assistant", "go", nil)
		if res.Last().Reason != weft.StopOnResponse {
			t.Fatalf("%+v", res.Last())
		}
		tr := h.transcript(th.ID)
		if !strings.HasPrefix(tr[1], "assistant:    [invalid_assistant_response {}]") || tr[2] != "tool:invalid_assistant_response: Failed to execute tool: Your response was empty. Reply with text or call a tool." {
			t.Errorf("transcript:\n%s", strings.Join(tr, "\n"))
		}
	})
	t.Run("max_side_steps", func(t *testing.T) {
		var calls []string
		reg := registry([]*weft.Tool{recorder("again", &calls, "more")}, nil)
		a, _ := reg.Agent("assistant")
		a.SideA.MaxSteps = 2
		h := newHarness(t, reg, "- tool_calls: [{name: again}]\n- tool_calls: [{name: again}]\n")
		_, res := h.run("assistant", "go", nil)
		if res.Last().Reason != weft.StopMaxSideSteps || len(calls) != 2 {
			t.Errorf("%+v calls=%d", res.Last(), len(calls))
		}
	})
	t.Run("repeated_tool_error", func(t *testing.T) {
		var calls []string
		bad := &weft.Tool{Name: "flaky", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			calls = append(calls, "x")
			return weft.Failure("service unavailable (request 12345)"), nil
		})}
		h := newHarness(t, registry([]*weft.Tool{bad}, nil), "options: {on_exhausted: repeat_last}\nresponses:\n- tool_calls: [{name: flaky}]\n")
		th, res := h.run("assistant", "go", nil)
		if res.Last().Reason != weft.StopRepeatedError || len(calls) != 8 {
			t.Errorf("%+v calls=%d", res.Last(), len(calls))
		}
		tr := h.transcript(th.ID)
		if !strings.HasPrefix(tr[len(tr)-1], "assistant: I stopped because the same tool error repeated 8 times") {
			t.Errorf("last %s", tr[len(tr)-1])
		}
	})
}

func TestToolBindings(t *testing.T) {
	type args struct {
		Location string `json:"location"`
		Unit     string `json:"unit" jsonschema:"enum=celsius|fahrenheit"`
	}
	var got []args
	tool := weft.NewTool("get_weather", "Weather.", func(ctx context.Context, st weft.State, a args) (weft.ToolResult, error) {
		got = append(got, a)
		return weft.Success("sunny"), nil
	})
	reg := registry([]*weft.Tool{tool}, func(p *weft.Prompt) {
		p.Tools = []weft.ToolEntry{{Name: "get_weather", Bindings: map[string]string{"unit": "preferred_unit"}}}
		p.RequiredSchema = schema.Object(schema.OptionalField("preferred_unit", schema.WithDefault(schema.String(), "fahrenheit")))
	})
	var offered []string
	h := newHarness(t, reg, "- tool_calls: [{name: get_weather, arguments: {location: Paris}}]\n- text: ok\n")
	h.eng, _ = engine.New(engine.Options{Registry: reg, Store: h.store, Override: h.script, Clock: h.script.Clock(),
		OnRequest: func(req *weft.Request) {
			for _, ts := range req.Tools {
				offered = append(offered, strings.Join(ts.Parameters.PropertyOrder, ","))
			}
		}})
	th, err := h.eng.CreateThread(context.Background(), engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	h.send(th.ID, "weather?")
	if len(offered) == 0 || offered[0] != "location" {
		t.Errorf("the bound parameter is not offered: %v", offered)
	}
	if len(got) != 1 || got[0] != (args{Location: "Paris", Unit: "fahrenheit"}) {
		t.Errorf("the tool got %+v", got)
	}
}

func TestReasoningBlocksReplay(t *testing.T) {
	const blocks = `[{"type":"thinking","thinking":"Let me look it up.","signature":"sig-abc123=="}]`
	var calls []string
	reg := registry([]*weft.Tool{recorder("lookup", &calls, "found")}, func(p *weft.Prompt) {
		p.IncludeChat = true
		p.Reasoning = &weft.Reasoning{MaxTokens: 2048}
	})
	var seen []string
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		var got []string
		for _, m := range req.Messages {
			if raw, ok := m.Metadata["reasoning_blocks"].(json.RawMessage); ok {
				got = append(got, string(raw))
			}
		}
		seen = append(seen, strings.Join(got, "|"))
		switch last := req.Messages[len(req.Messages)-1]; {
		case last.Role == weft.RoleUser:
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "t1", Name: "lookup", Arguments: "{}"}}, ReasoningBlocks: json.RawMessage(blocks)}, nil
		default:
			return &weft.Response{Text: "done"}, nil
		}
	})
	h := newHarness(t, reg, "[]")
	h.eng, _ = engine.New(engine.Options{Registry: reg, Store: h.store, Override: model})
	th, _ := h.eng.CreateThread(context.Background(), engine.NewThread{Agent: "assistant"})
	h.eng.Send(context.Background(), th.ID, weft.NewMessage{Content: "look it up"})
	h.eng.Run(context.Background(), th.ID)
	// Second call of the turn: the blocks come back verbatim (as a JSON value of the same meaning).
	var want, got any
	json.Unmarshal([]byte(blocks), &want)
	if len(seen) != 2 || json.Unmarshal([]byte(seen[1]), &got) != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replayed: %q", seen)
	}
	// A later turn without reasoning.include does not send them again.
	h.eng.Send(context.Background(), th.ID, weft.NewMessage{Content: "and again"})
	h.eng.Run(context.Background(), th.ID)
	if seen[2] != "" {
		t.Errorf("earlier turn's blocks replayed without include: %q", seen[2])
	}
}

// TestProviderExecutedResults: a reply carrying a provider-executed call and its result stores
// the result as the call's tool message (metadata provider_executed, raw kept), never runs it
// locally, runs the reply's local call, and replays the raw result only to the same provider.
func TestProviderExecutedResults(t *testing.T) {
	web := &weft.Tool{Name: "web_search", Description: "Search the web.", ExecutionMode: weft.ExecProvider, ExecutionProvider: "test"}
	var calls []string
	reg := registry([]*weft.Tool{web, recorder("lookup", &calls, "found")}, nil)
	const raw = `[{"type":"server_tool_use","id":"srv_1"},{"type":"web_search_tool_result","tool_use_id":"srv_1"}]`
	var replayed []string
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		var got []string
		for _, m := range req.Messages {
			if r, ok := m.Metadata["provider_raw"].(json.RawMessage); ok && m.Metadata["provider_executed"] == true {
				got = append(got, m.ToolCallID+"="+string(r))
			}
		}
		replayed = append(replayed, strings.Join(got, "|"))
		if len(replayed) == 1 {
			return &weft.Response{Text: "Searching.", ToolCalls: []weft.ToolCall{
				{ID: "srv_1", Name: "web_search", Arguments: `{"query":"go 1.26"}`},
				{ID: "t1", Name: "lookup", Arguments: "{}"},
			}, ProviderResults: []weft.ProviderToolResult{{CallID: "srv_1", Status: weft.ToolSuccess, Content: "Go 1.26 released — go.dev", Raw: json.RawMessage(raw)}}}, nil
		}
		return &weft.Response{Text: "Go 1.26 is out."}, nil
	})
	h := newHarnessWith(t, reg, model)
	th, res := h.run("assistant", "news?", nil)
	if res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("stop: %+v", res.Last())
	}
	tr := h.transcript(th.ID)
	want := []string{"tool:web_search: Go 1.26 released — go.dev", "tool:lookup: found", "assistant: Go 1.26 is out."}
	if len(tr) != 5 || strings.Join(tr[2:], "\n") != strings.Join(want, "\n") {
		t.Fatalf("transcript:\n%s", strings.Join(tr, "\n"))
	}
	if len(calls) != 1 {
		t.Errorf("local calls: %v", calls)
	}
	var stored weft.Message
	msgs, _ := h.store.Messages(context.Background(), th.ID, weft.MessageQuery{})
	for _, m := range msgs {
		if m.Name == "web_search" {
			stored = m
		}
	}
	if stored.Metadata["provider_executed"] != true || stored.Metadata["provider"] != "test" || stored.Metadata["provider_raw"] == nil {
		t.Errorf("metadata: %v", stored.Metadata)
	}
	var want2, got2 any
	json.Unmarshal([]byte(raw), &want2)
	if len(replayed) != 2 || !strings.HasPrefix(replayed[1], "srv_1=") || json.Unmarshal([]byte(strings.TrimPrefix(replayed[1], "srv_1=")), &got2) != nil || fmt.Sprint(got2) != fmt.Sprint(want2) {
		t.Errorf("replayed: %q", replayed)
	}
	recs, _ := h.store.ToolCalls(context.Background(), th.ID, weft.CallPending, weft.CallRunning)
	if len(recs) != 0 {
		t.Errorf("unfinished call records: %+v", recs)
	}
}

// TestStrictToolsNullIsAbsent: with the model option strictTools, a null the model returns for an
// optional property counts as absent (definitions.md §5.5); without it the null is a schema error.
func TestStrictToolsNullIsAbsent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		strict bool
		want   string
	}{
		{"strict", true, "tool:lookup: found"},
		{"not_strict", false, "tool:lookup: Failed to execute tool: Tool argument validation failed: /limit: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			tool := recorder("lookup", &calls, "found")
			tool.Args = schema.Object(schema.Field("q", schema.String()), schema.OptionalField("limit", schema.Integer()))
			reg := registry([]*weft.Tool{tool}, nil)
			if tc.strict {
				m, _ := reg.Model("fast")
				m.ProviderOptions = map[string]any{"strictTools": true}
			}
			h := newHarness(t, reg, `
- tool_calls: [{name: lookup, arguments: {q: go, limit: null}}]
- text: ok
`)
			th, _ := h.run("assistant", "go", nil)
			if got := h.transcript(th.ID)[2]; !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %s", got)
			}
			if tc.strict && (len(calls) != 1 || calls[0] != `lookup {"q":"go"}`) {
				t.Errorf("tool saw %v", calls)
			}
		})
	}
}

// TestFallbackDropsProviderBlocks: verbatim provider blocks (reasoning blocks, provider-executed
// results) go back only to the provider that produced them; a fallback model of another provider
// receives the same conversation without them.
func TestFallbackDropsProviderBlocks(t *testing.T) {
	var calls []string
	reg := registry([]*weft.Tool{recorder("lookup", &calls, "found")}, nil)
	m, _ := reg.Model("fast")
	m.Provider, m.Fallbacks = "anthropic", []string{"backup"}
	m.Retry = weft.RetryPolicy{Attempts: 1}
	reg.AddModel(&weft.Model{Name: "backup", Provider: "google", Model: "b"})
	const blocks = `[{"type":"thinking","thinking":"hm","signature":"sig=="}]`
	alphaCalls := 0
	var betaSaw []string
	alpha := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		alphaCalls++
		if alphaCalls == 1 {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "t1", Name: "lookup", Arguments: "{}"}}, ReasoningBlocks: json.RawMessage(blocks)}, nil
		}
		return nil, &weft.ProviderError{Type: weft.ErrServer, Status: 500, Message: "down"}
	})
	beta := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		for _, m := range req.Messages {
			for k := range m.Metadata {
				betaSaw = append(betaSaw, k)
			}
		}
		return &weft.Response{Text: "done"}, nil
	})
	h := newHarness(t, reg, "[]")
	h.eng, _ = engine.New(engine.Options{Registry: reg, Store: h.store, Providers: func(m *weft.Model) (weft.Provider, error) {
		if m.Provider == "anthropic" {
			return alpha, nil
		}
		return beta, nil
	}})
	th, res := h.run("assistant", "go", map[string]string{"ANTHROPIC_API_KEY": "k1", "GOOGLE_API_KEY": "k2"})
	if res.Last().Reason != weft.StopOnResponse || alphaCalls != 2 {
		t.Fatalf("%+v, alpha calls %d", res.Last(), alphaCalls)
	}
	if len(betaSaw) != 0 {
		t.Errorf("fallback of another provider received %v", betaSaw)
	}
	if tr := h.transcript(th.ID); tr[len(tr)-1] != "assistant: done" {
		t.Errorf("transcript: %q", tr)
	}
}

// TestSubPromptRowsEmittedOnce: every row of a sub-prompt's nested run (its init message, its
// call and result, its answer) has one message event, as the caller's rows do: on the live stream,
// and in the thread's log when the run records its events.
func TestSubPromptRowsEmittedOnce(t *testing.T) {
	for _, record := range []bool{false, true} {
		t.Run(fmt.Sprintf("record=%v", record), func(t *testing.T) {
			reg := subRegistry(weft.ToolEntry{Name: "summarize", InitUserMessageProperty: "text"}, "4")
			h := newHarnessOpts(t, reg, `
- match: {depth: 0}
  tool_calls: [{name: summarize, arguments: {text: "a b c d"}}]
- match: {depth: 1}
  tool_calls: [{name: count_words, arguments: {text: "a b c d"}}]
- match: {depth: 1}
  text: Four words.
- match: {depth: 0}
  text: done
`, record)
			th, res := h.run("assistant", "go", nil)
			if res.Last().Reason != weft.StopOnResponse {
				t.Fatalf("%+v", res.Stops)
			}
			ctx := context.Background()
			msgs, _ := h.store.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1, MaxDepth: 5})
			if len(msgs) != 8 {
				t.Fatalf("%d messages: %+v", len(msgs), msgs)
			}
			live := map[string]int{}
			h.evMu.Lock()
			for _, ev := range h.events {
				if d, ok := ev.Data.(engine.MessageData); ok && ev.Type == "message" {
					live[d.Message.ID]++
				}
			}
			h.evMu.Unlock()
			var logged map[string]int
			if record {
				recs, err := h.store.Events(ctx, th.ID, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				logged = messageEvents(t, recs)
			}
			for _, m := range msgs {
				if live[m.ID] != 1 || record && logged[m.ID] != 1 {
					t.Errorf("message %d (depth %d, %s %q): %d live message events, %d in the log", m.Seq, m.Depth, m.Role, m.Content, live[m.ID], logged[m.ID])
				}
			}
		})
	}
}
