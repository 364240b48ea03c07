package weft

import (
	"context"

	"github.com/weft-agents/weft/schema"
)

// Prompt defines how each request to a model is crafted: system instructions, the model, the tools
// offered and the behaviour around them (seed 000). A prompt can also be called as a tool by another
// prompt (a sub-prompt) with RequiredSchema as its arguments.
type Prompt struct {
	// Name identifies the prompt; required, non-empty.
	Name string `json:"name"`
	// ToolDescription is shown when the prompt is offered as a tool; required, non-empty.
	ToolDescription string `json:"toolDescription"`
	// Prompt is the system prompt content: text, include and env parts, concatenated.
	Prompt PromptContent `json:"prompt"`
	// Model names a defined model; required.
	Model string `json:"model"`
	// IncludeChat sends the whole thread history instead of only the current window.
	IncludeChat bool `json:"includeChat,omitempty"`
	// IncludePastTools keeps tool calls and results of earlier turns in the history.
	IncludePastTools bool `json:"includePastTools,omitempty"`
	// ParallelToolCalls lets the provider return several calls per reply; execution stays sequential.
	ParallelToolCalls bool `json:"parallelToolCalls,omitempty"`
	// ToolChoice is auto (default), none or required.
	ToolChoice ToolChoice `json:"toolChoice,omitempty"`
	// RequiredSchema is the object schema of the prompt's arguments when called as a tool.
	RequiredSchema *schema.Schema `json:"requiredSchema,omitempty"`
	// OutputSchema makes the prompt's final answer structured: a JSON object matching it (same
	// schema language as RequiredSchema). Providers get their native form; the answer is parsed
	// and validated, an invalid one retried with the validation error (twice), and the value is
	// kept in the message's metadata under "structured".
	OutputSchema *schema.Schema `json:"outputSchema,omitempty"`
	// Tools are the tools, sub-prompts and agents offered to the model.
	Tools []ToolEntry `json:"tools,omitempty"`
	// Variables declares the variables the prompt reads.
	Variables []VariableDefinition `json:"variables,omitempty"`
	// Env holds prompt-level default variable values (the seed's tenvs on prompts).
	Env map[string]string `json:"env,omitempty"`
	// Reasoning configures extended thinking; nil sends none.
	Reasoning *Reasoning `json:"reasoning,omitempty"`
	// RecentImageThreshold is how many recent messages keep their images; 0 means the default 10.
	RecentImageThreshold int `json:"recentImageThreshold,omitempty"`
	// Hooks lists the hook ids that run while this prompt is active. nil = use the agent's hooks;
	// a non-nil empty slice = no hooks at all.
	Hooks []string `json:"hooks,omitempty"`
	// ExposeAsTool, when false, forbids listing the prompt as a tool (it can still be included).
	// nil = true.
	ExposeAsTool *bool `json:"exposeAsTool,omitempty"`
	// ModelOptions override provider options for this prompt: temperature, maxOutputTokens, topP,
	// stop, seed.
	ModelOptions map[string]any `json:"modelOptions,omitempty"`
	// Context says how a request is kept inside the model's context window; nil is the default
	// policy (ContextPolicy.Strategy).
	Context *ContextPolicy `json:"context,omitempty"`
	// Template, when set, renders the prompt per step instead of Prompt (a .prompty file).
	Template PromptTemplate `json:"-"`
}

// ContextStrategy names how a request that would not fit the model's context window is made to.
type ContextStrategy string

// The context strategies.
const (
	// ContextWindow sends the system text and the newest messages that fit: a tool call is never
	// parted from its result, the newest user message is always sent. The default whenever the
	// model's window (capabilities.maxContextTokens) is known.
	ContextWindow ContextStrategy = "window"
	// ContextNone sends the whole history, as the prompt's other keys select it; a request past the
	// window gets the provider's error.
	ContextNone ContextStrategy = "none"
	// ContextSummarize is window, with what falls out of the window folded into a summary row of
	// the thread (written by the summarizer prompt) that every later request carries after the
	// system text.
	ContextSummarize ContextStrategy = "summarize"
)

// SummarizerPrompt is the name of the prompt that writes the summaries of context.strategy
// summarize: declaring a prompt of this name replaces the built-in one for every prompt without
// its own context.summarizer.
const SummarizerPrompt = "context_summarizer"

// ContextPolicy is a prompt's `context` key.
type ContextPolicy struct {
	// Strategy is window (default), summarize or none.
	Strategy ContextStrategy `json:"strategy,omitempty"`
	// Summarizer names the prompt that writes the summary under strategy summarize; "" = the
	// prompt named SummarizerPrompt when one is declared, else the built-in summarizer on the
	// prompt's own model.
	Summarizer string `json:"summarizer,omitempty"`
	// ReserveOutput is the tokens kept free for the reply; 0 = the prompt's maxOutputTokens model
	// option, else the model's capabilities.maxOutputTokens, else a quarter of the window (at most
	// 4,096).
	ReserveOutput int `json:"reserveOutput,omitempty"`
}

