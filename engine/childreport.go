package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/weft-agents/weft"
)

// reports carries children's outcomes and messages to their parents: each report queued once per
// child stop and recorded on the child, and the reports held back while a blocking call of this
// process awaits the child.
type reports struct {
	e *Engine
	// markMu serializes updates of children's reported-stops records.
	markMu sync.Mutex
	// awaitMu guards awaited: children a blocking call of this process awaits, with the reports
	// their background runs held back meanwhile (held while such a report is recorded, so that
	// ending the wait cannot interleave with it).
	awaitMu sync.Mutex
	awaited map[string]*awaiting
}

// report queues a child's outcome to its parent, once per child stop: reports
// are numbered by the child's stop count, a report already queued or stored in the parent is not
// sent again, and the number reported is recorded on the child — so a recovery after a crash
// re-sends exactly what was lost.
//
// recovering: the report may have been sent by a process that died before recording it, so the
// parent's queue and rows are searched too (a fresh stop needs only the recorded count).
func (p *reports) report(ctx context.Context, child *weft.Thread, owner weft.Side, out weft.ToolResult, seq int, recovering bool) {
	if seq > 0 && loadReported(ctx, p.e.store, child.ID).has(seq) {
		return
	}
	if seq > 0 && recovering && p.reportedBefore(ctx, child, seq) {
		return
	}
	text := fmt.Sprintf("Subagent (reference: %s) has returned the following result:\n\n%s", child.ID, out.Result)
	if out.Status != weft.ToolSuccess {
		text = fmt.Sprintf("Subagent (reference: %s) has reported a failure:\n\n%s", child.ID, out.Error)
	}
	var atts []weft.ToolAttachment
	for _, a := range out.Attachments {
		if a.IsRef() {
			if c, err := p.e.readFileAttachment(ctx, child.ID, a.Path); err == nil {
				atts = append(atts, c)
			}
		}
	}
	if err := p.deliverSeq(ctx, child, owner, text, "subagent_result", atts, seq); err != nil {
		p.e.log.Warn("subagent report not delivered", "parent", child.ParentID, "child", child.ID, "error", err)
		return
	}
	if seq > 0 {
		p.markReported(ctx, child.ID, seq)
	}
}

// reportedBefore tells whether report seq of child is already queued or stored in the parent.
func (p *reports) reportedBefore(ctx context.Context, child *weft.Thread, seq int) bool {
	is := func(meta map[string]any) bool {
		n, _ := meta["report_seq"].(float64)
		if i, ok := meta["report_seq"].(int); ok {
			n = float64(i)
		}
		return meta["subagent_id"] == child.ID && meta["kind"] == "subagent_result" && int(n) == seq
	}
	if q, err := p.e.store.Queued(ctx, child.ParentID); err == nil {
		for _, m := range q {
			if is(m.Metadata) {
				return true
			}
		}
	}
	rows, err := p.e.store.Messages(ctx, child.ParentID, weft.MessageQuery{Limit: 500, Desc: true, Roles: []weft.Role{weft.RoleUser, weft.RoleAssistant}})
	if err == nil {
		for _, m := range rows {
			if is(m.Metadata) {
				return true
			}
		}
	}
	return false
}

// reportedSet is a child's record of reported stops: every seq up to Upto, and More above it
// (reports of concurrent runs can finish out of order).
type reportedSet struct {
	Upto int   `json:"upto"`
	More []int `json:"more,omitempty"`
}

func (r reportedSet) has(seq int) bool { return seq <= r.Upto || slices.Contains(r.More, seq) }

func loadReported(ctx context.Context, st weft.Store, childID string) reportedSet {
	var r reportedSet
	if docs, err := st.ExecState(ctx, childID); err == nil {
		_ = json.Unmarshal(docs[reportedKey], &r)
	}
	return r
}

func (p *reports) markReported(ctx context.Context, childID string, seq int) {
	p.markMu.Lock()
	defer p.markMu.Unlock()
	r := loadReported(ctx, p.e.store, childID)
	if r.has(seq) {
		return
	}
	r.More = append(r.More, seq)
	for slices.Contains(r.More, r.Upto+1) {
		r.Upto++
		r.More = slices.DeleteFunc(r.More, func(n int) bool { return n <= r.Upto })
	}
	doc, _ := json.Marshal(r)
	if err := p.e.tx(ctx, childID, nil, keep, func(tx weft.Tx) error { return tx.SetExecState(reportedKey, doc) }); err != nil {
		p.e.log.Warn("subagent report not recorded", "child", childID, "error", err)
	}
}

// deliver queues a silent message from a child to its parent, role by owner side (A → user,
// B → assistant), tagged with the child's reference, its files copied into the parent's
// /attachments/ and listed; a parent run starts in the background unless the parent is stopped.
func (p *reports) deliver(ctx context.Context, child *weft.Thread, owner weft.Side, text, kind string, atts []weft.ToolAttachment) error {
	return p.deliverSeq(ctx, child, owner, text, kind, atts, 0)
}

