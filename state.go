package weft

import (
	"context"
	"encoding/json"
	"io"
	"time"
)

// State is what tools, hooks, effects and handlers get to read and change their thread
// (threadstate.md; the seed's ThreadState). It is safe for concurrent use. Storage-touching methods
// take ctx first; ctx is cancelled on stop, termination or lease loss (the seed's abortSignal).
type State interface {
	// ThreadID is the thread's id.
	ThreadID() string
	// AgentName is the current agent (changes after a handoff).
	AgentName() string
	// UserID is the owner; "" for local use.
	UserID() string
	// ParentID is "" for a root thread.
	ParentID() string
	// RootID is the id of the tree's root thread.
	RootID() string
	// CreatedAt is when the thread was created.
	CreatedAt() time.Time
	// Arguments are the validated creation and handoff arguments.
	Arguments() map[string]any
	// Terminated reports whether the thread was terminated.
	Terminated(ctx context.Context) (bool, error)

	// Execution is nil outside a run and always non-nil inside a tool.
	Execution() Execution

	// Messages lists rows ordered by seq.
	Messages(ctx context.Context, q MessageQuery) ([]Message, error)
	// Message returns one row or ErrNotFound.
	Message(ctx context.Context, id string) (Message, error)
	// InjectMessage persists a row now; it never starts a run.
	InjectMessage(ctx context.Context, m NewMessage) (Message, error)
	// QueueMessage queues a row; it starts or continues a run.
	QueueMessage(ctx context.Context, m NewMessage) (queueID string, err error)
	// UpdateMessage changes content, metadata, silent or exclude_from_context.
	UpdateMessage(ctx context.Context, id string, u MessageUpdate) (Message, error)
	// DeleteMessage removes a row.
	DeleteMessage(ctx context.Context, id string) error
	// Logs lists the thread's log rows.
	Logs(ctx context.Context, q LogQuery) ([]LogEntry, error)

	// Env resolves a variable through every layer; ErrEnvNotFound when unresolved.
	Env(ctx context.Context, name string) (string, error)
	// LookupEnv is Env without the error for a missing value.
	LookupEnv(ctx context.Context, name string) (string, bool, error)
	// EnvType returns the type of a variable.
	EnvType(ctx context.Context, name string) (VarType, error)
	// SetEnv sets a value in the thread layer.
	SetEnv(ctx context.Context, name, value string, t VarType) error
	// Tenvs is the seed 002 view of the executing tool's tenvs, decoded per schema type.
	Tenvs(ctx context.Context) (map[string]any, error)

	// GetValue reads a JSON value from the thread's KV store into dst.
	GetValue(ctx context.Context, key string, dst any) (found bool, err error)
	// SetValue writes a JSON value; nil deletes.
	SetValue(ctx context.Context, key string, v any) error

	// Files is the thread filesystem.
	Files() FileSystem

	// QueueTool runs a tool after the current calls of the root run.
	QueueTool(ctx context.Context, name string, args any) error
	// InvokeTool runs a tool synchronously and stores nothing.
	InvokeTool(ctx context.Context, name string, args any) (ToolResult, error)

	// ScheduleEffect stores a durable effect to run after delay and returns its id.
	ScheduleEffect(ctx context.Context, name string, args any, delay time.Duration) (id string, err error)
	// ScheduledEffects lists the thread's effects.
	ScheduledEffects(ctx context.Context) ([]EffectRecord, error)
	// CancelEffect cancels a pending effect.
	CancelEffect(ctx context.Context, id string) error

	// Emit sends a custom event to stream subscribers; nothing is persisted.
	Emit(ctx context.Context, event string, data any) error
	// NotifyParent queues a message to the parent thread; ErrNoParent at the root.
	NotifyParent(ctx context.Context, text string, attachments ...string) error
	// SetStatus sets the status text the parent sees.
	SetStatus(ctx context.Context, text string) error
	// StopSession ends the session after the current step.
	StopSession(ctx context.Context, o StopSessionOptions) error
	// Terminate stops the thread for good, cascading to descendants.
	Terminate(ctx context.Context) error
	// Parent returns the parent thread's state.
	Parent(ctx context.Context) (State, error)
	// Child returns a child thread's state by reference.
	Child(ctx context.Context, reference string) (State, error)
	// Children lists the thread's subagents.
	Children(ctx context.Context) ([]SubagentInfo, error)
	// Root returns the root-thread state of the current run (the seed's rootState).
	Root() State

	// LoadPrompt, LoadAgent and LoadModel return the definitions active for this thread.
	LoadPrompt(name string) (*Prompt, error)
	LoadAgent(name string) (*Agent, error)
	LoadModel(name string) (*Model, error)
}

