package children

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/weft-agents/weft"
)

// ReportedKey is the child run-state document recording which of its stops were reported.
const ReportedKey = "subagent_reported"

// HeldPrefix starts the run-state keys of held reports (HeldPrefix + seq).
const HeldPrefix = "subagent_held/"

// Report queues a child's outcome to its parent, once per child stop: reports are numbered by
// the child's stop count (seq), a report already queued or stored in the parent is not sent
// again, and the number reported is recorded on the child — so a recovery after a crash re-sends
// exactly what was lost.
//
// recovering: the report may have been sent by a process that died before recording it, so the
// parent's queue and rows are searched too (a fresh stop needs only the recorded count).
func (c *Room) Report(ctx context.Context, child *weft.Thread, owner weft.Side, out weft.ToolResult, seq int, recovering bool) {
	if seq > 0 && LoadReported(ctx, c.store, child.ID).Has(seq) {
		return
	}
	if seq > 0 && recovering && c.reportedBefore(ctx, child, seq) {
		return
	}
	text := fmt.Sprintf("Subagent (reference: %s) has returned the following result:\n\n%s", child.ID, out.Result)
	if out.Status != weft.ToolSuccess {
		text = fmt.Sprintf("Subagent (reference: %s) has reported a failure:\n\n%s", child.ID, out.Error)
	}
	var atts []weft.ToolAttachment
	for _, a := range out.Attachments {
		if a.IsRef() {
			if c, err := ReadAttachment(ctx, c.store, child.ID, a.Path); err == nil {
				atts = append(atts, c)
			}
		}
	}
	if err := c.deliver(ctx, child, owner, text, "subagent_result", atts, seq); err != nil {
		c.log.Warn("subagent report not delivered", "parent", child.ParentID, "child", child.ID, "error", err)
		return
	}
	if seq > 0 {
		c.markReported(ctx, child.ID, seq)
	}
}

// reportedBefore tells whether report seq of child is already queued or stored in the parent.
func (c *Room) reportedBefore(ctx context.Context, child *weft.Thread, seq int) bool {
	is := func(meta map[string]any) bool {
		n, _ := meta["report_seq"].(float64)
		if i, ok := meta["report_seq"].(int); ok {
			n = float64(i)
		}
		return meta["subagent_id"] == child.ID && meta["kind"] == "subagent_result" && int(n) == seq
	}
	if q, err := c.store.Queued(ctx, child.ParentID); err == nil {
		for _, m := range q {
			if is(m.Metadata) {
				return true
			}
		}
	}
	rows, err := c.store.Messages(ctx, child.ParentID, weft.MessageQuery{Limit: 500, Desc: true, Roles: []weft.Role{weft.RoleUser, weft.RoleAssistant}})
	if err == nil {
		for _, m := range rows {
			if is(m.Metadata) {
				return true
			}
		}
	}
	return false
}

// Reported is a child's record of reported stops: every seq up to Upto, and More above it
// (reports of concurrent runs can finish out of order).
type Reported struct {
	// Upto: every stop up to it was reported.
	Upto int `json:"upto"`
	// More lists the reported stops above Upto.
	More []int `json:"more,omitempty"`
}

// Has tells whether stop seq was reported.
func (r Reported) Has(seq int) bool { return seq <= r.Upto || slices.Contains(r.More, seq) }

// add records seq; false when it was recorded already.
func (r *Reported) add(seq int) bool {
	if r.Has(seq) {
		return false
	}
	r.More = append(r.More, seq)
	for slices.Contains(r.More, r.Upto+1) {
		r.Upto++
		r.More = slices.DeleteFunc(r.More, func(n int) bool { return n <= r.Upto })
	}
	return true
}

// LoadReported reads a child's record of reported stops (empty when it has none or it cannot be
// read).
func LoadReported(ctx context.Context, st weft.Store, childID string) Reported {
	var r Reported
	if docs, err := st.ExecState(ctx, childID); err == nil {
		_ = json.Unmarshal(docs[ReportedKey], &r)
	}
	return r
}

