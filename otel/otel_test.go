package otel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-agents/weft/engine/observe"
	"github.com/weft-agents/weft/validate"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	wotel "github.com/weft-agents/weft/otel"
)

// telemetry is an in-memory span exporter and a manual metric reader behind an Observer.
type telemetry struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	obs    *wotel.Observer
}

func newTelemetry(t *testing.T, content bool) *telemetry {
	t.Helper()
	tel := &telemetry{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tel.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	var err error
	if tel.obs, err = wotel.New(wotel.Options{TracerProvider: tp, MeterProvider: mp, CaptureContent: content}); err != nil {
		t.Fatal(err)
	}
	return tel
}

// metrics collects the recorded metrics by name.
func (tel *telemetry) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func attrs(s tracetest.SpanStub) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// testRegistry: an openai model with prices and fast retries, a prompt offering the lookup tool
// (which echoes its arguments), and the agent "assistant".
func testRegistry() *weft.Registry {
	reg := weft.NewRegistry()
	in, out := 2.0, 8.0
	reg.AddModel(&weft.Model{Name: "fast", Provider: "openai", Model: "gpt-4o-mini", InputPrice: &in, OutputPrice: &out,
		Retry: weft.RetryPolicy{Attempts: 3, BaseDelay: weft.Duration(time.Millisecond)}})
	reg.AddTool(&weft.Tool{Name: "lookup", Description: "Look up an order.", Idempotent: true,
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
			return weft.Success("found " + string(args)), nil
		})})
	reg.AddTool(&weft.Tool{Name: "charge", Description: "Charge the card.",
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
			return weft.Success("charged"), nil
		})})
	reg.AddPrompt(&weft.Prompt{Name: "assistant", ToolDescription: "Helps.", Model: "fast", Prompt: weft.Text("You are a concise helper."),
		Tools: []weft.ToolEntry{{Name: "lookup"}, {Name: "charge"}}})
	reg.AddAgent(&weft.Agent{Name: "assistant", SideA: weft.AgentSide{Prompt: "assistant"}})
	return reg
}

// flakyModel fails its first call with a rate limit, then calls lookup with the user's message as
// the order, then answers with the tool's result.
func flakyModel() weft.Provider {
	var calls atomic.Int64
	return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if calls.Add(1) == 1 {
			return nil, &weft.ProviderError{Type: weft.ErrRateLimit, Status: 429, Message: "slow down"}
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role == weft.RoleUser {
			args, _ := json.Marshal(map[string]string{"order": last.Text()})
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "call_1", Name: "lookup", Arguments: string(args)}},
				FinishReason: "tool_calls", ModelID: "gpt-4o-mini-2024-07-18", Usage: weft.Usage{InputTokens: 100, OutputTokens: 10}}, nil
		}
		return &weft.Response{Text: "Result: " + last.Text(), FinishReason: "stop", ModelID: "gpt-4o-mini-2024-07-18",
			Usage: weft.Usage{InputTokens: 150, OutputTokens: 20}}, nil
	})
}

