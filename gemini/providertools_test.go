package gemini

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// Parts and metadata of a reply that ran code and searched the web, shaped as Gemini sends them.
const (
	codePart    = `{"executableCode":{"language":"PYTHON","code":"print(6*7)"},"thoughtSignature":"sigCode"}`
	resultPart  = `{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"42\n"}}`
	groundingMD = `{"webSearchQueries":["weather Paris","Paris forecast"],"searchEntryPoint":{"renderedContent":"<div>chips</div>"},` +
		`"groundingChunks":[{"web":{"uri":"https://vertexaisearch.example/r1","title":"weather.example"}},{"web":{"uri":"https://vertexaisearch.example/r2","title":"meteo.example"}}],` +
		`"groundingSupports":[{"segment":{"startIndex":0,"endIndex":12,"text":"It is sunny."},"groundingChunkIndices":[0]}]}`
	urlContextMD = `{"urlMetadata":[{"retrievedUrl":"https://x.example/a","urlRetrievalStatus":"URL_RETRIEVAL_STATUS_SUCCESS"},` +
		`{"retrievedUrl":"https://x.example/b","urlRetrievalStatus":"URL_RETRIEVAL_STATUS_ERROR"}]}`
)

// chunkJSON is one GenerateContentResponse with the parts, the candidate's extra fields (e.g.
// `"groundingMetadata":{...}`) and a finish reason.
func chunkJSON(parts []string, extra, finish string) string {
	c := `{"content":{"role":"model","parts":[` + strings.Join(parts, ",") + `]}`
	if extra != "" {
		c += "," + extra
	}
	if finish != "" {
		c += `,"finishReason":"` + finish + `"`
	}
	return `{"candidates":[` + c + `,"index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":5,"toolUsePromptTokenCount":3},"modelVersion":"gemini-x","responseId":"Rsp-1.a"}`
}

// replyHandler answers with the reply in one body, or streamed one part per event (extra and the
// finish reason in the last event).
func replyHandler(stream bool, parts []string, extra string) func(w http.ResponseWriter, r *http.Request) {
	if !stream {
		return jsonReply(200, chunkJSON(parts, extra, "STOP"))
	}
	var evs []string
	for i, p := range parts {
		if i == len(parts)-1 {
			evs = append(evs, chunkJSON([]string{p}, extra, "STOP"))
		} else {
			evs = append(evs, chunkJSON([]string{p}, "", ""))
		}
	}
	if len(parts) == 0 {
		evs = append(evs, chunkJSON(nil, extra, "STOP"))
	}
	return sseReply(evs...)
}

func builtinTools() []weft.ToolSpec {
	return []weft.ToolSpec{{Name: "google_search", Provider: "google"}, {Name: "code_execution", Provider: "google"},
		{Name: "url_context", Provider: "google"}}
}

func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && js(x) == js(y)
}