// markReported records stop seq of the child as reported. One goroutine of this process at a
// time rewrites a child's record (a read, then a transaction): a mark arriving meanwhile is left
// in the child's Watch for it, and it writes until none is left.
func (c *Room) markReported(ctx context.Context, childID string, seq int) {
	write := false
	c.host.Watch(childID, func(w *Watch) {
		w.marks = append(w.marks, seq)
		if !w.marking {
			w.marking, write = true, true
		}
	})
	for write {
		var marks []int
		c.host.Watch(childID, func(w *Watch) {
			marks, w.marks = w.marks, nil
			if len(marks) == 0 {
				w.marking, write = false, false
			}
		})
		if len(marks) == 0 {
			return
		}
		r := LoadReported(ctx, c.store, childID)
		changed := false
		for _, seq := range marks {
			changed = r.add(seq) || changed
		}
		if !changed {
			continue
		}
		doc, _ := json.Marshal(r)
		if err := c.host.Tx(ctx, childID, func(tx weft.Tx) error { return tx.SetExecState(ReportedKey, doc) }); err != nil {
			c.log.Warn("subagent report not recorded", "child", childID, "error", err)
		}
	}
}

// Deliver queues a silent message from a child to its parent, role by owner side (A → user,
// B → assistant), tagged with the child's reference, its files copied into the parent's
// /attachments/ and listed; a parent run starts in the background unless the parent is stopped.
func (c *Room) Deliver(ctx context.Context, child *weft.Thread, owner weft.Side, text, kind string, atts []weft.ToolAttachment) error {
	return c.deliver(ctx, child, owner, text, kind, atts, 0)
}

// deliver is Deliver with a report number in the metadata (0 = none).
func (c *Room) deliver(ctx context.Context, child *weft.Thread, owner weft.Side, text, kind string, atts []weft.ToolAttachment, seq int) error {
	role := weft.RoleUser
	if owner == weft.SideB {
		role = weft.RoleAssistant
	}
	// The child's secrets and the parent's: the text leaves the child for the parent's thread.
	for _, id := range []string{child.ID, child.ParentID} {
		red, err := c.host.Redactor(ctx, id)
		if err != nil {
			return fmt.Errorf("subagent message not redacted: %w", err)
		}
		text = red(text)
	}
	parent, err := c.store.Thread(ctx, child.ParentID)
	if err != nil {
		return err
	}
	stored, err := c.host.StoreAttachments(ctx, parent, atts)
	if err != nil {
		return err
	}
	if len(stored) > 0 {
		text += "\n\nAttachments:"
		for _, a := range stored {
			text += "\n- " + a.Path
		}
	}
	refs := make([]weft.ToolAttachment, len(stored))
	for i, a := range stored {
		refs[i] = weft.ToolAttachment{ID: a.ID, Path: a.Path, Name: a.Name}
	}
	meta := map[string]any{"subagent_id": child.ID, "kind": kind}
	if seq > 0 {
		meta["report_seq"] = seq
	}
	return c.host.Notify(ctx, child.ParentID, orDefault(child.RootID, child.ParentID),
		weft.NewMessage{Role: role, Content: text, Silent: true, Attachments: refs, Metadata: meta})
}

// Watch is one child's report coordination in this process: the blocking calls awaiting the
// child, with the reports of its background runs held back meanwhile, and the stops waiting to be
// recorded as reported. The engine keeps it with the child's owner and hands it out under the
// owner's lock (Host.Watch), which is never held across I/O: what must happen in order around a
// transaction is decided under the lock before and after it.
type Watch struct {
	// calls counts the blocking calls of this process awaiting the child.
	calls int
	// ends counts the waits ended so far: a report whose record was being written across an end
	// was not among the held reports that end took, and its holder sends it.
	ends int
	// held are the recorded reports held back while calls > 0.
	held []Held
	// writing counts held reports whose records are being written.
	writing int
	// answered lists the stops that ended waits returned as their results, while a record is being
	// written (its holder must not report them).
	answered []int
	// marks are stops to record as reported, for the goroutine that is marking.
	marks []int
	// marking: a goroutine rewrites the child's record of reported stops.
	marking bool
}

// Idle tells whether the watch holds nothing: the engine may then forget it with the owner.
func (w *Watch) Idle() bool {
	return w.calls == 0 && w.writing == 0 && !w.marking && len(w.held) == 0 && len(w.marks) == 0
}

