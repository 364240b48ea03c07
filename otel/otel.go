// Package otel reports Weft's runs to OpenTelemetry: a span per run, step, model call attempt and
// tool call, named and described with the GenAI semantic conventions (semconv v1.41.0), and the
// GenAI client metrics for token usage and operation duration, plus a cost counter
// (docs/observability.md). It implements observe.Observer; Setup builds it from the standard
// OTEL_* environment with OTLP/HTTP exporters.
package otel

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/observe"
)

// ScopeName is the instrumentation scope of Weft's spans and metrics.
const ScopeName = "github.com/weft-agents/weft/otel"

// The metrics Weft records. Token usage and duration are the GenAI client metrics; cost has no
// semantic convention yet and carries Weft's prefix.
const (
	MetricTokenUsage = "gen_ai.client.token.usage"
	MetricDuration   = "gen_ai.client.operation.duration"
	MetricCost       = "weft.gen_ai.client.cost"
)

// Weft's own span attributes, next to the gen_ai.* ones.
const (
	AttrRunID      = attribute.Key("weft.run.id")
	AttrThreadID   = attribute.Key("weft.thread.id")
	AttrRootID     = attribute.Key("weft.thread.root_id")
	AttrParentID   = attribute.Key("weft.thread.parent_id")
	AttrTrigger    = attribute.Key("weft.run.trigger")
	AttrStopReason = attribute.Key("weft.run.stop_reason")
	AttrSteps      = attribute.Key("weft.run.steps")
	AttrStep       = attribute.Key("weft.step")
	AttrSide       = attribute.Key("weft.side")
	AttrPrompt     = attribute.Key("weft.prompt")
	AttrDepth      = attribute.Key("weft.depth")
	AttrModel      = attribute.Key("weft.model")
	AttrLogID      = attribute.Key("weft.log.id")
	AttrAttempt    = attribute.Key("weft.attempt")
	AttrRetryOf    = attribute.Key("weft.retry_of")
	AttrCost       = attribute.Key("weft.cost.usd")
	AttrResumed    = attribute.Key("weft.resumed")
	AttrToolStatus = attribute.Key("weft.tool.status")
	AttrMCPServer  = attribute.Key("weft.mcp.server")
)

// Options configure an Observer.
type Options struct {
	// TracerProvider makes the spans; nil = no spans.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics; nil = no metrics.
	MeterProvider metric.MeterProvider
	// CaptureContent adds the messages sent and received and the tools' arguments and results to
	// the spans (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true), always through the
	// thread's secret redactor.
	CaptureContent bool
}

// Observer reports runs to OpenTelemetry (observe.Observer).
type Observer struct {
	tp       trace.TracerProvider
	tracer   trace.Tracer
	tokens   metric.Int64Histogram
	duration metric.Float64Histogram
	cost     metric.Float64Counter
	content  bool

	setsMu sync.Mutex
	sets   map[metricKey]attribute.Set
}

// New returns an Observer over the providers of opt.
func New(opt Options) (*Observer, error) {
	tp, mp := opt.TracerProvider, opt.MeterProvider
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	o := &Observer{tp: tp, tracer: tp.Tracer(ScopeName), content: opt.CaptureContent, sets: map[metricKey]attribute.Set{}}
	meter := mp.Meter(ScopeName)
	var err error
	// Bucket boundaries as the GenAI metric conventions advise.
	if o.tokens, err = meter.Int64Histogram(MetricTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)); err != nil {
		return nil, err
	}
	if o.duration, err = meter.Float64Histogram(MetricDuration, metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)); err != nil {
		return nil, err
	}
	if o.cost, err = meter.Float64Counter(MetricCost, metric.WithUnit("{USD}"),
		metric.WithDescription("Cost of model calls in US dollars, as priced by the model definitions or reported by the provider.")); err != nil {
		return nil, err
	}
	return o, nil
}

// TracerProvider is the provider the Observer's spans come from, for other instrumentation of
// the same process (the MCP server's spans).
func (o *Observer) TracerProvider() trace.TracerProvider { return o.tp }

