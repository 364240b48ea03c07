package engine

import (
	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/declared"
)

// declaredTool is the handler of a declarative command or http tool (package declared), given what
// only the run knows: the project root, its redactor and why it ended.
func (r *run) declaredTool(t *weft.Tool) weft.ToolHandler {
	o := declared.Options{Root: r.e.reg.Root, Redact: r.red.String, RunErr: r.ctx.Err}
	if t.Command != nil {
		return declared.Command(t, o)
	}
	return declared.HTTP(t, o)
}
