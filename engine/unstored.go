package engine

import (
	"sync"
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
type unstoredResults struct {
	mu sync.Mutex
	m  map[string]unstored
}

type unstored struct {
	res weft.ToolResult
	at  time.Time
}

// keep remembers the result of a call whose store failed.
func (u *unstoredResults) keep(callID string, res weft.ToolResult) {
	u.mu.Lock()
	defer u.mu.Unlock()
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

// take returns and forgets the kept result of a call.
func (u *unstoredResults) take(callID string) (weft.ToolResult, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	x, ok := u.m[callID]
	if ok {
		delete(u.m, callID)
	}
	return x.res, ok && time.Since(x.at) <= unstoredTTL
}
