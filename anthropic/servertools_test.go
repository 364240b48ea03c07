package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// Wire blocks of a reply that searched the web, ran code and failed to fetch a page, shaped as
// the Messages API sends them.
const (
	searchUse    = `{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"weather Paris"}}`
	searchResult = `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[` +
		`{"type":"web_search_result","title":"Paris forecast","url":"https://weather.example/paris","encrypted_content":"EqgfCioIARgBIiQ3","page_age":"1 day ago"},` +
		`{"type":"web_search_result","title":"Météo Paris","url":"https://meteo.example/p","encrypted_content":"Eo8BCioIAhgBIiQ"}]}`
	codeUse    = `{"type":"server_tool_use","id":"srvtoolu_02","name":"code_execution","input":{"code":"print(6*7)"}}`
	codeResult = `{"type":"code_execution_tool_result","tool_use_id":"srvtoolu_02","content":{"type":"code_execution_result","stdout":"42\n","stderr":"","return_code":0,"content":[]}}`
	fetchUse   = `{"type":"server_tool_use","id":"srvtoolu_03","name":"web_fetch","input":{"url":"https://x.example/a"}}`
	fetchError = `{"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_03","content":{"type":"web_fetch_tool_result_error","error_code":"url_not_accessible"}}`
)

// serverReply is the content of a reply with three server tool calls between texts.
var serverReply = []string{
	`{"type":"text","text":"Let me check. "}`, searchUse, searchResult,
	`{"type":"text","text":"It is sunny.","citations":[{"type":"web_search_result_location","url":"https://weather.example/paris","title":"Paris forecast","encrypted_index":"Eo8B","cited_text":"sunny"}]}`,
	codeUse, codeResult, fetchUse, fetchError,
}

