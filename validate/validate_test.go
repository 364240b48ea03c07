package validate_test

import (
	"context"
	"encoding/json"
	"github.com/weft-agents/weft/validate"
	"reflect"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// base returns a registry holding one valid model, tool and prompt that tests mutate.
func base() *weft.Registry {
	r := weft.NewRegistry()
	r.AddModel(&weft.Model{Name: "fast", Provider: "openai", Model: "gpt-4o-mini"})
	r.AddTool(weft.NewTool("search", "Search the docs.", func(ctx context.Context, st weft.State, a struct {
		Query string `json:"query" jsonschema:"description=Search query"`
	}) (weft.ToolResult, error) {
		return weft.Success(a.Query), nil
	}))
	return r
}

func prompt(mod func(p *weft.Prompt)) *weft.Prompt {
	p := &weft.Prompt{Name: "p", ToolDescription: "A prompt.", Model: "fast", Prompt: weft.Text("Be brief.")}
	if mod != nil {
		mod(p)
	}
	return p
}

// want asserts that diags contain exactly one diagnostic at path whose message contains msg, with the
// given severity, and no other errors.
func want(t *testing.T, diags weft.Diagnostics, sev weft.Severity, path, msg string) {
	t.Helper()
	found := 0
	for _, d := range diags {
		if d.Severity == sev && d.Path == path && strings.Contains(d.Message, msg) {
			found++
		} else if d.Severity == weft.SeverityError {
			t.Errorf("unexpected error: %s", d)
		}
	}
	if found != 1 {
		t.Errorf("want one %s at %q containing %q, found %d in:\n%v", sev, path, msg, found, diags)
	}
}

func clean(t *testing.T, diags weft.Diagnostics) {
	t.Helper()
	if len(diags) > 0 {
		t.Errorf("want no diagnostics, got:\n%v", diags)
	}
}

func TestPromptValidation(t *testing.T) {
	tests := []struct {
		name string
		mod  func(p *weft.Prompt)
		path string
		msg  string
	}{
		{"S000_1_1_required_properties/name", func(p *weft.Prompt) { p.Name = "" }, "name", "name is required"},
		{"S000_9_1_name_required/blank", func(p *weft.Prompt) { p.Name = "  " }, "name", "non-empty string"},
		{"S000_9_1_tool_description_required", func(p *weft.Prompt) { p.ToolDescription = "" }, "toolDescription", "toolDescription is required"},
		{"S000_9_1_model_defined/missing", func(p *weft.Prompt) { p.Model = "" }, "model", "model is required"},
		{"S000_9_1_model_defined/undefined", func(p *weft.Prompt) { p.Model = "huge" }, "model", `no model named "huge"`},
		{"S000_9_1_prompt_shape/empty", func(p *weft.Prompt) { p.Prompt = nil }, "prompt", "prompt is required"},
		{"S000_9_1_prompt_shape/bad_part", func(p *weft.Prompt) { p.Prompt = weft.PromptContent{{Type: "image"}} }, "prompt[0].type", "part type must be text, include or env"},
		{"S000_9_1_prompt_shape/include_without_name", func(p *weft.Prompt) { p.Prompt = weft.PromptContent{{Type: weft.PartKindInclude}} }, "prompt[0].prompt", "names a prompt"},
		{"S000_9_1_prompt_shape/include_undefined", func(p *weft.Prompt) { p.Prompt = weft.PromptContent{weft.IncludePart("nope")} }, "prompt[0].prompt", `no prompt named "nope"`},
		{"S000_9_2_tool_choice_enum", func(p *weft.Prompt) { p.ToolChoice = "always" }, "toolChoice", "must be auto, none or required"},
		{"S000_9_2_reasoning_effort_enum", func(p *weft.Prompt) { p.Reasoning = &weft.Reasoning{Effort: "max"} }, "reasoning.effort", "low, medium or high"},
		{"S000_9_2_image_threshold_positive", func(p *weft.Prompt) { p.RecentImageThreshold = -3 }, "recentImageThreshold", "positive integer"},
		{"S000_4_2_required_tool_call/needs_tools", func(p *weft.Prompt) { p.ToolChoice = weft.ToolChoiceRequired }, "toolChoice", "offers no tools"},
		{"S000_5_2_validate_inputs/schema_checked", func(p *weft.Prompt) { p.RequiredSchema = schema.Array(schema.String()) }, "requiredSchema", "root must be an object"},
		{"output_schema/root_object", func(p *weft.Prompt) { p.OutputSchema = schema.Array(schema.String()) }, "outputSchema", "root must be an object"},
		{"output_schema/subset", func(p *weft.Prompt) {
			p.OutputSchema = mustParse(`{"type":"object","properties":{"a":{"type":"string","not":{"const":"x"}}}}`)
		}, "outputSchema.properties.a.not", `unsupported keyword "not"`},
		{"S000_8_hook_scoping/unknown_hook", func(p *weft.Prompt) { p.Hooks = []string{"audit"} }, "hooks[0]", `no hook with id "audit"`},
		{"S003_3_variables/type", func(p *weft.Prompt) {
			p.Variables = []weft.VariableDefinition{{Name: "KEY", Type: "password", Description: "d"}}
		}, "variables[0].type", "text or secret"},
		{"S003_3_variables/name", func(p *weft.Prompt) {
			p.Variables = []weft.VariableDefinition{{Name: "1KEY", Type: weft.VarText, Description: "d"}}
		}, "variables[0].name", "invalid variable name"},
		{"tools/unresolved", func(p *weft.Prompt) { p.Tools = []weft.ToolEntry{{Name: "nope"}} }, "tools[0]", `no tool, prompt or agent named "nope"`},
		{"tools/listed_twice", func(p *weft.Prompt) { p.Tools = []weft.ToolEntry{{Name: "search"}, {Name: "search"}} }, "tools[1]", "already listed"},
		{"tools/key_vs_target", func(p *weft.Prompt) {
			p.Tools = []weft.ToolEntry{{Name: "search", Blocking: new(bool)}}
		}, "tools[0].blocking", `blocking does not apply to tool "search"`},
		{"tools/forced_kind", func(p *weft.Prompt) { p.Tools = []weft.ToolEntry{{Name: "search", Kind: weft.EntryPrompt}} }, "tools[0]", `no prompt named "search"`},
		{"tools/optional_flag", func(p *weft.Prompt) { p.Tools = []weft.ToolEntry{{Name: "search", Optional: "not a flag"}} }, "tools[0].optional", "not a variable name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			r.AddPrompt(prompt(tc.mod))
			want(t, validate.Registry(r), weft.SeverityError, tc.path, tc.msg)
		})
	}
	t.Run("valid", func(t *testing.T) {
		r := base()
		r.AddPrompt(prompt(func(p *weft.Prompt) {
			p.ToolChoice = weft.ToolChoiceRequired
			p.Tools = []weft.ToolEntry{{Name: "search", Env: map[string]string{"K": "v"}}}
			p.Reasoning = &weft.Reasoning{Effort: "high", MaxTokens: 1024}
			p.RecentImageThreshold = 3
			p.Hooks = []string{}
		}))
		clean(t, validate.Registry(r))
	})
}

