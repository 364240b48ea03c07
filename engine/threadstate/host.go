package threadstate

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/feed"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/schema"
)

// Engine is what a State needs of the engine that serves its thread, inside a run or outside.
type Engine interface {
	// Store is the engine's store, read directly (writes go through Tx).
	Store() weft.Store
	// Registry holds the definitions: tools, effects, prompts, agents, models.
	Registry() *weft.Registry
	// Now is the engine's clock.
	Now() time.Time
	// Log is the engine's logger.
	Log() *slog.Logger
	// Tx writes to a thread in a transaction of its own: fenced by fence when set, its text
	// redacted by red (nil: the thread's redactor, loaded; empty: kept as written).
	Tx(ctx context.Context, threadID string, fence *weft.Fence, red *redact.Redactor, fn func(weft.Tx) error) error
	// EmitOutside publishes an event no run's transaction carries (recorded first when the engine
	// records its events).
	EmitOutside(ctx context.Context, ev feed.Event)
	// Observed tells whether anyone wants events: when nobody does, none is built.
	Observed() bool
	// Redactor returns the function that redacts a thread's secrets and the provider keys.
	Redactor(ctx context.Context, threadID string) (func(string) string, error)
	// Send queues a message for a thread's next step boundary and returns its id.
	Send(ctx context.Context, threadID string, nm weft.NewMessage) (string, error)
	// Terminate stops a thread for good.
	Terminate(ctx context.Context, threadID string) error
	// DeliverToParent queues a child's silent message of kind to its parent, as the owner side
	// speaks, with the attachments copied into the parent's files.
	DeliverToParent(ctx context.Context, child *weft.Thread, owner weft.Side, text, kind string, atts []weft.ToolAttachment) error
	// EmitSubagent tells a child's parent of the child's status and status text.
	EmitSubagent(ctx context.Context, child *weft.Thread, agent, status, text string)
	// Validator returns the compiled validator of a schema.
	Validator(s *schema.Schema) (*schema.Validator, error)
	// EffectScheduled wakes whatever runs the due effects: one was scheduled.
	EffectScheduled()
}

// Run is what a State needs of the run of its thread (or of a descendant's run, whose State
// reads and writes another thread). A State never changes the run's caches itself: a tool may
// write through its State from a goroutine of its own while the run reads its rows, so every
// change reaches the run through the Post methods (the run's mailbox), which the run applies on
// its own goroutine.
type Run interface {
	// ID is the run's id.
	ID() string
	// ThreadID is the id of the thread the run runs.
	ThreadID() string
	// Fence is the run's lease fence, which a State's writes carry.
	Fence() *weft.Fence
	// Redactor is the run's redactor as it stands, for a caller on any goroutine.
	Redactor() *redact.Redactor
	// Env is a copy of the run's env view, read on any goroutine.
	Env() vars.View
	// Emit publishes an event of the run's thread through the run.
	Emit(typ string, data payload.Payload)
	// EmitMessage publishes a row of the run's thread through the run.
	EmitMessage(m weft.Message)
	// Records tells whether the run records its events with its writes: then a State's row
	// changes go through RecordInsert, RecordChange and RecordDelete.
	Records() bool
	// RecordInsert writes fn (which inserts m) with m's message event, after the run's waiting
	// events.
	RecordInsert(ctx context.Context, fn func(weft.Tx) error, m *weft.Message) error
	// RecordChange writes fn (which applies c to cur) with the changed row's message event.
	RecordChange(ctx context.Context, fn func(weft.Tx) error, cur weft.Message, c weft.MessageChange) error
	// RecordDelete writes fn (which deletes the row id) with its message_deleted event.
	RecordDelete(ctx context.Context, fn func(weft.Tx) error, id string) error
	// PostRow carries a row a State stored to the run's cache.
	PostRow(m weft.Message)
	// PostReplace carries a row a State changed to the run's cache.
	PostReplace(m weft.Message)
	// PostDelete carries a row a State deleted to the run's cache.
	PostDelete(id string)
	// PostEnv carries a thread variable a State set to the run's env and redactor.
	PostEnv(v weft.EnvValue)
	// PostTool queues a tool a State asked for, to run after the step's calls.
	PostTool(name string, args json.RawMessage)
	// Hooks returns the hooks of a point active for x (nil: the agent's).
	Hooks(x Exec, point weft.HookPoint) []*weft.Hook
	// HookFailed logs a hook's error or panic; the hook is skipped.
	HookFailed(h *weft.Hook, err error)
}

// Exec is the execution of a tool, hook or handler a State serves: its Execution, with what the
// State reads of the call and asks of its step.
type Exec interface {
	weft.Execution
	// OfferedTool is the definition of the called tool when the call is one the scope offers
	// (offered false otherwise; t nil for an offered prompt or agent).
	OfferedTool() (t *weft.Tool, offered bool)
	// EnvLayers are the env the executing prompt and tool entry define.
	EnvLayers() (prompt, entry map[string]string)
	// StopSession ends the session after the current step.
	StopSession(o *weft.StopSessionOptions)
	// TerminateThread stops the thread after the current tool.
	TerminateThread()
}