func newEngine(t *testing.T, reg *weft.Registry, st weft.Store, model weft.Provider, obs observe.Observer) *engine.Engine {
	t.Helper()
	if d := validate.Registry(reg); d.HasErrors() {
		t.Fatal(d.Err())
	}
	// A lease long enough that a loaded machine never lets it lapse mid-run; a dead process's
	// lapses by the store's clock (expire).
	opt := engine.Options{Registry: reg, Store: st, Override: model, LeaseTTL: time.Minute}
	if obs != nil {
		opt.Observer = obs
	}
	eng, err := engine.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

func newStore(t *testing.T) weft.Store {
	st, _ := newClockedStore(t)
	return st
}

// newClockedStore returns a memory store and a function that moves its clock past every lease
// taken so far, as if a dead process's leases had lapsed.
func newClockedStore(t *testing.T) (weft.Store, func()) {
	var skew atomic.Int64
	st, err := memstore.New(memstore.Options{Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, func() { skew.Add(int64(2 * time.Minute)) }
}

// TestSpans runs a thread whose first model call is retried and whose model calls a tool, and
// checks the spans' names, their nesting and their gen_ai.* attributes, and the metrics.
func TestSpans(t *testing.T) {
	tel := newTelemetry(t, false)
	st := newStore(t)
	eng := newEngine(t, testRegistry(), st, flakyModel(), tel.obs)
	ctx := context.Background()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "order 42"}})
	if err != nil || res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("run: %v %+v", err, res.Last())
	}

	spans := tel.spans.GetSpans()
	var names []string
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		names = append(names, s.Name)
		byID[s.SpanContext.SpanID().String()] = s
	}
	// Spans are exported as they end: children first.
	want := []string{"chat gpt-4o-mini", "chat gpt-4o-mini", "execute_tool lookup", "step", "chat gpt-4o-mini", "step", "invoke_agent assistant"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("spans:\n%s\nwant:\n%s", strings.Join(names, ","), strings.Join(want, ","))
	}
	parentName := func(s tracetest.SpanStub) string {
		if !s.Parent.IsValid() {
			return ""
		}
		p, ok := byID[s.Parent.SpanID().String()]
		if !ok {
			return "?missing"
		}
		return p.Name
	}
	run := spans[6]
	for i, wantParent := range []string{"step", "step", "step", "invoke_agent assistant", "step", "invoke_agent assistant", ""} {
		if got := parentName(spans[i]); got != wantParent {
			t.Errorf("span %d %s: parent %q, want %q", i, spans[i].Name, got, wantParent)
		}
		if spans[i].SpanContext.TraceID() != run.SpanContext.TraceID() {
			t.Errorf("span %d %s is in another trace", i, spans[i].Name)
		}
	}
	if spans[0].Parent.SpanID() != spans[3].SpanContext.SpanID() || spans[4].Parent.SpanID() != spans[5].SpanContext.SpanID() {
		t.Error("each step's chat spans hang under that step")
	}

	// The run: an invoke_agent span with the thread as the conversation.
	ra := attrs(run)
	for k, v := range map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "assistant",
		"gen_ai.conversation.id": th.ID, "weft.thread.id": th.ID, "weft.run.trigger": "message", "weft.run.stop_reason": "stop_on_response"} {
		if ra[k].AsString() != v {
			t.Errorf("run span %s = %q, want %q", k, ra[k].String(), v)
		}
	}

	// The retried attempt: an error span; the retry names it.
	failed, retried, final := attrs(spans[0]), attrs(spans[1]), attrs(spans[4])
	if spans[0].Status.Code != codes.Error || failed["error.type"].AsString() != "rate_limit" || failed["weft.attempt"].AsInt64() != 1 {
		t.Errorf("failed attempt: status %v attrs %v", spans[0].Status, failed)
	}
	if _, ok := failed["gen_ai.usage.input_tokens"]; ok {
		t.Error("a failed attempt reports no usage")
	}
	if retried["weft.attempt"].AsInt64() != 2 || retried["weft.retry_of"].AsString() != failed["weft.log.id"].AsString() || spans[1].Status.Code == codes.Error {
		t.Errorf("retry: status %v attrs %v", spans[1].Status, retried)
	}
	for _, a := range []map[string]attribute.Value{failed, retried, final} {
		for k, v := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
			"gen_ai.request.model": "gpt-4o-mini", "gen_ai.conversation.id": th.ID, "weft.model": "fast"} {
			if a[k].AsString() != v {
				t.Errorf("chat span %s = %q, want %q", k, a[k].String(), v)
			}
		}
	}
	if retried["gen_ai.response.model"].AsString() != "gpt-4o-mini-2024-07-18" || retried["gen_ai.usage.input_tokens"].AsInt64() != 100 ||
		retried["gen_ai.usage.output_tokens"].AsInt64() != 10 || strings.Join(retried["gen_ai.response.finish_reasons"].AsStringSlice(), ",") != "tool_calls" {
		t.Errorf("retry attributes: %v", retried)
	}
	if final["gen_ai.usage.input_tokens"].AsInt64() != 150 || strings.Join(final["gen_ai.response.finish_reasons"].AsStringSlice(), ",") != "stop" {
		t.Errorf("final attributes: %v", final)
	}
	// 110 tokens at $2 / $8 per million.
	if c := retried["weft.cost.usd"].AsFloat64(); c < 0.000279 || c > 0.000281 {
		t.Errorf("cost %v", c)
	}
	if !spans[0].StartTime.Before(spans[1].StartTime) || spans[1].EndTime.Before(spans[1].StartTime) {
		t.Errorf("attempt times: %v–%v then %v–%v", spans[0].StartTime, spans[0].EndTime, spans[1].StartTime, spans[1].EndTime)
	}

	// The tool call.
	tool := attrs(spans[2])
	for k, v := range map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "call_1",
		"gen_ai.tool.type": "function", "gen_ai.conversation.id": th.ID, "weft.tool.status": "success"} {
		if tool[k].AsString() != v {
			t.Errorf("tool span %s = %q, want %q", k, tool[k].String(), v)
		}
	}
	// Without OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT no content is recorded.
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), "order 42") {
				t.Errorf("span %s carries content in %s", s.Name, kv.Key)
			}
		}
	}
	steps := []map[string]attribute.Value{attrs(spans[3]), attrs(spans[5])}
	if steps[0]["weft.step"].AsInt64() != 1 || steps[1]["weft.step"].AsInt64() != 2 || steps[0]["weft.prompt"].AsString() != "assistant" {
		t.Errorf("steps: %v", steps)
	}

	// Metrics: three attempts timed (one failed), two answered with usage, priced.
	m := tel.metrics(t)
	dur := m[wotel.MetricDuration].(metricdata.Histogram[float64])
	var durCount uint64
	var durFailed uint64
	for _, dp := range dur.DataPoints {
		durCount += dp.Count
		if v, ok := dp.Attributes.Value("error.type"); ok && v.AsString() == "rate_limit" {
			durFailed += dp.Count
		}
	}
	if durCount != 3 || durFailed != 1 {
		t.Errorf("duration points: %d (%d failed), want 3 (1)", durCount, durFailed)
	}
	tokens := map[string]int64{}
	for _, dp := range m[wotel.MetricTokenUsage].(metricdata.Histogram[int64]).DataPoints {
		typ, _ := dp.Attributes.Value("gen_ai.token.type")
		tokens[typ.AsString()] += dp.Sum
		if v, _ := dp.Attributes.Value("gen_ai.provider.name"); v.AsString() != "openai" {
			t.Errorf("token point without provider: %v", dp.Attributes)
		}
	}
	if tokens["input"] != 250 || tokens["output"] != 30 {
		t.Errorf("tokens %v, want input 250 output 30", tokens)
	}
	var cost float64
	for _, dp := range m[wotel.MetricCost].(metricdata.Sum[float64]).DataPoints {
		cost += dp.Value
	}
	if want := (250*2.0 + 30*8.0) / 1e6; cost < want-1e-9 || cost > want+1e-9 {
		t.Errorf("cost %v, want %v", cost, want)
	}
}

