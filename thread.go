package weft

import "time"

// ThreadStatus is where a thread stands between and during runs.
type ThreadStatus string

// The thread statuses.
const (
	ThreadIdle          ThreadStatus = "idle"
	ThreadRunning       ThreadStatus = "running"
	ThreadStopped       ThreadStatus = "stopped"
	ThreadAwaitingHuman ThreadStatus = "awaiting_human"
	// ThreadAwaitingApproval: the run stopped before tool calls that need a person's decision.
	ThreadAwaitingApproval ThreadStatus = "awaiting_approval"
	// ThreadPaused: the run stopped at the thread's budget; raising it and continuing resumes.
	ThreadPaused     ThreadStatus = "paused"
	ThreadFailed     ThreadStatus = "failed"
	ThreadTerminated ThreadStatus = "terminated"
)

// Thread is the durable conversation of one agent: messages, env, KV, files, effects and children.
type Thread struct {
	// ID is `thr_` + ULID.
	ID string `json:"id"`
	// Agent is the current agent (changes after a handoff).
	Agent string `json:"agent"`
	// OriginAgent is the agent the thread was created with.
	OriginAgent string `json:"origin_agent"`
	// UserID owns the thread; "" for local use.
	UserID string `json:"user_id"`
	// ParentID and RootID place a subagent's thread in its tree; "" and the own id for roots.
	ParentID string `json:"parent_id,omitempty"`
	RootID   string `json:"root_id"`
	// Label names the thread for people (a subagent's label).
	Label string `json:"label,omitempty"`
	// Tags and Properties are free annotations.
	Tags       []string       `json:"tags"`
	Properties map[string]any `json:"properties"`
	// Arguments are the validated creation (and handoff) arguments.
	Arguments map[string]any `json:"arguments"`
	// Status and StopReason describe the last run.
	Status     ThreadStatus `json:"status"`
	StopReason StopReason   `json:"stop_reason,omitempty"`
	// Times are RFC 3339 UTC.
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	LastActivityAt time.Time `json:"last_activity_at"`
	// Preview is a short text of the latest message.
	Preview string `json:"preview,omitempty"`
	// ForkedFrom is where the thread was forked from (Engine.Fork); nil for a thread that was not.
	// The original names none of its forks: they are listed by ThreadQuery.ForkedFrom.
	ForkedFrom *ForkPoint `json:"forked_from,omitempty"`
}

// ForkPoint is the place a fork was made at: a thread and one of its messages.
type ForkPoint struct {
	// Thread is the original thread's id.
	Thread string `json:"thread"`
	// Message is the id of the original's message the fork was made at.
	Message string `json:"message"`
	// Before tells a fork cut just before Message (an edit or a retry of it) from one that holds
	// Message (a fork at it).
	Before bool `json:"before,omitempty"`
}

// StopReason says why a run ended; OK tells success from failure.
type StopReason string

// The stop reasons.
const (
	StopOnResponse     StopReason = "stop_on_response"
	StopTool           StopReason = "stop_tool"
	StopAwaitingHuman  StopReason = "awaiting_human"
	StopSession        StopReason = "session_stop"
	StopStateSession   StopReason = "state_stop_session"
	StopMaxSessionTurn StopReason = "max_session_turns"
	StopHandlerIdle    StopReason = "handler_idle"
	StopSessionFail    StopReason = "session_fail"
	StopStepError      StopReason = "step_error"
	StopMaxSideSteps   StopReason = "max_side_steps"
	StopMaxTotalSteps  StopReason = "max_total_steps"
	StopRepeatedError  StopReason = "repeated_tool_error"
	// StopContextTooLong: the request did not fit the model's context window even after the
	// prompt's context strategy made it smaller.
	StopContextTooLong StopReason = "context_too_long"
	StopHookBlocked    StopReason = "hook_blocked"
	StopAbortedByUser  StopReason = "aborted_by_user"
	StopAborted        StopReason = "aborted"
	// StopAwaitingApproval: tool calls of the reply wait for a decision (Engine.Decide); the run
	// resumes by itself once every waiting call is decided.
	StopAwaitingApproval StopReason = "awaiting_approval"
	// StopBudgetExceeded: the thread's spend reached its budget before a model call.
	StopBudgetExceeded StopReason = "budget_exceeded"
	// StopInterrupted: a message sent with IfBusyInterrupt stopped the run; a new run takes it.
	StopInterrupted StopReason = "interrupted"
)

// OK reports whether the reason counts as success (`weft run` exit 0).
func (r StopReason) OK() bool {
	switch r {
	case StopOnResponse, StopTool, StopAwaitingHuman, StopSession, StopStateSession, StopMaxSessionTurn, StopHandlerIdle,
		StopAwaitingApproval, StopInterrupted:
		return true
	}
	return false
}

// StopInfo describes a finished run.
type StopInfo struct {
	// RunID identifies the run.
	RunID string `json:"run_id"`
	// Reason is why it stopped.
	Reason StopReason `json:"reason"`
	// Side is the side acting when it stopped.
	Side Side `json:"side"`
	// Error is the failure text for failing reasons.
	Error string `json:"error,omitempty"`
	// Steps is the number of steps the run took.
	Steps int `json:"steps"`
	// Seq numbers the thread's stops: 1 for its first run's stop.
	Seq int `json:"seq,omitempty"`
}

// SubagentStatus is the status a thread shows in its parent's subagent registry: running, idle,
// failed or terminated.
func (s ThreadStatus) SubagentStatus() string {
	switch s {
	case ThreadRunning:
		return "running"
	case ThreadFailed:
		return "failed"
	case ThreadTerminated:
		return "terminated"
	}
	return "idle"
}

// IfBusy is a message's double-texting policy: what happens to it when it is sent while a run of
// the thread is in progress.
type IfBusy string

// The double-texting policies.
const (
	// IfBusyQueue queues the message for the run's next step boundary (the default).
	IfBusyQueue IfBusy = "queue"
	// IfBusyReject refuses the message (ErrBusy) while a run is in progress.
	IfBusyReject IfBusy = "reject"
	// IfBusyInterrupt stops the run in progress now (its model call cancelled, a started tool
	// call completed and recorded), and a new run takes the message.
	IfBusyInterrupt IfBusy = "interrupt"
	// IfBusyRollback stops the run as IfBusyInterrupt does, and removes the replies and tool
	// results it stored with its stop, before a new run takes the message.
	IfBusyRollback IfBusy = "rollback"
)

// Interrupts reports whether the policy stops a run in progress (interrupt or rollback).
func (p IfBusy) Interrupts() bool { return p == IfBusyInterrupt || p == IfBusyRollback }

// PropertyIfBusy is the thread property holding the thread's default double-texting policy: the
// IfBusy of a message sent without one (IfBusyQueue when the property is absent).
const PropertyIfBusy = "weft.if_busy"

// IfBusyOf returns the thread's default double-texting policy (its PropertyIfBusy), "" when it
// has none or an unknown one.
func IfBusyOf(t *Thread) IfBusy {
	if t == nil {
		return ""
	}
	s, _ := t.Properties[PropertyIfBusy].(string)
	if p := IfBusy(s); p.Valid() {
		return p
	}
	return ""
}

// Valid reports whether p is a known policy or empty.
func (p IfBusy) Valid() bool {
	switch p {
	case "", IfBusyQueue, IfBusyReject, IfBusyInterrupt, IfBusyRollback:
		return true
	}
	return false
}