func TestBuiltinToolsRequest(t *testing.T) {
	cases := []struct {
		name       string
		mod        func(r *weft.Request)
		tools      string // JSON; "" = no tools key
		toolConfig string // JSON; "" = no toolConfig key
		absent     []string
	}{
		{"with_function_tool", func(r *weft.Request) {
			r.Tools = append(builtinTools(), weft.ToolSpec{Name: "get_time", Description: "Time"})
		}, `[{"functionDeclarations":[{"name":"get_time","description":"Time"}]},{"googleSearch":{}},{"codeExecution":{}},{"urlContext":{}}]`,
			`{"functionCallingConfig":{"mode":"AUTO"}}`, nil},
		{"only_builtins", func(r *weft.Request) { r.Tools = builtinTools() },
			`[{"googleSearch":{}},{"codeExecution":{}},{"urlContext":{}}]`, "", nil},
		{"alias_and_settings", func(r *weft.Request) {
			r.Tools = []weft.ToolSpec{{Name: "web_search", Provider: "google"}, {Name: "google_search", Provider: "google"}}
			r.Options = map[string]any{"web_search": map[string]any{"timeRangeFilter": map[string]any{"startTime": "2025-01-01T00:00:00Z"}}, "temperature": 0.1}
		}, `[{"googleSearch":{"timeRangeFilter":{"startTime":"2025-01-01T00:00:00Z"}}}]`, "", []string{"web_search", "google_search"}},
		{"other_names_and_provider_spellings", func(r *weft.Request) {
			r.Model.Provider = "corp-gemini"
			r.Tools = []weft.ToolSpec{{Name: "google_maps", Provider: "gemini"}, {Name: "url_context", Provider: "corp-gemini"},
				{Name: "web_search", Provider: "anthropic"}, {Name: "code_interpreter", Provider: "openai"}}
			r.Model.ProviderOptions = map[string]any{"google_maps": map[string]any{"enableWidget": true}}
		}, `[{"googleMaps":{"enableWidget":true}},{"urlContext":{}}]`, "", nil},
		{"tool_choice_none", func(r *weft.Request) {
			r.Tools = append(builtinTools(), weft.ToolSpec{Name: "f"})
			r.ToolChoice = weft.ToolChoiceNone
			r.Options = map[string]any{"code_execution": map[string]any{}}
		}, `[{"functionDeclarations":[{"name":"f"}]}]`, `{"functionCallingConfig":{"mode":"NONE"}}`, []string{"code_execution"}},
		{"strict_tools_ignored", func(r *weft.Request) {
			r.Tools = []weft.ToolSpec{{Name: "f", Parameters: schema(t, `{"type":"object","properties":{"a":{"type":"string"}}}`)}}
			r.Options = map[string]any{"strictTools": true}
		}, `[{"functionDeclarations":[{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}]}]`,
			`{"functionCallingConfig":{"mode":"AUTO"}}`, []string{"strictTools"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, last := server(t, jsonReply(200, okReply))
			req := baseReq(false)
			tc.mod(req)
			if _, err := New(Options{BaseURL: srv.URL}).Call(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			_, body := last()
			b := decode(t, body)
			for key, want := range map[string]string{"tools": tc.tools, "toolConfig": tc.toolConfig} {
				got, ok := b[key]
				switch {
				case want == "" && ok:
					t.Errorf("%s sent: %s", key, js(got))
				case want != "" && !sameJSON(js(got), want):
					t.Errorf("%s\n got  %s\n want %s", key, js(got), want)
				}
			}
			for _, k := range tc.absent {
				if strings.Contains(string(body), `"`+k+`"`) {
					t.Errorf("%s in the body: %s", k, body)
				}
			}
		})
	}
}

func TestCodeExecutionResponse(t *testing.T) {
	const failed = `{"codeExecutionResult":{"outcome":"OUTCOME_FAILED","output":"Traceback: ZeroDivisionError\n"}}`
	cases := []struct {
		name    string
		tools   []weft.ToolSpec
		parts   []string
		calls   string
		results []weft.ProviderToolResult
		finish  string
		text    string
		sigs    string
	}{
		{"ok", builtinTools(), []string{`{"text":"Let me compute. "}`, codePart, resultPart, `{"text":"It is 42."}`},
			`[{"id":"gemini_Rsp-1a_code_1","name":"code_execution","arguments":"{\"language\":\"PYTHON\",\"code\":\"print(6*7)\"}"}]`,
			[]weft.ProviderToolResult{{CallID: "gemini_Rsp-1a_code_1", Status: weft.ToolSuccess, Content: "42", Raw: json.RawMessage(`[` + codePart + `,` + resultPart + `]`)}},
			"stop", "Let me compute. It is 42.", `[{"kind":"providerCall","thoughtSignature":""}]`},
		{"failed_then_function_call", []weft.ToolSpec{{Name: "code_execution", Provider: "google"}, {Name: "f"}},
			[]string{`{"executableCode":{"language":"PYTHON","code":"1/0"}}`, failed, `{"functionCall":{"name":"f","args":{}},"thoughtSignature":"sigF"}`},
			`[{"id":"gemini_Rsp-1a_code_1","name":"code_execution","arguments":"{\"language\":\"PYTHON\",\"code\":\"1/0\"}"},{"id":"","name":"f","arguments":"{}"}]`,
			[]weft.ProviderToolResult{{CallID: "gemini_Rsp-1a_code_1", Status: weft.ToolError, Content: "OUTCOME_FAILED\nTraceback: ZeroDivisionError",
				Raw: json.RawMessage(`[{"executableCode":{"language":"PYTHON","code":"1/0"}},` + failed + `]`)}},
			"tool_calls", "", `[{"kind":"providerCall","thoughtSignature":""},{"kind":"functionCall","thoughtSignature":"sigF"}]`},
		{"paired_by_id", builtinTools(), []string{
			`{"executableCode":{"id":"c1","language":"PYTHON","code":"a"}}`, `{"executableCode":{"id":"c2","language":"PYTHON","code":"b"}}`,
			`{"codeExecutionResult":{"id":"c1","outcome":"OUTCOME_OK","output":"A"}}`, `{"codeExecutionResult":{"id":"c2","outcome":"OUTCOME_OK"}}`},
			`[{"id":"gemini_Rsp-1a_code_1","name":"code_execution","arguments":"{\"id\":\"c1\",\"language\":\"PYTHON\",\"code\":\"a\"}"},` +
				`{"id":"gemini_Rsp-1a_code_2","name":"code_execution","arguments":"{\"id\":\"c2\",\"language\":\"PYTHON\",\"code\":\"b\"}"}]`,
			[]weft.ProviderToolResult{
				{CallID: "gemini_Rsp-1a_code_1", Status: weft.ToolSuccess, Content: "A", Raw: json.RawMessage(`[{"executableCode":{"id":"c1","language":"PYTHON","code":"a"}},{"codeExecutionResult":{"id":"c1","outcome":"OUTCOME_OK","output":"A"}}]`)},
				{CallID: "gemini_Rsp-1a_code_2", Status: weft.ToolSuccess, Content: "(no output)", Raw: json.RawMessage(`[{"executableCode":{"id":"c2","language":"PYTHON","code":"b"}},{"codeExecutionResult":{"id":"c2","outcome":"OUTCOME_OK"}}]`)}},
			"stop", "", ""},
		{"code_without_result_and_result_without_code", builtinTools(), []string{
			`{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"orphan"}}`, `{"executableCode":{"language":"PYTHON","code":"x"}}`, `{"text":"cut"}`},
			`[{"id":"gemini_Rsp-1a_code_1","name":"code_execution","arguments":"{\"language\":\"PYTHON\",\"code\":\"x\"}"}]`,
			[]weft.ProviderToolResult{{CallID: "gemini_Rsp-1a_code_1", Status: weft.ToolError, Content: "gemini: the reply carries no result for this code execution"}},
			"stop", "cut", ""},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: "/stream"}[stream], func(t *testing.T) {
				srv, _ := server(t, replyHandler(stream, tc.parts, ""))
				req := baseReq(stream)
				req.Tools = tc.tools
				resp, err := New(Options{BaseURL: srv.URL}).Call(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				if js(resp.ToolCalls) != tc.calls {
					t.Errorf("ToolCalls\n got  %s\n want %s", js(resp.ToolCalls), tc.calls)
				}
				if len(resp.ProviderResults) != len(tc.results) {
					t.Fatalf("ProviderResults = %s", js(resp.ProviderResults))
				}
				for i, w := range tc.results {
					r := resp.ProviderResults[i]
					// Raw is the parts byte for byte as Gemini sent them.
					if r.CallID != w.CallID || r.Status != w.Status || r.Content != w.Content || string(r.Raw) != string(w.Raw) {
						t.Errorf("result %d\n got  %+v raw %s\n want %+v raw %s", i, r, r.Raw, w, w.Raw)
					}
				}
				if resp.FinishReason != tc.finish || resp.Text != tc.text || string(resp.ReasoningBlocks) != tc.sigs {
					t.Errorf("finish %q text %q sigs %s", resp.FinishReason, resp.Text, resp.ReasoningBlocks)
				}
				if len(tc.results) > 0 && tc.results[0].Raw != nil && !strings.Contains(string(resp.ResponseBody), "executableCode") {
					t.Errorf("ResponseBody lacks the code parts: %s", resp.ResponseBody)
				}
			})
		}
	}
}