// frame is an open span and the context carrying it.
type frame struct {
	ctx  context.Context
	span trace.Span
}

// runObserver observes one run: the open spans form a stack (run, step, tool call, nested tool
// call …), which the engine opens and closes in order from the run's goroutine.
type runObserver struct {
	o      *Observer
	info   observe.RunInfo
	conv   attribute.KeyValue
	stack  []frame
	redact func(string) string
}

// StartRun opens the run's span, an invoke_agent span.
func (o *Observer) StartRun(ctx context.Context, info observe.RunInfo) observe.RunObserver {
	conv := semconv.GenAIConversationID(info.ThreadID)
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(info.Agent), conv,
		AttrRunID.String(info.RunID), AttrThreadID.String(info.ThreadID), AttrRootID.String(info.RootID)}
	if info.Provider != "" {
		attrs = append(attrs, providerName(info.Provider))
	}
	if info.ParentID != "" {
		attrs = append(attrs, AttrParentID.String(info.ParentID))
	}
	ctx, span := o.tracer.Start(ctx, "invoke_agent "+info.Agent, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	redact := info.Redact
	if redact == nil {
		redact = func(s string) string { return s }
	}
	r := &runObserver{o: o, info: info, conv: conv, redact: redact}
	r.stack = append(make([]frame, 0, 4), frame{ctx, span})
	return r
}

func (r *runObserver) top() frame { return r.stack[len(r.stack)-1] }

func (r *runObserver) push(f frame) { r.stack = append(r.stack, f) }

func (r *runObserver) pop() frame {
	f := r.top()
	if len(r.stack) > 1 {
		r.stack = r.stack[:len(r.stack)-1]
	}
	return f
}

// StartStep opens a step's span under the run's.
func (r *runObserver) StartStep(s observe.StepInfo) {
	ctx, span := r.o.tracer.Start(r.top().ctx, "step", trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		AttrStep.Int(s.Step), AttrSide.String(string(s.Side)), AttrPrompt.String(s.Prompt), r.conv))
	r.push(frame{ctx, span})
}

// EndStep closes the step's span.
func (r *runObserver) EndStep(err error) {
	f := r.pop()
	if err != nil {
		f.span.SetStatus(codes.Error, r.redact(err.Error()))
	}
	f.span.End()
}

