package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/schema"
)

// promptAgentPrefix names the one-sided agents through which exposed prompts run.
const promptAgentPrefix = "prompt:"

// AddPromptAgents adds to reg, for each prompt that may be used as a tool (exposeAsTool not
// false) and has a description, an ai_human agent named "prompt:NAME" whose side A is that prompt: a prompt runs in a
// thread of its own when an MCP client calls it. Call it after validation, before the engine is
// built; the agents are Internal (APIs do not list them) and not exposed as tools to prompts.
func AddPromptAgents(reg *weft.Registry) {
	for _, p := range reg.Prompts() {
		if !p.Exposed() || strings.TrimSpace(p.ToolDescription) == "" {
			// A .prompty side prompt without a description is not offered (it loads with a warning).
			continue
		}
		if _, taken := reg.Agent(promptAgentPrefix + p.Name); taken {
			continue
		}
		reg.AddAgentFrom(reg.Source("prompt", p.Name), &weft.Agent{Name: promptAgentPrefix + p.Name, Type: weft.AIHuman, Internal: true,
			SideA: weft.AgentSide{Prompt: p.Name}, Description: "Runs prompt " + p.Name + " (for MCP clients)."})
	}
}

// ServerOptions configure NewServer.
type ServerOptions struct {
	// Engine runs the threads; its registry must have had AddPromptAgents applied for prompts to
	// be exposed.
	Engine *engine.Engine
	// Version is reported to clients.
	Version string
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// UserID names the user a request acts as: the owner of the threads its tool calls create
	// and the only user whose threads it sees as resources. nil = local use (`weft mcp`): threads
	// have no user and every thread of the store is visible.
	UserID func(req sdk.Request) string
	// TracerProvider, when set, reports every request as an MCP server span (OpenTelemetry's MCP
	// conventions); nil reports none.
	TracerProvider trace.TracerProvider
}

// NewServer returns an MCP server exposing each agent, and each prompt usable as a tool, as an MCP
// tool; those prompts also as MCP prompts (prompts/get renders them); and threads' transcripts
// and files as resources (resources/list, resources/read, two templates). A tool's input schema is side A's requiredSchema (else {message, attachments?}); a call runs
// it in a new thread to quiescence, sends progress notifications while it runs (when the client
// asked with a progress token) and returns the answer, as `weft run` prints it. An agent and a
// prompt of the same name: the agent keeps the name, the prompt is offered as prompt_NAME.
func NewServer(opt ServerOptions) *sdk.Server {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Version == "" {
		opt.Version = "dev"
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "weft", Version: opt.Version}, &sdk.ServerOptions{Logger: opt.Logger,
		Instructions: "Each tool runs a Weft agent or prompt in a new thread and returns its answer."})
	reg := opt.Engine.Registry()
	agents := map[string]bool{}
	for _, a := range reg.Agents() {
		if !strings.HasPrefix(a.Name, promptAgentPrefix) {
			agents[a.Name] = true
		}
	}
	for _, a := range reg.Agents() {
		name, desc := a.Name, a.ToolDescription
		if strings.HasPrefix(a.Name, promptAgentPrefix) {
			p, ok := reg.Prompt(strings.TrimPrefix(a.Name, promptAgentPrefix))
			if !ok {
				continue
			}
			name, desc = p.Name, p.ToolDescription
			if agents[name] {
				name = "prompt_" + name
			}
		}
		if desc == "" {
			desc = a.Description
		}
		if desc == "" {
			desc = "Runs the Weft agent " + a.Name + " and returns its answer."
		}
		in, withArgs := inputSchema(reg, a)
		raw, _ := json.Marshal(in)
		h := &handler{opt: opt, agent: a.Name, withArgs: withArgs}
		s.AddTool(&sdk.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(raw)}, h.call)
	}
	addPrompts(s, opt.Engine)
	addResources(s, &resources{eng: opt.Engine, userOf: func(req sdk.Request) (string, bool) {
		if opt.UserID == nil {
			return "", false
		}
		return opt.UserID(req), true
	}})
	if opt.TracerProvider != nil {
		traceRequests(s, opt.TracerProvider) // last, so outermost: it sees every request
	}
	return s
}

