// Package feed carries a process's events to those who listen: the subscriptions of a tree or of
// one thread (Converse's and Subscribe's), the Feed a consumer pulls, which reads the recorded
// events it missed from the store, the Watch of some event types in every thread (a server's
// global stream), and Ask's stop watches. It does not import engine, which re-exports Event,
// Feed, Subscribers and Watch.
package feed

import (
	"encoding/json"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/payload"
)

// Event is something that happened in a thread, for streams.
type Event struct {
	// Type is the event type: message, message_chunk, run_started, step_started, tool_started, …
	Type string `json:"type"`
	// ThreadID is the thread it happened in.
	ThreadID string `json:"thread_id"`
	// RootID is the root of the thread's tree ("" when the emitter did not know it).
	RootID string `json:"root_id,omitempty"`
	// Seq is the event's number in the thread's event log (Options.RecordEvents): a stream's
	// cursor. 0 for events that are not kept (streamed text deltas, or when nothing is recorded).
	Seq int64 `json:"seq,omitempty"`
	// Data is the payload (already redacted): a type of its own for the events every run emits
	// (RunStarted, MessageData, Chunk, …), Fields for the others. See Payload.
	Data payload.Payload `json:"data,omitempty"`
	// Encoded is Data as the event log holds it, JSON (nil for events that are not recorded):
	// a consumer that writes the payload out as JSON can use it instead of encoding Data again.
	Encoded json.RawMessage `json:"-"`
}

// eventOf decodes a recorded event.
func eventOf(rec weft.EventRecord, root string) Event {
	ev := Event{Type: rec.Type, ThreadID: rec.ThreadID, RootID: root, Seq: rec.Seq, Encoded: rec.Data}
	ev.Data, _ = payload.Decode(rec.Type, rec.Data)
	return ev
}