// Held is a background run's report held back while a blocking call awaits the child. It is kept
// in the child's run state (HeldPrefix + seq) until sent, so a crash meanwhile loses nothing:
// SendHeld sends it after a restart.
type Held struct {
	// Owner is the parent side the report goes to.
	Owner weft.Side `json:"owner"`
	// Out is the run's outcome.
	Out weft.ToolResult `json:"out"`
	// Seq is the stop's number.
	Seq int `json:"seq"`
}

func heldKey(seq int) string { return HeldPrefix + strconv.Itoa(seq) }

// BeginAwait registers a blocking call awaiting child: until EndAwait, the reports of the child's
// background runs are held back, since the run that answers the call returns its outcome as the
// call's result and is not reported as well.
func (c *Room) BeginAwait(childID string) {
	c.host.Watch(childID, func(w *Watch) { w.calls++ })
}

// hold holds a background run's report back while a blocking call awaits the child, and keeps it
// in the child's run state until it is sent or answered; false when no call awaits the child.
// The record is written outside the owner's lock: when a wait ended meanwhile (it took the held
// reports without this one), the report is sent here unless that wait answered its stop.
func (c *Room) hold(ctx context.Context, child *weft.Thread, h Held) bool {
	awaited, ends := false, 0
	c.host.Watch(child.ID, func(w *Watch) {
		if w.calls > 0 {
			awaited, ends = true, w.ends
			w.writing++
		}
	})
	if !awaited {
		return false
	}
	if doc, err := json.Marshal(h); err == nil && h.Seq > 0 {
		if err := c.host.Tx(ctx, child.ID, func(tx weft.Tx) error { return tx.SetExecState(heldKey(h.Seq), doc) }); err != nil {
			c.log.Warn("held subagent report not recorded", "child", child.ID, "error", err)
		}
	}
	late, answered := false, false
	c.host.Watch(child.ID, func(w *Watch) {
		w.writing--
		if w.ends == ends {
			w.held = append(w.held, h)
		} else {
			late, answered = true, slices.Contains(w.answered, h.Seq)
		}
		if w.writing == 0 {
			w.answered = nil
		}
	})
	if late {
		if !answered {
			c.Report(ctx, child, h.Owner, h.Out, h.Seq, false)
		}
		c.dropHeld(ctx, child.ID, []Held{h})
	}
	return true
}

// EndAwait ends a blocking call that returned stop answered as its result: that stop is recorded
// as reported, and the held reports of other stops are sent now.
func (c *Room) EndAwait(ctx context.Context, child *weft.Thread, answered int) {
	var held []Held
	c.host.Watch(child.ID, func(w *Watch) {
		w.calls--
		w.ends++
		held, w.held = w.held, nil
		if w.writing > 0 {
			w.answered = append(w.answered, answered)
		}
	})
	if answered > 0 {
		c.markReported(ctx, child.ID, answered)
	}
	for _, h := range held {
		if h.Seq != answered {
			c.Report(ctx, child, h.Owner, h.Out, h.Seq, false)
		}
	}
	c.dropHeld(ctx, child.ID, held)
}

// dropHeld removes the run-state records of held reports that were sent or answered.
func (c *Room) dropHeld(ctx context.Context, childID string, held []Held) {
	if len(held) == 0 {
		return
	}
	err := c.host.Tx(ctx, childID, func(tx weft.Tx) error {
		for _, h := range held {
			if err := tx.SetExecState(heldKey(h.Seq), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		c.log.Warn("held subagent reports not cleared", "child", childID, "error", err)
	}
}

// SendHeld sends, after a restart, the reports that were held back for a blocking call when the
// process died (in stop order), and clears their records.
func (c *Room) SendHeld(ctx context.Context, child *weft.Thread) error {
	docs, err := c.store.ExecState(ctx, child.ID)
	if err != nil {
		return err
	}
	var held []Held
	for k, doc := range docs {
		var h Held
		if strings.HasPrefix(k, HeldPrefix) && json.Unmarshal(doc, &h) == nil && h.Seq > 0 {
			held = append(held, h)
		}
	}
	slices.SortFunc(held, func(a, b Held) int { return a.Seq - b.Seq })
	for _, h := range held {
		c.Report(ctx, child, h.Owner, h.Out, h.Seq, true)
	}
	c.dropHeld(ctx, child.ID, held)
	return nil
}
