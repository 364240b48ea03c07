package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// attrValue is a span attribute's value rendered as text ("" when absent): strings as they are,
// booleans, integers and doubles as Go prints them.
func attrValue(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key != key {
			continue
		}
		switch v := a.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_BoolValue:
			return fmt.Sprint(v.BoolValue)
		case *commonpb.AnyValue_IntValue:
			return fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_DoubleValue:
			return fmt.Sprint(v.DoubleValue)
		case *commonpb.AnyValue_ArrayValue:
			var parts []string
			for _, x := range v.ArrayValue.Values {
				parts = append(parts, x.GetStringValue())
			}
			return strings.Join(parts, ",")
		}
	}
	return ""
}

// TestOTLPGenAIAttributes runs an agent against a fake OpenAI server (real streaming wire
// protocol) whose prompt has model options, a structured answer and an MCP tool served by another
// `weft serve` over streamable HTTP; both processes export to one OTLP/HTTP collector stand-in,
// which decodes the protobuf with the OTLP Go types. Every GenAI and MCP attribute Weft promises
// is checked on the agent, chat, tool and MCP server spans, and the MCP server span is the child
// of the client's tool span (trace context carried in params._meta).
func TestOTLPGenAIAttributes(t *testing.T) {
	col := &collector{metrics: map[string]bool{}}
	otlp := httptest.NewServer(col)
	defer otlp.Close()
	otelEnv := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL, "OTEL_SERVICE_NAME=", "OTEL_RESOURCE_ATTRIBUTES=",
		"OTEL_TRACES_EXPORTER=", "OTEL_METRICS_EXPORTER=none", "OTEL_SDK_DISABLED=", "OTEL_EXPORTER_OTLP_PROTOCOL=", "OTEL_BSP_SCHEDULE_DELAY=100"}

	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct{ Messages []map[string]any }
		json.Unmarshal(raw, &body)
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(v string) { fmt.Fprintf(w, "data: %s\n\n", v) }
		if body.Messages[len(body.Messages)-1]["role"] == "tool" {
			send(`{"id":"chatcmpl-2","object":"chat.completion.chunk","model":"lab-llm","choices":[{"index":0,"delta":{"role":"assistant","content":"{\"answer\":\"shipped\"}"}}]}`)
			send(`{"id":"chatcmpl-2","object":"chat.completion.chunk","model":"lab-llm","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":30,"completion_tokens":5,"total_tokens":35}}`)
		} else {
			send(`{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"lab-llm","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"message\":\"Where is order 42?\"}"}}]}}]}`)
			send(`{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"lab-llm","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29}}`)
		}
		send("[DONE]")
	}))
	defer llm.Close()

	inner := t.TempDir()
	writeFiles(t, inner, innerProject)
	const admin = "adm-0123456789abcdefghijklmnop"
	desk := startServer(t, inner, append([]string{"WEFT_ADMIN_KEY=" + admin}, otelEnv...), "--db", filepath.Join(inner, "w.db"), "--model-script", "inner.script.yaml")
	var once sync.Once
	stopDesk := func() { once.Do(desk.stop) }
	defer stopDesk()

	outer := t.TempDir()
	writeFiles(t, outer, map[string]string{
		"agents/providers/lab.yaml": "name: lab\nbase: openai-compatible\nbaseUrl: " + llm.URL + "/v1\napiKeyEnv: LAB_KEY\n",
		"agents/models/m.yaml":      "{name: m, provider: lab, model: lab-llm}\n",
		"agents/tools/orders.yaml":  "kind: mcp\nserver: {url: '" + desk.base + "/mcp', headers: {Authorization: 'Bearer " + admin + "'}}\n",
		"agents/prompts/front.yaml": "name: front\ntoolDescription: Front desk.\nmodel: m\nprompt: You help customers.\ntools: [\"mcp:orders/lookup\"]\n" +
			"modelOptions: {temperature: 0.25, maxOutputTokens: 300}\n" +
			"outputSchema: {type: object, properties: {answer: {type: string}}, required: [answer], additionalProperties: false}\n",
		"agents/agents/front.yaml": "{name: front, sideA: {prompt: front}}\n",
	})
	out, errOut, code := runWeftEnv(t, outer, append([]string{"LAB_KEY=k-123"}, otelEnv...), "run", "front", "Where is my order?")
	if code != 0 || !strings.Contains(out, "shipped") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	stopDesk() // flushes the server's spans

	u, _ := url.Parse(llm.URL)
	var spans []*tracepb.Span
	deadline := time.Now().Add(10 * time.Second)
	for {
		col.mu.Lock()
		spans = append(spans[:0], col.spans...)
		col.mu.Unlock()
		var server bool
		for _, s := range spans {
			server = server || s.Name == "tools/call lookup"
		}
		if server || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	find := func(name string) []*tracepb.Span {
		var out []*tracepb.Span
		for _, s := range spans {
			if s.Name == name {
				out = append(out, s)
			}
		}
		return out
	}
	one := func(name string) *tracepb.Span {
		ss := find(name)
		if len(ss) == 0 {
			var names []string
			for _, s := range spans {
				names = append(names, s.Name)
			}
			t.Fatalf("no %q span among %q", name, names)
		}
		return ss[0]
	}
	agent := one("invoke_agent front")
	tool := one("execute_tool lookup")
	server := one("tools/call lookup")
	chats := find("chat lab-llm")
	if len(chats) != 2 {
		t.Fatalf("%d chat spans, want 2", len(chats))
	}
	type check struct {
		span *tracepb.Span
		key  string
		want string // "*" = any non-empty value
	}
	checks := []check{
		{agent, "gen_ai.operation.name", "invoke_agent"},
		{agent, "gen_ai.provider.name", "lab"},
		{agent, "gen_ai.agent.name", "front"},
		{tool, "gen_ai.operation.name", "execute_tool"},
		{tool, "gen_ai.tool.name", "lookup"},
		{tool, "gen_ai.tool.description", "Answers questions about orders."},
		{tool, "gen_ai.tool.type", "extension"},
		{tool, "gen_ai.tool.call.id", "call_1"},
		{tool, "mcp.method.name", "tools/call"},
		{tool, "mcp.protocol.version", "2026-07-28"}, // stateless: no mcp.session.id
		{tool, "weft.mcp.tool", "lookup"},
		{tool, "network.transport", "tcp"},
		{tool, "server.address", "127.0.0.1"},
		{server, "mcp.method.name", "tools/call"},
		{server, "gen_ai.tool.name", "lookup"},
		{server, "gen_ai.operation.name", "execute_tool"},
		{server, "mcp.protocol.version", "2026-07-28"},
		{server, "network.transport", "tcp"},
	}
	for i, c := range chats {
		id := fmt.Sprintf("chatcmpl-%d", i+1)
		if attrValue(c, "gen_ai.response.id") == "chatcmpl-2" {
			id = "chatcmpl-2"
		}
		checks = append(checks,
			check{c, "gen_ai.operation.name", "chat"},
			check{c, "gen_ai.provider.name", "lab"},
			check{c, "gen_ai.request.model", "lab-llm"},
			check{c, "gen_ai.request.stream", "true"},
			check{c, "gen_ai.output.type", "json"},
			check{c, "gen_ai.request.max_tokens", "300"},
			check{c, "gen_ai.request.temperature", "0.25"},
			check{c, "gen_ai.response.id", id},
			check{c, "server.address", "127.0.0.1"},
			check{c, "server.port", u.Port()},
		)
	}
	for _, c := range checks {
		got := attrValue(c.span, c.key)
		if (c.want == "*" && got == "") || (c.want != "*" && got != c.want) {
			t.Errorf("span %q: %s = %q, want %q", c.span.Name, c.key, got, c.want)
		}
	}
	if server.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("MCP server span kind %v", server.Kind)
	}
	if hex.EncodeToString(server.TraceId) != hex.EncodeToString(tool.TraceId) || hex.EncodeToString(server.ParentSpanId) != hex.EncodeToString(tool.SpanId) {
		t.Errorf("the MCP server span is not the child of the tool span: trace %x/%x parent %x, tool span %x",
			server.TraceId, tool.TraceId, server.ParentSpanId, tool.SpanId)
	}
}