// inputSchema is what a caller sends: side A's requiredSchema (the thread's arguments), else a
// message.
func inputSchema(reg *weft.Registry, a *weft.Agent) (*schema.Schema, bool) {
	if p, ok := reg.Prompt(a.SideA.Prompt); ok && p.RequiredSchema != nil {
		return p.RequiredSchema, true
	}
	return schema.Object(schema.Field("message", schema.Describe(schema.String(), "The message to the agent."))), false
}

type handler struct {
	opt      ServerOptions
	agent    string
	withArgs bool
}

// call runs the agent in a new thread to its answer.
func (h *handler) call(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	eng := h.opt.Engine
	var args map[string]any
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return errorResult("arguments must be a JSON object: " + err.Error()), nil
		}
	}
	nt := engine.NewThread{Agent: h.agent, Tags: []string{"mcp"}}
	if h.opt.UserID != nil {
		nt.UserID = h.opt.UserID(req)
	}
	var message string
	if h.withArgs {
		nt.Arguments = args
		if m, ok := args["message"].(string); ok {
			message = m
		} else {
			b, _ := json.Marshal(args)
			message = string(b)
		}
	} else {
		message, _ = args["message"].(string)
		if strings.TrimSpace(message) == "" {
			return errorResult("message is required: the text to send to " + h.agent), nil
		}
	}
	th, err := eng.CreateThread(ctx, nt)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	token := req.Params.GetProgressToken()
	progress := 0.0
	var stop weft.StopInfo
	in := engine.Input{Message: &weft.NewMessage{Role: weft.RoleUser, Content: message}}
	for ev, err := range eng.Converse(ctx, th.ID, in) {
		if err != nil {
			return errorResult(fmt.Sprintf("thread %s: %v", th.ID, err)), nil
		}
		if d, ok := ev.Data.(engine.RunStopped); ok && ev.ThreadID == th.ID {
			stop.Reason, stop.Error = d.Reason, d.Error
		}
		if token == nil {
			continue
		}
		if msg := progressMessage(ev); msg != "" {
			progress++
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: progress, Message: msg})
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	redact, err := eng.Redactor(context.WithoutCancel(ctx), th.ID)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	answer, err := lastReply(ctx, eng.Store(), th.ID)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	meta := sdk.Meta{"weft/thread": th.ID, "weft/stop_reason": string(stop.Reason)}
	if !stop.Reason.OK() {
		msg := fmt.Sprintf("the run of thread %s stopped: %s", th.ID, stop.Reason)
		if stop.Error != "" {
			msg += ": " + stop.Error
		}
		res := errorResult(redact(msg))
		res.Meta = meta
		return res, nil
	}
	return &sdk.CallToolResult{Meta: meta, Content: []sdk.Content{&sdk.TextContent{Text: redact(answer)}}}, nil
}

// progressMessage describes the events worth a progress notification.
func progressMessage(ev engine.Event) string {
	switch d := ev.Data.(type) {
	case engine.StepStarted:
		return "thinking"
	case engine.ToolStarted:
		return "calling " + d.Name
	case engine.ToolCompleted:
		return d.Name + " done"
	}
	return ""
}

// lastReply is the text of the thread's last completed top-level reply of an AI side.
func lastReply(ctx context.Context, st weft.Store, threadID string) (string, error) {
	msgs, err := st.Messages(ctx, threadID, weft.MessageQuery{Limit: 50, Desc: true, Roles: []weft.Role{weft.RoleAssistant, weft.RoleUser}})
	if err != nil {
		return "", err
	}
	for _, m := range msgs {
		if m.Depth == 0 && m.Status == weft.MessageCompleted && m.Prompt != "" {
			return m.Content, nil
		}
	}
	return "", nil
}

func errorResult(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}
