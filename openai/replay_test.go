package openai_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/sharedtest"
	"github.com/weft-agents/weft/openai"
	"github.com/weft-agents/weft/providertest"
)

type wantCall struct{ id, name, args string }

type wantReply struct {
	textPrefix string
	textLen    int
	calls      []wantCall
	finish     string
	in, out    int
	cost       bool // OpenRouter reports usage.cost (0 for free models)
	errType    weft.ErrorType
	errStatus  int
	errMsg     string
}

var replayCases = []struct {
	file     string
	provider string
	skip     string
	want     []wantReply // per chat-completions exchange
}{
	{file: "llms_openai_internal_openaiclient_testdata_TestClient_CreateChatCompletion.httprr", want: []wantReply{
		{textPrefix: "Hello! I'm just a computer program", textLen: 115, finish: "stop", in: 13, out: 31}}},
	{file: "llms_openai_internal_openaiclient_testdata_TestClient_CreateChatCompletionStream.httprr", want: []wantReply{
		{textPrefix: "1, 2, 3, 4, 5", textLen: 13, finish: "stop", in: 14, out: 13}}},
	{file: "llms_openai_internal_openaiclient_testdata_TestClient_FunctionCall.httprr",
		skip: "uses the legacy `functions`/`function_call` API; weft.Request only carries tools (tool_calls)"},
	{file: "llms_openai_internal_openaiclient_testdata_TestClient_WithResponseFormat.httprr", want: []wantReply{
		{textPrefix: "{\n  \"greeting\": \"hello\"\n}", textLen: 25, finish: "stop", in: 21, out: 10}}},
	{file: "llms_openai_testdata_TestFunctionCall.httprr", want: []wantReply{
		{calls: []wantCall{{"call_olc8qHf1RDItRqwuEBNjsu3B", "getCurrentWeather", `{"location":"Boston"}`}}, finish: "tool_calls", in: 81, out: 14}}},
	{file: "llms_openai_testdata_TestMultiContentImage.httprr", want: []wantReply{
		{textPrefix: "The image is an emoji of a parrot.", textLen: 462, finish: "stop", in: 267, out: 106}}},
	{file: "llms_openai_testdata_TestMultiContentText.httprr", want: []wantReply{
		{textPrefix: "You are a dog, which is a type of mammal.", textLen: 41, finish: "stop", in: 21, out: 13}}},
	{file: "llms_openai_testdata_TestMultiContentTextChatSequence.httprr", want: []wantReply{
		{textPrefix: "Spain is larger in terms of land area", textLen: 174, finish: "stop", in: 29, out: 44}}},
	{file: "llms_openai_testdata_TestOpenRouterStreaming.httprr", provider: "openrouter", want: []wantReply{
		{textPrefix: "test response", textLen: 13, finish: "stop", in: 586, out: 3, cost: true},
		{errType: weft.ErrRateLimit, errStatus: 429, errMsg: "Rate limit exceeded: limit_rpm/meta-llama"}}},
	{file: "llms_openai_testdata_TestOpenRouterWithHTTPRR.httprr", provider: "openrouter", want: []wantReply{
		{textPrefix: "OK", textLen: 2, finish: "stop", in: 612, out: 2, cost: true}}},
	{file: "llms_openai_testdata_TestStructuredOutputFunctionCalling.httprr", want: []wantReply{
		{calls: []wantCall{{"call_ZK1sabbcL4sfbbcqmN9YALA7", "search", `{"search_engine":"google","search_query":"Bob Odenkirk age"}`}}, finish: "tool_calls", in: 85, out: 23}}},
	{file: "llms_openai_testdata_TestStructuredOutputObjectAndArraySchema.httprr", want: []wantReply{
		{textPrefix: `{"final_answer":"4","steps":["Start with the expre`, textLen: 143, finish: "stop", in: 66, out: 44}}},
	{file: "llms_openai_testdata_TestStructuredOutputObjectSchema.httprr", want: []wantReply{
		{textPrefix: `{"final_answer":"4"}`, textLen: 20, finish: "stop", in: 53, out: 6}}},
	{file: "llms_openai_testdata_TestWithStreaming.httprr", want: []wantReply{
		{textPrefix: "Sure! Pomeranians are a breed of dog", textLen: 366, finish: "stop", in: 19, out: 82}}},
	{file: "agents_testdata_TestExecutorWithOpenAIFunctionAgent.httprr", want: []wantReply{
		{calls: []wantCall{{"call_xBZmyTROTl3UDnkHo7ViHPJ6", "GoogleSearch", "{\n  \"__arg1\": \"Go programming language version 1.0 release date\"\n}"}}, finish: "tool_calls", in: 167, out: 25},
		{textPrefix: "The Go programming language version 1.0 was releas", textLen: 67, finish: "stop", in: 228, out: 18}}},
	{file: "agents_testdata_TestOpenAIFunctionsAgentComplexCalculation.httprr", want: []wantReply{
		{textPrefix: "To find the total number of items", textLen: 513, finish: "stop", in: 122, out: 150}}},
	{file: "agents_testdata_TestOpenAIFunctionsAgentWithHTTPRR.httprr", want: []wantReply{
		{calls: []wantCall{{"call_sgvhmmuASadOaDtd93TmrUsY", "calculator", `{"__arg1":"15 * 4"}`}}, finish: "tool_calls", in: 94, out: 19},
		{textPrefix: "15 multiplied by 4 is 60.", textLen: 25, finish: "stop", in: 115, out: 10}}},
}