// Execution describes the run a tool or hook is part of.
type Execution interface {
	// RunID identifies the run (the seed's flowId).
	RunID() string
	// Side is the acting side (the seed's currentSide).
	Side() Side
	// StepCount is the number of steps of this run, the current one included.
	StepCount() int
	// SideStepCount is the number of steps of one side in this run.
	SideStepCount(Side) int
	// TurnCount is the number of completed turns of a side in this session.
	TurnCount(Side) int
	// Depth is 0 at top level and n inside sub-prompts nested n levels.
	Depth() int
	// PromptName is the active prompt.
	PromptName() string
	// ToolCall is the call being executed; nil in hooks.
	ToolCall() *ToolCall
	// ToolOptions are the `options` of the prompt's tool entry.
	ToolOptions() map[string]any
	// Memory holds per-run scratch values, not persisted.
	Memory() Memory
	// ForceTurn switches to a side after the current step.
	ForceTurn(side Side)
	// Stop stops the run after the current tool (reason aborted).
	Stop()
	// Stopped reports whether a stop was requested.
	Stopped() bool
}

// MessageQuery selects messages.
type MessageQuery struct {
	// Limit (0 = 100, negative = no limit) and Offset page the result.
	Limit, Offset int
	// Desc orders newest first.
	Desc bool
	// ExcludeSilent hides silent rows (included by default).
	ExcludeSilent bool
	// MaxDepth includes rows up to this sub-prompt depth (0 = top level only).
	MaxDepth int
	// Roles filters by role; empty = all.
	Roles []Role
	// AfterSeq returns rows with seq greater than this.
	AfterSeq int64
}

// NewMessage is a message to insert or queue.
type NewMessage struct {
	// Role is user, assistant or system.
	Role Role `json:"role"`
	// Content is the text.
	Content string `json:"content"`
	// Attachments are new files (Data) or existing thread paths (Path).
	Attachments []ToolAttachment `json:"attachments,omitempty"`
	// Silent rows are sent to the model but hidden from listings.
	Silent bool `json:"silent,omitempty"`
	// Metadata annotates the row.
	Metadata map[string]any `json:"metadata,omitempty"`
	// IfBusy is what happens to the message when a run of the thread is in progress: queued for
	// its next step boundary (empty or IfBusyQueue), refused (IfBusyReject: a *BusyError), or the
	// run stopped at once for a new run that takes it (IfBusyInterrupt).
	IfBusy IfBusy `json:"if_busy,omitempty"`
}

// MessageUpdate changes a stored message; nil fields are left alone.
type MessageUpdate struct {
	Content            *string        `json:"content,omitempty"`
	Metadata           map[string]any `json:"metadata,omitempty"`
	Silent             *bool          `json:"silent,omitempty"`
	ExcludeFromContext *bool          `json:"exclude_from_context,omitempty"`
}

// LogQuery selects log rows.
type LogQuery struct {
	// Limit (0 = no limit) and Offset page the result.
	Limit, Offset int
	// MaxDepth includes sub-prompt rows up to this depth.
	MaxDepth int
	// AfterID, when set, lists only the rows created after that row (before Limit and Offset
	// apply): a reader that has read a thread's rows up to one reads only those written since.
	// ErrNotFound when the thread has no such row.
	AfterID string
}

// LogEntry is one model attempt (or hook/tool error) of a thread.
type LogEntry struct {
	ID           string `json:"id"`
	ThreadID     string `json:"thread_id"`
	RunID        string `json:"run_id"`
	MessageID    string `json:"message_id,omitempty"`
	ParentLogID  string `json:"parent_log_id,omitempty"`
	RetryOfLogID string `json:"retry_of_log_id,omitempty"`
	// Kind is llm, hook_error, tool_error or interrupted.
	Kind               string          `json:"kind"`
	Provider           string          `json:"provider,omitempty"`
	Model              string          `json:"model,omitempty"`
	ModelID            string          `json:"model_id,omitempty"`
	Prompt             string          `json:"prompt,omitempty"`
	Side               Side            `json:"side,omitempty"`
	Depth              int             `json:"depth"`
	StatusCode         int             `json:"status_code,omitempty"`
	FinishReason       string          `json:"finish_reason,omitempty"`
	Error              string          `json:"error,omitempty"`
	ErrorType          string          `json:"error_type,omitempty"`
	ErrorOrigin        string          `json:"error_origin,omitempty"`
	IsComplete         bool            `json:"is_complete"`
	InputTokens        int             `json:"input_tokens"`
	CachedTokens       int             `json:"cached_tokens"`
	OutputTokens       int             `json:"output_tokens"`
	ReasoningTokens    int             `json:"reasoning_tokens"`
	TotalTokens        int             `json:"total_tokens"`
	CostInput          *float64        `json:"cost_input"`
	CostCached         *float64        `json:"cost_cached"`
	CostOutput         *float64        `json:"cost_output"`
	CostTotal          *float64        `json:"cost_total"`
	LatencyMS          int64           `json:"latency_ms"`
	TimeToFirstTokenMS int64           `json:"time_to_first_token_ms"`
	GenerationMS       int64           `json:"generation_ms"`
	RequestBody        json.RawMessage `json:"request_body,omitempty"`
	ResponseBody       json.RawMessage `json:"response_body,omitempty"`
	ToolsOffered       []string        `json:"tools_offered,omitempty"`
	ToolsCalled        []string        `json:"tools_called,omitempty"`
	QueuedTools        []string        `json:"queued_tools,omitempty"`
	ToolChoice         string          `json:"tool_choice,omitempty"`
	CreatedAt          time.Time       `json:"created_at"`
}

