package weft

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/weft-agents/weft/schema"
)

// Tool is a function tool: a capability offered to the model with a name, a description and an
// argument schema (seed 002, seed 004). Go tools set Execute; declarative tools from files set
// Command or HTTP instead; tools of an MCP server come from an MCPServer definition.
type Tool struct {
	// Name is unique among tools; from files, the file stem.
	Name string `json:"name"`
	// Description tells the model what the tool does; required, non-empty.
	Description string `json:"description"`
	// Args is the object schema of the arguments; nil for a tool without arguments.
	Args *schema.Schema `json:"args,omitempty"`
	// Execute runs the tool (Go tools).
	Execute ToolHandler `json:"-"`
	// Variables declares the variables the tool reads.
	Variables []VariableDefinition `json:"variables,omitempty"`
	// Tenvs is the legacy object schema of thread variables; each property is a text variable,
	// required unless optional.
	Tenvs *schema.Schema `json:"tenvs,omitempty"`
	// ExecutionMode is local (default) or provider: a provider-executed tool is sent to the provider.
	ExecutionMode ExecutionMode `json:"executionMode,omitempty"`
	// ExecutionProvider names the provider that executes a provider-mode tool.
	ExecutionProvider string `json:"executionProvider,omitempty"`
	// Idempotent tools may be re-run after a crash interrupted them.
	Idempotent bool `json:"idempotent,omitempty"`
	// Approval is required when every call must be approved by a person before it runs (the run
	// stops awaiting_approval until Engine.Decide); never or "" runs calls at once. A prompt's tool
	// entry may override it.
	Approval Approval `json:"approval,omitempty"`
	// Uses lists tools this tool may queue or invoke beyond the prompt's list; nil = any.
	Uses []string `json:"uses,omitempty"`
	// Timeout bounds one execution; 0 = the default (60s for declarative tools, none for Go tools).
	Timeout Duration `json:"timeout,omitempty"`
	// Command, when set, makes this a declarative command tool.
	Command *CommandSpec `json:"command,omitempty"`
	// HTTP, when set, makes this a declarative HTTP tool.
	HTTP *HTTPSpec `json:"http,omitempty"`
	// A2A makes a remote A2A agent the tool (kind: a2a; package a2a gives it its handler).
	A2A *A2ASpec `json:"a2a,omitempty"`
}

// Approval says whether a tool's calls wait for a person's decision.
type Approval string

// The approval settings.
const (
	ApprovalRequired Approval = "required"
	ApprovalNever    Approval = "never"
)

// ExecutionMode says where a tool runs.
type ExecutionMode string

// The execution modes.
const (
	ExecLocal    ExecutionMode = "local"
	ExecProvider ExecutionMode = "provider"
)

// CommandSpec runs a program with the arguments as JSON on stdin (no shell).
type CommandSpec struct {
	// Argv is the program and its arguments; ${env:NAME} is resolved at call time.
	Argv []string `json:"command"`
	// Dir is the working directory relative to the project root.
	Dir string `json:"cwd,omitempty"`
	// Env adds environment variables; values may use ${env:NAME}.
	Env map[string]string `json:"env,omitempty"`
}

// HTTPSpec calls a URL with the arguments (POST body or GET query), or — with In or Body set, as
// an OpenAPI operation is called — each argument where the operation takes it.
type HTTPSpec struct {
	// URL may use ${env:NAME}; with In, `{name}` marks a path parameter.
	URL string `json:"url"`
	// Method is GET, POST, PUT, PATCH or DELETE (default POST).
	Method string `json:"method,omitempty"`
	// Headers may use ${env:NAME}.
	Headers map[string]string `json:"headers,omitempty"`
	// In maps an argument to where it goes: path (its `{name}` in URL, escaped), query or header.
	// When In is set (even empty) or Body is, the arguments neither names are not sent.
	In map[string]string `json:"in,omitempty"`
	// Body names the argument whose value is the JSON request body.
	Body string `json:"body,omitempty"`
}

// Placed reports whether the spec places each argument (an OpenAPI operation) rather than sending
// all of them as the body or the query.
func (h *HTTPSpec) Placed() bool { return h.In != nil || h.Body != "" }

// A2ASpec calls a remote Agent2Agent agent: the tool's input is a message to it, its result the
// agent's reply or its task's artifacts; the conversation goes on in one A2A context per thread.
type A2ASpec struct {
	// Card is the URL of the agent's card (…/.well-known/agent-card.json); may use ${env:NAME}.
	Card string `json:"card"`
	// Headers go with every request (the card's too); values may use ${env:NAME}.
	Headers map[string]string `json:"headers,omitempty"`
}