// TestContentRedacted: with content capture on, messages, arguments and results are on the spans,
// and a thread secret is replaced by [redacted] everywhere.
func TestContentRedacted(t *testing.T) {
	const secret = "sk-live-7f3a9c2e1b"
	tel := newTelemetry(t, true)
	eng := newEngine(t, testRegistry(), newStore(t), flakyModel(), tel.obs)
	ctx := context.Background()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant", Env: map[string]string{"CARD_TOKEN": secret}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "charge card " + secret}}); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, s := range tel.spans.GetSpans() {
		for _, kv := range s.Attributes {
			v := kv.Value.String()
			if strings.Contains(v, secret) {
				t.Errorf("span %s leaks the secret in %s: %s", s.Name, kv.Key, v)
			}
			if strings.Contains(v, "[redacted]") {
				found[string(kv.Key)] = true
			}
		}
		if strings.Contains(s.Status.Description, secret) {
			t.Errorf("span %s leaks the secret in its status", s.Name)
		}
	}
	for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
		if !found[k] {
			t.Errorf("%s not captured (with the secret redacted); captured: %v", k, found)
		}
	}
	// The captured messages have the conventions' shape.
	for _, s := range tel.spans.GetSpans() {
		if v, ok := attrs(s)["gen_ai.input.messages"]; ok {
			var msgs []struct {
				Role  string           `json:"role"`
				Parts []map[string]any `json:"parts"`
			}
			if err := json.Unmarshal([]byte(v.AsString()), &msgs); err != nil || len(msgs) == 0 || msgs[0].Role != "system" {
				t.Errorf("input messages %s: %v", v.AsString(), err)
			}
		}
	}
}