// deliverSeq is deliver with a report number in the metadata (0 = none).
func (p *reports) deliverSeq(ctx context.Context, child *weft.Thread, owner weft.Side, text, kind string, atts []weft.ToolAttachment, seq int) error {
	role := weft.RoleUser
	if owner == weft.SideB {
		role = weft.RoleAssistant
	}
	// The child's secrets and the parent's: the text leaves the child for the parent's thread.
	for _, id := range []string{child.ID, child.ParentID} {
		red, err := p.e.Redactor(ctx, id)
		if err != nil {
			return fmt.Errorf("subagent message not redacted: %w", err)
		}
		text = red(text)
	}
	parent, err := p.e.store.Thread(ctx, child.ParentID)
	if err != nil {
		return err
	}
	ps := newState(stateCore{e: p.e, thread: parent})
	stored, err := ps.storeAttachments(ctx, atts)
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
	if _, err := p.e.Send(ctx, child.ParentID, weft.NewMessage{Role: role, Content: text, Silent: true, Attachments: refs,
		Metadata: meta}); err != nil {
		return err
	}
	p.e.sched.Wake(ctx, child.ParentID, orDefault(child.RootID, child.ParentID))
	return nil
}

// readFileAttachment reads a file of a thread as a new attachment for another thread.
func (e *Engine) readFileAttachment(ctx context.Context, threadID, p string) (weft.ToolAttachment, error) {
	clean, err := weft.CleanPath(p)
	if err != nil {
		return weft.ToolAttachment{}, fmt.Errorf("Attachment not found: %s", p)
	}
	fi, err := e.store.Files().Stat(ctx, threadID, clean)
	if err != nil {
		return weft.ToolAttachment{}, fmt.Errorf("Attachment not found: %s", p)
	}
	data, err := e.store.Files().ReadFile(ctx, threadID, clean)
	if err != nil {
		return weft.ToolAttachment{}, fmt.Errorf("Attachment not found: %s", p)
	}
	return weft.ToolAttachment{Name: fi.Name, MimeType: fi.MimeType, Data: data, Width: fi.Width, Height: fi.Height}, nil
}

// awaiting is a child a blocking call awaits: the calls waiting, and the outcomes of background
// runs that ended meanwhile.
type awaiting struct {
	calls int
	held  []heldReport
}

// heldReport is a background run's report held back while a blocking call awaits the child. It
// is kept in the child's run state (heldKey) until sent, so a crash meanwhile loses nothing:
// Recover sends it.
type heldReport struct {
	Owner weft.Side       `json:"owner"`
	Out   weft.ToolResult `json:"out"`
	Seq   int             `json:"seq"`
}

func heldKey(seq int) string { return heldPrefix + strconv.Itoa(seq) }

// beginAwait registers a blocking call awaiting child: until endAwait, the reports of the child's
// background runs are held back, since the run that answers the call returns its outcome as the
// call's result and is not reported as well.
func (p *reports) beginAwait(childID string) {
	p.awaitMu.Lock()
	defer p.awaitMu.Unlock()
	if p.awaited == nil {
		p.awaited = map[string]*awaiting{}
	}
	a := p.awaited[childID]
	if a == nil {
		a = &awaiting{}
		p.awaited[childID] = a
	}
	a.calls++
}

// holdReport holds a background run's report back while a blocking call awaits the child, and
// keeps it in the child's run state until it is sent or answered.
func (p *reports) holdReport(ctx context.Context, childID string, h heldReport) bool {
	p.awaitMu.Lock()
	defer p.awaitMu.Unlock()
	a := p.awaited[childID]
	if a == nil {
		return false
	}
	a.held = append(a.held, h)
	if doc, err := json.Marshal(h); err == nil && h.Seq > 0 {
		if err := p.e.tx(ctx, childID, nil, keep, func(tx weft.Tx) error { return tx.SetExecState(heldKey(h.Seq), doc) }); err != nil {
			p.e.log.Warn("held subagent report not recorded", "child", childID, "error", err)
		}
	}
	return true
}

// endAwait ends a blocking call that returned stop answered as its result: that stop is recorded
// as reported, and the held reports of other stops are sent now.
func (p *reports) endAwait(ctx context.Context, child *weft.Thread, answered int) {
	p.awaitMu.Lock()
	a := p.awaited[child.ID]
	a.calls--
	held := a.held
	a.held = nil
	if a.calls == 0 {
		delete(p.awaited, child.ID)
	}
	p.awaitMu.Unlock()
	if answered > 0 {
		p.markReported(ctx, child.ID, answered)
	}
	for _, h := range held {
		if h.Seq != answered {
			p.report(ctx, child, h.Owner, h.Out, h.Seq, false)
		}
	}
	p.dropHeld(ctx, child.ID, held)
}

// dropHeld removes the run-state records of held reports that were sent or answered.
func (p *reports) dropHeld(ctx context.Context, childID string, held []heldReport) {
	if len(held) == 0 {
		return
	}
	err := p.e.tx(ctx, childID, nil, keep, func(tx weft.Tx) error {
		for _, h := range held {
			if err := tx.SetExecState(heldKey(h.Seq), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		p.e.log.Warn("held subagent reports not cleared", "child", childID, "error", err)
	}
}

// sendHeld sends, after a restart, the reports that were held back for a blocking call when the
// process died (in stop order), and clears their records.
func (p *reports) sendHeld(ctx context.Context, child *weft.Thread) error {
	docs, err := p.e.store.ExecState(ctx, child.ID)
	if err != nil {
		return err
	}
	var held []heldReport
	for k, doc := range docs {
		var h heldReport
		if strings.HasPrefix(k, heldPrefix) && json.Unmarshal(doc, &h) == nil && h.Seq > 0 {
			held = append(held, h)
		}
	}
	slices.SortFunc(held, func(a, b heldReport) int { return a.Seq - b.Seq })
	for _, h := range held {
		p.report(ctx, child, h.Owner, h.Out, h.Seq, true)
	}
	p.dropHeld(ctx, child.ID, held)
	return nil
}
