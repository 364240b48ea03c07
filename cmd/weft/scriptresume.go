package main

import (
	"context"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/scripted"
)

// resumeScript tells script which of its entries the thread and its descendants already used (as
// their logs record), so that a thread continued in a new process with the script that started it
// (`weft run … --model-script S`, stopped for an approval, then `weft threads approve T call_1
// --model-script S`) is answered by the entries after those, as one process would have been.
// Entries of another script (another digest: a continuation given a script of its own) count not.
func resumeScript(ctx context.Context, st weft.Store, script *scripted.Provider, threadID string) error {
	var used []int
	queue := []string{threadID}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		logs, err := st.Logs(ctx, id, weft.LogQuery{MaxDepth: 1 << 20})
		if err != nil {
			return err
		}
		for _, l := range logs {
			if l.Kind != "llm" || !l.IsComplete {
				continue // an attempt that failed consumed its entry only when it had a body
			}
			full, err := st.Log(ctx, id, l.ID) // Logs lists rows without their bodies
			if err != nil {
				return err
			}
			if digest, n, ok := scripted.ScriptEntry(full.ResponseBody); ok && digest == script.Digest() {
				used = append(used, n)
			}
		}
		for offset := 0; ; {
			children, _, err := st.Threads(ctx, weft.ThreadQuery{ParentID: id, Sort: "created", Limit: 500, Offset: offset})
			if err != nil {
				return err
			}
			for _, c := range children {
				queue = append(queue, c.ID)
			}
			if len(children) < 500 {
				break
			}
			offset += len(children)
		}
	}
	script.Resume(used)
	return nil
}