func TestGroundingResponse(t *testing.T) {
	cases := []struct {
		name    string
		tools   []weft.ToolSpec
		extra   string
		calls   string
		results []weft.ProviderToolResult
	}{
		{"search_and_url_context", []weft.ToolSpec{{Name: "web_search", Provider: "google"}, {Name: "url_context", Provider: "google"}},
			`"groundingMetadata":` + groundingMD + `,"urlContextMetadata":` + urlContextMD,
			`[{"id":"gemini_Rsp-1a_search","name":"web_search","arguments":"{\"queries\":[\"weather Paris\",\"Paris forecast\"]}"},` +
				`{"id":"gemini_Rsp-1a_url_context","name":"url_context","arguments":"{\"urls\":[\"https://x.example/a\",\"https://x.example/b\"]}"}]`,
			[]weft.ProviderToolResult{
				{CallID: "gemini_Rsp-1a_search", Status: weft.ToolSuccess, Raw: json.RawMessage(groundingMD),
					Content: "Google Search: weather Paris; Paris forecast\n1. weather.example\n   https://vertexaisearch.example/r1\n2. meteo.example\n   https://vertexaisearch.example/r2"},
				{CallID: "gemini_Rsp-1a_url_context", Status: weft.ToolSuccess, Raw: json.RawMessage(urlContextMD),
					Content: "URL context:\n- https://x.example/a (success)\n- https://x.example/b (error)"}}},
		{"grounding_without_queries_is_no_call", builtinTools(), `"groundingMetadata":{"groundingChunks":[{"web":{"uri":"u"}}]}`, `null`, nil},
		{"malformed_metadata_ignored", builtinTools(), `"groundingMetadata":5,"urlContextMetadata":"x"`, `null`, nil},
		{"failed_url_context", builtinTools(), `"urlContextMetadata":{"urlMetadata":[{"retrievedUrl":"https://x.example/b","urlRetrievalStatus":"URL_RETRIEVAL_STATUS_UNSAFE"}]}`,
			`[{"id":"gemini_Rsp-1a_url_context","name":"url_context","arguments":"{\"urls\":[\"https://x.example/b\"]}"}]`,
			[]weft.ProviderToolResult{{CallID: "gemini_Rsp-1a_url_context", Status: weft.ToolError, Content: "URL context:\n- https://x.example/b (unsafe)",
				Raw: json.RawMessage(`{"urlMetadata":[{"retrievedUrl":"https://x.example/b","urlRetrievalStatus":"URL_RETRIEVAL_STATUS_UNSAFE"}]}`)}}},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: "/stream"}[stream], func(t *testing.T) {
				srv, _ := server(t, replyHandler(stream, []string{`{"text":"It is "}`, `{"text":"sunny."}`}, tc.extra))
				req := baseReq(stream)
				req.Tools = tc.tools
				resp, err := New(Options{BaseURL: srv.URL}).Call(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				if js(resp.ToolCalls) != tc.calls || resp.Text != "It is sunny." || resp.FinishReason != "stop" {
					t.Errorf("calls %s text %q finish %q\n want %s", js(resp.ToolCalls), resp.Text, resp.FinishReason, tc.calls)
				}
				if js(resp.ProviderResults) != js(tc.results) {
					t.Errorf("ProviderResults\n got  %s\n want %s", js(resp.ProviderResults), js(tc.results))
				}
				if tc.results != nil && !strings.Contains(string(resp.ResponseBody), "webSearchQueries") && strings.Contains(tc.extra, "webSearchQueries") {
					t.Errorf("ResponseBody lacks the grounding metadata: %s", resp.ResponseBody)
				}
			})
		}
	}
}

