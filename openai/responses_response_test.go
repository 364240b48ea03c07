package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/openai"
)

// halves splits s in two on a rune boundary.
func halves(s string) []string {
	r := []rune(s)
	return []string{string(r[:len(r)/2]), string(r[len(r)/2:])}
}

// sseFor encodes a Responses response object as the event stream the API sends for it: every
// output item added, its text, summary and argument deltas (each split in two), then done, and the
// terminal event. emptyFinal leaves the terminal event's output list empty, as some servers do.
func sseFor(t testing.TB, response string, emptyFinal bool) string {
	t.Helper()
	var resp map[string]any
	var raw struct{ Output []json.RawMessage }
	if err := json.Unmarshal([]byte(response), &resp); err != nil || json.Unmarshal([]byte(response), &raw) != nil {
		t.Fatalf("sseFor: %v", err)
	}
	var sb strings.Builder
	seq := 0
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		v["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(v)
		fmt.Fprintf(&sb, "event: %s\ndata: %s\n\n", typ, b)
	}
	created := map[string]any{"id": resp["id"], "object": "response", "model": resp["model"], "status": "in_progress", "output": []any{}}
	ev("response.created", map[string]any{"response": created})
	items, _ := resp["output"].([]any)
	for i, iv := range items {
		item := iv.(map[string]any)
		id, _ := item["id"].(string)
		empty := map[string]any{}
		for k, v := range item {
			empty[k] = v
		}
		switch item["type"] {
		case "message":
			empty["content"] = []any{}
		case "reasoning":
			empty["summary"] = []any{}
		case "function_call":
			empty["arguments"] = ""
		}
		ev("response.output_item.added", map[string]any{"output_index": i, "item": empty})
		switch item["type"] {
		case "message":
			for ci, pv := range item["content"].([]any) {
				part := pv.(map[string]any)
				if s, ok := part["text"].(string); ok {
					for _, h := range halves(s) {
						ev("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": ci, "delta": h})
					}
				}
				if s, ok := part["refusal"].(string); ok {
					ev("response.refusal.delta", map[string]any{"item_id": id, "output_index": i, "content_index": ci, "delta": s})
				}
			}
		case "reasoning":
			for si, pv := range item["summary"].([]any) {
				for _, h := range halves(pv.(map[string]any)["text"].(string)) {
					ev("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": i, "summary_index": si, "delta": h})
				}
			}
		case "function_call":
			args := item["arguments"].(string)
			for _, h := range halves(args) {
				ev("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": h})
			}
			ev("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": raw.Output[i]}) // bytes kept as sent
	}
	resp["output"] = raw.Output
	if emptyFinal {
		resp["output"] = []any{}
	}
	typ := "response.completed"
	if resp["status"] == "incomplete" {
		typ = "response.incomplete"
	}
	ev(typ, map[string]any{"response": resp})
	return sb.String()
}

func respModel(stream bool) *weft.Model {
	return &weft.Model{Name: "m", Model: "gpt-test", Capabilities: weft.Capabilities{SupportsStreaming: &stream},
		ProviderOptions: map[string]any{"useResponsesApi": true}}
}

// callResponses runs one Responses call against a server answering body, streamed or not.
func callResponses(t *testing.T, body string, stream, emptyFinal bool, tools []weft.ToolSpec, opts map[string]any) (*weft.Response, []weft.Chunk, error) {
	t.Helper()
	ct := "application/json"
	if stream {
		ct, body = "text/event-stream", sseFor(t, body, emptyFinal)
	}
	srv, _ := newServer(t, 200, nil, ct, body)
	p := openai.New(openai.Options{BaseURL: srv.URL + "/v1"})
	var chunks []weft.Chunk
	resp, err := p.Call(context.Background(), &weft.Request{Model: respModel(stream), APIKey: "sk-secret-1234", Tools: tools, Options: opts,
		Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "q"}}}, func(c weft.Chunk) { chunks = append(chunks, c) })
	return resp, chunks, err
}

