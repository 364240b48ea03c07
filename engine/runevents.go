package engine

import (
	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
)

// stopIsLast reports whether a stop's transaction can be the run's last one when the run records
// its events: nothing the run does after it writes or emits, which hooks after the stop, and
// after_create_message hooks on rows the stop stores (of scope s, when not nil), could.
func (r *run) stopIsLast(s *scope) bool {
	if !r.e.opt.RecordEvents || !r.e.commit.Observed() || len(hooks.Select(r.e.reg, r.agent.Hooks, weft.HookAfterRunStopped)) > 0 {
		return false
	}
	return s == nil || len(hooks.Select(r.e.reg, hooks.Applying(s.prompt.Hooks, r.agent.Hooks), weft.HookAfterCreateMessage)) == 0
}
