package engine

import (
	"context"

	"github.com/weft-agents/weft/engine/modelcall"
	"github.com/weft-agents/weft/engine/payload"
)

// modelRun is a run as its model calls see it (modelcall.Run): a conversion of *run, with no state
// of its own.
type modelRun run

var _ modelcall.Run = (*modelRun)(nil)

func (m *modelRun) Observed() bool                        { return m.e.commit.Observed() }
func (m *modelRun) Emit(typ string, data payload.Payload) { m.journal.Emit(typ, data) }
func (m *modelRun) FlushEvents() error                    { return m.journal.Flush() }
func (m *modelRun) Sync()                                 { (*run)(m).sync() }
func (m *modelRun) Interrupting() bool                    { return (*run)(m).interrupting() }

func (m *modelRun) Interruptible(cancel context.CancelCauseFunc) bool {
	return m.ar.modelCall(cancel)
}

// scopeCall is the part of a scope a model call reads.
func (s *scope) call() modelcall.Scope {
	return modelcall.Scope{Prompt: s.prompt, Provider: s.provider, Side: s.side, Depth: s.depth}
}
