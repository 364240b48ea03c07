package httpapi

import "github.com/weft-agents/weft/engine"

// seqOf is an event's per-thread cursor; 0 for events that are not kept (streamed deltas).
func seqOf(ev engine.Event) int64 { return ev.Seq }