func TestIncludes(t *testing.T) {
	t.Run("S000_2_4_circular_includes_rejected", func(t *testing.T) {
		r := base()
		r.AddPrompt(prompt(func(p *weft.Prompt) {
			p.Name = "a"
			p.Prompt = weft.PromptContent{weft.TextPart("A"), weft.IncludePart("b")}
		}))
		r.AddPrompt(prompt(func(p *weft.Prompt) { p.Name = "b"; p.Prompt = weft.PromptContent{weft.IncludePart("c")} }))
		r.AddPrompt(prompt(func(p *weft.Prompt) { p.Name = "c"; p.Prompt = weft.PromptContent{weft.IncludePart("a")} }))
		r.AddPrompt(prompt(func(p *weft.Prompt) { p.Name = "self"; p.Prompt = weft.PromptContent{weft.IncludePart("self")} }))
		diags := validate.Registry(r)
		want(t, diags.Errors()[:1], weft.SeverityError, "prompt[1].prompt", "circular include a → b → c → a")
		if len(diags.Errors()) != 2 || !strings.Contains(diags.Errors()[1].String(), "go:prompt/self: prompt[0].prompt: circular include self → self") {
			t.Errorf("each cycle once, named: %v", diags)
		}
		if _, err := r.RenderSystem(context.Background(), "a", nil, nil); err == nil || !strings.Contains(err.Error(), "circular include") {
			t.Errorf("rendering a cycle: %v", err)
		}
	})
	t.Run("S000_2_4_recursive_includes", func(t *testing.T) {
		r := base()
		// Only the included prompt's content is inserted: not its tools or model.
		r.AddPrompt(prompt(func(p *weft.Prompt) {
			p.Name = "rules"
			p.Prompt = weft.PromptContent{weft.TextPart("Rules: "), weft.IncludePart("inner")}
			p.Tools = []weft.ToolEntry{{Name: "search"}}
		}))
		r.AddPrompt(prompt(func(p *weft.Prompt) { p.Name = "inner"; p.Prompt = weft.Text("be kind.") }))
		r.AddPrompt(prompt(func(p *weft.Prompt) {
			p.Name = "main"
			p.Prompt = weft.PromptContent{weft.TextPart("Start. "), weft.IncludePart("rules"), weft.TextPart(" Again: "), weft.IncludePart("inner")}
		}))
		clean(t, validate.Registry(r))
		got, err := r.RenderSystem(context.Background(), "main", nil, nil)
		if err != nil || got != "Start. Rules: be kind. Again: be kind." {
			t.Fatalf("got %q, %v", got, err)
		}
	})
}

