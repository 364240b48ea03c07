package journal

import (
	"context"
	"encoding/json"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/payload"
)

// Publish publishes an event.
func (c *Committer) Publish(ev Event) { c.PublishAll([]Event{ev}) }

// PublishAll publishes events (a transaction's, in commit order): a subscriber is signalled once,
// with all of them queued, so that it takes them in one batch.
func (c *Committer) PublishAll(evs []Event) {
	if c.cfg.OnEvent != nil {
		for _, ev := range evs {
			c.cfg.OnEvent(ev)
		}
	}
	if c.cfg.Subscribers.Active() {
		c.cfg.Subscribers.PublishAll(evs)
	}
}

// Outside publishes an event that no run's transaction carries (a thread created, a State call
// outside a run, an effect's outcome): when events are recorded it is first appended to the
// thread's log in a transaction of its own.
func (c *Committer) Outside(ctx context.Context, ev Event) {
	if c.cfg.RecordEvents && !Transient(ev.Type) {
		evs := []Event{ev}
		recs := Records(evs)
		err := c.Tx(context.WithoutCancel(ctx), ev.ThreadID, nil, NoText, func(tx weft.Tx) error { return tx.AppendEvents(recs) })
		if err != nil {
			c.cfg.Log.Warn("event not recorded", "thread", ev.ThreadID, "type", ev.Type, "error", err)
		} else {
			ev.Seq, ev.Encoded = recs[0].Seq, evs[0].Encoded
		}
	}
	c.Publish(ev)
}

// Observed tells whether events are wanted: by OnEvent, the event log (RecordEvents keeps them
// whether or not anyone listens) or a subscriber. When none wants them, runs build none.
func (c *Committer) Observed() bool {
	return c.cfg.OnEvent != nil || c.cfg.RecordEvents || c.cfg.Subscribers.Active()
}

// Transient tells the event types that are never recorded: streamed deltas, whose text the
// message event that follows carries whole.
func Transient(typ string) bool { return typ == "message_chunk" || typ == "reasoning_chunk" }

// Records encodes events for the event log, and keeps each one's encoding on it (Encoded). The
// encodings share one buffer, each capped at its end.
func Records(evs []Event) []weft.EventRecord {
	out := make([]weft.EventRecord, len(evs))
	size := 0
	for i := range evs {
		size += payload.SizeHint(evs[i].Data)
	}
	buf := make([]byte, 0, size)
	for i, ev := range evs {
		start := len(buf)
		var err error
		if buf, err = payload.AppendJSON(buf, ev.Data); err != nil {
			buf = buf[:start]
			enc, _ := json.Marshal(map[string]any{"error": "unencodable payload: " + err.Error()})
			buf = append(buf, enc...)
		}
		data := buf[start:len(buf):len(buf)]
		out[i] = weft.EventRecord{Type: ev.Type, Data: data}
		evs[i].Encoded = data
	}
	return out
}