func respBody(status, incomplete string, items ...string) string {
	inc := "null"
	if incomplete != "" {
		inc = `{"reason":"` + incomplete + `"}`
	}
	return `{"id":"resp_1","object":"response","model":"gpt-test-2025","status":"` + status + `","error":null,"incomplete_details":` + inc +
		`,"output":[` + strings.Join(items, ",") + `],"usage":{"input_tokens":40,"input_tokens_details":{"cached_tokens":8},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":12},"total_tokens":60}}`
}

const (
	msgItem       = `{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Weft is a runtime.","annotations":[{"type":"url_citation","url":"https://a"}]}]}`
	wsItem        = `{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"weft runtime","sources":[{"type":"url","url":"https://a"},{"type":"url","url":"https://b"}]}}`
	wsOpenItem    = `{"type":"web_search_call","id":"ws_2","status":"completed","action":{"type":"open_page","url":"https://a"}}`
	ciFailedItem  = `{"type":"code_interpreter_call","id":"ci_1","status":"failed","code":"1/0","container_id":"cntr_1","outputs":[{"type":"logs","logs":"ZeroDivisionError"}]}`
	fsItem        = `{"type":"file_search_call","id":"fs_1","status":"completed","queries":["q1","q2"],"results":[{"file_id":"f","filename":"a.md","score":0.9,"text":"alpha"}]}`
	imgItem       = `{"type":"image_generation_call","id":"ig_1","status":"completed","result":"iVBORw0KGgo=","revised_prompt":"a cat"}`
	reasoning2    = `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"First part."},{"type":"summary_text","text":"Second part."}],"encrypted_content":"gAAAA"}`
	reasoningText = `{"type":"reasoning","id":"rs_3","summary":[],"content":[{"type":"reasoning_text","text":"raw thoughts"}]}`
	refusalItem   = `{"type":"message","id":"msg_2","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"I can't help with that."}]}`
	unknownItem   = `{"type":"mcp_list_tools","id":"mcpl_1","server_label":"x","tools":[]}`
)

func fcItem(id, callID, name, args string) string {
	b, _ := json.Marshal(map[string]any{"type": "function_call", "id": id, "call_id": callID, "name": name, "arguments": args, "status": "completed"})
	return string(b)
}