// Without a response id the ids are fresh, and still shared by each call and its result.
func TestProviderCallIDsWithoutResponseID(t *testing.T) {
	body := strings.Replace(chunkJSON([]string{codePart, resultPart}, `"groundingMetadata":`+groundingMD, "STOP"), `"responseId":"Rsp-1.a"`, `"responseId":""`, 1)
	ids := map[string]bool{}
	for range 2 {
		srv, _ := server(t, jsonReply(200, body))
		req := baseReq(false)
		req.Tools = builtinTools()
		resp, err := New(Options{BaseURL: srv.URL}).Call(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.ToolCalls) != 2 || len(resp.ProviderResults) != 2 {
			t.Fatalf("resp %+v", resp)
		}
		for i, c := range resp.ToolCalls {
			if c.ID == "" || c.ID != resp.ProviderResults[i].CallID || ids[c.ID] {
				t.Errorf("call %d id %q result %q (seen %v)", i, c.ID, resp.ProviderResults[i].CallID, ids)
			}
			ids[c.ID] = true
		}
	}
}

func TestProviderToolReplay(t *testing.T) {
	codeRaw := json.RawMessage(`[` + codePart + `,` + resultPart + `]`)
	var codeDecoded, groundDecoded any
	_ = json.Unmarshal(codeRaw, &codeDecoded)
	_ = json.Unmarshal([]byte(groundingMD), &groundDecoded)
	history := func(codeMD, searchMD map[string]any) []weft.LLMMessage {
		return []weft.LLMMessage{
			{Role: weft.RoleSystem, Content: "Be brief."},
			{Role: weft.RoleUser, Content: "Compute, search, then call f."},
			{Role: weft.RoleAssistant, Content: "It is 42 and sunny.", ToolCalls: []weft.ToolCall{
				{ID: "gx_code_1", Name: "code_execution", Arguments: `{"language":"PYTHON","code":"print(6*7)"}`},
				{ID: "c9", Name: "f", Arguments: `{"a":1}`},
				{ID: "gx_search", Name: "google_search", Arguments: `{"queries":["weather Paris"]}`}},
				Metadata: map[string]any{"reasoning_blocks": `[{"kind":"text","thoughtSignature":"sigT"},{"kind":"providerCall","thoughtSignature":""},{"kind":"functionCall","thoughtSignature":"sigF"},{"kind":"providerCall","thoughtSignature":""}]`}},
			{Role: weft.RoleTool, ToolCallID: "gx_code_1", Name: "code_execution", Content: "42", ToolStatus: weft.ToolSuccess, Metadata: codeMD},
			{Role: weft.RoleTool, ToolCallID: "c9", Name: "f", Content: "done", ToolStatus: weft.ToolSuccess},
			{Role: weft.RoleTool, ToolCallID: "gx_search", Name: "google_search", Content: "Google Search: weather Paris", ToolStatus: weft.ToolSuccess, Metadata: searchMD},
		}
	}
	native := `[{"role":"user","parts":[{"text":"Compute, search, then call f."}]},` +
		`{"role":"model","parts":[` + codePart + `,` + resultPart + `,{"text":"It is 42 and sunny.","thoughtSignature":"sigT"},{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"sigF"}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"result":"done"}}}]}]`
	pairs := `[{"role":"user","parts":[{"text":"Compute, search, then call f."}]},` +
		`{"role":"model","parts":[{"text":"It is 42 and sunny.","thoughtSignature":"sigT"},{"functionCall":{"name":"code_execution","args":{"language":"PYTHON","code":"print(6*7)"}}},` +
		`{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"sigF"},{"functionCall":{"name":"google_search","args":{"queries":["weather Paris"]}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"code_execution","response":{"result":"42"}}},{"functionResponse":{"name":"f","response":{"result":"done"}}},` +
		`{"functionResponse":{"name":"google_search","response":{"result":"Google Search: weather Paris"}}}]}]`
	cases := []struct {
		name             string
		codeMD, searchMD map[string]any
		want             string
	}{
		{"raw_message", map[string]any{"provider_raw": codeRaw}, map[string]any{"provider_raw": json.RawMessage(groundingMD)}, native},
		{"decoded_after_store_round_trip", map[string]any{"provider_raw": codeDecoded}, map[string]any{"provider_raw": groundDecoded}, native},
		{"json_string", map[string]any{"provider_raw": string(codeRaw)}, map[string]any{"provider_raw": groundingMD}, native},
		{"absent_other_provider", nil, map[string]any{"provider_executed": true}, pairs},
		{"other_providers_raw", map[string]any{"provider_raw": json.RawMessage(`[{"type":"server_tool_use","id":"s","name":"code_execution","input":{}},{"type":"code_execution_tool_result","tool_use_id":"s","content":{}}]`)},
			map[string]any{"provider_raw": json.RawMessage(`{"type":"web_search_call","webSearchQueries":["x"]}`)}, pairs},
		{"damaged", map[string]any{"provider_raw": json.RawMessage(`[{"executableCode":`)}, map[string]any{"provider_raw": json.RawMessage(`7`)}, pairs},
		{"result_only", map[string]any{"provider_raw": json.RawMessage(`[` + resultPart + `]`)}, map[string]any{"provider_raw": json.RawMessage(`{}`)}, pairs},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, last := server(t, jsonReply(200, okReply))
			req := baseReq(false)
			req.Tools = append(builtinTools(), weft.ToolSpec{Name: "f"})
			req.Messages = history(tc.codeMD, tc.searchMD)
			if _, err := New(Options{BaseURL: srv.URL}).Call(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			_, body := last()
			if got := js(decode(t, body)["contents"]); !sameJSON(got, tc.want) {
				t.Errorf("contents\n got  %s\n want %s", got, tc.want)
			}
		})
	}
}