// ModelCall records a span per attempt (retries and fallbacks are siblings, numbered by
// weft.attempt, each naming the attempt it retries) and the attempt's metrics.
func (r *runObserver) ModelCall(c observe.ModelCall) {
	parent := r.top().ctx
	for i, a := range c.Attempts {
		l := a.Log
		provider := providerName(l.Provider)
		op := semconv.GenAIOperationNameChat
		attrs := append(make([]attribute.KeyValue, 0, 24), op, provider, semconv.GenAIRequestModel(a.RequestModel), r.conv,
			AttrModel.String(l.Model), AttrLogID.String(l.ID), AttrAttempt.Int(i+1), AttrPrompt.String(c.Prompt),
			AttrSide.String(string(c.Side)), AttrDepth.Int(c.Depth))
		if l.RetryOfLogID != "" {
			attrs = append(attrs, AttrRetryOf.String(l.RetryOfLogID))
		}
		attrs = append(attrs, semconv.GenAIRequestStream(a.Stream))
		attrs = append(attrs, requestOptions(a.Options)...)
		if c.Structured {
			attrs = append(attrs, semconv.GenAIOutputTypeJSON)
		}
		attrs = append(attrs, serverAttrs(a.ServerURL)...)
		errType := ""
		switch {
		case !l.IsComplete:
			errType = l.ErrorType
			if errType == "" {
				errType = "_OTHER"
			}
		case l.Error != "":
			// An answer the engine discarded (toolChoice required ignored, invalid structured answer).
			errType = "reply_discarded"
		}
		if l.IsComplete {
			attrs = append(attrs, semconv.GenAIResponseModel(l.ModelID),
				semconv.GenAIUsageInputTokens(l.InputTokens), semconv.GenAIUsageOutputTokens(l.OutputTokens))
			if l.FinishReason != "" {
				attrs = append(attrs, semconv.GenAIResponseFinishReasons(l.FinishReason))
			}
			if id := responseID(l.ResponseBody); id != "" {
				attrs = append(attrs, semconv.GenAIResponseID(id))
			}
			if l.CachedTokens > 0 {
				attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokens(l.CachedTokens))
			}
			if l.ReasoningTokens > 0 {
				attrs = append(attrs, semconv.GenAIUsageReasoningOutputTokens(l.ReasoningTokens))
			}
		}
		if l.CostTotal != nil {
			attrs = append(attrs, AttrCost.Float64(*l.CostTotal))
		}
		if errType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
		}
		last := i == len(c.Attempts)-1
		if r.o.content && last {
			attrs = append(attrs, semconv.GenAIInputMessagesKey.String(r.inputMessages(c.Input)))
			if c.Reply != nil {
				attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(r.outputMessages(c.Reply, l.FinishReason)))
			}
		}
		name := "chat"
		if a.RequestModel != "" {
			name += " " + a.RequestModel
		}
		ctx, span := r.o.tracer.Start(parent, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(l.CreatedAt),
			trace.WithAttributes(attrs...))
		if errType != "" {
			span.SetStatus(codes.Error, r.redact(l.Error))
		}
		span.End(trace.WithTimestamp(a.End))

		// Metrics, with the attributes the conventions name.
		key := metricKey{provider: l.Provider, request: a.RequestModel, err: errType}
		if l.IsComplete {
			key.response = l.ModelID
		}
		r.o.duration.Record(ctx, a.End.Sub(l.CreatedAt).Seconds(), metric.WithAttributeSet(r.o.attrSet(key)))
		if l.IsComplete {
			key.tokens = "input"
			r.o.tokens.Record(ctx, int64(l.InputTokens), metric.WithAttributeSet(r.o.attrSet(key)))
			key.tokens = "output"
			r.o.tokens.Record(ctx, int64(l.OutputTokens+l.ReasoningTokens), metric.WithAttributeSet(r.o.attrSet(key)))
		}
		if l.CostTotal != nil && *l.CostTotal > 0 {
			r.o.cost.Add(ctx, *l.CostTotal, metric.WithAttributeSet(r.o.attrSet(metricKey{provider: l.Provider, request: a.RequestModel})))
		}
	}
}

// metricKey names a metric attribute set: a few values, so few sets, built once each.
type metricKey struct {
	provider, request, response, err, tokens string
}

// attrSet returns the attribute set of k (chat operation, provider, request and response model,
// error type, token type; empty values left out), built once.
func (o *Observer) attrSet(k metricKey) attribute.Set {
	o.setsMu.Lock()
	defer o.setsMu.Unlock()
	if s, ok := o.sets[k]; ok {
		return s
	}
	kvs := []attribute.KeyValue{semconv.GenAIOperationNameChat, providerName(k.provider), semconv.GenAIRequestModel(k.request)}
	if k.response != "" {
		kvs = append(kvs, semconv.GenAIResponseModel(k.response))
	}
	if k.err != "" {
		kvs = append(kvs, semconv.ErrorTypeKey.String(k.err))
	}
	if k.tokens != "" {
		kvs = append(kvs, semconv.GenAITokenTypeKey.String(k.tokens))
	}
	s := attribute.NewSet(kvs...)
	if len(o.sets) < maxMetricSets {
		o.sets[k] = s
	}
	return s
}

// maxMetricSets bounds the cache of attribute sets (model ids a provider reports could vary).
const maxMetricSets = 1024