var errCrashed = errors.New("process crashed")

// crashStore lets n fenced transactions commit, then fails every write as if the process had died
// there (its lease is not released).
type crashStore struct {
	weft.Store
	mu       sync.Mutex
	n, after int
}

func (s *crashStore) dead() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.n >= s.after }

func (s *crashStore) Tx(ctx context.Context, id string, f *weft.Fence, fn func(weft.Tx) error) error {
	if f == nil {
		return s.Store.Tx(ctx, id, f, fn)
	}
	if s.dead() {
		return errCrashed
	}
	if err := s.Store.Tx(ctx, id, f, fn); err != nil {
		return err
	}
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	return nil
}
func (s *crashStore) RenewLease(ctx context.Context, f weft.Fence, ttl time.Duration) error {
	if s.dead() {
		return errCrashed
	}
	return s.Store.RenewLease(ctx, f, ttl)
}
func (s *crashStore) ReleaseLease(ctx context.Context, f weft.Fence) error {
	if s.dead() {
		return errCrashed
	}
	return s.Store.ReleaseLease(ctx, f)
}

// twoTools calls charge (not idempotent) and lookup (idempotent) after the user's message, then
// answers.
var twoTools = weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
	if last := req.Messages[len(req.Messages)-1]; last.Role == weft.RoleUser {
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "charge", Arguments: `{}`}, {ID: "c2", Name: "lookup", Arguments: `{}`}},
			Usage: weft.Usage{InputTokens: 40, OutputTokens: 4}}, nil
	}
	return &weft.Response{Text: "done", Usage: weft.Usage{InputTokens: 60, OutputTokens: 6}}, nil
})

// TestCrashResumeNotDuplicated kills a run after each of its commits in turn and resumes it in a
// new engine: over both processes, each stored model attempt has exactly one chat span and each
// stored tool result exactly one execute_tool span, and the token metrics count each stored
// attempt once.
func TestCrashResumeNotDuplicated(t *testing.T) {
	for after := 0; after <= 5; after++ {
		t.Run(fmt.Sprint("crash_after_commit_", after), func(t *testing.T) {
			mem, expire := newClockedStore(t)
			cs := &crashStore{Store: mem, after: after}
			reg := testRegistry()
			tel1, tel2 := newTelemetry(t, false), newTelemetry(t, false)
			ctx := context.Background()
			first := newEngine(t, reg, cs, twoTools, tel1.obs)
			th, err := first.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := first.Send(ctx, th.ID, weft.NewMessage{Content: "pay"}); err != nil {
				t.Fatal(err)
			}
			first.Run(ctx, th.ID) // dies after `after` commits

			expire() // the dead process's lease lapses
			second := newEngine(t, reg, mem, twoTools, tel2.obs)
			if _, err := second.Continue(ctx, th.ID, ""); err != nil {
				t.Fatal(err)
			}
			if q, _ := mem.Queued(ctx, th.ID); len(q) > 0 {
				if _, err := second.Run(ctx, th.ID); err != nil {
					t.Fatal(err)
				}
			}
			logs, err := mem.Logs(ctx, th.ID, weft.LogQuery{})
			if err != nil {
				t.Fatal(err)
			}
			msgs, _ := mem.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
			if last := msgs[len(msgs)-1]; last.Content != "done" {
				t.Fatalf("the thread did not finish: %q", last.Content)
			}
			stored := map[string]int{}
			var storedIn int64
			for _, l := range logs {
				stored["log "+l.ID]++
				storedIn += int64(l.InputTokens)
			}
			for _, m := range msgs {
				if m.Role == weft.RoleTool {
					stored["call "+m.ToolCallID]++
				}
			}
			spans := append(tel1.spans.GetSpans(), tel2.spans.GetSpans()...)
			seen := map[string]int{}
			for _, s := range spans {
				a := attrs(s)
				switch {
				case strings.HasPrefix(s.Name, "chat "):
					seen["log "+a["weft.log.id"].AsString()]++
				case strings.HasPrefix(s.Name, "execute_tool "):
					seen["call "+a["gen_ai.tool.call.id"].AsString()]++
				}
			}
			if fmt.Sprint(seen) != fmt.Sprint(stored) {
				t.Errorf("spans per record %v, want one per stored record %v", seen, stored)
			}
			var metricIn int64
			for _, tel := range []*telemetry{tel1, tel2} {
				if h, ok := tel.metrics(t)[wotel.MetricTokenUsage].(metricdata.Histogram[int64]); ok {
					for _, dp := range h.DataPoints {
						if v, _ := dp.Attributes.Value("gen_ai.token.type"); v.AsString() == "input" {
							metricIn += dp.Sum
						}
					}
				}
			}
			if metricIn != storedIn {
				t.Errorf("input tokens in metrics %d, in the stored logs %d", metricIn, storedIn)
			}
			// The resumed run says so.
			for _, s := range tel2.spans.GetSpans() {
				if strings.HasPrefix(s.Name, "invoke_agent") {
					if tr := attrs(s)["weft.run.trigger"].AsString(); tr != "resume" && tr != "continue" {
						t.Errorf("resumed run trigger %q", tr)
					}
				}
			}
		})
	}
}