// requestFromRecorded builds the weft.Request that means what a recorded chat-completions body says.
func requestFromRecorded(t *testing.T, provider string, body []byte) *weft.Request {
	t.Helper()
	var rb map[string]any
	if err := json.Unmarshal(body, &rb); err != nil {
		t.Fatalf("recorded request: %v", err)
	}
	stream, _ := rb["stream"].(bool)
	req := &weft.Request{
		Model:  &weft.Model{Name: "m", Provider: provider, Model: rb["model"].(string), Capabilities: weft.Capabilities{SupportsStreaming: &stream}},
		APIKey: "test-api-key", Options: map[string]any{},
	}
	for _, mv := range rb["messages"].([]any) {
		m := mv.(map[string]any)
		lm := weft.LLMMessage{Role: weft.Role(m["role"].(string))}
		switch c := m["content"].(type) {
		case string:
			lm.Content = c
		case []any:
			for _, pv := range c {
				p := pv.(map[string]any)
				switch p["type"] {
				case "text":
					lm.Parts = append(lm.Parts, weft.ContentPart{Type: weft.PartText, Text: p["text"].(string)})
				case "image_url":
					lm.Parts = append(lm.Parts, weft.ContentPart{Type: weft.PartImage, URL: p["image_url"].(map[string]any)["url"].(string)})
				default:
					t.Fatalf("unhandled content part %v", p)
				}
			}
		}
		if id, ok := m["tool_call_id"].(string); ok {
			lm.ToolCallID = id
		}
		if tcs, ok := m["tool_calls"].([]any); ok {
			for _, tv := range tcs {
				tc := tv.(map[string]any)
				fn := tc["function"].(map[string]any)
				lm.ToolCalls = append(lm.ToolCalls, weft.ToolCall{ID: tc["id"].(string), Name: fn["name"].(string), Arguments: fn["arguments"].(string)})
			}
		}
		req.Messages = append(req.Messages, lm)
	}
	if tools, ok := rb["tools"].([]any); ok {
		for _, tv := range tools {
			fn := tv.(map[string]any)["function"].(map[string]any)
			pb, _ := json.Marshal(fn["parameters"])
			s := &weft.Schema{}
			if err := json.Unmarshal(pb, s); err != nil {
				t.Fatalf("schema: %v", err)
			}
			desc, _ := fn["description"].(string)
			req.Tools = append(req.Tools, weft.ToolSpec{Name: fn["name"].(string), Description: desc, Parameters: s})
		}
	}
	if tc, ok := rb["tool_choice"].(string); ok {
		req.ToolChoice = weft.ToolChoice(tc)
	}
	for k, v := range rb {
		switch k {
		case "model", "messages", "tools", "tool_choice", "stream", "stream_options":
		case "max_completion_tokens":
			req.Options["maxOutputTokens"] = v // exercise the modelOptions mapping
		default:
			req.Options[k] = v
		}
	}
	return req
}

// normalize makes a chat-completions body comparable by meaning: tools keep name, description and
// parameters; an assistant message's empty content equals null; parallel_tool_calls (which the
// adapter adds whenever tools are sent) is dropped.
func normalize(body []byte) map[string]any {
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		return map[string]any{"unparsable": string(body)}
	}
	delete(v, "parallel_tool_calls")
	if tools, ok := v["tools"].([]any); ok {
		for _, tv := range tools {
			fn := tv.(map[string]any)["function"].(map[string]any)
			delete(fn, "strict")
		}
	}
	if msgs, ok := v["messages"].([]any); ok {
		for _, mv := range msgs {
			m := mv.(map[string]any)
			if m["role"] == "assistant" && (m["content"] == nil || m["content"] == "") {
				m["content"] = nil
			}
		}
	}
	return v
}

