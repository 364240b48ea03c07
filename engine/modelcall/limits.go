package modelcall

import (
	"maps"
	"sync/atomic"
)

// limits are the context limits learned from refusals: a model that declares no window may take
// at most the tokens its refusal taught. They are read before every summarize step and written
// only on a refusal, so the map is replaced, never changed: readers take no lock.
type limits struct {
	// byModel maps a model's name to its limit (nil until one is learned).
	byModel atomic.Pointer[map[string]int]
}

// learn notes that a request to model may take at most limit tokens; the smallest limit learned
// stays.
func (l *limits) learn(model string, limit int) {
	for {
		old := l.byModel.Load()
		var next map[string]int
		if old != nil {
			if cur, ok := (*old)[model]; ok && cur <= limit {
				return
			}
			next = maps.Clone(*old)
		} else {
			next = map[string]int{}
		}
		next[model] = limit
		if l.byModel.CompareAndSwap(old, &next) {
			return
		}
	}
}

// Learned is the limit a refusal taught for a model that declares no window, 0 when none did.
func (ms *Models) Learned(model string) int {
	if m := ms.limits.byModel.Load(); m != nil {
		return (*m)[model]
	}
	return 0
}