// TestSubagentNests: a blocking subagent's run is a span under the parent's execute_tool span,
// in the parent's trace, with the child thread's attributes.
func TestSubagentNests(t *testing.T) {
	reg := testRegistry()
	reg.AddTool(&weft.Tool{Name: "approve", Description: "Approve the draft.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		return weft.Success("approved"), nil
	})})
	reg.AddPrompt(&weft.Prompt{Name: "reviewer", ToolDescription: "Reviews.", Model: "fast", Prompt: weft.Text("You review drafts."),
		Tools: []weft.ToolEntry{{Name: "approve"}}})
	reg.AddPrompt(&weft.Prompt{Name: "author", ToolDescription: "Writes.", Model: "fast", Prompt: weft.Text("You revise drafts.")})
	reg.AddAgent(&weft.Agent{Name: "review", Type: weft.DualAI, ExposeAsTool: true, ToolDescription: "Have a draft reviewed.",
		SideA: weft.AgentSide{Prompt: "reviewer", SessionStop: &weft.SessionTool{Name: "approve"}}, SideB: &weft.AgentSide{Prompt: "author"}})
	p, _ := reg.Prompt("assistant")
	p.Tools = []weft.ToolEntry{{Name: "review", Kind: weft.EntryAgent}}
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		switch last := req.Messages[len(req.Messages)-1]; {
		case req.Prompt == "reviewer":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "a1", Name: "approve", Arguments: `{}`}}}, nil
		case last.Role == weft.RoleUser:
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "r1", Name: "review", Arguments: `{"message":"Draft"}`}}}, nil
		default:
			return &weft.Response{Text: "reviewed"}, nil
		}
	})
	tel := newTelemetry(t, false)
	eng := newEngine(t, reg, newStore(t), model, tel.obs)
	ctx := context.Background()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "review my draft"}}); err != nil || res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("%v %+v", err, res)
	}
	byName := map[string]tracetest.SpanStub{}
	for _, s := range tel.spans.GetSpans() {
		byName[s.Name] = s
	}
	child, call, parent := byName["invoke_agent review"], byName["execute_tool review"], byName["invoke_agent assistant"]
	if !child.SpanContext.IsValid() || !call.SpanContext.IsValid() {
		t.Fatalf("spans: %v", byName)
	}
	if child.Parent.SpanID() != call.SpanContext.SpanID() || child.SpanContext.TraceID() != parent.SpanContext.TraceID() {
		t.Errorf("the child's run hangs under %v, want the call %v", child.Parent.SpanID(), call.SpanContext.SpanID())
	}
	if a := attrs(child); a["weft.thread.parent_id"].AsString() != th.ID || a["weft.thread.root_id"].AsString() != th.ID {
		t.Errorf("child run attributes: %v", a)
	}
}