// StartTool opens an execute_tool span under the current step (or tool call, for a sub-prompt's
// calls); the tool runs with ctx carrying it.
func (r *runObserver) StartTool(ctx context.Context, c observe.ToolCall) context.Context {
	attrs := append(make([]attribute.KeyValue, 0, 12), semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(c.Call.Name),
		semconv.GenAIToolCallID(c.Call.ID), r.conv, AttrDepth.Int(c.Depth))
	if c.MCPServer != "" {
		// An MCP tool: the MCP client adds mcp.method.name, mcp.session.id and the rest to this
		// span (the MCP conventions' "add to the existing tool execution span").
		attrs = append(attrs, semconv.GenAIToolTypeKey.String("extension"), AttrMCPServer.String(c.MCPServer))
	} else {
		attrs = append(attrs, semconv.GenAIToolTypeKey.String("function"))
	}
	if c.Description != "" {
		attrs = append(attrs, semconv.GenAIToolDescription(c.Description))
	}
	if c.Resumed {
		attrs = append(attrs, AttrResumed.Bool(true))
	}
	if r.o.content {
		attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(r.redact(c.Call.Arguments)))
	}
	ctx = trace.ContextWithSpan(ctx, r.top().span)
	ctx, span := r.o.tracer.Start(ctx, "execute_tool "+c.Call.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	r.push(frame{ctx, span})
	return ctx
}

// EndTool closes the tool call's span once its result is committed; an uncommitted call's span
// is dropped (never ended, so never exported): the run that stores its result reports it.
func (r *runObserver) EndTool(end observe.ToolEnd) {
	f := r.pop()
	if !end.Committed {
		return
	}
	f.span.SetAttributes(AttrToolStatus.String(string(end.Status)))
	if r.o.content {
		f.span.SetAttributes(semconv.GenAIToolCallResultKey.String(r.redact(end.Result)))
	}
	if end.Status == weft.ToolError {
		f.span.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
		f.span.SetStatus(codes.Error, "the tool returned an error")
	}
	f.span.End()
}

// End closes the run's span (and any span a failure left open).
func (r *runObserver) End(end observe.RunEnd) {
	for len(r.stack) > 1 {
		f := r.pop()
		f.span.End()
	}
	span := r.stack[0].span
	span.SetAttributes(AttrTrigger.String(end.Trigger), AttrSteps.Int(end.Stop.Steps))
	if end.Stop.Reason != "" {
		span.SetAttributes(AttrStopReason.String(string(end.Stop.Reason)))
	}
	switch {
	case end.Err != nil:
		span.SetStatus(codes.Error, r.redact(end.Err.Error()))
	case end.Stop.Reason != "" && !end.Stop.Reason.OK():
		span.SetStatus(codes.Error, r.redact(string(end.Stop.Reason)+": "+end.Stop.Error))
	}
	span.End()
}

// providerName maps a Weft provider name to the gen_ai.provider.name value the conventions use.
func providerName(p string) attribute.KeyValue {
	switch p {
	case "google", "gemini":
		return semconv.GenAIProviderNameGCPGemini
	case "azure_openai":
		return semconv.GenAIProviderNameAzureAIOpenAI
	case "mistral":
		return semconv.GenAIProviderNameMistralAI
	case "xai":
		return semconv.GenAIProviderNameXAI
	}
	return semconv.GenAIProviderNameKey.String(p)
}

// msgPart is a message part in the GenAI conventions' JSON shape.
type msgPart struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Response  string `json:"response,omitempty"`
	MimeType  string `json:"mime_type,omitempty"`
}

type chatMessage struct {
	Role         string    `json:"role"`
	Parts        []msgPart `json:"parts"`
	FinishReason string    `json:"finish_reason,omitempty"`
}