// TestResponsesReply reads replies of every shape, each as JSON, as a stream and as a stream whose
// terminal event lists no output: text, usage and model; function calls mapped back to the request's
// names with arguments kept verbatim even when they are not JSON; hosted tool calls as calls plus
// provider results with the item verbatim; reasoning summaries and the reasoning items for replay;
// refusals; and the finish reasons.
func TestResponsesReply(t *testing.T) {
	offered := []weft.ToolSpec{{Name: "web.search"}, {Name: "get_time"}, {Name: "web_search", Provider: "openai"}, {Name: "code_interpreter", Provider: "openai"}}
	wire := openai.WireToolName("web.search")
	type result struct {
		status  weft.ToolStatus
		content string
	}
	cases := []struct {
		name      string
		body      string
		tools     []weft.ToolSpec
		opts      map[string]any
		text      string
		reasoning string
		calls     []weft.ToolCall
		results   []result
		blocks    []string
		finish    string
	}{
		{name: "text", body: respBody("completed", "", msgItem), text: "Weft is a runtime.", finish: "stop"},
		{name: "function_calls", body: respBody("completed", "", fcItem("fc_1", "call_1", wire, `{"q":"x"}`), fcItem("fc_2", "call_2", "get_time", `{not json`)),
			calls:  []weft.ToolCall{{ID: "call_1", Name: "web.search", Arguments: `{"q":"x"}`}, {ID: "call_2", Name: "get_time", Arguments: `{not json`}},
			finish: "tool_calls"},
		{name: "hosted_web_search", body: respBody("completed", "", wsItem, wsOpenItem, msgItem),
			text: "Weft is a runtime.",
			calls: []weft.ToolCall{{ID: "ws_1", Name: "web_search", Arguments: `{"type":"search","query":"weft runtime","sources":[{"type":"url","url":"https://a"},{"type":"url","url":"https://b"}]}`},
				{ID: "ws_2", Name: "web_search", Arguments: `{"type":"open_page","url":"https://a"}`}},
			results: []result{{weft.ToolSuccess, "Searched the web for: weft runtime\nSources:\n- https://a\n- https://b"}, {weft.ToolSuccess, "Opened the web page https://a"}},
			finish:  "stop"},
		// A hosted tool offered under a Weft name that is not its type (its option sets the type).
		{name: "hosted_named_as_offered", body: respBody("completed", "", wsItem, msgItem), tools: []weft.ToolSpec{{Name: "search", Provider: "openai"}},
			opts:    map[string]any{"search": map[string]any{"type": "web_search_preview"}},
			text:    "Weft is a runtime.",
			calls:   []weft.ToolCall{{ID: "ws_1", Name: "search", Arguments: `{"type":"search","query":"weft runtime","sources":[{"type":"url","url":"https://a"},{"type":"url","url":"https://b"}]}`}},
			results: []result{{weft.ToolSuccess, "Searched the web for: weft runtime\nSources:\n- https://a\n- https://b"}},
			finish:  "stop"},
		{name: "hosted_failed_and_function_call", body: respBody("completed", "", ciFailedItem, fcItem("fc_1", "call_1", "get_time", `{}`)),
			calls:   []weft.ToolCall{{ID: "ci_1", Name: "code_interpreter", Arguments: `{"code":"1/0","container_id":"cntr_1"}`}, {ID: "call_1", Name: "get_time", Arguments: `{}`}},
			results: []result{{weft.ToolError, "Ran code:\n1/0\nOutput:\nZeroDivisionError\ncode_interpreter failed"}},
			finish:  "tool_calls"},
		{name: "hosted_file_search_and_image", body: respBody("completed", "", fsItem, imgItem, unknownItem, msgItem),
			text:    "Weft is a runtime.",
			calls:   []weft.ToolCall{{ID: "fs_1", Name: "file_search", Arguments: `{"queries":["q1","q2"]}`}, {ID: "ig_1", Name: "image_generation", Arguments: `{"prompt":"a cat"}`}},
			results: []result{{weft.ToolSuccess, "Searched files for: q1; q2\n- a.md: alpha"}, {weft.ToolSuccess, "Generated an image for the prompt: a cat"}},
			finish:  "stop"},
		{name: "reasoning_summaries", body: respBody("completed", "", reasoning2, msgItem), text: "Weft is a runtime.",
			reasoning: "First part.\n\nSecond part.", blocks: []string{reasoning2}, finish: "stop"},
		{name: "reasoning_text", body: respBody("completed", "", reasoningText, msgItem), text: "Weft is a runtime.",
			reasoning: "raw thoughts", blocks: []string{reasoningText}, finish: "stop"},
		{name: "refusal", body: respBody("completed", "", refusalItem), text: "I can't help with that.", finish: "stop"},
		{name: "max_output_tokens", body: respBody("incomplete", "max_output_tokens", reasoning2), reasoning: "First part.\n\nSecond part.",
			blocks: []string{reasoning2}, finish: "length"},
		{name: "content_filter", body: respBody("incomplete", "content_filter", msgItem), text: "Weft is a runtime.", finish: "content_filter"},
		{name: "length_wins_over_calls", body: respBody("incomplete", "max_output_tokens", fcItem("fc_1", "call_1", "get_time", `{"zone":`)),
			calls: []weft.ToolCall{{ID: "call_1", Name: "get_time", Arguments: `{"zone":`}}, finish: "length"},
		{name: "incomplete_empty", body: respBody("incomplete", "max_output_tokens"), finish: "length"},
	}
	for _, tc := range cases {
		for _, mode := range []string{"json", "stream", "stream_empty_final"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				stream := mode != "json"
				tools := tc.tools
				if tools == nil {
					tools = offered
				}
				resp, chunks, err := callResponses(t, tc.body, stream, mode == "stream_empty_final", tools, tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Text != tc.text || resp.Reasoning != tc.reasoning || resp.FinishReason != tc.finish {
					t.Errorf("text %q reasoning %q finish %q, want %q %q %q", resp.Text, resp.Reasoning, resp.FinishReason, tc.text, tc.reasoning, tc.finish)
				}
				if !reflect.DeepEqual(resp.ToolCalls, tc.calls) {
					t.Errorf("calls\n got %+v\nwant %+v", resp.ToolCalls, tc.calls)
				}
				if len(resp.ProviderResults) != len(tc.results) {
					t.Fatalf("provider results %+v, want %d", resp.ProviderResults, len(tc.results))
				}
				for i, r := range resp.ProviderResults {
					if r.CallID != tc.calls[i].ID || r.Status != tc.results[i].status || r.Content != tc.results[i].content {
						t.Errorf("result %d = %+v, want %s %q", i, r, tc.results[i].status, tc.results[i].content)
					}
					if !strings.Contains(tc.body, string(r.Raw)) || !json.Valid(r.Raw) {
						t.Errorf("result %d raw %s is not the item verbatim", i, r.Raw)
					}
				}
				var blocks []json.RawMessage
				if len(resp.ReasoningBlocks) > 0 {
					if err := json.Unmarshal(resp.ReasoningBlocks, &blocks); err != nil {
						t.Fatalf("ReasoningBlocks %s: %v", resp.ReasoningBlocks, err)
					}
				}
				if len(blocks) != len(tc.blocks) {
					t.Fatalf("blocks %s, want %v", resp.ReasoningBlocks, tc.blocks)
				}
				for i := range blocks {
					if string(blocks[i]) != tc.blocks[i] {
						t.Errorf("block %d = %s, want verbatim %s", i, blocks[i], tc.blocks[i])
					}
				}
				if resp.Usage != (weft.Usage{InputTokens: 40, OutputTokens: 20, CachedTokens: 8, ReasoningTokens: 12}) || resp.ModelID != "gpt-test-2025" {
					t.Errorf("usage %+v model %q", resp.Usage, resp.ModelID)
				}
				var text, reasoning strings.Builder
				for _, c := range chunks {
					text.WriteString(c.Text)
					reasoning.WriteString(c.Reasoning)
				}
				if text.String() != tc.text || reasoning.String() != tc.reasoning {
					t.Errorf("chunks add up to %q / %q", text.String(), reasoning.String())
				}
				if !json.Valid(resp.ResponseBody) || !strings.Contains(string(resp.ResponseBody), `"output":[`) {
					t.Errorf("ResponseBody %s", resp.ResponseBody)
				}
				if mode == "stream_empty_final" && len(tc.calls) > 0 && !strings.Contains(string(resp.ResponseBody), tc.calls[0].ID) {
					t.Errorf("assembled ResponseBody lacks the collected items: %s", resp.ResponseBody)
				}
			})
		}
	}
}