// messageJSON is a non-streaming reply with the given content blocks.
func messageJSON(stop string, blocks ...string) string {
	return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[` + strings.Join(blocks, ",") +
		`],"stop_reason":"` + stop + `","usage":{"input_tokens":50,"output_tokens":20,"server_tool_use":{"web_search_requests":1}}}`
}

// streamEvents encodes content blocks as a Messages event stream the way Anthropic streams them:
// text as text deltas, tool_use and server_tool_use with an empty input followed by two
// input_json_delta pieces, result blocks whole in content_block_start.
func streamEvents(t *testing.T, stop string, blocks ...string) []string {
	t.Helper()
	evs := []string{`{"type":"message_start","message":{"type":"message","model":"claude-test","content":[],"usage":{"input_tokens":50,"output_tokens":1}}}`}
	for i, raw := range blocks {
		var b map[string]any
		if err := json.Unmarshal([]byte(raw), &b); err != nil {
			t.Fatalf("fixture %s: %v", raw, err)
		}
		idx := js(i)
		switch b["type"] {
		case "text":
			evs = append(evs, `{"type":"content_block_start","index":`+idx+`,"content_block":{"type":"text","text":""}}`,
				`{"type":"content_block_delta","index":`+idx+`,"delta":{"type":"text_delta","text":`+js(b["text"])+`}}`)
		case "tool_use", "server_tool_use":
			input := js(b["input"])
			b["input"] = map[string]any{}
			half := len(input) / 2
			evs = append(evs, `{"type":"content_block_start","index":`+idx+`,"content_block":`+js(b)+`}`,
				`{"type":"content_block_delta","index":`+idx+`,"delta":{"type":"input_json_delta","partial_json":`+js(input[:half])+`}}`,
				`{"type":"content_block_delta","index":`+idx+`,"delta":{"type":"input_json_delta","partial_json":`+js(input[half:])+`}}`)
		default:
			evs = append(evs, `{"type":"content_block_start","index":`+idx+`,"content_block":`+raw+`}`)
		}
		evs = append(evs, `{"type":"content_block_stop","index":`+idx+`}`)
	}
	return append(evs, `{"type":"message_delta","delta":{"stop_reason":"`+stop+`"},"usage":{"output_tokens":20}}`, `{"type":"message_stop"}`)
}

// replyServer answers with the blocks, streamed or not.
func replyServer(t *testing.T, stream bool, stop string, blocks ...string) (string, func() ([]byte, http.Header)) {
	var h func(w http.ResponseWriter, _ []byte)
	if stream {
		h = sseReply(streamEvents(t, stop, blocks...)...)
	} else {
		h = jsonReply(messageJSON(stop, blocks...))
	}
	srv, last := server(t, h)
	return srv.URL + "/v1", last
}

// serverTools are the three server tools offered to the model.
func serverTools() []weft.ToolSpec {
	return []weft.ToolSpec{{Name: "web_search", Provider: "anthropic"}, {Name: "code_execution", Provider: "anthropic"},
		{Name: "web_fetch", Provider: "anthropic"}}
}

func sameJSON(a, b []byte) bool {
	return js(decodeAny(a)) == js(decodeAny(b)) && json.Valid(a) && json.Valid(b)
}

func TestServerToolRequest(t *testing.T) {
	cases := []struct {
		name      string
		mod       func(r *weft.Request)
		wantTools string // JSON; "" = no tools key
		absent    []string
	}{
		{"known_tools_with_options", func(r *weft.Request) {
			r.Tools = append(serverTools(), weft.ToolSpec{Name: "get_time", Description: "Time"})
			r.Options = map[string]any{"web_search": map[string]any{"max_uses": 3, "allowed_domains": []any{"example.com"}, "name": "renamed"}}
			r.Model.ProviderOptions = map[string]any{"web_fetch": map[string]any{"max_content_tokens": 5000}}
		}, `[{"type":"web_search_20250305","name":"web_search","max_uses":3,"allowed_domains":["example.com"]},` +
			`{"type":"code_execution_20250522","name":"code_execution"},` +
			`{"type":"web_fetch_20250910","name":"web_fetch","max_content_tokens":5000},` +
			`{"name":"get_time","description":"Time","input_schema":{"type":"object","properties":{}}}]`, []string{"web_search", "web_fetch"}},
		{"other_and_dated_names", func(r *weft.Request) {
			r.Tools = []weft.ToolSpec{{Name: "memory", Provider: "anthropic"}, {Name: "web_search_20260209", Provider: "anthropic"}}
		}, `[{"type":"memory","name":"memory"},{"type":"web_search_20260209","name":"web_search"}]`, nil},
		{"option_picks_a_newer_version", func(r *weft.Request) {
			r.Tools = []weft.ToolSpec{{Name: "code_execution", Provider: "anthropic"}}
			r.Options = map[string]any{"code_execution": map[string]any{"type": "code_execution_20250825"}}
		}, `[{"type":"code_execution_20250825","name":"code_execution"}]`, []string{"code_execution"}},
		{"custom_provider_name", func(r *weft.Request) {
			r.Model.Provider = "corp-claude"
			r.Tools = []weft.ToolSpec{{Name: "web_search", Provider: "corp-claude"}}
		}, `[{"type":"web_search_20250305","name":"web_search"}]`, nil},
		{"other_providers_tools_skipped", func(r *weft.Request) {
			r.Tools = []weft.ToolSpec{{Name: "web_search", Provider: "openai"}, {Name: "google_search", Provider: "google"}}
			r.Options = map[string]any{"temperature": 0.2}
		}, ``, []string{"tool_choice"}},
		{"tool_choice_none_sends_none", func(r *weft.Request) {
			r.Tools = serverTools()
			r.ToolChoice = weft.ToolChoiceNone
			r.Options = map[string]any{"web_search": map[string]any{"max_uses": 1}}
		}, ``, []string{"web_search", "tool_choice"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, last := server(t, jsonReply(okMessage))
			req := baseReq(false)
			tc.mod(req)
			if _, err := New(Options{BaseURL: srv.URL + "/v1"}).Call(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			body, _ := last()
			m := decode(t, body)
			if tc.wantTools == "" {
				if _, ok := m["tools"]; ok {
					t.Errorf("tools sent: %s", js(m["tools"]))
				}
			} else if got := js(m["tools"]); got != js(decodeAny([]byte(tc.wantTools))) {
				t.Errorf("tools\n got  %s\n want %s", got, tc.wantTools)
			}
			for _, k := range tc.absent {
				if _, ok := m[k]; ok {
					t.Errorf("%s in the body: %s", k, body)
				}
			}
		})
	}
}

func TestStrictTools(t *testing.T) {
	params := `{"type":"object","properties":{"city":{"type":"string"},"opts":{"type":"object","properties":{"unit":{"type":"string"}}},` +
		`"tags":{"type":"object","additionalProperties":{"type":"string"}}},"required":["city"]}`
	closed := `{"type":"object","properties":{"city":{"type":"string"},"opts":{"type":"object","properties":{"unit":{"type":"string"}},"additionalProperties":false},` +
		`"tags":{"type":"object","additionalProperties":{"type":"string"}}},"required":["city"],"additionalProperties":false}`
	cases := []struct {
		name   string
		opts   map[string]any // request options
		model  map[string]any // the model's providerOptions
		strict bool
	}{
		{"request_option", map[string]any{"strictTools": true}, nil, true},
		{"provider_option", nil, map[string]any{"strictTools": true}, true},
		{"string_option", map[string]any{"strictTools": "true"}, nil, true},
		{"false", map[string]any{"strictTools": false}, nil, false},
		{"absent", nil, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, last := server(t, jsonReply(okMessage))
			req := baseReq(false)
			req.Tools = []weft.ToolSpec{{Name: "get_weather", Parameters: schemaOf(t, params)}, {Name: "get_time"},
				{Name: "web_search", Provider: "anthropic"}}
			req.Options, req.Model.ProviderOptions = tc.opts, tc.model
			if _, err := New(Options{BaseURL: srv.URL + "/v1"}).Call(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			body, _ := last()
			m := decode(t, body)
			want := `[{"name":"get_weather","input_schema":` + params + `},{"name":"get_time","input_schema":{"type":"object","properties":{}}},` +
				`{"type":"web_search_20250305","name":"web_search"}]`
			if tc.strict {
				want = `[{"name":"get_weather","input_schema":` + closed + `,"strict":true},` +
					`{"name":"get_time","input_schema":{"type":"object","properties":{},"additionalProperties":false},"strict":true},` +
					`{"type":"web_search_20250305","name":"web_search"}]`
			}
			if got := js(m["tools"]); got != js(decodeAny([]byte(want))) {
				t.Errorf("tools\n got  %s\n want %s", got, want)
			}
			if strings.Contains(string(body), "strictTools") {
				t.Errorf("strictTools reached the body: %s", body)
			}
		})
	}
}

func schemaOf(t *testing.T, s string) *weft.Schema {
	t.Helper()
	sc := &weft.Schema{}
	if err := sc.UnmarshalJSON([]byte(s)); err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestServerToolResponse(t *testing.T) {
	wantCalls := []weft.ToolCall{
		{ID: "srvtoolu_01", Name: "web_search", Arguments: `{"query":"weather Paris"}`},
		{ID: "srvtoolu_02", Name: "code_execution", Arguments: `{"code":"print(6*7)"}`},
		{ID: "srvtoolu_03", Name: "web_fetch", Arguments: `{"url":"https://x.example/a"}`},
	}
	wantResults := []struct {
		status  weft.ToolStatus
		content string
		raw     string
	}{
		{weft.ToolSuccess, "Web search: weather Paris\n1. Paris forecast\n   https://weather.example/paris\n2. Météo Paris\n   https://meteo.example/p",
			`[` + searchUse + `,` + searchResult + `]`},
		{weft.ToolSuccess, "return code: 0\nstdout:\n42", `[` + codeUse + `,` + codeResult + `]`},
		{weft.ToolError, "web_fetch failed: url_not_accessible", `[` + fetchUse + `,` + fetchError + `]`},
	}
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "message", true: "stream"}[stream], func(t *testing.T) {
			base, _ := replyServer(t, stream, "end_turn", serverReply...)
			req := baseReq(stream)
			req.Tools = serverTools()
			var chunks strings.Builder
			resp, err := New(Options{BaseURL: base}).Call(context.Background(), req, func(c weft.Chunk) { chunks.WriteString(c.Text) })
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "Let me check. It is sunny." || resp.FinishReason != "stop" {
				t.Errorf("text %q finish %q", resp.Text, resp.FinishReason)
			}
			if stream && chunks.String() != resp.Text {
				t.Errorf("streamed %q", chunks.String())
			}
			if js(resp.ToolCalls) != js(wantCalls) {
				t.Errorf("ToolCalls\n got  %s\n want %s", js(resp.ToolCalls), js(wantCalls))
			}
			if len(resp.ProviderResults) != len(wantResults) {
				t.Fatalf("ProviderResults = %s", js(resp.ProviderResults))
			}
			for i, w := range wantResults {
				r := resp.ProviderResults[i]
				if r.CallID != wantCalls[i].ID || r.Status != w.status || r.Content != w.content {
					t.Errorf("result %d = %+v\nwant status %s content %q", i, r, w.status, w.content)
				}
				if !sameJSON(r.Raw, []byte(w.raw)) {
					t.Errorf("result %d Raw\n got  %s\n want %s", i, r.Raw, w.raw)
				}
			}
			if !strings.Contains(string(resp.ResponseBody), "web_search_tool_result") {
				t.Errorf("ResponseBody lacks the result blocks: %s", resp.ResponseBody)
			}
		})
	}
}

func TestServerToolResponseEdgeCases(t *testing.T) {
	cases := []struct {
		name   string
		stop   string
		tools  []weft.ToolSpec
		blocks []string
		check  func(t *testing.T, r *weft.Response)
	}{
		{"pause_turn_is_stop", "pause_turn", serverTools(), []string{searchUse, searchResult}, func(t *testing.T, r *weft.Response) {
			if r.FinishReason != "stop" || len(r.ToolCalls) != 1 || len(r.ProviderResults) != 1 || r.ProviderResults[0].Status != weft.ToolSuccess {
				t.Errorf("resp %+v", r)
			}
		}},
		{"mixed_with_client_tool", "tool_use", append(serverTools(), weft.ToolSpec{Name: "fs.read"}), []string{searchUse, searchResult,
			`{"type":"tool_use","id":"toolu_9","name":"fs_read","input":{"path":"/a"}}`}, func(t *testing.T, r *weft.Response) {
			want := `[{"id":"srvtoolu_01","name":"web_search","arguments":"{\"query\":\"weather Paris\"}"},{"id":"toolu_9","name":"fs.read","arguments":"{\"path\":\"/a\"}"}]`
			if js(r.ToolCalls) != want || r.FinishReason != "tool_calls" || len(r.ProviderResults) != 1 || r.ProviderResults[0].CallID != "srvtoolu_01" {
				t.Errorf("calls %s results %s finish %q", js(r.ToolCalls), js(r.ProviderResults), r.FinishReason)
			}
		}},
		{"call_without_result", "end_turn", serverTools(), []string{searchUse, `{"type":"text","text":"cut"}`}, func(t *testing.T, r *weft.Response) {
			if len(r.ProviderResults) != 1 || r.ProviderResults[0].Status != weft.ToolError || r.ProviderResults[0].Raw != nil ||
				!strings.Contains(r.ProviderResults[0].Content, "no result") {
				t.Errorf("results %s", js(r.ProviderResults))
			}
		}},
		{"orphan_result_and_unknown_blocks_ignored", "end_turn", serverTools(), []string{
			`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_zz","content":[]}`,
			`{"type":"container_upload","file_id":"f1"}`, `{"type":"brand_new_block","x":{"y":[1]}}`,
			`{"type":"text","text":"ok"}`}, func(t *testing.T, r *weft.Response) {
			if r.Text != "ok" || len(r.ToolCalls) != 0 || len(r.ProviderResults) != 0 {
				t.Errorf("resp %+v", r)
			}
		}},
		{"call_without_id_ignored", "end_turn", serverTools(), []string{`{"type":"server_tool_use","name":"web_search","input":{}}`,
			`{"type":"text","text":"ok"}`}, func(t *testing.T, r *weft.Response) {
			if len(r.ToolCalls) != 0 || len(r.ProviderResults) != 0 {
				t.Errorf("resp %+v", r)
			}
		}},
		{"odd_result_content", "end_turn", serverTools(), []string{codeUse,
			`{"type":"code_execution_tool_result","tool_use_id":"srvtoolu_02","content":{"type":"mystery","data":[1,2]}}`, fetchUse,
			`{"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_03","content":42}`}, func(t *testing.T, r *weft.Response) {
			if len(r.ProviderResults) != 2 || r.ProviderResults[0].Content != `{"type":"mystery","data":[1,2]}` || r.ProviderResults[1].Content != "42" ||
				r.ProviderResults[0].Status != weft.ToolSuccess {
				t.Errorf("results %s", js(r.ProviderResults))
			}
		}},
		{"web_fetch_document_and_search_error", "end_turn", serverTools(), []string{fetchUse,
			`{"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_03","content":{"type":"web_fetch_result","url":"https://x.example/a","retrieved_at":"2025-09-10T00:00:00Z",` +
				`"content":{"type":"document","title":"A page","source":{"type":"text","media_type":"text/plain","data":"Hello page."}}}}`,
			searchUse, `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}}`},
			func(t *testing.T, r *weft.Response) {
				if len(r.ProviderResults) != 2 || r.ProviderResults[0].Content != "Fetched https://x.example/a\nTitle: A page\n\nHello page." ||
					r.ProviderResults[1].Status != weft.ToolError || r.ProviderResults[1].Content != "web_search failed: max_uses_exceeded" {
					t.Errorf("results %s", js(r.ProviderResults))
				}
			}},
		{"newer_code_execution_sub_tools", "end_turn", []weft.ToolSpec{{Name: "code_execution_20250825", Provider: "anthropic"}}, []string{
			`{"type":"server_tool_use","id":"srvtoolu_b","name":"bash_code_execution","input":{"command":"ls"}}`,
			`{"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_b","content":{"type":"bash_code_execution_result","stdout":"a.txt","stderr":"warn","return_code":1,"content":[]}}`},
			func(t *testing.T, r *weft.Response) {
				if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "code_execution_20250825" || len(r.ProviderResults) != 1 ||
					r.ProviderResults[0].Content != "return code: 1\nstdout:\na.txt\nstderr:\nwarn" {
					t.Errorf("calls %s results %s", js(r.ToolCalls), js(r.ProviderResults))
				}
			}},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: "/stream"}[stream], func(t *testing.T) {
				base, _ := replyServer(t, stream, tc.stop, tc.blocks...)
				req := baseReq(stream)
				req.Tools = tc.tools
				resp, err := New(Options{BaseURL: base}).Call(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, resp)
			})
		}
	}
}

