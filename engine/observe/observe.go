// Package observe is what an observer of runs hears, for traces and metrics: the Observer a
// process hands the engine (Options.Observer), the RunObserver it starts per run, and the
// descriptions of runs, steps, model calls and tool calls it is told of. Package otel implements
// it with OpenTelemetry.
package observe

import (
	"context"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/modelcall"
)

// Observer is told how runs proceed, for traces and metrics (package otel implements it with
// OpenTelemetry). An engine without one turns observation off: the engine then makes no call and
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
// discarded for ignoring toolChoice required or for an invalid structured answer) and its reply
// (modelcall.Record).
type ModelCall = modelcall.Record

// ModelAttempt is one provider call of a ModelCall: its log row and when it ended
// (modelcall.Attempt).
type ModelAttempt = modelcall.Attempt

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
