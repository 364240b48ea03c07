package engine

import (
	"context"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/modelcall"
)

// Observer is told how runs proceed, for traces and metrics (package otel implements it with
// OpenTelemetry). Options.Observer nil turns observation off: the engine then makes no call and
// allocates nothing for it.
//
// What an observer hears is durable. A model call is reported once the transaction that stores its
// reply (or, for a call that failed, its attempts' log rows) has committed, and a tool call ends
// reported only once its result has. A run resumed after a crash redoes exactly the work that was
// not committed, so nothing is reported twice: what was reported before the crash is never
// redone, and what was in flight when the process died was never reported.
type Observer interface {
	// StartRun begins observing a run. ctx is the run's context.
	StartRun(ctx context.Context, run RunInfo) RunObserver
}

// RunObserver observes one run. The engine calls it from the run's goroutine, in order and nested:
// steps hold model calls and tool calls, and a tool call (a sub-prompt) may hold model calls and
// tool calls of its own. A tool call that StartTool began is always closed by EndTool before the
// step that holds it ends, and every step by EndStep before End.
type RunObserver interface {
	// StartStep: a top-level step begins.
	StartStep(step StepInfo)
	// EndStep: the step that began last ends (err: it failed).
	EndStep(err error)
	// ModelCall reports a model call whose outcome is committed, with every attempt it made.
	ModelCall(call ModelCall)
	// StartTool: a tool call begins. The context it returns (derived from ctx) is the one the tool
	// runs with, so that a tool's own instrumentation nests under the call.
	StartTool(ctx context.Context, call ToolCall) context.Context
	// EndTool: the tool call that began last ends. With end.Committed false its result was not
	// stored (a crash, a shutdown, a lease lost): nothing is reported, and the run that stores it
	// reports it then.
	EndTool(end ToolEnd)
	// End: the run stopped (or was suspended by a shutdown: end.Stop.Reason is then "").
	End(end RunEnd)
}

// RunInfo describes a run that begins.
type RunInfo struct {
	// RunID, ThreadID, RootID and ParentID name the run, its thread, the thread's root and its
	// parent ("" for a root).
	RunID, ThreadID, RootID, ParentID string
	// Agent is the thread's agent.
	Agent string
	// Provider is the provider of the model of the agent's first AI side ("" when unknown).
	Provider string
	// Redact replaces the thread's secrets and provider keys by [redacted] (Engine.Redactor): an
	// observer passes every text it exports through it.
	Redact func(string) string
}

// StepInfo describes a top-level step.
type StepInfo struct {
	// Step numbers the step within its run, from 1.
	Step int
	// Side is the acting side and Prompt its prompt.
	Side   weft.Side
	Prompt string
}

// ModelCall is a model call whose outcome is stored: its attempts (retries, fallbacks, replies
// discarded for ignoring toolChoice required or for an invalid structured answer) and its reply.
type ModelCall struct {
	// Prompt, Side and Depth say who called (Depth > 0: a sub-prompt).
	Prompt string
	Side   weft.Side
	Depth  int
	// Attempts are the provider calls in order; the last one answered unless Err is set.
	Attempts []ModelAttempt
	// Input are the messages sent (system first), not yet redacted; valid only during the call.
	Input []weft.LLMMessage
	// Reply is the stored reply (redacted); nil when the call failed.
	Reply *weft.Message
	// Err is why the call failed (not yet redacted); nil when it answered.
	Err error
	// Structured: the prompt asked for a structured (JSON) answer.
	Structured bool
}

// ModelAttempt is one provider call: its log row (provider, model, usage, cost, finish reason,
// error type, start time) and when it ended.
type ModelAttempt struct {
	Log *weft.LogEntry
	End time.Time
	// RequestModel is the provider's model id the attempt asked for (Log.ModelID is the one that
	// answered).
	RequestModel string
	// Stream: the attempt asked for a streamed reply (the model's streaming capability).
	Stream bool
	// Options are the attempt's model options (temperature, maxOutputTokens, topP, seed, stop).
	Options map[string]any
	// ServerURL is the provider's API root the attempt was sent to ("" when unknown).
	ServerURL string
}

// ToolCall describes a tool call that begins.
type ToolCall struct {
	// Call is the call as the model made it (arguments not yet redacted).
	Call weft.ToolCall
	// Depth is the depth of the scope calling it (0: the step's own calls).
	Depth int
	// Resumed: the call is one a crashed run left open, answered or run again by this one.
	Resumed bool
	// Description is the tool's description as offered to the model.
	Description string
	// MCPServer names the MCP server of an MCP tool ("" for others).
	MCPServer string
}

// ToolEnd is how a tool call ended.
type ToolEnd struct {
	// Committed: the call's result is stored. Nothing else is meaningful without it.
	Committed bool
	// Status and Result are the stored tool message's status and content (redacted).
	Status weft.ToolStatus
	Result string
}

// RunEnd is how a run ended.
type RunEnd struct {
	// Stop is the run's stop; its Reason is "" when a shutdown suspended the run.
	Stop weft.StopInfo
	// Trigger is what started the run: message, continue or resume (a crashed run's open calls
	// were finished first).
	Trigger string
	// Err is the run's error, if it ended with one.
	Err error
}

// observeModelCall reports a committed model call (r.obs is set).
func (r *run) observeModelCall(s *scope, req *weft.Request, logs []*weft.LogEntry, reply *weft.Message, err error) {
	call := ModelCall{Prompt: s.prompt.Name, Side: s.side, Depth: s.depth, Input: req.Messages, Reply: reply, Err: err,
		Attempts: make([]ModelAttempt, len(logs)), Structured: req.Output != nil}
	for i, l := range logs {
		end := r.model.TakeEnd(l)
		if end.IsZero() {
			end = l.CreatedAt.Add(time.Duration(l.LatencyMS) * time.Millisecond)
		}
		call.Attempts[i] = ModelAttempt{Log: l, End: end, RequestModel: l.ModelID}
		if m, ok := r.e.reg.Model(l.Model); ok {
			if m.Model != "" {
				call.Attempts[i].RequestModel = m.Model
			}
			call.Attempts[i].Stream = m.Capabilities.Streaming()
			call.Attempts[i].Options = modelcall.MergeOptions(m.ProviderOptions, s.prompt.ModelOptions)
			call.Attempts[i].ServerURL, _ = m.ProviderOptions["baseUrl"].(string)
		}
		if call.Attempts[i].ServerURL == "" {
			call.Attempts[i].ServerURL = r.e.providerURL(l.Provider)
		}
	}
	r.obs.ModelCall(call)
}

// providerURL is a provider's API root: its definition's baseUrl, else the built-in provider's
// (its base URL variable when set, else its default).
func (e *Engine) providerURL(name string) string {
	builtin := name
	if def, ok := e.reg.Provider(name); ok {
		if def.BaseURL != "" {
			return def.BaseURL
		}
		if def.Base != "" {
			builtin = def.Base
		}
	}
	if info, ok := weft.LookupProvider(builtin); ok {
		return info.BaseURL(e.opt.LookupEnv)
	}
	return ""
}

// agentProvider is the provider of the model the agent's first AI side's prompt uses.
func (e *Engine) agentProvider(a *weft.Agent) string {
	sides := []weft.AgentSide{a.SideA}
	if a.SideB != nil {
		sides = append(sides, *a.SideB)
	}
	for _, side := range sides {
		if !side.IsAI() {
			continue
		}
		if p, ok := e.reg.Prompt(side.Prompt); ok {
			if m, ok := e.reg.Model(p.Model); ok {
				return m.Provider
			}
		}
	}
	return ""
}