// A stream cut after a server tool call is an error, never a half-paired reply.
func TestServerToolTruncatedStream(t *testing.T) {
	evs := streamEvents(t, "end_turn", searchUse, searchResult)
	srv, _ := server(t, sseReply(evs[:4]...))
	_, err := New(Options{BaseURL: srv.URL + "/v1"}).Call(context.Background(), baseReq(true), nil)
	var pe *weft.ProviderError
	if !errors.As(err, &pe) || pe.Type != weft.ErrServer || !strings.Contains(pe.Message, "truncated") {
		t.Fatalf("err = %v", err)
	}
}

// A streamed server call whose input does not parse keeps its arguments verbatim but no Raw: its
// blocks could not be sent back.
func TestServerToolStreamBadInput(t *testing.T) {
	srv, _ := server(t, sseReply(
		`{"type":"message_start","message":{"type":"message","model":"claude-test","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":`+searchResult+`}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`,
		`{"type":"message_stop"}`))
	req := baseReq(true)
	req.Tools = serverTools()
	resp, err := New(Options{BaseURL: srv.URL + "/v1"}).Call(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Arguments != `{"query":` || len(resp.ProviderResults) != 1 ||
		resp.ProviderResults[0].Raw != nil || resp.ProviderResults[0].Status != weft.ToolSuccess {
		t.Errorf("calls %s results %s", js(resp.ToolCalls), js(resp.ProviderResults))
	}
}

func TestServerToolReplay(t *testing.T) {
	raw := json.RawMessage(`[` + searchUse + `,` + searchResult + `]`)
	var decoded any
	_ = json.Unmarshal(raw, &decoded)
	history := func(md map[string]any) []weft.LLMMessage {
		return []weft.LLMMessage{
			{Role: weft.RoleUser, Content: "Weather in Paris? And the time."},
			{Role: weft.RoleAssistant, Content: "It is sunny.", ToolCalls: []weft.ToolCall{
				{ID: "srvtoolu_01", Name: "web_search", Arguments: `{"query":"weather Paris"}`},
				{ID: "toolu_2", Name: "get_time", Arguments: `{}`}}},
			{Role: weft.RoleTool, ToolCallID: "srvtoolu_01", Name: "web_search", Content: "Web search: weather Paris\n1. Paris forecast", ToolStatus: weft.ToolSuccess, Metadata: md},
			{Role: weft.RoleTool, ToolCallID: "toolu_2", Name: "get_time", Content: "12:00", ToolStatus: weft.ToolSuccess},
		}
	}
	native := `[{"role":"user","content":"Weather in Paris? And the time."},` +
		`{"role":"assistant","content":[` + searchUse + `,` + searchResult + `,{"type":"text","text":"It is sunny."},{"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"12:00"}]}]`
	pair := `[{"role":"user","content":"Weather in Paris? And the time."},` +
		`{"role":"assistant","content":[{"type":"text","text":"It is sunny."},{"type":"tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"weather Paris"}},{"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"srvtoolu_01","content":"Web search: weather Paris\n1. Paris forecast"},{"type":"tool_result","tool_use_id":"toolu_2","content":"12:00"}]}]`
	cases := []struct {
		name string
		md   map[string]any
		want string
	}{
		{"raw_message", map[string]any{"provider_raw": raw}, native},
		{"decoded_after_store_round_trip", map[string]any{"provider_raw": decoded}, native},
		{"json_string", map[string]any{"provider_raw": string(raw)}, native},
		{"absent_other_provider", map[string]any{"provider_executed": true}, pair},
		{"other_providers_raw", map[string]any{"provider_raw": json.RawMessage(`{"type":"web_search_call","id":"ws_1","status":"completed"}`)}, pair},
		{"other_providers_list", map[string]any{"provider_raw": json.RawMessage(`[{"executableCode":{"language":"PYTHON","code":"1"}},{"codeExecutionResult":{"outcome":"OUTCOME_OK"}}]`)}, pair},
		{"result_for_another_call", map[string]any{"provider_raw": json.RawMessage(`[` + searchUse + `,` + codeResult + `]`)}, pair},
		{"use_without_result", map[string]any{"provider_raw": json.RawMessage(`[` + searchUse + `]`)}, pair},
		{"damaged", map[string]any{"provider_raw": json.RawMessage(`[` + searchUse + `,`)}, pair},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, last := server(t, jsonReply(okMessage))
			req := baseReq(false)
			req.Tools = append(serverTools(), weft.ToolSpec{Name: "get_time"})
			req.Messages = append([]weft.LLMMessage{{Role: weft.RoleSystem, Content: "Be brief."}}, history(tc.md)...)
			if _, err := New(Options{BaseURL: srv.URL + "/v1"}).Call(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			body, _ := last()
			if got := js(decode(t, body)["messages"]); got != js(decodeAny([]byte(tc.want))) {
				t.Errorf("messages\n got  %s\n want %s", got, tc.want)
			}
		})
	}
}