// TestResponsesStreamDetails covers stream shapes the encoder above does not produce: function
// calls known only from their events (no output items anywhere), text deltas without any item, and
// events with unexpected field types, which are skipped.
func TestResponsesStreamDetails(t *testing.T) {
	sse := func(events ...string) string {
		var sb strings.Builder
		for _, e := range events {
			sb.WriteString("data: " + e + "\n\n")
		}
		return sb.String()
	}
	completedEmpty := `{"type":"response.completed","response":{"id":"r","model":"m","status":"completed","output":[],"usage":{"input_tokens":1,"output_tokens":2}}}`
	cases := []struct {
		name   string
		body   string
		text   string
		calls  []weft.ToolCall
		finish string
	}{
		{"calls_from_events_only", sse(
			`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_time","arguments":""}}`,
			`{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"zone\":"}`,
			`{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"\"UTC\"}"}`,
			`{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_2","call_id":"call_2","name":"get_time","arguments":""}}`,
			`{"type":"response.function_call_arguments.delta","item_id":"fc_2","output_index":1,"delta":"{}"}`,
			`{"type":"response.function_call_arguments.done","item_id":"fc_2","output_index":1,"arguments":"{\"zone\":\"CET\"}"}`,
			completedEmpty), "",
			[]weft.ToolCall{{ID: "call_1", Name: "get_time", Arguments: `{"zone":"UTC"}`}, {ID: "call_2", Name: "get_time", Arguments: `{"zone":"CET"}`}}, "tool_calls"},
		{"text_without_items", sse(
			`{"type":"response.output_text.delta","item_id":"m","delta":"Hel"}`,
			`{"type":"response.output_text.delta","item_id":"m","delta":"lo"}`,
			completedEmpty), "Hello", nil, "stop"},
		{"odd_field_types_skipped", sse(
			`{"type":"response.output_text.delta","item_id":"m","delta":{"x":1}}`,
			`{"type":"response.output_text.delta","item_id":"m","delta":"ok"}`,
			`{"type":"response.unknown_event","whatever":[1,2]}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"m","content":"not a list"}}`,
			`{"type":"response.output_item.done","output_index":1,"item":{"type":42}}`,
			completedEmpty), "ok", nil, "stop"},
		{"done_marker_ignored", sse(
			`{"type":"response.output_text.delta","item_id":"m","delta":"ok"}`, `[DONE]`, completedEmpty), "ok", nil, "stop"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newServer(t, 200, nil, "text/event-stream", tc.body)
			p := openai.New(openai.Options{BaseURL: srv.URL + "/v1"})
			var streamed strings.Builder
			resp, err := p.Call(context.Background(), &weft.Request{Model: respModel(true), Tools: []weft.ToolSpec{{Name: "get_time"}},
				Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "q"}}}, func(c weft.Chunk) { streamed.WriteString(c.Text) })
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tc.text || streamed.String() != tc.text || resp.FinishReason != tc.finish || !reflect.DeepEqual(resp.ToolCalls, tc.calls) {
				t.Errorf("text %q streamed %q finish %q calls %+v", resp.Text, streamed.String(), resp.FinishReason, resp.ToolCalls)
			}
			if resp.Usage.InputTokens != 1 || resp.Usage.OutputTokens != 2 {
				t.Errorf("usage %+v", resp.Usage)
			}
		})
	}
}

