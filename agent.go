package weft

import "fmt"

// AgentType says what the two sides of an agent are.
type AgentType string

// The agent types.
const (
	// AIHuman: side A is an AI, side B a human.
	AIHuman AgentType = "ai_human"
	// DualAI: both sides are AI (or Go handlers).
	DualAI AgentType = "dual_ai"
)

// Agent defines a conversation between two sides, each driven by a prompt, a Go handler or a human.
type Agent struct {
	// Name identifies the agent.
	Name string `json:"name"`
	// Type is ai_human or dual_ai; empty = inferred (an AI side B makes it dual_ai).
	Type AgentType `json:"type,omitempty"`
	// SideA is the AI side.
	SideA AgentSide `json:"sideA"`
	// SideB is the other side: nil or Human for ai_human; an AI side for dual_ai.
	SideB *AgentSide `json:"sideB,omitempty"`
	// MaxSessionTurns ends the session when both sides completed this many turns; 0 = no cap.
	MaxSessionTurns int `json:"maxSessionTurns,omitempty"`
	// ExposeAsTool allows prompts to list the agent as a tool (handoff or subagent).
	ExposeAsTool bool `json:"exposeAsTool,omitempty"`
	// ToolDescription is shown when the agent is offered as a tool; required if exposed.
	ToolDescription string `json:"toolDescription,omitempty"`
	// Env holds agent-level variable values.
	Env map[string]string `json:"env,omitempty"`
	// Hooks run when the active prompt does not set its own.
	Hooks []string `json:"hooks,omitempty"`
	// Description and Icon are for people and UIs only.
	Description string `json:"description,omitempty"`
	Icon        string `json:"icon,omitempty"`
	// Internal marks an agent Weft adds itself (to run a prompt for an MCP client): APIs do not
	// list it, though its threads are ordinary threads.
	Internal bool `json:"-"`
	// Budget caps what a thread of the agent may spend, its subagents included; a thread's own
	// budget (set at creation or later) replaces it. nil = no cap.
	Budget *Budget `json:"budget,omitempty"`
}

// Budget caps a thread's spend on model calls, its descendants' included. Before each model call
// the engine compares the spend so far with it; at or over a cap the run stops budget_exceeded
// and the thread is paused until the budget is raised and the thread continued.
type Budget struct {
	// MaxCostUSD caps the cost in US dollars; 0 = no cost cap.
	MaxCostUSD float64 `json:"maxCostUsd,omitempty"`
	// MaxTokens caps the tokens (input and output); 0 = no token cap.
	MaxTokens int64 `json:"maxTokens,omitempty"`
	// UnknownCost says what a call whose price is unknown does to a cost cap: "allow" (default)
	// counts it as free; "block" counts the cap as reached.
	UnknownCost string `json:"unknownCost,omitempty"`
}

// Check reports the first problem of a budget, naming its field ("" when valid).
func (b *Budget) Check() (field, problem string) {
	if ps := b.Problems(); len(ps) > 0 {
		return ps[0][0], ps[0][1]
	}
	return "", ""
}

// Problems reports every problem of a budget, each as its field and what is wrong with it.
func (b *Budget) Problems() [][2]string {
	var ps [][2]string
	if b.MaxCostUSD < 0 {
		ps = append(ps, [2]string{"maxCostUsd", fmt.Sprintf("maxCostUsd must be a positive amount of US dollars, got %g", b.MaxCostUSD)})
	}
	if b.MaxTokens < 0 {
		ps = append(ps, [2]string{"maxTokens", fmt.Sprintf("maxTokens must be a positive number of tokens, got %d", b.MaxTokens)})
	}
	if b.MaxCostUSD == 0 && b.MaxTokens == 0 {
		ps = append(ps, [2]string{"maxCostUsd", "a budget needs maxCostUsd or maxTokens above 0"})
	}
	if b.UnknownCost != "" && b.UnknownCost != "allow" && b.UnknownCost != "block" {
		ps = append(ps, [2]string{"unknownCost", fmt.Sprintf("unknownCost is allow or block, not %q", b.UnknownCost)})
	}
	return ps
}

// Kind returns the agent's type, inferring it when unset: an AI side B makes a dual_ai agent.
func (a *Agent) Kind() AgentType {
	if a.Type != "" {
		return a.Type
	}
	if a.SideB != nil && a.SideB.IsAI() {
		return DualAI
	}
	return AIHuman
}

// Side returns the definition of side s; for an ai_human agent without side B it returns a human side.
func (a *Agent) Side(s Side) AgentSide {
	if s == SideA {
		return a.SideA
	}
	if a.SideB == nil {
		return AgentSide{Human: true}
	}
	return *a.SideB
}

// AgentSide defines one side of an agent: exactly one of Prompt, Handler or Human.
type AgentSide struct {
	// Prompt names the prompt that drives an AI side.
	Prompt string `json:"prompt,omitempty"`
	// Handler names a Go handler that drives the side.
	Handler string `json:"handler,omitempty"`
	// Human marks the human side B of an ai_human agent.
	Human bool `json:"human,omitempty"`
	// Label names the side for people.
	Label string `json:"label,omitempty"`
	// StopOnResponse completes the turn on a text reply without tool calls; nil = true.
	StopOnResponse *bool `json:"stopOnResponse,omitempty"`
	// StopTool completes the turn when this tool is called successfully.
	StopTool string `json:"stopTool,omitempty"`
	// StopToolResponseProperty names the stop tool's string argument that replaces the reply text.
	StopToolResponseProperty string `json:"stopToolResponseProperty,omitempty"`
	// MaxSteps caps this side's steps per run; 0 = no cap beyond the run ceiling.
	MaxSteps int `json:"maxSteps,omitempty"`
	// SessionStop, SessionFail and SessionStatus bind tools that end the session successfully, end it
	// as a failure, or report a status text to the parent.
	SessionStop   *SessionTool `json:"sessionStop,omitempty"`
	SessionFail   *SessionTool `json:"sessionFail,omitempty"`
	SessionStatus *SessionTool `json:"sessionStatus,omitempty"`
}

// IsAI reports whether the side is driven by a prompt or a handler.
func (s AgentSide) IsAI() bool { return !s.Human && (s.Prompt != "" || s.Handler != "") }

// StopsOnResponse returns StopOnResponse or its default true.
func (s AgentSide) StopsOnResponse() bool { return Flag(s.StopOnResponse, true) }

// SessionTool binds a tool to a session event; files may give just the tool name.
type SessionTool struct {
	// Name of the tool.
	Name string `json:"name"`
	// MessageProperty names the argument whose value becomes the result or status text.
	MessageProperty string `json:"messageProperty,omitempty"`
	// AttachmentsProperty names the argument holding attachment paths to pass on.
	AttachmentsProperty string `json:"attachmentsProperty,omitempty"`
}
