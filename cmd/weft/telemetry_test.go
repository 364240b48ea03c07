package main

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is a stand-in OpenTelemetry collector: it decodes the OTLP/HTTP protobuf requests it
// receives and keeps their spans and metric names.
type collector struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	service  string
	metrics  map[string]bool
	requests []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf body", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, r.URL.Path)
	switch r.URL.Path {
	case "/v1/traces":
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					c.service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	case "/v1/metrics":
		var req colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					c.metrics[m.Name] = true
				}
			}
		}
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	default:
		http.NotFound(w, r)
	}
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.GetValue().GetStringValue()
		}
	}
	return ""
}

// TestRunExportsOTLP runs the support example with the real binary, exporting to a collector
// stand-in over OTLP/HTTP: the run's spans arrive, nested as run → step → chat / execute_tool, the
// sub-prompt's model call under its tool call, and the GenAI metrics arrive at exit.
func TestRunExportsOTLP(t *testing.T) {
	col := &collector{metrics: map[string]bool{}}
	srv := httptest.NewServer(col)
	defer srv.Close()
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_SERVICE_NAME=", "OTEL_RESOURCE_ATTRIBUTES=",
		"OTEL_TRACES_EXPORTER=", "OTEL_METRICS_EXPORTER=", "OTEL_SDK_DISABLED=", "OTEL_EXPORTER_OTLP_PROTOCOL="}
	out, errOut, code := runWeftEnv(t, t.TempDir(), env, "run", "--dir", repo("examples/support/agents"), "support", "Where is order 42?",
		"--model-script", repo("examples/support/demo.script.yaml"))
	if code != 0 || !strings.Contains(out, "PC-77812") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if strings.Contains(errOut, "OpenTelemetry") {
		t.Errorf("export complained: %s", errOut)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if col.service != "weft" {
		t.Errorf("service.name %q, want weft", col.service)
	}
	byID := map[string]*tracepb.Span{}
	count := map[string]int{}
	for _, s := range col.spans {
		byID[string(s.SpanId)] = s
		count[s.Name]++
	}
	// The example's model is gpt-4o-mini: two support steps, the sub-prompt's reply, the final step.
	want := map[string]int{"invoke_agent support": 1, "step": 3, "chat gpt-4o-mini": 4, "execute_tool lookup_order": 1, "execute_tool draft_reply": 1}
	parent := func(s *tracepb.Span) string {
		if p, ok := byID[string(s.ParentSpanId)]; ok {
			return p.Name
		}
		return ""
	}
	for name, n := range want {
		if count[name] != n {
			t.Errorf("%d %q spans, want %d (got %v)", count[name], name, n, count)
		}
	}
	for _, s := range col.spans {
		var wantParent string
		switch {
		case s.Name == "step":
			wantParent = "invoke_agent support"
		case strings.HasPrefix(s.Name, "execute_tool"):
			wantParent = "step"
		case strings.HasPrefix(s.Name, "chat") && spanAttr(s, "weft.prompt") == "draft_reply":
			wantParent = "execute_tool draft_reply"
		case strings.HasPrefix(s.Name, "chat"):
			wantParent = "step"
		}
		if got := parent(s); got != wantParent {
			t.Errorf("span %s (prompt %s): parent %q, want %q", s.Name, spanAttr(s, "weft.prompt"), got, wantParent)
		}
		if strings.HasPrefix(s.Name, "chat") && (spanAttr(s, "gen_ai.operation.name") != "chat" || spanAttr(s, "gen_ai.provider.name") == "") {
			t.Errorf("chat span attributes: %v", s.Attributes)
		}
		if s.Name == "execute_tool lookup_order" && spanAttr(s, "gen_ai.tool.name") != "lookup_order" {
			t.Errorf("tool span attributes: %v", s.Attributes)
		}
		if s.Name == "invoke_agent support" && spanAttr(s, "gen_ai.agent.name") != "support" {
			t.Errorf("run span attributes: %v", s.Attributes)
		}
	}
	for _, m := range []string{"gen_ai.client.operation.duration", "gen_ai.client.token.usage"} {
		if !col.metrics[m] {
			t.Errorf("metric %s not exported (got %v; requests %v)", m, col.metrics, col.requests)
		}
	}
}

