package otel_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	wotel "github.com/weft-agents/weft/otel"
)

// discard is a span exporter that drops what it gets: the cost measured is Weft's and the SDK's,
// not a network's.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// benchToolModel calls lookup after the user's message, then answers.
var benchToolModel = weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
	if last := req.Messages[len(req.Messages)-1]; last.Role == weft.RoleUser {
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "call_lookup_1", Name: "lookup", Arguments: `{"order":42}`}},
			FinishReason: "tool_calls", Usage: weft.Usage{InputTokens: 1200, OutputTokens: 12}}, nil
	}
	return &weft.Response{Text: "Your order 42 has shipped.", FinishReason: "stop", Usage: weft.Usage{InputTokens: 1300, OutputTokens: 20}}, nil
})

// BenchmarkToolTurn is one tool-calling turn (model call → tool → model reply) on the in-memory
// store, with observation off (no Observer), and on: spans through the SDK's batch processor to
// an exporter that discards them, metrics into a manual reader.
func BenchmarkToolTurn(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			st, err := memstore.New(memstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			opt := engine.Options{Registry: testRegistry(), Store: st, Override: benchToolModel}
			if mode == "on" {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				defer tp.Shutdown(context.Background())
				defer mp.Shutdown(context.Background())
				obs, err := wotel.New(wotel.Options{TracerProvider: tp, MeterProvider: mp})
				if err != nil {
					b.Fatal(err)
				}
				opt.Observer = obs
			}
			eng, err := engine.New(opt)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "Where is order 42?"}); err != nil {
					b.Fatal(err)
				}
				res, err := eng.Run(ctx, th.ID)
				if err != nil || res.Last().Reason != weft.StopOnResponse || res.Steps != 2 {
					b.Fatalf("%v %+v", err, res.Last())
				}
				b.StopTimer()
				if err := st.DeleteThread(ctx, th.ID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
