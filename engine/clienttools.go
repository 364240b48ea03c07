package engine

import (
	"context"
	"maps"
	"slices"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/dispatch"
)

// Client tools are tools a thread's client runs itself — an AG-UI front end's tools (package
// dispatch keeps what they are). The thread keeps their definitions (SetClientTools), so they
// outlive a restart and apply to that thread only; a call of one waits, as a call that needs
// approval does, until the client's result comes (DeliverToolResult).

// ClientTool is a tool the thread's client runs.
type ClientTool = dispatch.ClientTool

// ClientTools returns the thread's client tools (nil when none).
func ClientTools(t *weft.Thread) []ClientTool { return dispatch.ClientTools(t) }

// CheckClientTools checks tools as SetClientTools does: a name used twice or not of the allowed
// form, or parameters outside the schema subset Weft checks, are EInvalid, naming the tool.
func CheckClientTools(tools []ClientTool) error { return dispatch.CheckClientTools(tools) }

// SetClientTools replaces the thread's client tools (none clears them); CheckClientTools' errors.
// The run that is going on offers the new set from its next step's scope on.
func (e *Engine) SetClientTools(ctx context.Context, threadID string, tools []ClientTool) error {
	return dispatch.SetClientTools(ctx, (*threadsHost)(e), threadID, tools)
}

// DeliverToolResult answers a call of one of the thread's client tools that waits for its client:
// the result is kept on the call's record and the call approved, so that the run goes on with it
// as the call's result (nothing runs in the server). Of two results given for one call the first
// stands (a retry after a crash between the two writes completes it). ready is Decide's. A call that does not wait
// is EConflict, an unknown one ENotFound, and a call of a tool that is not a client tool EInvalid
// (a person decides it).
func (e *Engine) DeliverToolResult(ctx context.Context, threadID, callID string, res weft.ToolResult, by string) (ready bool, err error) {
	return dispatch.DeliverToolResult(ctx, (*threadsHost)(e), threadID, callID, res, by)
}

// offerClientTools offers a top-level scope the thread's client tools, after the prompt's own: a
// name the prompt already offers keeps the prompt's tool. shared: s.offered is the engine's kept
// tool set, copied before a change. A call of one answers with the result kept in store.
func (s *scope) offerClientTools(thread *weft.Thread, shared bool, store weft.Store) {
	if s.depth != 0 || thread == nil {
		return
	}
	tools := dispatch.ClientTools(thread)
	if len(tools) == 0 {
		return
	}
	if shared {
		s.offered, s.specs = maps.Clone(s.offered), slices.Clone(s.specs)
	}
	result := dispatch.ClientResult(store)
	for _, ct := range tools {
		if _, dup := s.offered[ct.Name]; dup {
			continue
		}
		t, args, ok := ct.Tool(result)
		if !ok {
			continue // checked when set
		}
		o := &offered{entry: weft.ToolEntry{Name: ct.Name, Kind: weft.EntryTool}, target: weft.Target{Kind: weft.EntryTool, Name: ct.Name, Tool: t},
			spec: weft.ToolSpec{Name: ct.Name, Description: t.Description, Parameters: argsSchema(args)}}
		s.offered[ct.Name] = o
		s.specs = append(s.specs, o.spec)
	}
}
