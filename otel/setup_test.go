package otel_test

import (
	"strings"
	"testing"

	wotel "github.com/weft-agents/weft/otel"
)

// TestConfigFromEnv: export is off unless an endpoint or an otlp exporter is named; none and
// OTEL_SDK_DISABLED turn it off; what weft cannot export is an error naming the variable.
func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    wotel.Config
		wantErr string
	}{
		{"nothing", nil, wotel.Config{}, ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, wotel.Config{Traces: true, Metrics: true}, ""},
		{"traces_endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, wotel.Config{Traces: true}, ""},
		{"metrics_endpoint", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:4318/v1/metrics"}, wotel.Config{Metrics: true}, ""},
		{"traces_exporter", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, wotel.Config{Traces: true}, ""},
		{"metrics_none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_METRICS_EXPORTER": "none"}, wotel.Config{Traces: true}, ""},
		{"disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"}, wotel.Config{}, ""},
		{"capture", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
			wotel.Config{Traces: true, Metrics: true, CaptureContent: true}, ""},
		{"capture_needs_true", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "yes"},
			wotel.Config{Traces: true, Metrics: true}, ""},
		{"protobuf", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, wotel.Config{Traces: true, Metrics: true}, ""},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			wotel.Config{Traces: true, Metrics: true, TracesProtocol: "grpc", MetricsProtocol: "grpc"}, ""},
		{"grpc_traces_only", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
			wotel.Config{Traces: true, Metrics: true, TracesProtocol: "grpc", MetricsProtocol: "http/protobuf"}, ""},
		{"json", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wotel.Config{}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"json_traces", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, wotel.Config{}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{"console", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, wotel.Config{}, "OTEL_TRACES_EXPORTER"},
		{"prometheus", map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}, wotel.Config{}, "OTEL_METRICS_EXPORTER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wotel.ConfigFromEnv(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if tt.want.TracesProtocol == "" {
				tt.want.TracesProtocol, tt.want.MetricsProtocol = wotel.ProtocolHTTP, wotel.ProtocolHTTP
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			if got.Enabled() != (tt.want.Traces || tt.want.Metrics) {
				t.Error("Enabled disagrees")
			}
		})
	}
}
