package otel

import (
	"encoding/json"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
)

func render(kvs []attribute.KeyValue) string {
	out := ""
	for _, kv := range kvs {
		out += fmt.Sprintf("%s=%s;", kv.Key, kv.Value.String())
	}
	return out
}

// TestRequestAttributes: model options, API roots and response bodies map to the conventions'
// request, server and response attributes.
func TestRequestAttributes(t *testing.T) {
	opts := []struct {
		in   map[string]any
		want string
	}{
		{nil, ""},
		{map[string]any{"temperature": 0.5, "maxOutputTokens": uint64(100), "topP": 1, "seed": int64(7), "stop": []any{"x", "y"}},
			"gen_ai.request.max_tokens=100;gen_ai.request.temperature=0.5;gen_ai.request.top_p=1;gen_ai.request.seed=7;gen_ai.request.stop_sequences=[\"x\",\"y\"];"},
		{map[string]any{"temperature": "hot", "stop": "END"}, "gen_ai.request.stop_sequences=[\"END\"];"},
	}
	for _, c := range opts {
		if got := render(requestOptions(c.in)); got != c.want {
			t.Errorf("requestOptions(%v) = %s, want %s", c.in, got, c.want)
		}
	}
	servers := []struct{ in, want string }{
		{"https://api.openai.com/v1", "server.address=api.openai.com;server.port=443;"},
		{"http://127.0.0.1:8080/v1", "server.address=127.0.0.1;server.port=8080;"},
		{"http://localhost/v1", "server.address=localhost;server.port=80;"},
		{"", ""},
		{"::bad", ""},
	}
	for _, c := range servers {
		if got := render(serverAttrs(c.in)); got != c.want {
			t.Errorf("serverAttrs(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	ids := []struct{ in, want string }{
		{`{"id":"chatcmpl-1","choices":[]}`, "chatcmpl-1"},
		{`{"responseId":"g-1"}`, "g-1"},
		{`{"text":"hi"}`, ""},
		{`not json`, ""},
		{``, ""},
	}
	for _, c := range ids {
		if got := responseID(json.RawMessage(c.in)); got != c.want {
			t.Errorf("responseID(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}