// TestResponsesReasoningStreamSeparators: summary parts arrive as separate delta runs; the chunks
// separate them with a blank line exactly as the final Reasoning does.
func TestResponsesReasoningStreamSeparators(t *testing.T) {
	resp, chunks, err := callResponses(t, respBody("completed", "", reasoning2, msgItem), true, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range chunks {
		if c.Reasoning != "" {
			got = append(got, c.Reasoning)
		}
	}
	want := []string{"First", " part.", "\n\n", "Second", " part."}
	if !reflect.DeepEqual(got, want) || resp.Reasoning != "First part.\n\nSecond part." {
		t.Errorf("reasoning chunks %q, reasoning %q", got, resp.Reasoning)
	}
}

// TestResponsesFailures: every failure is a readable *weft.ProviderError of the right type — HTTP
// statuses with Retry-After, in-band errors, failed responses, error events mid-stream, malformed
// JSON and events, truncated streams and empty output — with the key redacted.
func TestResponsesFailures(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	sse := func(events ...string) string {
		var sb strings.Builder
		for _, e := range events {
			sb.WriteString("event: x\ndata: " + e + "\n\n")
		}
		return sb.String()
	}
	delta := `{"type":"response.output_text.delta","item_id":"m","delta":"partial"}`
	cases := []struct {
		name   string
		status int
		hdr    map[string]string
		ct     string
		body   string
		typ    weft.ErrorType
		code   int
		retry  time.Duration
		msg    string
	}{
		{"retry_after_ms", 429, map[string]string{"retry-after-ms": "1500"}, "application/json", `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, weft.ErrRateLimit, 429, 1500 * time.Millisecond, "slow down"},
		{"retry_after_date", 503, map[string]string{"Retry-After": date}, "application/json", `{"error":"busy"}`, weft.ErrServer, 503, 90 * time.Second, "busy"},
		{"401_text", 401, nil, "text/plain", `bad key sk-secret-1234`, weft.ErrAuth, 401, 0, "bad key [redacted]"},
		{"unknown_status", 418, nil, "application/json", `{"error":{"message":"teapot"}}`, weft.ErrUnknown, 418, 0, "teapot"},
		{"malformed_json", 200, nil, "application/json", `{"id":"r","output":[{"ty`, weft.ErrUnknown, 200, 0, "malformed response JSON"},
		{"empty_output", 200, nil, "application/json", `{"id":"r","status":"completed","output":[]}`, weft.ErrUnknown, 200, 0, "no output"},
		{"not_an_object", 200, nil, "application/json", `[]`, weft.ErrUnknown, 200, 0, "malformed response JSON"},
		{"in_band_error", 200, nil, "application/json", `{"id":"r","status":"failed","error":{"code":"rate_limit_exceeded","message":"Rate limit reached"},"output":[]}`, weft.ErrRateLimit, 0, 0, "Rate limit reached"},
		{"in_band_status_code", 200, nil, "application/json", `{"error":{"code":502,"message":"upstream down"}}`, weft.ErrServer, 502, 0, "upstream down"},
		{"failed_without_error", 200, nil, "application/json", `{"id":"r","status":"failed","error":null,"output":[]}`, weft.ErrServer, 0, 0, "failed"},
		{"stream_failed_event", 200, nil, "text/event-stream", sse(delta, `{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The model failed"}}}`), weft.ErrServer, 0, 0, "The model failed"},
		{"stream_failed_invalid_prompt", 200, nil, "text/event-stream", sse(`{"type":"response.failed","response":{"status":"failed","error":{"code":"invalid_prompt","message":"Prompt flagged"}}}`), weft.ErrInvalidRequest, 0, 0, "Prompt flagged"},
		{"stream_failed_no_error", 200, nil, "text/event-stream", sse(`{"type":"response.failed","response":{"status":"failed"}}`), weft.ErrServer, 0, 0, "failed"},
		{"stream_error_event", 200, nil, "text/event-stream", sse(delta, `{"type":"error","code":"rate_limit_exceeded","message":"Too many tokens","param":null}`), weft.ErrRateLimit, 0, 0, "Too many tokens"},
		{"stream_error_nested", 200, nil, "text/event-stream", sse(`{"type":"error","error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Too long"}}`), weft.ErrContextLength, 0, 0, "Too long"},
		{"stream_error_type_only", 200, nil, "text/event-stream", sse(`{"type":"error","error":{"type":"invalid_request_error","message":"Bad input"}}`), weft.ErrInvalidRequest, 0, 0, "Bad input"},
		{"stream_error_string", 200, nil, "text/event-stream", sse(`{"type":"error","error":"boom"}`), weft.ErrServer, 0, 0, "boom"},
		{"stream_error_unknown_code", 200, nil, "text/event-stream", sse(`{"type":"error","code":"brand_new_code","message":"Odd"}`), weft.ErrUnknown, 0, 0, "Odd (brand_new_code)"},
		{"stream_error_key", 200, nil, "text/event-stream", sse(`{"type":"error","code":"invalid_api_key","message":"Incorrect API key sk-secret-1234"}`), weft.ErrAuth, 0, 0, "[redacted]"},
		{"stream_truncated", 200, nil, "text/event-stream", sse(delta), weft.ErrUnknown, 200, 0, "ended before the reply was complete"},
		{"stream_empty", 200, nil, "text/event-stream", ``, weft.ErrUnknown, 200, 0, "ended before the reply was complete"},
		{"stream_malformed_event", 200, nil, "text/event-stream", sse(`{"type":"response.output_text.delta","delta":"x`), weft.ErrUnknown, 200, 0, "malformed stream event"},
		{"stream_malformed_final", 200, nil, "text/event-stream", sse(`{"type":"response.completed","response":"nope"}`), weft.ErrUnknown, 200, 0, "malformed final stream event"},
		{"stream_completed_empty", 200, nil, "text/event-stream", sse(`{"type":"response.completed","response":{"status":"completed","output":[]}}`), weft.ErrUnknown, 200, 0, "no output"},
		{"stream_completed_with_error", 200, nil, "text/event-stream", sse(`{"type":"response.completed","response":{"status":"completed","error":{"code":"server_error","message":"late"},"output":[]}}`), weft.ErrServer, 0, 0, "late"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newServer(t, tc.status, tc.hdr, tc.ct, tc.body)
			p := openai.New(openai.Options{BaseURL: srv.URL + "/v1"})
			resp, err := p.Call(context.Background(), &weft.Request{Model: respModel(tc.ct == "text/event-stream"), APIKey: "sk-secret-1234",
				Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "q"}}}, nil)
			var pe *weft.ProviderError
			if !asProviderError(err, &pe) {
				t.Fatalf("err %v (resp %+v)", err, resp)
			}
			if pe.Type != tc.typ || pe.Status != tc.code || !strings.Contains(pe.Message, tc.msg) || strings.Contains(err.Error(), "sk-secret-1234") {
				t.Errorf("got %v (type %s status %d), want %s %d %q", pe, pe.Type, pe.Status, tc.typ, tc.code, tc.msg)
			}
			if d := pe.RetryAfter - tc.retry; d < -2*time.Second || d > 2*time.Second {
				t.Errorf("RetryAfter %v, want %v", pe.RetryAfter, tc.retry)
			}
		})
	}
}

// TestResponsesRoundTrip stores a reply the way the engine does — reasoning blocks in the assistant
// message's metadata, each provider result as its call's tool message with metadata provider_raw —
// and checks the next request sends the reasoning and hosted items back verbatim before the
// message's text and calls, and no function_call_output for the hosted call.
func TestResponsesRoundTrip(t *testing.T) {
	first := respBody("completed", "", reasoningEnc, wsItem, msgItem, fcItem("fc_9", "call_9", "get_time", `{"zone":"UTC"}`))
	srv, c := newServer(t, 200, nil, "application/json", first)
	p := openai.New(openai.Options{BaseURL: srv.URL + "/v1"})
	tools := []weft.ToolSpec{{Name: "web_search", Provider: "openai"}, {Name: "get_time"}}
	req := &weft.Request{Model: respModel(false), Tools: tools, Reasoning: &weft.Reasoning{Effort: "low"},
		Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "what is weft? and the time"}}}
	resp, err := p.Call(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	// What the engine persists and reads back (metadata decoded from JSON).
	var blocks any
	_ = json.Unmarshal(resp.ReasoningBlocks, &blocks)
	history := append(req.Messages, weft.LLMMessage{Role: weft.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls,
		Metadata: map[string]any{"reasoning_blocks": blocks}})
	for _, r := range resp.ProviderResults {
		var raw any
		_ = json.Unmarshal(r.Raw, &raw)
		history = append(history, weft.LLMMessage{Role: weft.RoleTool, ToolCallID: r.CallID, ToolStatus: r.Status, Content: r.Content,
			Metadata: map[string]any{"provider_raw": raw, "provider_executed": true}})
	}
	history = append(history, weft.LLMMessage{Role: weft.RoleTool, ToolCallID: "call_9", Content: "12:00"})
	req.Messages = history
	if _, err := p.Call(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Input []json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(c.body, &body)
	want := []string{
		`{"content":"what is weft? and the time","role":"user","type":"message"}`,
		canonical(t, []byte(reasoningEnc)),
		`{"content":"Weft is a runtime.","role":"assistant","type":"message"}`,
		canonical(t, []byte(wsItem)),
		`{"arguments":"{\"zone\":\"UTC\"}","call_id":"call_9","name":"get_time","type":"function_call"}`,
		`{"call_id":"call_9","output":"12:00","type":"function_call_output"}`,
	}
	if len(body.Input) != len(want) {
		t.Fatalf("input %s", body.Input)
	}
	for i := range want {
		if got := canonical(t, body.Input[i]); got != want[i] {
			t.Errorf("input[%d]\n got %s\nwant %s", i, got, want[i])
		}
	}
}