// StrategyOf returns the prompt's context strategy (window when unset).
func (p *Prompt) StrategyOf() ContextStrategy {
	if p.Context == nil || p.Context.Strategy == "" {
		return ContextWindow
	}
	return p.Context.Strategy
}

// Exposed reports whether the prompt may be offered as a tool.
func (p *Prompt) Exposed() bool { return p.ExposeAsTool == nil || *p.ExposeAsTool }

// ImageThreshold returns RecentImageThreshold or its default 10.
func (p *Prompt) ImageThreshold() int {
	if p.RecentImageThreshold == 0 {
		return 10
	}
	return p.RecentImageThreshold
}

// ToolChoice is the tool-calling strategy of a prompt: auto (the model decides), none (no tool
// definitions are sent) or required (the model must call at least one tool).
type ToolChoice string

// The tool-calling strategies.
const (
	ToolChoiceAuto     ToolChoice = "auto"
	ToolChoiceNone     ToolChoice = "none"
	ToolChoiceRequired ToolChoice = "required"
)

// Valid reports whether c is empty (auto) or one of the three strategies.
func (c ToolChoice) Valid() bool {
	switch c {
	case "", ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
		return true
	}
	return false
}

// PromptContent is a prompt's system content as parts concatenated without separator. A plain string
// prompt is one text part.
type PromptContent []PromptPart

// Text returns content made of one text part.
func Text(s string) PromptContent { return PromptContent{{Type: PartKindText, Content: s}} }

// PromptPartKind discriminates prompt parts.
type PromptPartKind string

// The prompt part kinds.
const (
	// PartKindText is static text.
	PartKindText PromptPartKind = "text"
	// PartKindInclude inserts another prompt's content.
	PartKindInclude PromptPartKind = "include"
	// PartKindEnv inserts a thread environment value (redacted if secret).
	PartKindEnv PromptPartKind = "env"
)

// PromptPart is one part of structured prompt content; parts concatenate without separator.
type PromptPart struct {
	// Type is text, include or env.
	Type PromptPartKind `json:"type"`
	// Content is the text of a text part.
	Content string `json:"content,omitempty"`
	// Prompt names the included prompt of an include part.
	Prompt string `json:"prompt,omitempty"`
	// Property names the variable of an env part.
	Property string `json:"property,omitempty"`
}

// IncludePart returns a part that includes the named prompt's content.
func IncludePart(name string) PromptPart { return PromptPart{Type: PartKindInclude, Prompt: name} }

// EnvPart returns a part that renders the named variable.
func EnvPart(name string) PromptPart { return PromptPart{Type: PartKindEnv, Property: name} }

// TextPart returns a static text part.
func TextPart(s string) PromptPart { return PromptPart{Type: PartKindText, Content: s} }

// Reasoning configures extended thinking; it is sent only when Effort or MaxTokens is set.
type Reasoning struct {
	// Effort is low, medium or high.
	Effort string `json:"effort,omitempty"`
	// MaxTokens is the reasoning token budget.
	MaxTokens int `json:"maxTokens,omitempty"`
	// Exclude: reasoning is used but neither returned nor stored.
	Exclude bool `json:"exclude,omitempty"`
	// Include: reasoning is replayed in history, only to the prompt that produced it.
	Include bool `json:"include,omitempty"`
}

// EntryKind forces what a tool entry's name resolves to; empty resolves tool → prompt → agent.
type EntryKind string

// The kinds a tool entry can be forced to with a name prefix (`tool:x`, `prompt:x`, …).
const (
	EntryAny      EntryKind = ""
	EntryTool     EntryKind = "tool"
	EntryPrompt   EntryKind = "prompt"
	EntryAgent    EntryKind = "agent"
	EntryProvider EntryKind = "provider"
	// EntryMCP names an MCP server's tools: `mcp:SERVER` (all the tools it offers) or
	// `mcp:SERVER/TOOL` (one tool, by its name on the server).
	EntryMCP EntryKind = "mcp"
)