// A reply's server blocks, stored the way the engine stores them, come back byte for byte in the
// next request, after the thinking block that preceded them.
func TestServerToolRoundTrip(t *testing.T) {
	const thinking = `{"type":"thinking","thinking":"Search first.","signature":"EqQBsig"}`
	blocks := append([]string{thinking}, serverReply...)
	for _, stream := range []bool{false, true} {
		base, last := replyServer(t, stream, "end_turn", blocks...)
		p := New(Options{BaseURL: base})
		req := baseReq(stream)
		req.Tools = serverTools()
		req.Reasoning = &weft.Reasoning{Effort: "low"}
		resp, err := p.Call(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Messages = append(req.Messages, weft.LLMMessage{Role: weft.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls,
			Metadata: map[string]any{"reasoning_blocks": resp.ReasoningBlocks}})
		for _, r := range resp.ProviderResults {
			// Through JSON, as a store would keep the metadata.
			var md map[string]any
			b, _ := json.Marshal(map[string]any{"provider_executed": true, "provider_raw": r.Raw})
			_ = json.Unmarshal(b, &md)
			req.Messages = append(req.Messages, weft.LLMMessage{Role: weft.RoleTool, ToolCallID: r.CallID, Content: r.Content, ToolStatus: r.Status, Metadata: md})
		}
		req.Messages = append(req.Messages, weft.LLMMessage{Role: weft.RoleUser, Content: "Thanks"})
		if _, err := p.Call(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		body, _ := last()
		msgs := decode(t, body)["messages"].([]any)
		if len(msgs) != 3 {
			t.Fatalf("stream %v: messages %s", stream, js(msgs))
		}
		want := `{"role":"assistant","content":[` + thinking + `,` + searchUse + `,` + searchResult + `,` + codeUse + `,` + codeResult + `,` +
			fetchUse + `,` + fetchError + `,{"type":"text","text":"Let me check. It is sunny."}]}`
		if js(msgs[1]) != js(decodeAny([]byte(want))) {
			t.Errorf("stream %v: assistant\n got  %s\n want %s", stream, js(msgs[1]), want)
		}
		if js(msgs[2]) != `{"content":"Thanks","role":"user"}` {
			t.Errorf("stream %v: user %s", stream, js(msgs[2]))
		}
	}
}

// FuzzParseMessage feeds arbitrary replies and provider_raw values to the parsers: they must
// return a response or an error, never panic.
func FuzzParseMessage(f *testing.F) {
	f.Add([]byte(messageJSON("end_turn", serverReply...)))
	f.Add([]byte(messageJSON("pause_turn", searchUse, `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":null}`)))
	f.Add([]byte(`[` + searchUse + `,` + searchResult + `]`))
	f.Add([]byte(`{"type":"message","content":[{"type":"code_execution_tool_result","tool_use_id":"x","content":{"stdout":7}}]}`))
	names := newNameMap(&weft.Request{Tools: serverTools()})
	f.Fuzz(func(t *testing.T, data []byte) {
		if resp, err := parseMessage(data, names); err == nil {
			for _, r := range resp.ProviderResults {
				if r.Raw != nil && !json.Valid(r.Raw) {
					t.Fatalf("invalid Raw %s", r.Raw)
				}
			}
		}
		_ = providerRaw(map[string]any{"provider_raw": json.RawMessage(data)})
	})
}