func TestReplayRecordings(t *testing.T) {
	for _, tc := range replayCases {
		t.Run(strings.TrimSuffix(tc.file, ".httprr"), func(t *testing.T) {
			if tc.skip != "" {
				t.Skip(tc.skip)
			}
			rec, err := providertest.LoadRecording(sharedtest.Path(t, "provider-recordings", "langchaingo", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			chat := &providertest.Recording{}
			for _, ex := range rec.Exchanges {
				if strings.HasSuffix(ex.Request.URL.Path, "/chat/completions") {
					chat.Exchanges = append(chat.Exchanges, ex)
				}
			}
			if len(chat.Exchanges) != len(tc.want) {
				t.Fatalf("recording has %d chat exchanges, table has %d", len(chat.Exchanges), len(tc.want))
			}
			srv := providertest.ReplayServer(t, chat)
			provider := tc.provider
			if provider == "" {
				provider = "openai"
			}
			p := openai.New(openai.Options{BaseURL: srv.URL + "/v1", Name: provider})
			for i, ex := range chat.Exchanges {
				want := tc.want[i]
				req := requestFromRecorded(t, provider, ex.RequestBody)
				var streamed strings.Builder
				resp, err := p.Call(context.Background(), req, func(c weft.Chunk) { streamed.WriteString(c.Text) })

				got := srv.Received()
				if len(got) != i+1 {
					t.Fatalf("exchange %d: server received %d requests", i, len(got))
				}
				if g, w := normalize(got[i]), normalize(ex.RequestBody); !reflect.DeepEqual(g, w) {
					gb, _ := json.Marshal(g)
					wb, _ := json.Marshal(w)
					t.Errorf("exchange %d: sent request differs in meaning\n got: %s\nwant: %s", i, gb, wb)
				}
				if rq := srv.Requests()[i]; rq.Path != "/v1/chat/completions" || rq.Header.Get("Authorization") != "Bearer test-api-key" {
					t.Errorf("exchange %d: path %q auth %q", i, rq.Path, rq.Header.Get("Authorization"))
				}

				if want.errType != "" {
					var pe *weft.ProviderError
					if !asProviderError(err, &pe) || pe.Type != want.errType || pe.Status != want.errStatus || !strings.Contains(pe.Message, want.errMsg) {
						t.Errorf("exchange %d: err = %v, want %s %d %q", i, err, want.errType, want.errStatus, want.errMsg)
					}
					continue
				}
				if err != nil {
					t.Fatalf("exchange %d: %v", i, err)
				}
				if !strings.HasPrefix(resp.Text, want.textPrefix) || len(resp.Text) != want.textLen {
					t.Errorf("exchange %d: text %q (len %d), want prefix %q len %d", i, resp.Text, len(resp.Text), want.textPrefix, want.textLen)
				}
				if req.Model.Capabilities.Streaming() && streamed.String() != resp.Text {
					t.Errorf("exchange %d: streamed %q != text %q", i, streamed.String(), resp.Text)
				}
				var calls []wantCall
				for _, c := range resp.ToolCalls {
					calls = append(calls, wantCall{c.ID, c.Name, c.Arguments})
				}
				if !reflect.DeepEqual(calls, want.calls) {
					t.Errorf("exchange %d: tool calls %q, want %q", i, calls, want.calls)
				}
				if resp.FinishReason != want.finish {
					t.Errorf("exchange %d: finish %q, want %q", i, resp.FinishReason, want.finish)
				}
				if resp.Usage.InputTokens != want.in || resp.Usage.OutputTokens != want.out || resp.Usage.CachedTokens != 0 {
					t.Errorf("exchange %d: usage %+v, want in %d out %d", i, resp.Usage, want.in, want.out)
				}
				if (resp.Usage.Cost != nil) != want.cost {
					t.Errorf("exchange %d: cost %v, want reported=%v", i, resp.Usage.Cost, want.cost)
				}
				if !json.Valid(resp.RequestBody) || !json.Valid(resp.ResponseBody) {
					t.Errorf("exchange %d: RequestBody/ResponseBody are not JSON", i)
				}
			}
		})
	}
}
