package engine

import (
	"time"

	"github.com/weft-agents/weft"
)

// Bounds of the results kept for calls whose store failed.
const (
	maxUnstored = 4096
	unstoredTTL = time.Hour
)

// unstoredResults keeps the results of tools that finished in this process while storing them
// failed (a lost database connection, a restarting database): the call's record still says
// running, and a resume in this process stores the kept result instead of answering the call as
// interrupted — a lost connection is not a lost process, and the tool must not look unfinished
// to the model, which would call it again.
// Kept by the Engine under its lock (e.mu): calls are rare, a store failure's.
type unstoredResults struct {
	m map[string]unstored
}

type unstored struct {
	res weft.ToolResult
	at  time.Time
}

// keepUnstored remembers the result of a call whose store failed.
func (e *Engine) keepUnstored(callID string, res weft.ToolResult) {
	e.mu.Lock()
	defer e.mu.Unlock()
	u := &e.unstored
	if u.m == nil {
		u.m = map[string]unstored{}
	}
	now := time.Now()
	if len(u.m) >= maxUnstored {
		for id, x := range u.m {
			if now.Sub(x.at) > unstoredTTL || len(u.m) >= maxUnstored {
				delete(u.m, id)
			}
		}
	}
	u.m[callID] = unstored{res: res, at: now}
}

// takeUnstored returns and forgets the kept result of a call.
func (e *Engine) takeUnstored(callID string) (weft.ToolResult, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.unstored.m[callID]
	if ok {
		delete(e.unstored.m, callID)
	}
	return x.res, ok && time.Since(x.at) <= unstoredTTL
}