func TestRenderSystem(t *testing.T) {
	t.Run("S000_2_1_no_secrets_sanitize", func(t *testing.T) {
		r := base()
		r.AddPrompt(prompt(func(p *weft.Prompt) {
			p.Prompt = weft.PromptContent{weft.TextPart("lang="), weft.EnvPart("LANG"), weft.TextPart(" key="), weft.EnvPart("API_KEY"), weft.TextPart(" none="), weft.EnvPart("UNSET"), weft.TextPart(".")}
		}))
		env := func(name string) (string, bool, bool) {
			switch name {
			case "LANG":
				return "Eng\x1b[31mlish\x00\tok\n", false, true
			case "API_KEY":
				return "sk-very-secret", true, true
			}
			return "", false, false
		}
		got, err := r.RenderSystem(context.Background(), "p", nil, env)
		if err != nil {
			t.Fatal(err)
		}
		if want := "lang=Eng[31mlish\tok\n key=[redacted] none=."; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

func TestToolValidation(t *testing.T) {
	tests := []struct {
		name string
		tool *weft.Tool
		sev  weft.Severity
		path string
		msg  string
	}{
		{"S002_2_2_description_non_empty", &weft.Tool{Name: "t", Description: " ", Execute: noop}, weft.SeverityError, "description", "description is required"},
		{"S002_3_1_object_schema", &weft.Tool{Name: "t", Description: "d", Execute: noop, Args: schema.String()}, weft.SeverityError, "args", "root must be an object"},
		{"S002_3_2_allowed_types/rejected_keyword", &weft.Tool{Name: "t", Description: "d", Execute: noop,
			Args: mustParse(`{"type":"object","properties":{"a":{"type":"string","not":{"const":"x"}}}}`)}, weft.SeverityError, "args.properties.a.not", `unsupported keyword "not"`},
		{"S002_3_3_nesting_7/over_16", &weft.Tool{Name: "t", Description: "d", Execute: noop, Args: nested(17)}, weft.SeverityError, "args", "schema nesting depth 17 exceeds the maximum of 16"},
		{"S002_8_3_warn_not_reject/camel", &weft.Tool{Name: "searchDocs", Description: "d", Execute: noop}, weft.SeverityWarning, "name", "should be snake_case"},
		{"S002_8_3_warn_not_reject/long", &weft.Tool{Name: strings.Repeat("a", 65), Description: "d", Execute: noop}, weft.SeverityWarning, "name", "1–64 characters"},
		{"implementation", &weft.Tool{Name: "t", Description: "d"}, weft.SeverityError, "Execute", "no implementation"},
		{"S004_provider_execution/needs_provider", &weft.Tool{Name: "t", Description: "d", ExecutionMode: weft.ExecProvider}, weft.SeverityError, "executionProvider", "required when executionMode is provider"},
		{"command/undeclared_env", &weft.Tool{Name: "t", Description: "d", Command: &weft.CommandSpec{Argv: []string{"x", "${env:TOKEN}"}}}, weft.SeverityError, "command[1]", "${env:TOKEN} is not declared"},
		{"command/cwd_escapes", &weft.Tool{Name: "t", Description: "d", Command: &weft.CommandSpec{Argv: []string{"x"}, Dir: "../x"}}, weft.SeverityError, "cwd", "inside the project root"},
		{"http/method", &weft.Tool{Name: "t", Description: "d", HTTP: &weft.HTTPSpec{URL: "https://x", Method: "TRACE"}}, weft.SeverityError, "method", "GET, POST, PUT, PATCH or DELETE"},
		{"approval/value", &weft.Tool{Name: "t", Description: "d", Execute: noop, Approval: "sometimes"}, weft.SeverityError, "approval", `approval is required or never, not "sometimes"`},
		{"approval/provider_executed", &weft.Tool{Name: "t", Description: "d", ExecutionMode: weft.ExecProvider, ExecutionProvider: "openai", Approval: weft.ApprovalRequired},
			weft.SeverityError, "approval", "cannot wait for approval"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := weft.NewRegistry()
			r.AddTool(tc.tool)
			want(t, validate.Registry(r), tc.sev, tc.path, tc.msg)
		})
	}
	t.Run("S002_8_1_unique_names", func(t *testing.T) {
		r := weft.NewRegistry()
		r.AddTool(&weft.Tool{Name: "t", Description: "d", Execute: noop})
		r.AddToolFrom("tools/t.yaml", &weft.Tool{Name: "t", Description: "d", Execute: noop})
		want(t, validate.Registry(r), weft.SeverityError, "name", `duplicate tool "t" (go:tool/t, tools/t.yaml)`)
	})
	t.Run("S002_3_3_nesting_7", func(t *testing.T) {
		r := weft.NewRegistry()
		r.AddTool(&weft.Tool{Name: "t", Description: "d", Execute: noop, Args: nested(7)})
		r.AddTool(&weft.Tool{Name: "u", Description: "d", Execute: noop, Args: nested(16)})
		clean(t, validate.Registry(r))
	})
	t.Run("S002_3_5_no_args", func(t *testing.T) {
		tool := weft.NewToolNoArgs("now", "Current time.", func(ctx context.Context, st weft.State) (weft.ToolResult, error) {
			return weft.Success("12:00"), nil
		})
		if tool.Args != nil {
			t.Fatalf("a tool without arguments has no args schema, got %v", tool.Args)
		}
		res, err := tool.Execute.Call(context.Background(), nil, json.RawMessage(`{}`))
		if err != nil || res.Result != "12:00" {
			t.Fatalf("got %+v, %v", res, err)
		}
		b, _ := json.Marshal(schema.NoArgs())
		if string(b) != `{"type":"object","properties":{}}` {
			t.Errorf("offered schema %s", b)
		}
	})
	t.Run("S002_4_1_tool_result", func(t *testing.T) {
		res := weft.ToolResult{Status: weft.ToolError, Error: "boom", Stack: "at x", Attachments: []weft.ToolAttachment{
			{Name: "a.png", MimeType: "image/png", Data: []byte{0x89, 'P'}, Width: 2, Height: 1},
			{ID: "f1", Path: "/attachments/b.txt", Name: "b.txt", MimeType: "text/plain", Size: 3},
		}}
		b, _ := json.Marshal(res)
		const wantJSON = `{"status":"error","error":"boom","stack":"at x","attachments":[{"name":"a.png","mimeType":"image/png","data":"iVA=","width":2,"height":1},{"name":"b.txt","mimeType":"text/plain","id":"f1","path":"/attachments/b.txt","size":3}]}`
		if string(b) != wantJSON {
			t.Errorf("got  %s\nwant %s", b, wantJSON)
		}
		if res.Attachments[0].IsRef() || !res.Attachments[1].IsRef() {
			t.Error("IsRef tells new bytes from references")
		}
	})
}

func TestNewToolInfersSchema(t *testing.T) {
	type args struct {
		Query string   `json:"query" jsonschema:"description=Search query"`
		Limit int      `json:"limit,omitempty" jsonschema:"default=10,minimum=1,maximum=20"`
		Tags  []string `json:"tags,omitempty"`
	}
	var got args
	tool := weft.NewTool("s", "d", func(ctx context.Context, st weft.State, a args) (weft.ToolResult, error) {
		got = a
		return weft.Success("ok"), nil
	})
	b, _ := json.Marshal(tool.Args)
	if !strings.Contains(string(b), `"description":"Search query"`) || !strings.Contains(string(b), `"required":["query"]`) {
		t.Errorf("schema %s", b)
	}
	if _, err := tool.Execute.Call(context.Background(), nil, json.RawMessage(`{"query":"go","limit":3}`)); err != nil || got.Query != "go" || got.Limit != 3 {
		t.Errorf("decoded %+v, %v", got, err)
	}
}

func TestAgentValidation(t *testing.T) {
	stop := &weft.Tool{Name: "approve", Description: "Approve.", Execute: noop, Args: schema.Object(schema.Field("summary", schema.String()), schema.Field("score", schema.Number()))}
	tests := []struct {
		name  string
		agent *weft.Agent
		sev   weft.Severity
		path  string
		msg   string
	}{
		{"side_a_required", &weft.Agent{Name: "a"}, weft.SeverityError, "sideA", "sideA is required"},
		{"side_a_prompt_defined", &weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "nope"}}, weft.SeverityError, "sideA.prompt", `no prompt named "nope"`},
		{"prompt_and_handler", &weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p", Handler: "h"}}, weft.SeverityError, "sideA", "exactly one of prompt or handler"},
		{"handler_defined", &weft.Agent{Name: "a", SideA: weft.AgentSide{Handler: "missing"}}, weft.SeverityError, "sideA.handler", `no handler named "missing"`},
		{"human_side_a", &weft.Agent{Name: "a", SideA: weft.AgentSide{Human: true}}, weft.SeverityError, "sideA", "human side can only be sideB"},
		{"dual_needs_b", &weft.Agent{Name: "a", Type: weft.DualAI, SideA: weft.AgentSide{Prompt: "p"}}, weft.SeverityError, "sideB", "needs an AI sideB"},
		{"dual_no_session_end", &weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}, SideB: &weft.AgentSide{Prompt: "p"}}, weft.SeverityWarning, "", "no session end"},
		{"ai_human_side_b", &weft.Agent{Name: "a", Type: weft.AIHuman, SideA: weft.AgentSide{Prompt: "p"}, SideB: &weft.AgentSide{Prompt: "p"}}, weft.SeverityError, "sideB", "human side"},
		{"type_enum", &weft.Agent{Name: "a", Type: "trio", SideA: weft.AgentSide{Prompt: "p"}}, weft.SeverityError, "type", "ai_human or dual_ai"},
		{"stop_tool_listed", &weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p", StopTool: "search"}}, weft.SeverityError, "sideA.stopTool", "not among the tools"},
		{"stop_property_string", &weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "q", StopTool: "approve", StopToolResponseProperty: "score"}}, weft.SeverityError, "sideA.stopToolResponseProperty", "must be a string"},
		{"session_message_property", &weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "q", SessionStop: &weft.SessionTool{Name: "approve", MessageProperty: "nope"}}}, weft.SeverityError, "sideA.sessionStop.messageProperty", "not an argument"},
		{"exposed_needs_description", &weft.Agent{Name: "a", ExposeAsTool: true, SideA: weft.AgentSide{Prompt: "p"}}, weft.SeverityError, "toolDescription", "required when exposeAsTool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base()
			r.AddTool(stop)
			r.AddHandler(&weft.Handler{Name: "h", Fn: func(ctx context.Context, st weft.State, m weft.Message) error { return nil }})
			r.AddPrompt(prompt(nil))
			r.AddPrompt(prompt(func(p *weft.Prompt) { p.Name = "q"; p.Tools = []weft.ToolEntry{{Name: "approve"}} }))
			r.AddAgent(tc.agent)
			want(t, validate.Registry(r), tc.sev, tc.path, tc.msg)
		})
	}
}