// A reply's provider-executed calls, stored the way the engine stores them, go back as Gemini
// sent them: code parts in the model turn, grounding left out, the text and the function call's
// signature kept in place.
func TestProviderToolRoundTrip(t *testing.T) {
	parts := []string{codePart, resultPart, `{"text":"It is 42.","thoughtSignature":"sigT"}`, `{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"sigF"}`}
	for _, stream := range []bool{false, true} {
		srv, last := server(t, replyHandler(stream, parts, `"groundingMetadata":`+groundingMD))
		p := New(Options{BaseURL: srv.URL})
		req := baseReq(stream)
		req.Tools = append(builtinTools(), weft.ToolSpec{Name: "f"})
		resp, err := p.Call(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.ToolCalls) != 3 || len(resp.ProviderResults) != 2 || resp.FinishReason != "tool_calls" {
			t.Fatalf("stream %v: calls %s results %s finish %q", stream, js(resp.ToolCalls), js(resp.ProviderResults), resp.FinishReason)
		}
		calls := append([]weft.ToolCall(nil), resp.ToolCalls...)
		calls[1].ID = "call_f" // the engine's fresh id for Gemini's id-less function call
		req.Messages = append(req.Messages, weft.LLMMessage{Role: weft.RoleAssistant, Content: resp.Text, ToolCalls: calls,
			Metadata: map[string]any{"reasoning_blocks": resp.ReasoningBlocks}})
		for _, r := range resp.ProviderResults {
			var md map[string]any
			b, _ := json.Marshal(map[string]any{"provider_executed": true, "provider_raw": r.Raw})
			_ = json.Unmarshal(b, &md)
			req.Messages = append(req.Messages, weft.LLMMessage{Role: weft.RoleTool, ToolCallID: r.CallID, Content: r.Content, ToolStatus: r.Status, Metadata: md})
		}
		req.Messages = append(req.Messages, weft.LLMMessage{Role: weft.RoleTool, ToolCallID: "call_f", Content: "done", ToolStatus: weft.ToolSuccess})
		if _, err := p.Call(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		_, body := last()
		want := `[{"role":"user","parts":[{"text":"Hi"}]},` +
			`{"role":"model","parts":[` + codePart + `,` + resultPart + `,{"text":"It is 42.","thoughtSignature":"sigT"},{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"sigF"}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"result":"done"}}}]}]`
		if got := js(decode(t, body)["contents"]); !sameJSON(got, want) {
			t.Errorf("stream %v: contents\n got  %s\n want %s", stream, got, want)
		}
	}
}

// A stream cut right after a code part is an error, never a half-paired reply.
func TestProviderToolTruncatedStream(t *testing.T) {
	srv, _ := server(t, sseReply(chunkJSON([]string{codePart}, "", "")))
	req := baseReq(true)
	req.Tools = builtinTools()
	_, err := New(Options{BaseURL: srv.URL}).Call(context.Background(), req, nil)
	if pe := asPE(t, err); pe.Type != weft.ErrServer || !strings.Contains(pe.Message, "truncated") {
		t.Errorf("err = %v", pe)
	}
}

// FuzzParseResponse feeds arbitrary replies and provider_raw values to the parsers: they must
// return a response or an error, never panic.
func FuzzParseResponse(f *testing.F) {
	f.Add([]byte(chunkJSON([]string{codePart, resultPart, `{"text":"x"}`}, `"groundingMetadata":`+groundingMD+`,"urlContextMetadata":`+urlContextMD, "STOP")))
	f.Add([]byte(chunkJSON([]string{`{"codeExecutionResult":{"id":"z"}}`, `{"executableCode":null}`}, `"groundingMetadata":{"webSearchQueries":[1]}`, "")))
	f.Add([]byte(`[` + codePart + `,` + resultPart + `]`))
	f.Add([]byte(groundingMD))
	bt := offeredBuiltins(&weft.Request{Tools: builtinTools()})
	f.Fuzz(func(t *testing.T, data []byte) {
		if resp, err := parseResponse(data, bt); err == nil {
			if len(resp.ProviderResults) > len(resp.ToolCalls) {
				t.Fatalf("more results than calls: %+v", resp)
			}
		}
		_, _ = parseJSONStream(data, bt, nil)
		_, _ = providerRaw(map[string]any{"provider_raw": json.RawMessage(data)})
	})
}
