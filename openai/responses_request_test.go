package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/openai"
)

func mustSchema(t testing.TB, s string) *weft.Schema {
	t.Helper()
	v := &weft.Schema{}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatal(err)
	}
	return v
}

// canonical re-encodes JSON with sorted keys so bodies compare as text.
func canonical(t testing.TB, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

const okResponses = `{"id":"resp_1","object":"response","status":"completed","model":"gpt-test","output":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"ok"}]}],"usage":{"input_tokens":3,"output_tokens":1}}`

// Replayed items as a store gives them back (decoded JSON) or as the engine passes them (raw).
const (
	webSearchItem = `{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"weft"}}`
	codeItem      = `{"type":"code_interpreter_call","id":"ci_1","status":"completed","code":"print(1)","container_id":"cntr_1","outputs":[{"type":"logs","logs":"1"}]}`
	reasoningEnc  = `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"gAAA"}`
	reasoningBare = `{"type":"reasoning","id":"rs_2","summary":[]}`
	thinkingBlock = `{"type":"thinking","thinking":"x","signature":"s"}`
)

func decoded(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

// TestResponsesRequest checks the whole Responses body for a history with every kind of message:
// roles, media parts, replayed reasoning (other providers' blocks and unreplayable items left out),
// function calls and outputs, provider-executed calls sent back as their raw items, function and
// hosted tools, options mapping and transport keys, and the endpoint and headers.
func TestResponsesRequest(t *testing.T) {
	srv, c := newServer(t, 200, nil, "application/json", okResponses)
	m := noStream()
	m.ProviderOptions = map[string]any{"useResponsesApi": true, "baseUrl": srv.URL + "/v1", "headers": map[string]any{"X-Title": "weft"},
		"user": "u1", "temperature": 0.5, "stop": []any{"END"}, "seed": 7,
		"file_search": map[string]any{"vector_store_ids": []any{"vs_1"}}}
	p := openai.New(openai.Options{BaseURL: "http://127.0.0.1:1/v1"})
	req := &weft.Request{Model: m, APIKey: "sk-abc",
		Options: map[string]any{"temperature": 0.2, "maxOutputTokens": 99, "topP": 0.9, "frequencyPenalty": 1},
		Messages: []weft.LLMMessage{
			{Role: weft.RoleSystem, Content: "sys"},
			{Role: weft.RoleDeveloper, Content: "dev"},
			{Role: weft.RoleUser, Parts: []weft.ContentPart{{Type: weft.PartText, Text: "look"},
				{Type: weft.PartImage, URL: "https://x/y.png", Options: map[string]any{"detail": "low"}},
				{Type: weft.PartImage, URL: "data:image/png;base64,QUJD"},
				{Type: weft.PartImage, URL: "/attachments/z.png", Description: "a cat"},
				{Type: weft.PartFile, URL: "data:application/pdf;base64,QUJD", Description: "a.pdf"},
				{Type: weft.PartFile, URL: "https://x/b.pdf"}}},
			{Role: weft.RoleAssistant, Content: "let me look",
				Metadata:  map[string]any{"reasoning_blocks": json.RawMessage("[" + reasoningEnc + "," + reasoningBare + "," + thinkingBlock + "]")},
				ToolCalls: []weft.ToolCall{{ID: "c1", Name: "web.search", Arguments: `{"q":"x"}`}, {ID: "ws_1", Name: "web_search", Arguments: `{"type":"search","query":"weft"}`}, {ID: "c2", Name: "plain"}}},
			{Role: weft.RoleTool, ToolCallID: "c1", Name: "web.search", Parts: []weft.ContentPart{{Type: weft.PartText, Text: "res"}, {Type: weft.PartText, Text: "ult"}}},
			{Role: weft.RoleTool, ToolCallID: "ws_1", Name: "web_search", Content: "Searched the web for: weft", Metadata: map[string]any{"provider_raw": decoded(webSearchItem)}},
			{Role: weft.RoleTool, ToolCallID: "c2", Name: "plain", ToolStatus: weft.ToolError, Content: "Failed"},
			// A provider result whose call is missing from the history still carries its item.
			{Role: weft.RoleTool, ToolCallID: "ci_1", Name: "code_interpreter", Content: "Ran code", Metadata: map[string]any{"provider_raw": json.RawMessage(codeItem)}},
			{Role: weft.RoleUser, Content: "next"},
		},
		Tools: []weft.ToolSpec{
			{Name: "web.search", Description: "d", Parameters: mustSchema(t, `{"type":"object","properties":{"q":{"type":"string"}}}`)},
			{Name: "plain", Description: "p"},
			{Name: "web_search", Description: "search the web", Provider: "openai"},
			{Name: "code_interpreter", Provider: "openai"},
			{Name: "file_search", Provider: "openai"},
			{Name: "shell_v9", Provider: "openai"},
			{Name: "google_search", Provider: "google"},
		},
		ToolChoice: weft.ToolChoiceRequired, ParallelToolCalls: true, Reasoning: &weft.Reasoning{Effort: "high"},
	}
	resp, err := p.Call(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	wire := openai.WireToolName("web.search")
	want := canonical(t, []byte(fmt.Sprintf(`{
	"model":"gpt-test","store":false,"include":["reasoning.encrypted_content"],
	"reasoning":{"effort":"high","summary":"auto"},
	"max_output_tokens":99,"temperature":0.2,"top_p":0.9,"user":"u1",
	"input":[
		{"type":"message","role":"system","content":"sys"},
		{"type":"message","role":"developer","content":"dev"},
		{"type":"message","role":"user","content":[
			{"type":"input_text","text":"look"},
			{"type":"input_image","image_url":"https://x/y.png","detail":"low"},
			{"type":"input_image","image_url":"data:image/png;base64,QUJD","detail":"auto"},
			{"type":"input_text","text":"[Image: /attachments/z.png (a cat)]"},
			{"type":"input_file","file_data":"data:application/pdf;base64,QUJD","filename":"a.pdf"},
			{"type":"input_file","file_url":"https://x/b.pdf"}]},
		%[2]s,
		{"type":"message","role":"assistant","content":"let me look"},
		{"type":"function_call","call_id":"c1","name":%[1]q,"arguments":"{\"q\":\"x\"}"},
		%[3]s,
		{"type":"function_call","call_id":"c2","name":"plain","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"result"},
		{"type":"function_call_output","call_id":"c2","output":"Failed"},
		%[4]s,
		{"type":"message","role":"user","content":"next"}],
	"tools":[
		{"type":"function","name":%[1]q,"description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},"strict":false},
		{"type":"function","name":"plain","description":"p","parameters":{"type":"object","properties":{}},"strict":false},
		{"type":"web_search"},
		{"type":"code_interpreter","container":{"type":"auto"}},
		{"type":"file_search","vector_store_ids":["vs_1"]},
		{"type":"shell_v9"}],
	"tool_choice":"required","parallel_tool_calls":true}`, wire, reasoningEnc, webSearchItem, codeItem)))
	if got := canonical(t, c.body); got != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
	if c.path != "/v1/responses" || c.header.Get("Authorization") != "Bearer sk-abc" || c.header.Get("X-Title") != "weft" {
		t.Errorf("path %s headers %v", c.path, c.header)
	}
	if resp.Text != "ok" || resp.FinishReason != "stop" || resp.Usage.InputTokens != 3 || string(resp.RequestBody) != string(c.body) {
		t.Errorf("response %+v", resp)
	}
}

// TestResponsesRequestVariants checks the parts of the body that depend on the request: reasoning
// and encrypted content, storage, tools switched off, streaming and options that add to ours.
func TestResponsesRequestVariants(t *testing.T) {
	tools := []weft.ToolSpec{{Name: "f", Description: "d"}}
	cases := []struct {
		name   string
		edit   func(r *weft.Request)
		stream bool
		want   map[string]string // top-level key → JSON value; "" = absent
	}{
		{"no_reasoning", func(r *weft.Request) {},
			false, map[string]string{"reasoning": "", "include": "", "store": "false", "stream": ""}},
		{"reasoning_levels_without_config", func(r *weft.Request) { r.Model.Capabilities.ReasoningLevels = []string{"low"} },
			false, map[string]string{"reasoning": "", "include": `["reasoning.encrypted_content"]`}},
		{"reasoning_exclude", func(r *weft.Request) { r.Reasoning = &weft.Reasoning{Effort: "low", Exclude: true} },
			false, map[string]string{"reasoning": `{"effort":"low"}`, "include": ""}},
		{"reasoning_budget_only", func(r *weft.Request) { r.Reasoning = &weft.Reasoning{MaxTokens: 1000} },
			false, map[string]string{"reasoning": `{"summary":"auto"}`, "include": `["reasoning.encrypted_content"]`}},
		{"reasoning_options_merge", func(r *weft.Request) {
			r.Reasoning = &weft.Reasoning{Effort: "medium"}
			r.Options = map[string]any{"reasoning": map[string]any{"summary": "detailed"}, "include": []any{"file_search_call.results"}}
		}, false, map[string]string{"reasoning": `{"effort":"medium","summary":"detailed"}`, "include": `["file_search_call.results","reasoning.encrypted_content"]`}},
		{"stored", func(r *weft.Request) {
			r.Reasoning = &weft.Reasoning{Effort: "low"}
			r.Options = map[string]any{"store": true}
			r.Messages = append(r.Messages, weft.LLMMessage{Role: weft.RoleAssistant, Content: "a", Metadata: map[string]any{"reasoning_blocks": decoded("[" + reasoningBare + "]")}})
		}, false, map[string]string{"store": "true", "include": "", "input": `[{"content":"q","role":"user","type":"message"},` + canonical(t, []byte(reasoningBare)) + `,{"content":"a","role":"assistant","type":"message"}]`}},
		{"single_reasoning_block", func(r *weft.Request) {
			r.Messages = append(r.Messages, weft.LLMMessage{Role: weft.RoleAssistant, Content: "a", Metadata: map[string]any{"reasoning_blocks": reasoningEnc}})
		}, false, map[string]string{"input": `[{"content":"q","role":"user","type":"message"},` + canonical(t, []byte(reasoningEnc)) + `,{"content":"a","role":"assistant","type":"message"}]`}},
		{"tool_choice_none", func(r *weft.Request) {
			r.Tools, r.ToolChoice = tools, weft.ToolChoiceNone
			r.Options = map[string]any{"tools": []any{}}
		},
			false, map[string]string{"tools": "", "tool_choice": "", "parallel_tool_calls": ""}},
		{"no_tool_support", func(r *weft.Request) { f := false; r.Tools = tools; r.Model.Capabilities.SupportsToolCalls = &f },
			false, map[string]string{"tools": "", "tool_choice": ""}},
		{"only_other_providers_tools", func(r *weft.Request) { r.Tools = []weft.ToolSpec{{Name: "x", Provider: "anthropic"}} },
			false, map[string]string{"tools": "", "tool_choice": ""}},
		{"adapter_name", func(r *weft.Request) { r.Tools = []weft.ToolSpec{{Name: "web_search_preview", Provider: "acme"}} },
			false, map[string]string{"tools": `[{"type":"web_search_preview"}]`, "tool_choice": `"auto"`}},
		{"custom_provider", func(r *weft.Request) {
			r.Model.Provider = "my-openai"
			r.Tools = []weft.ToolSpec{{Name: "web_search", Provider: "my-openai"}}
			r.Options = map[string]any{"web_search": map[string]string{"search_context_size": "low"}}
		}, false, map[string]string{"tools": `[{"type":"web_search","search_context_size":"low"}]`, "web_search": ""}},
		{"tool_option_of_unoffered_tool_is_sent", func(r *weft.Request) { r.Options = map[string]any{"web_search": "x"} },
			false, map[string]string{"web_search": `"x"`}},
		{"stream", func(r *weft.Request) {
			r.Options = map[string]any{"stream_options": map[string]any{"include_usage": true}}
		},
			true, map[string]string{"stream": "true", "stream_options": ""}},
		{"transport_keys_never_sent", func(r *weft.Request) {
			r.Options = map[string]any{"strictTools": false, "useResponsesApi": true, "baseUrl": "", "headers": map[string]any{"X-A": "b"}}
		}, false, map[string]string{"strictTools": "", "useResponsesApi": "", "baseUrl": "", "headers": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct, reply := "application/json", okResponses
			if tc.stream {
				ct, reply = "text/event-stream", sseFor(t, okResponses, false)
			}
			srv, c := newServer(t, 200, nil, ct, reply)
			s := tc.stream
			req := &weft.Request{Model: &weft.Model{Name: "m", Model: "gpt-test", Capabilities: weft.Capabilities{SupportsStreaming: &s},
				ProviderOptions: map[string]any{"useResponsesApi": true}},
				ToolChoice: weft.ToolChoiceAuto, Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "q"}}}
			tc.edit(req)
			p := openai.New(openai.Options{BaseURL: srv.URL + "/v1", Name: "acme"})
			if _, err := p.Call(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(c.body, &body); err != nil {
				t.Fatal(err)
			}
			for k, w := range tc.want {
				got, ok := body[k]
				switch {
				case w == "" && ok:
					t.Errorf("%s = %s, want absent", k, got)
				case w != "" && !ok:
					t.Errorf("%s absent, want %s", k, w)
				case w != "" && canonical(t, got) != canonical(t, []byte(w)):
					t.Errorf("%s = %s, want %s", k, canonical(t, got), w)
				}
			}
		})
	}
}

// TestStrictTools checks the strictTools option on both wires: strict form and flag when on, the
// plain schema and no flag (chat) or strict false (Responses) when off, and the option itself never
// in the body. Provider-executed tools have no chat-completions form.
func TestStrictTools(t *testing.T) {
	params := `{"type":"object","properties":{"city":{"type":"string","default":"Paris"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}`
	strictParams := `{"additionalProperties":false,"properties":{"city":{"type":"string"},"unit":{"enum":["c","f",null],"type":["string","null"]}},"required":["city","unit"],"type":"object"}`
	for _, tc := range []struct {
		name      string
		responses bool
		strict    any
		want      string
	}{
		{"chat_strict", false, true, `{"function":{"description":"w","name":"weather","parameters":` + strictParams + `,"strict":true},"type":"function"}`},
		{"chat_plain", false, nil, `{"function":{"description":"w","name":"weather","parameters":` + canonical(t, []byte(params)) + `},"type":"function"}`},
		{"chat_not_bool", false, "true", `{"function":{"description":"w","name":"weather","parameters":` + canonical(t, []byte(params)) + `},"type":"function"}`},
		{"responses_strict", true, true, `{"description":"w","name":"weather","parameters":` + strictParams + `,"strict":true,"type":"function"}`},
		{"responses_plain", true, false, `{"description":"w","name":"weather","parameters":` + canonical(t, []byte(params)) + `,"strict":false,"type":"function"}`},
		{"responses_no_params_strict", true, true, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := okJSON
			if tc.responses {
				resp = okResponses
			}
			srv, c := newServer(t, 200, nil, "application/json", resp)
			// The hosted tool's settings go into its tool object (Responses) or nowhere (chat).
			opts := map[string]any{"useResponsesApi": tc.responses, "web_search": map[string]any{"search_context_size": "low"}}
			if tc.strict != nil {
				opts["strictTools"] = tc.strict
			}
			tools := []weft.ToolSpec{{Name: "weather", Description: "w", Parameters: mustSchema(t, params)}, {Name: "web_search", Provider: "openai"}}
			if tc.want == "" {
				tools = []weft.ToolSpec{{Name: "none", Description: "n"}}
			}
			p := openai.New(openai.Options{BaseURL: srv.URL + "/v1"})
			_, err := p.Call(context.Background(), &weft.Request{Model: noStream(), Options: opts, Tools: tools,
				Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "q"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				Tools       []json.RawMessage `json:"tools"`
				StrictTools any               `json:"strictTools"`
				WebSearch   any               `json:"web_search"`
			}
			_ = json.Unmarshal(c.body, &body)
			if body.StrictTools != nil || body.WebSearch != nil && tc.want != "" {
				t.Errorf("strictTools or the hosted tool's option sent in the body: %s", c.body)
			}
			if tc.want == "" {
				want := `{"description":"n","name":"none","parameters":{"additionalProperties":false,"properties":{},"type":"object"},"strict":true,"type":"function"}`
				if len(body.Tools) != 1 || canonical(t, body.Tools[0]) != want {
					t.Errorf("tools %s, want %s", body.Tools, want)
				}
				return
			}
			wantN := 1
			if tc.responses {
				wantN = 2 // the hosted web_search goes natively
			}
			if len(body.Tools) != wantN || canonical(t, body.Tools[0]) != tc.want {
				t.Errorf("tools %s\nwant %s (+hosted: %v)", body.Tools, tc.want, tc.responses)
			}
			if tc.responses && canonical(t, body.Tools[1]) != `{"search_context_size":"low","type":"web_search"}` {
				t.Errorf("hosted tool %s", body.Tools[1])
			}
		})
	}
}

// TestStrictSchemaUnchanged: converting to strict form leaves the request's schema as it was.
func TestStrictSchemaUnchanged(t *testing.T) {
	srv, _ := newServer(t, 200, nil, "application/json", okResponses)
	s := mustSchema(t, `{"type":"object","properties":{"a":{"type":"string"}}}`)
	before, _ := json.Marshal(s)
	p := openai.New(openai.Options{BaseURL: srv.URL + "/v1"})
	if _, err := p.Call(context.Background(), &weft.Request{Model: noStream(), Options: map[string]any{"useResponsesApi": true, "strictTools": true},
		Tools: []weft.ToolSpec{{Name: "t", Parameters: s}}, Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "q"}}}, nil); err != nil {
		t.Fatal(err)
	}
	after, _ := json.Marshal(s)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("schema changed: %s -> %s", before, after)
	}
}