func TestToolEntryTargets(t *testing.T) {
	// Keys that do not fit the resolved target are errors, for every key and every target role
	// (tool, prompt, handoff, subagent, resumable subagent).
	registry := func() *weft.Registry {
		r := base()
		r.AddPrompt(prompt(func(p *weft.Prompt) { p.Name = "sub" }))
		r.AddPrompt(prompt(func(p *weft.Prompt) { p.Name = "side" }))
		r.AddAgent(&weft.Agent{Name: "handoff", ExposeAsTool: true, ToolDescription: "d", SideA: weft.AgentSide{Prompt: "side"}})
		r.AddAgent(&weft.Agent{Name: "pair", ExposeAsTool: true, ToolDescription: "d", MaxSessionTurns: 2,
			SideA: weft.AgentSide{Prompt: "side"}, SideB: &weft.AgentSide{Prompt: "side"}})
		return r
	}
	yes := true
	all := weft.ToolEntry{Env: map[string]string{"A": "b"}, Options: map[string]any{}, IncludeTextResponse: &yes, IncludeToolCalls: &yes,
		IncludeErrors: &yes, InitUserMessageProperty: "x", InitAttachmentsProperty: "y", InitAgentNameProperty: "z",
		Blocking: &yes, Immediate: &yes}
	allowed := map[string][]string{
		"search":  {"env", "options"},
		"sub":     {"includeTextResponse", "includeToolCalls", "includeErrors", "initUserMessageProperty", "initAttachmentsProperty"},
		"handoff": {"initUserMessageProperty", "initAttachmentsProperty"},
		"pair":    {"initUserMessageProperty", "initAttachmentsProperty", "initAgentNameProperty", "blocking", "immediate", "resumable"},
		"pair~":   {"blocking", "immediate", "resumable"},
	}
	keys := []string{"env", "options", "includeTextResponse", "includeToolCalls", "includeErrors", "initUserMessageProperty", "initAttachmentsProperty", "initAgentNameProperty", "blocking", "immediate"}
	for target, ok := range allowed {
		e := all
		e.Name = strings.TrimSuffix(target, "~")
		if strings.HasSuffix(target, "~") {
			e.Resumable = &weft.Resumable{Enabled: true, ReceivesMessages: "side_a"}
		}
		rr := registry()
		rr.AddPrompt(prompt(func(p *weft.Prompt) {
			p.Name = "caller_" + strings.TrimSuffix(target, "~")
			p.Tools = []weft.ToolEntry{e}
		}))
		var got []string
		for _, d := range validate.Registry(rr).Errors() {
			if strings.Contains(d.Message, "does not apply") {
				got = append(got, d.Path[strings.LastIndex(d.Path, ".")+1:])
			}
		}
		var wantBad []string
		for _, k := range keys {
			if !contains(ok, k) {
				wantBad = append(wantBad, k)
			}
		}
		if strings.Join(got, ",") != strings.Join(wantBad, ",") {
			t.Errorf("%s: rejected keys %v, want %v", target, got, wantBad)
		}
	}
}

