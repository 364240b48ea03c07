package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/weft-agents/weft/engine/observe"
	wotel "github.com/weft-agents/weft/otel"
)

// flushTimeout bounds the export of the last spans and metrics at exit.
const flushTimeout = 5 * time.Second

// telemetry sets up OpenTelemetry export as the OTEL_* environment asks (docs/observability.md).
// It returns the engine's observer (nil: export is off, the default) and a function flushing what
// is left; call it before the process exits. A variable asking for what weft cannot export is a
// usage error naming it.
func telemetry(ctx context.Context, log *slog.Logger) (observe.Observer, func(), error) {
	cfg, err := wotel.ConfigFromEnv(os.LookupEnv)
	if err != nil {
		return nil, func() {}, exit(exitUsage, err)
	}
	if !cfg.Enabled() {
		return nil, func() {}, nil
	}
	obs, shutdown, err := wotel.Setup(ctx, cfg, version(), log)
	if err != nil {
		return nil, func() {}, exit(exitUsage, err)
	}
	return obs, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("OpenTelemetry: the last spans and metrics were not exported", "error", err)
		}
	}, nil
}

// tracerOf is the tracer provider of an observer telemetry returned, for the MCP server's spans;
// nil when export is off.
func tracerOf(obs observe.Observer) trace.TracerProvider {
	if o, ok := obs.(*wotel.Observer); ok && o != nil {
		return o.TracerProvider()
	}
	return nil
}
