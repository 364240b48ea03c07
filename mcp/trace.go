package mcp

import (
	"context"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// scopeName is the instrumentation scope of the MCP server's spans.
const scopeName = "github.com/weft-agents/weft/mcp"

// traceRequests adds a receiving middleware that reports every request the server answers as an
// MCP server span of the semantic conventions: named "{mcp.method.name} {target}" (the tool or
// prompt), kind SERVER, with mcp.method.name, mcp.session.id, mcp.protocol.version,
// gen_ai.tool.name / gen_ai.prompt.name / mcp.resource.uri, gen_ai.operation.name execute_tool for
// tools/call, network.transport, and error.type (the JSON-RPC code, or tool_error for an isError
// result). Its parent is the trace context the client sent in params._meta.
func traceRequests(s *sdk.Server, tp trace.TracerProvider) {
	tracer := tp.Tracer(scopeName)
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			attrs := []attribute.KeyValue{semconv.McpMethodNameKey.String(method)}
			name := method
			var meta sdk.Meta
			switch p := req.GetParams().(type) {
			case *sdk.CallToolParamsRaw:
				name += " " + p.Name
				meta = p.Meta
				attrs = append(attrs, semconv.GenAIToolName(p.Name), semconv.GenAIOperationNameExecuteTool)
			case *sdk.GetPromptParams:
				name += " " + p.Name
				meta = p.Meta
				attrs = append(attrs, semconv.GenAIPromptName(p.Name))
			case *sdk.ReadResourceParams:
				meta = p.Meta
				attrs = append(attrs, semconv.McpResourceURIKey.String(p.URI))
			}
			if ss, ok := req.GetSession().(*sdk.ServerSession); ok && ss != nil {
				if id := ss.ID(); id != "" {
					attrs = append(attrs, semconv.McpSessionIDKey.String(id))
				}
				if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion != "" {
					attrs = append(attrs, semconv.McpProtocolVersionKey.String(ip.ProtocolVersion))
				}
			}
			if extra := req.GetExtra(); extra != nil && extra.Header != nil {
				attrs = append(attrs, semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http"))
			} else {
				attrs = append(attrs, semconv.NetworkTransportPipe)
			}
			if len(meta) > 0 {
				carrier := propagation.MapCarrier{}
				for k, v := range meta {
					if s, ok := v.(string); ok {
						carrier[k] = s
					}
				}
				ctx = propagation.TraceContext{}.Extract(ctx, carrier)
			}
			ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
			defer span.End()
			res, err := next(ctx, method, req)
			var wire *jsonrpc.Error
			switch {
			case err != nil && errors.As(err, &wire):
				span.SetAttributes(semconv.ErrorTypeKey.String(strconv.FormatInt(wire.Code, 10)), semconv.RPCResponseStatusCode(strconv.FormatInt(wire.Code, 10)))
				span.SetStatus(codes.Error, wire.Message)
			case err != nil:
				span.SetAttributes(semconv.ErrorTypeKey.String("_OTHER"))
				span.SetStatus(codes.Error, err.Error())
			default:
				if tr, ok := res.(*sdk.CallToolResult); ok && tr.IsError {
					span.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
					span.SetStatus(codes.Error, "the tool returned an error")
				}
			}
			return res, err
		}
	})
}