func TestHookValidation(t *testing.T) {
	r := weft.NewRegistry()
	r.AddHook(&weft.Hook{ID: "ok", Point: weft.HookAfterSystemMessage, Fn: func(ctx context.Context, st weft.State, text string) (string, error) { return text, nil }})
	r.AddHook(&weft.Hook{ID: "typed", Point: weft.HookFilterMessages, Fn: weft.FilterMessagesFunc(nil)})
	r.AddHook(&weft.Hook{ID: "wrong", Point: weft.HookAfterSystemMessage, Fn: func(ctx context.Context, st weft.State) error { return nil }})
	r.AddHook(&weft.Hook{ID: "point", Point: "before_lunch", Fn: func() {}})
	diags := validate.Registry(r).Errors()
	if len(diags) != 2 || !strings.Contains(diags[0].Message, "must be weft.SystemMessageFunc") || !strings.Contains(diags[1].Message, `unknown hook point "before_lunch"`) {
		t.Errorf("got %v", diags)
	}
	h, _ := r.Hook("ok")
	if f, ok := weft.HookFunc[weft.SystemMessageFunc](*h); !ok || f == nil {
		t.Error("HookFunc converts a plain func literal to the point's type")
	}
}

var noop = weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
	return weft.Success(""), nil
})

func mustParse(s string) *schema.Schema {
	sc, err := schema.Parse([]byte(s))
	if err != nil {
		panic(err)
	}
	return sc
}