// MCPServer declares an MCP server whose tools become Weft tools named <Prefix><tool name>.
type MCPServer struct {
	// Name is the file stem of the declaration.
	Name string `json:"name"`
	// Description documents the server.
	Description string `json:"description,omitempty"`
	// Command starts a stdio server (with Env); URL connects to a streamable-HTTP server (with Headers).
	Command []string          `json:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Tools is an allow-list of server tool names; nil = all.
	Tools []string `json:"tools,omitempty"`
	// Prefix is prepended to every tool name.
	Prefix string `json:"prefix,omitempty"`
	// Variables declares the variables its ${env:} references read.
	Variables []VariableDefinition `json:"variables,omitempty"`
	// Timeout bounds one call (default 60s).
	Timeout Duration `json:"timeout,omitempty"`
	// Idempotent marks every tool of the server as safe to re-run after a crash.
	Idempotent bool `json:"idempotent,omitempty"`
}

// ToolHandler executes a tool. args is the validated argument object as JSON, with defaults applied
// ({} for a tool without arguments). ctx is cancelled when the run is stopped (the seed's abortSignal).
// A returned error becomes an error result; it never crashes the run.
type ToolHandler interface {
	Call(ctx context.Context, st State, args json.RawMessage) (ToolResult, error)
}

// ToolFunc adapts a function to a ToolHandler.
type ToolFunc func(ctx context.Context, st State, args json.RawMessage) (ToolResult, error)

// Call calls f.
func (f ToolFunc) Call(ctx context.Context, st State, args json.RawMessage) (ToolResult, error) {
	return f(ctx, st, args)
}

// NewTool defines a Go tool whose arguments decode into A; the argument schema is inferred from A's
// fields (json names; `jsonschema:"description=…,enum=a|b,default=…"` tags; pointer or omitempty =
// optional). It panics if A cannot be described by an argument schema — a programming error found
// at start-up. Use NewToolNoArgs for a tool without arguments: such a tool has no argument schema.
func NewTool[A any](name, description string, fn func(ctx context.Context, st State, args A) (ToolResult, error)) *Tool {
	s, err := schema.For[A]()
	if err != nil {
		panic(fmt.Sprintf("weft.NewTool(%q): %v", name, err))
	}
	flat := flatArgsFor(reflect.TypeFor[A]())
	return &Tool{Name: name, Description: description, Args: s,
		Execute: ToolFunc(func(ctx context.Context, st State, raw json.RawMessage) (ToolResult, error) {
			var a A
			if len(raw) > 0 {
				if err := decodeArgs(flat, raw, &a); err != nil {
					return ToolResult{}, fmt.Errorf("decoding arguments into %s: %w", reflect.TypeFor[A](), err)
				}
			}
			return fn(ctx, st, a)
		})}
}

// NewToolNoArgs defines a Go tool without arguments: it has no Args and its function takes none.
func NewToolNoArgs(name, description string, fn func(ctx context.Context, st State) (ToolResult, error)) *Tool {
	return &Tool{Name: name, Description: description,
		Execute: ToolFunc(func(ctx context.Context, st State, _ json.RawMessage) (ToolResult, error) {
			return fn(ctx, st)
		})}
}

// ToolResult is what a tool returns. Its texts are redacted before they are stored.
type ToolResult struct {
	// Status is success or error.
	Status ToolStatus `json:"status"`
	// Result is the text given to the model on success.
	Result string `json:"result,omitempty"`
	// Error is the message given to the model on failure; it must be actionable and secret-free.
	Error string `json:"error,omitempty"`
	// Stack is kept for debugging in metadata, never sent to the model.
	Stack string `json:"stack,omitempty"`
	// Attachments are new files (with Data) or references to existing thread files (with Path).
	Attachments []ToolAttachment `json:"attachments,omitempty"`
	// ErrorCode and ErrorData give machine-readable detail (e.g. subagent_env_required).
	ErrorCode string         `json:"error_code,omitempty"`
	ErrorData map[string]any `json:"error_data,omitempty"`
}

// Success returns a success result with the given text.
func Success(text string) ToolResult { return ToolResult{Status: ToolSuccess, Result: text} }

// Failure returns an error result with the given message.
func Failure(msg string) ToolResult { return ToolResult{Status: ToolError, Error: msg} }

// ToolAttachment is a file a tool returns: either new bytes (Data; stored under /attachments/,
// never downsampled) or a reference to an existing thread file (Path; the seed's AttachmentRef).
type ToolAttachment struct {
	// Name is the file name.
	Name string `json:"name"`
	// MimeType is the media type.
	MimeType string `json:"mimeType"`
	// Data holds the bytes of a new attachment (base64 in JSON).
	Data []byte `json:"data,omitempty"`
	// Width and Height are pixel dimensions of images, when known.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// ID, Path, Size and Description describe a reference to an existing file.
	ID          string `json:"id,omitempty"`
	Path        string `json:"path,omitempty"`
	Size        int64  `json:"size,omitempty"`
	Description string `json:"description,omitempty"`
}

// IsRef reports whether the attachment refers to an existing thread file rather than new bytes.
func (a ToolAttachment) IsRef() bool { return a.Data == nil && a.Path != "" }

// ToolContent is a content item some tools produce: text joins into the result text,
// images become attachments.
type ToolContent struct {
	// Type is text or image.
	Type string `json:"type"`
	// Text of a text item.
	Text string `json:"text,omitempty"`
	// Data (base64 in JSON) and MimeType of an image item.
	Data     []byte `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}