// TestTelemetryEnv: export is off unless asked for, and a protocol or exporter weft does not
// speak is a usage error naming the variable.
func TestTelemetryEnv(t *testing.T) {
	col := &collector{metrics: map[string]bool{}}
	srv := httptest.NewServer(col)
	defer srv.Close()
	tests := []struct {
		name     string
		env      []string
		code     int
		stderr   string
		exported bool
	}{
		{"off_by_default", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_TRACES_EXPORTER=", "OTEL_METRICS_EXPORTER="}, 0, "", false},
		{"disabled", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_SDK_DISABLED=true"}, 0, "", false},
		{"exporters_none", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none"}, 0, "", false},
		{"http_json", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}, 2, "OTEL_EXPORTER_OTLP_PROTOCOL", false},
		{"zipkin", []string{"OTEL_TRACES_EXPORTER=zipkin"}, 2, "OTEL_TRACES_EXPORTER", false},
		{"traces_endpoint", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + srv.URL + "/v1/traces"}, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			col.mu.Lock()
			col.spans = nil
			col.mu.Unlock()
			env := append([]string{"OTEL_SDK_DISABLED=", "OTEL_EXPORTER_OTLP_PROTOCOL=", "OTEL_TRACES_EXPORTER=", "OTEL_METRICS_EXPORTER=",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT="}, tt.env...)
			out, errOut, code := runWeftEnv(t, t.TempDir(), env, "run", "--dir", repo("examples/support/agents"), "support", "Where is order 42?",
				"--model-script", repo("examples/support/demo.script.yaml"))
			if code != tt.code || !strings.Contains(errOut, tt.stderr) {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			col.mu.Lock()
			got := len(col.spans) > 0
			col.mu.Unlock()
			if got != tt.exported {
				t.Errorf("spans exported: %v, want %v", got, tt.exported)
			}
		})
	}
}

// TestServeExportsOTLP: weft serve exports the runs it serves, flushed at shutdown; with content
// capture on, the thread's secret (which the model's reply quotes) is redacted in every span.
func TestServeExportsOTLP(t *testing.T) {
	col := &collector{metrics: map[string]bool{}}
	srv := httptest.NewServer(col)
	defer srv.Close()
	dir := t.TempDir()
	s := startServer(t, dir, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true",
		"OTEL_SDK_DISABLED=", "OTEL_TRACES_EXPORTER=", "OTEL_METRICS_EXPORTER=", "OTEL_EXPORTER_OTLP_PROTOCOL="},
		"--no-auth", "--dir", repo("httpapi/testdata/agents"), "--db", filepath.Join(dir, "weft.db"), "--model-script", chatScript(t, 1))
	var created struct {
		Thread struct{ ID string } `json:"thread"`
	}
	s.must("POST", "/api/threads", "", `{"agent":"chat","env":{"TOKEN":"`+e2eSecret+`"}}`, 201, &created)
	s.must("POST", "/api/threads/"+created.Thread.ID+"/messages", "", `{"content":"hello"}`, 202, nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var th struct {
			StopReason string `json:"stop_reason"`
		}
		s.must("GET", "/api/threads/"+created.Thread.ID, "", "", 200, &th)
		if th.StopReason != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not stop")
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop() // flushes the batch

	col.mu.Lock()
	defer col.mu.Unlock()
	names := map[string]int{}
	captured := false
	for _, sp := range col.spans {
		names[sp.Name]++
		for _, a := range sp.Attributes {
			v := a.GetValue().GetStringValue()
			if strings.Contains(v, e2eSecret) {
				t.Errorf("span %s leaks the secret in %s", sp.Name, a.Key)
			}
			if a.Key == "gen_ai.output.messages" && strings.Contains(v, "The token was [redacted]") {
				captured = true
			}
		}
		if spanAttr(sp, "gen_ai.conversation.id") != created.Thread.ID {
			t.Errorf("span %s of another conversation: %q", sp.Name, spanAttr(sp, "gen_ai.conversation.id"))
		}
	}
	if names["invoke_agent chat"] != 1 || names["execute_tool echo"] != 1 || names["step"] != 2 {
		t.Errorf("spans %v", names)
	}
	if !captured {
		t.Error("the reply's content was not captured (redacted)")
	}
}