// nested returns an object schema `levels` objects deep.
func nested(levels int) *schema.Schema {
	s := schema.String()
	for range levels {
		s = schema.Object(schema.Field("n", s))
	}
	return s
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestContextValidation: the context keys take their allowed values; a summarizer names a prompt
// that is neither the prompt itself nor one that summarizes in turn.
func TestContextValidation(t *testing.T) {
	summarize := func(summarizer string) *weft.ContextPolicy {
		return &weft.ContextPolicy{Strategy: weft.ContextSummarize, Summarizer: summarizer}
	}
	tests := []struct {
		name    string
		ctx     *weft.ContextPolicy
		extra   *weft.Prompt
		sev     weft.Severity
		path    string
		msg     string
		cleanly bool
	}{
		{name: "strategy_enum", ctx: &weft.ContextPolicy{Strategy: "compact"}, sev: weft.SeverityError, path: "context.strategy", msg: "window, summarize or none"},
		{name: "reserve_positive", ctx: &weft.ContextPolicy{ReserveOutput: -1}, sev: weft.SeverityError, path: "context.reserveOutput", msg: "positive integer"},
		{name: "summarizer_defined", ctx: summarize("nope"), sev: weft.SeverityError, path: "context.summarizer", msg: `no prompt named "nope"`},
		{name: "summarizer_needs_summarize", ctx: &weft.ContextPolicy{Strategy: weft.ContextWindow, Summarizer: "s"},
			extra: prompt(func(p *weft.Prompt) { p.Name = "s" }), sev: weft.SeverityError, path: "context.summarizer", msg: "strategy summarize only"},
		{name: "summarizer_not_itself", ctx: summarize("p"), sev: weft.SeverityError, path: "context.summarizer", msg: "cannot summarize for itself"},
		{name: "summarizer_not_summarizing", ctx: summarize("s"),
			extra: prompt(func(p *weft.Prompt) { p.Name = "s"; p.Context = &weft.ContextPolicy{Strategy: weft.ContextSummarize} }),
			sev:   weft.SeverityError, path: "context.summarizer", msg: "cannot be a summarizer"},
		{name: "window_unknown", ctx: summarize(""), sev: weft.SeverityWarning, path: "context.strategy", msg: "declares no capabilities.maxContextTokens"},
		{name: "valid", ctx: summarize("s"), extra: prompt(func(p *weft.Prompt) { p.Name = "s" }), cleanly: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := weft.NewRegistry()
			window := 8000
			if tc.name == "window_unknown" {
				window = 0
			}
			r.AddModel(&weft.Model{Name: "fast", Provider: "openai", Model: "gpt-4o-mini", Capabilities: weft.Capabilities{MaxContextTokens: window}})
			r.AddPrompt(prompt(func(p *weft.Prompt) { p.Context = tc.ctx }))
			if tc.extra != nil {
				r.AddPrompt(tc.extra)
			}
			if tc.cleanly {
				clean(t, validate.Registry(r))
				return
			}
			want(t, validate.Registry(r), tc.sev, tc.path, tc.msg)
		})
	}
	t.Run("summarizer_prompt_itself", func(t *testing.T) {
		r := base()
		r.AddPrompt(prompt(func(p *weft.Prompt) { p.Name = weft.SummarizerPrompt; p.Context = summarize("") }))
		want(t, validate.Registry(r), weft.SeverityError, "context.strategy", "writes the summaries")
	})
}

// TestValidateReportsEveryBudgetProblem: validation lists each of an agent budget's problems.
func TestValidateReportsEveryBudgetProblem(t *testing.T) {
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "m", Provider: "test", Model: "m"})
	reg.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "d", Model: "m", Prompt: weft.Text("Hi.")})
	reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}, Budget: &weft.Budget{UnknownCost: "maybe"}})
	d := validate.Registry(reg)
	var got []string
	for _, x := range d {
		if x.Severity == weft.SeverityError {
			got = append(got, x.Path)
		}
	}
	if want := []string{"budget.maxCostUsd", "budget.unknownCost"}; !reflect.DeepEqual(got, want) {
		t.Errorf("error fields %v, want %v (%v)", got, want, d)
	}
}
