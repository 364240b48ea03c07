package otel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// Config is what the OTEL_* environment asks for (Config.FromEnv).
type Config struct {
	// Traces and Metrics: export them over OTLP/HTTP.
	Traces, Metrics bool
	// CaptureContent: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
	CaptureContent bool
	// TracesProtocol and MetricsProtocol are http/protobuf (the default) or grpc.
	TracesProtocol, MetricsProtocol string
}

// The OTLP protocols Weft exports with.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Enabled tells whether anything is exported.
func (c Config) Enabled() bool { return c.Traces || c.Metrics }

// ConfigFromEnv reads the standard variables. Export is off unless asked for: traces are exported
// when OTEL_TRACES_EXPORTER=otlp, or when it is unset and OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; metrics likewise with OTEL_METRICS_EXPORTER and
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT. OTEL_SDK_DISABLED=true turns both off. Only OTLP over
// HTTP with protobuf is supported: another exporter or protocol is an error naming the variable.
func ConfigFromEnv(lookup func(string) (string, bool)) (Config, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	c := Config{TracesProtocol: ProtocolHTTP, MetricsProtocol: ProtocolHTTP}
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return c, nil
	}
	var err error
	endpoint := get("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	if c.Traces, err = wanted(get, "OTEL_TRACES_EXPORTER", endpoint || get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""); err != nil {
		return Config{}, err
	}
	if c.Metrics, err = wanted(get, "OTEL_METRICS_EXPORTER", endpoint || get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != ""); err != nil {
		return Config{}, err
	}
	protocol := func(k, def string) (string, error) {
		switch v := get(k); v {
		case "":
			return def, nil
		case ProtocolHTTP, ProtocolGRPC:
			return v, nil
		default:
			return "", fmt.Errorf("%s=%q: weft exports OTLP with http/protobuf or grpc (not http/json)", k, v)
		}
	}
	all, err := protocol("OTEL_EXPORTER_OTLP_PROTOCOL", ProtocolHTTP)
	if err != nil {
		return Config{}, err
	}
	if c.TracesProtocol, err = protocol("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", all); err != nil {
		return Config{}, err
	}
	if c.MetricsProtocol, err = protocol("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", all); err != nil {
		return Config{}, err
	}
	c.CaptureContent = strings.EqualFold(get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"), "true")
	return c, nil
}

// wanted reads an OTEL_*_EXPORTER variable: otlp or none, or unset (then def).
func wanted(get func(string) string, key string, def bool) (bool, error) {
	switch v := strings.ToLower(get(key)); v {
	case "":
		return def, nil
	case "otlp":
		return true, nil
	case "none":
		return false, nil
	default:
		return false, fmt.Errorf("%s=%q: weft exports with otlp (over HTTP) or none", key, v)
	}
}

// Setup builds the Observer c asks for, exporting over OTLP (HTTP with protobuf, or gRPC) as the OTEL_EXPORTER_OTLP_*
// variables say (endpoint, headers, timeout, compression, certificates; the exporters read them),
// with a resource from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (service.name defaults to
// weft). Spans go out in batches (OTEL_BSP_*), metrics periodically (OTEL_METRIC_EXPORT_INTERVAL).
// shutdown flushes and stops both; call it before the process exits. A Config that enables
// nothing returns a nil Observer.
//
// Export failures (a collector that is down) go to log; the OpenTelemetry SDK has one error handler
// per process, which Setup sets.
func Setup(ctx context.Context, c Config, version string, log *slog.Logger) (_ *Observer, shutdown func(context.Context) error, _ error) {
	shutdown = func(context.Context) error { return nil }
	if !c.Enabled() {
		return nil, shutdown, nil
	}
	if log != nil {
		otelapi.SetErrorHandler(otelapi.ErrorHandlerFunc(func(err error) { log.Warn("OpenTelemetry export failed", "error", err) }))
	}
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("weft"), semconv.ServiceVersion(version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, shutdown, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	opt := Options{CaptureContent: c.CaptureContent}
	var stops []func(context.Context) error
	shutdown = func(ctx context.Context) error {
		var errs []error
		for _, stop := range stops {
			errs = append(errs, stop(ctx))
		}
		return errors.Join(errs...)
	}
	if c.Traces {
		var exp sdktrace.SpanExporter
		var err error
		if c.TracesProtocol == ProtocolGRPC {
			exp, err = otlptracegrpc.New(ctx)
		} else {
			exp, err = otlptracehttp.New(ctx)
		}
		if err != nil {
			return nil, shutdown, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		stops = append(stops, tp.Shutdown)
		opt.TracerProvider = tp
	}
	if c.Metrics {
		var exp sdkmetric.Exporter
		var err error
		if c.MetricsProtocol == ProtocolGRPC {
			exp, err = otlpmetricgrpc.New(ctx)
		} else {
			exp, err = otlpmetrichttp.New(ctx)
		}
		if err != nil {
			return nil, shutdown, fmt.Errorf("OTLP metric exporter: %w", err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		stops = append(stops, mp.Shutdown)
		opt.MeterProvider = mp
	}
	o, err := New(opt)
	if err != nil {
		return nil, shutdown, err
	}
	return o, shutdown, nil
}