// inputMessages renders the messages sent, every text redacted.
func (r *runObserver) inputMessages(msgs []weft.LLMMessage) string {
	out := make([]chatMessage, 0, len(msgs))
	for _, m := range msgs {
		cm := chatMessage{Role: string(m.Role)}
		if m.Role == weft.RoleTool {
			cm.Parts = append(cm.Parts, msgPart{Type: "tool_call_response", ID: m.ToolCallID, Response: r.redact(m.Text())})
		} else if len(m.Parts) == 0 {
			if m.Content != "" {
				cm.Parts = append(cm.Parts, msgPart{Type: "text", Content: r.redact(m.Content)})
			}
		} else {
			for _, p := range m.Parts {
				if p.Type == weft.PartText {
					cm.Parts = append(cm.Parts, msgPart{Type: "text", Content: r.redact(p.Text)})
				} else {
					// Media is named, not inlined.
					cm.Parts = append(cm.Parts, msgPart{Type: string(p.Type), MimeType: p.MimeType})
				}
			}
		}
		for _, c := range m.ToolCalls {
			cm.Parts = append(cm.Parts, r.callPart(c))
		}
		if cm.Parts == nil {
			cm.Parts = []msgPart{}
		}
		out = append(out, cm)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// outputMessages renders the stored reply (already redacted; redacted again to be sure).
func (r *runObserver) outputMessages(m *weft.Message, finish string) string {
	cm := chatMessage{Role: "assistant", FinishReason: finish, Parts: []msgPart{}}
	if m.Content != "" {
		cm.Parts = append(cm.Parts, msgPart{Type: "text", Content: r.redact(m.Content)})
	}
	for _, c := range m.ToolCalls {
		cm.Parts = append(cm.Parts, r.callPart(c))
	}
	b, _ := json.Marshal([]chatMessage{cm})
	return string(b)
}

func (r *runObserver) callPart(c weft.ToolCall) msgPart {
	args := r.redact(c.Arguments)
	var v any = args
	if json.Valid([]byte(args)) {
		v = json.RawMessage(args)
	}
	return msgPart{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: v}
}

// requestOptions maps a request's model options to the gen_ai.request.* attributes.
func requestOptions(opts map[string]any) []attribute.KeyValue {
	var out []attribute.KeyValue
	num := func(k string) (float64, bool) {
		switch v := opts[k].(type) {
		case float64:
			return v, true
		case int:
			return float64(v), true
		case int64:
			return float64(v), true
		case uint64:
			return float64(v), true
		case json.Number:
			f, err := v.Float64()
			return f, err == nil
		}
		return 0, false
	}
	if v, ok := num("maxOutputTokens"); ok {
		out = append(out, semconv.GenAIRequestMaxTokens(int(v)))
	}
	if v, ok := num("temperature"); ok {
		out = append(out, semconv.GenAIRequestTemperature(v))
	}
	if v, ok := num("topP"); ok {
		out = append(out, semconv.GenAIRequestTopP(v))
	}
	if v, ok := num("seed"); ok {
		out = append(out, semconv.GenAIRequestSeed(int(v)))
	}
	switch v := opts["stop"].(type) {
	case string:
		out = append(out, semconv.GenAIRequestStopSequences(v))
	case []any:
		var stops []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				stops = append(stops, s)
			}
		}
		if len(stops) > 0 {
			out = append(out, semconv.GenAIRequestStopSequences(stops...))
		}
	case []string:
		out = append(out, semconv.GenAIRequestStopSequences(v...))
	}
	return out
}

// serverAttrs are server.address and server.port of an API root (the scheme's port when the URL
// names none).
func serverAttrs(raw string) []attribute.KeyValue {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if p, err := strconv.Atoi(u.Port()); err == nil {
		port = p
	}
	return []attribute.KeyValue{semconv.ServerAddress(u.Hostname()), semconv.ServerPort(port)}
}

// responseID is the provider's id of a reply, from the stored response body: "id" (OpenAI Chat
// Completions and Responses, Anthropic) or "responseId" (Gemini).
func responseID(body json.RawMessage) string {
	if len(body) == 0 {
		return ""
	}
	var r struct {
		ID         string `json:"id"`
		ResponseID string `json:"responseId"`
	}
	if json.Unmarshal(body, &r) != nil {
		return ""
	}
	if r.ID != "" {
		return r.ID
	}
	return r.ResponseID
}
