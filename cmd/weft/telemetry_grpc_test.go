package main

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// grpcCollector is an OTLP/gRPC collector stand-in: the OTLP services, decoded by gRPC itself.
type grpcCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu      sync.Mutex
	spans   []string
	metrics map[string]bool
}

func (c *grpcCollector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, s.Name)
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// metricsService adapts the collector to the metrics service (whose method is also Export).
type metricsService struct {
	colmetricpb.UnimplementedMetricsServiceServer
	c *grpcCollector
}

func (m metricsService) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, x := range sm.Metrics {
				m.c.metrics[x.Name] = true
			}
		}
	}
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// TestRunExportsOTLPGRPC: with OTEL_EXPORTER_OTLP_PROTOCOL=grpc, weft run exports its spans and
// metrics over OTLP/gRPC.
func TestRunExportsOTLPGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &grpcCollector{metrics: map[string]bool{}}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, col)
	colmetricpb.RegisterMetricsServiceServer(srv, metricsService{c: col})
	go srv.Serve(ln)
	defer srv.Stop()
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + ln.Addr().String(), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_SERVICE_NAME=",
		"OTEL_RESOURCE_ATTRIBUTES=", "OTEL_TRACES_EXPORTER=", "OTEL_METRICS_EXPORTER=", "OTEL_SDK_DISABLED=",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT="}
	out, errOut, code := runWeftEnv(t, t.TempDir(), env, "run", "--dir", repo("examples/support/agents"), "support", "Where is order 42?",
		"--model-script", repo("examples/support/demo.script.yaml"))
	if code != 0 || strings.Contains(errOut, "OpenTelemetry") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if got := strings.Join(col.spans, ","); !strings.Contains(got, "invoke_agent support") || !strings.Contains(got, "execute_tool lookup_order") {
		t.Errorf("spans over gRPC: %v", col.spans)
	}
	if !col.metrics["gen_ai.client.token.usage"] {
		t.Errorf("metrics over gRPC: %v", col.metrics)
	}
}