// ToolEntry is one element of a prompt's tools list: a plain name, a ToolConfig (function tool with
// env/options), a SubpromptConfig (prompt or handoff) or a SubagentToolConfig (dual_ai agent). Which
// keys apply depends on the resolved target (env and options only to tools, include* only to
// prompts, blocking/immediate/resumable only to subagents, …); keys that do not apply are
// validation errors. Pointer fields distinguish "not given" from a zero value.
type ToolEntry struct {
	// Name of the tool, prompt or agent.
	Name string `json:"name"`
	// Kind, when set, forces the resolution (from a `tool:`/`prompt:`/`agent:`/`provider:`/`mcp:`
	// prefix).
	Kind EntryKind `json:"kind,omitempty"`
	// Optional names an env flag; the entry is enabled only when it resolves to true, 1 or yes.
	Optional string `json:"optional,omitempty"`
	// Env holds variable values for this tool: a resolution layer (ToolConfig).
	Env map[string]string `json:"env,omitempty"`
	// Options are static options the tool reads through Execution().ToolOptions() (ToolConfig).
	Options map[string]any `json:"options,omitempty"`
	// Bindings fill tool parameters from the prompt's arguments (parameter → argument name); bound
	// parameters are not offered to the model (a Prompty v2 function tool's `bindings`).
	Bindings map[string]string `json:"bindings,omitempty"`
	// IncludeTextResponse, IncludeToolCalls and IncludeErrors shape a sub-prompt's result string;
	// nil = true (SubpromptConfig).
	IncludeTextResponse *bool `json:"includeTextResponse,omitempty"`
	IncludeToolCalls    *bool `json:"includeToolCalls,omitempty"`
	IncludeErrors       *bool `json:"includeErrors,omitempty"`
	// InitUserMessageProperty names the argument used as the callee's first user message.
	InitUserMessageProperty string `json:"initUserMessageProperty,omitempty"`
	// InitAttachmentsProperty names the argument holding a path or paths to attach to it.
	InitAttachmentsProperty string `json:"initAttachmentsProperty,omitempty"`
	// InitAgentNameProperty names the argument used as a subagent's label.
	InitAgentNameProperty string `json:"initAgentNameProperty,omitempty"`
	// Blocking: the call waits for the subagent's result; nil = true.
	Blocking *bool `json:"blocking,omitempty"`
	// Immediate starts the subagent when the prompt becomes active, before the first model step.
	Immediate *bool `json:"immediate,omitempty"`
	// Resumable configures a long-lived subagent instance; nil = not given.
	Resumable *Resumable `json:"resumable,omitempty"`
	// Approval overrides the tool's own approval setting for calls through this entry (sub-prompt
	// and subagent entries too): required or never; "" keeps the tool's.
	Approval Approval `json:"approval,omitempty"`
	// Declared is the tool as a prompt file declares it (a Prompty `kind: function` tool with its
	// description and parameters), nil otherwise. It is bound to the project's tool of that name;
	// without one, validation warns, previews show the declaration and a run fails saying how to
	// provide the tool.
	Declared *ToolSpec `json:"-"`
	// DeclaredKind is the Prompty kind of a declared tool: function, or a custom kind
	// (`kind: my_provider`) that binds the same way.
	DeclaredKind string `json:"-"`
	// Path is where the entry is written in its file when that is not `tools[i]` of the prompt's
	// list: a .prompty entry that became several (an MCP allow-list, an OpenAPI document's
	// operations), or a v1 `model.parameters.tools[i]`; diagnostics name it.
	Path string `json:"-"`
}

// Flag returns the value of a *bool option, or def when unset.
func Flag(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// Resumable configures resumable subagent instances: children that persist, keep a reference and
// are driven through the subagent_create and subagent_message tools.
type Resumable struct {
	// Enabled is false for an explicit `resumable: false`.
	Enabled bool `json:"enabled"`
	// ReceivesMessages is side_a or side_b: which side of the child receives subagent_message.
	ReceivesMessages string `json:"receives_messages,omitempty"`
	// MaxInstances caps live instances per parent and agent; 0 = no cap.
	MaxInstances int `json:"maxInstances,omitempty"`
	// ParentCommunication is implicit (automatic report on session end, default) or explicit.
	ParentCommunication string `json:"parentCommunication,omitempty"`
}

// PromptTemplate renders a prompt whose content is a template (a .prompty file) for one step.
type PromptTemplate interface {
	// RenderPrompt renders the system text and the template messages around the history.
	RenderPrompt(ctx context.Context, in TemplateInput) (*RenderedPrompt, error)
}

// TemplateInput is what a template sees when rendered.
type TemplateInput struct {
	// Args are the validated arguments (defaults applied).
	Args map[string]any
	// Env resolves a variable: its value, whether it is secret, and whether it resolved.
	Env func(name string) (value string, secret bool, ok bool)
	// InThread is set when the prompt runs as a side of a thread: the thread's newest message is
	// the turn's question, so a template slot for the question (Prompty's `user:\n{{question}}`
	// after the history) is not sent. Unset when it runs as a tool, its arguments the question.
	InThread bool
}

// RenderedPrompt is a rendered template prompt: system text plus messages placed before and after the
// conversation history.
type RenderedPrompt struct {
	// System is the system text.
	System string
	// Prefix messages come after the system prompt and before the history.
	Prefix []LLMMessage
	// Suffix messages come after the history.
	Suffix []LLMMessage
	// HistoryLimit keeps only the last N history messages when > 0.
	HistoryLimit int
	// Tools are tool entries the template added for this step (a Prompty tools: section).
	Tools []ToolEntry
	// Warnings are non-fatal rendering notes (missing optional values).
	Warnings []string
}