// EffectStatus is the lifecycle of a scheduled effect.
type EffectStatus string

// The effect statuses.
const (
	EffectPending    EffectStatus = "pending"
	EffectProcessing EffectStatus = "processing"
	EffectCompleted  EffectStatus = "completed"
	EffectFailed     EffectStatus = "failed"
	EffectCanceled   EffectStatus = "canceled"
)

// EffectRecord is a stored effect: pending until due, processing while claimed, then completed,
// failed or canceled. An expired claim may be claimed again and counts as an attempt.
type EffectRecord struct {
	ID       string          `json:"id"`
	ThreadID string          `json:"thread_id"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args,omitempty"`
	// RunAt is when the effect is due.
	RunAt  time.Time    `json:"run_at"`
	Status EffectStatus `json:"status"`
	// Attempts counts claims; MaxAttempts > 1 allows retries of failures.
	Attempts    int    `json:"attempts"`
	MaxAttempts int    `json:"max_attempts"`
	Error       string `json:"error,omitempty"`
	// ClaimedBy and ClaimExpiresAt describe the current claim of a processing effect.
	ClaimedBy      string     `json:"claimed_by,omitempty"`
	ClaimExpiresAt *time.Time `json:"claim_expires_at,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
}

// StopSessionOptions ends a session from code.
type StopSessionOptions struct {
	// Result is the session's result text.
	Result string
	// Failed reports the session as a failure to the parent.
	Failed bool
	// NotifyParent overrides whether the parent gets a report; nil = per parentCommunication.
	NotifyParent *bool
}

// SubagentInfo is a row of a thread's subagent registry; Reference is the child thread's id and
// Status one of running, idle, failed or terminated.
type SubagentInfo struct {
	Reference, ParentThreadID, Agent, Label string
	OwnerSide                               Side
	Blocking, Resumable                     bool
	ReceivesMessages, ParentCommunication   string
	Status, StatusText                      string
	CreatedAt, UpdatedAt                    time.Time
}

// FileSystem is a thread's filesystem: absolute, /-separated paths; files above 1.75 MiB are chunked.
type FileSystem interface {
	WriteFile(ctx context.Context, path string, data []byte, o WriteOptions) (FileInfo, error)
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// Open streams a file, chunked ones included.
	Open(ctx context.Context, path string) (io.ReadCloser, error)
	Stat(ctx context.Context, path string) (FileInfo, error)
	ReadDir(ctx context.Context, path string) ([]FileInfo, error)
	// Mkdir creates a directory and its parents.
	Mkdir(ctx context.Context, path string) error
	// Remove deletes a file.
	Remove(ctx context.Context, path string) error
	// RemoveDir deletes a directory; a non-empty one only when recursive.
	RemoveDir(ctx context.Context, path string, recursive bool) error
	// Rename moves a file; the target must not exist.
	Rename(ctx context.Context, from, to string) error
	// Grep searches text files with an RE2 pattern.
	Grep(ctx context.Context, pattern string, o GrepOptions) ([]GrepMatch, error)
	// Find lists files matching a ** glob, sorted by path.
	Find(ctx context.Context, glob string) ([]FileInfo, error)
	// Usage counts files and bytes.
	Usage(ctx context.Context) (FileStats, error)
}

// ChunkSize is the size above which files are stored in chunks: 1.75 MiB (seed 004).
const ChunkSize = 1835008

// WriteOptions describe a file being written.
type WriteOptions struct {
	MimeType      string
	Metadata      map[string]any
	Width, Height int
	Description   string
}

// FileInfo describes a file or directory of the thread filesystem.
type FileInfo struct {
	Path, Name, MimeType string
	Size                 int64
	IsDir                bool
	Width, Height        int
	Description          string
	Metadata             map[string]any
	CreatedAt, UpdatedAt time.Time
}

// GrepOptions narrow a Grep.
type GrepOptions struct {
	// Path is a path prefix; Glob a ** glob.
	Path, Glob string
	IgnoreCase bool
	// MaxResults defaults to 100.
	MaxResults int
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path string
	// Line is 1-based.
	Line int
	Text string
}

// FileStats counts a filesystem's files and bytes.
type FileStats struct {
	Files int
	Bytes int64
}

// Memory holds a run's scratch values by key: shared by the run's tools and hooks (safe for
// concurrent use), never persisted, gone when the run ends.
type Memory interface {
	// Load returns the value stored under key, and whether there is one.
	Load(key string) (value any, ok bool)
	// Store sets the value under key.
	Store(key string, value any)
	// Delete removes the value under key.
	Delete(key string)
}
