// Package fork makes a new thread from another's history: Fork copies a thread up to one of its
// top-level messages, in one transaction that creates the fork, and reads the original only. A
// tool turn is never cut in two: the fork holds every result of an assistant message it copies,
// and a call the original had not answered gets an error result. The fork's run state is derived
// from the rows it holds (the store keeps only the original's current state). The package does
// not import engine: Forker's Record and Created are how the engine records and publishes the
// fork's events.
package fork

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/feed"
	"github.com/weft-agents/weft/engine/journal"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/runstate"
	"github.com/weft-agents/weft/engine/window"
)

// forkedCallResult answers, in a fork, a copied call whose result the original had not stored
// when the fork was made (still running, or waiting for approval): the fork never runs it.
const forkedCallResult = "Failed to execute tool: the thread was forked before this call finished"

// Forker makes forks of the threads of a store.
type Forker struct {
	// Store holds the threads; Registry their agents (an ai_human agent's turns count differently).
	Store    weft.Store
	Registry *weft.Registry
	// Clock dates the fork.
	Clock weft.Clock
	// Record encodes events for the fork's event log, written in the transaction that creates
	// it; nil = events are not recorded.
	Record func([]feed.Event) []weft.EventRecord
	// Created is told of a fork once it is stored, with its events to publish in order:
	// thread_created, then thread_forked (its Seq set when recorded).
	Created func(t *weft.Thread, evs [2]feed.Event)
}

// Fork makes a new thread owned by owner from threadID's history up to and including the
// top-level message atID (before: without atID itself, but still every result of a tool turn it
// copies), and returns it. The original is only read. What a fork copies, shares and leaves
// behind is in docs/forks.md; in short:
//   - the messages up to atID keep their ids, sequence, content and times; a tool turn is never
//     cut: a fork at an assistant message with tool calls, or at one of its results, holds every
//     result of that message, and a call the original had not answered gets an error result;
//   - their tool-call records, the thread's env, KV values and files as they are now (the store
//     keeps no history of those), its agent, arguments, label and properties;
//   - not its tags, log rows, event log, queue, effects or children: subagent threads stay
//     the original's, referenced by the copied rows, and are not run again.
//
// The fork is stored in one transaction, with ForkedFrom set and a thread_forked event; it is
// idle until a message or a continue runs it. An unknown message, or one inside a sub-prompt, is
// ENotFound or EInvalid; a message still being written (pending) is EConflict.
func (f *Forker) Fork(ctx context.Context, threadID, atID, owner string, before bool) (*weft.Thread, error) {
	st := f.Store
	orig, err := st.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	at, err := st.Message(ctx, threadID, atID)
	if err != nil {
		return nil, err
	}
	switch {
	case at.Depth > 0:
		return nil, weft.Errorf(weft.EInvalid, "thread %s: message %s is inside a sub-prompt; fork at a top-level message", threadID, atID)
	case at.Status == weft.MessagePending:
		return nil, weft.Errorf(weft.EConflict, "thread %s: message %s is still being written", threadID, atID)
	}
	all, err := st.Messages(ctx, threadID, weft.MessageQuery{Limit: -1, MaxDepth: 1 << 20})
	if err != nil {
		return nil, err
	}
	cut := at.Seq
	if before {
		cut--
	}
	rows, unanswered := copiedRows(all, cut)
	calls, err := st.ToolCalls(ctx, threadID)
	if err != nil {
		return nil, err
	}
	env, err := st.Env(ctx, weft.EnvThread, threadID)
	if err != nil {
		return nil, err
	}
	kv, err := st.ListKV(ctx, threadID)
	if err != nil {
		return nil, err
	}
	files, err := readFiles(ctx, st, threadID)
	if err != nil {
		return nil, err
	}
	cur, err := runstate.Load(ctx, st, threadID)
	if err != nil {
		return nil, err
	}
	aiHuman := true
	if a, ok := f.Registry.Agent(orig.Agent); ok {
		aiHuman = a.Kind() == weft.AIHuman
	}
	state := cutState(cur, all, rows, unanswered, cut, aiHuman)

	now := f.Clock.Now().UTC()
	props := maps.Clone(orig.Properties)
	// Tags are not copied: protocols and evals find a thread by its tags (ai-sdk-chat:ID,
	// ag-ui-thread:ID, an eval run's), and a fork answering for the original's chat or run would
	// change what the original is to them. A subagent's registry row and result belong to the
	// subagent: a fork is a root thread.
	delete(props, children.RowProperty)
	delete(props, children.ResultProperty)
	point := &weft.ForkPoint{Thread: threadID, Message: atID, Before: before}
	t := &weft.Thread{ID: weft.NewID("thr_"), Agent: orig.Agent, OriginAgent: orig.OriginAgent, UserID: owner,
		Label: orig.Label, Tags: []string{}, Properties: props, Arguments: orig.Arguments,
		Status: weft.ThreadIdle, CreatedAt: now, UpdatedAt: now, LastActivityAt: now, ForkedFrom: point}
	t.RootID = t.ID
	for i := len(rows) - 1; i >= 0; i-- {
		if m := rows[i]; m.Depth == 0 && (m.Role == weft.RoleUser || m.Role == weft.RoleAssistant) && !m.Silent && m.Content != "" {
			t.Preview = journal.Preview(m.Content)
			break
		}
	}
	evs := [2]feed.Event{{Type: "thread_created", ThreadID: t.ID, RootID: t.ID, Data: payload.Fields{"forked_from": point}},
		{Type: "thread_forked", ThreadID: t.ID, RootID: t.ID, Data: payload.Fields{"forked_from": point, "messages": len(rows)}}}
	var recs []weft.EventRecord
	if f.Record != nil {
		recs = f.Record(evs[1:])
	}
	err = st.CreateThreadTx(ctx, t, env, func(tx weft.Tx) error {
		if err := tx.SetExecState(runstate.Key, state.Encode()); err != nil {
			return err
		}
		return writeCopy(tx, rows, unanswered, calls, kv, files, recs, now)
	})
	if err != nil {
		return nil, fmt.Errorf("fork of thread %s at %s: %w", threadID, atID, err)
	}
	if len(recs) > 0 {
		evs[1].Seq = recs[0].Seq
	}
	if f.Created != nil {
		f.Created(t, evs)
	}
	return t, nil
}

// unansweredCall is a copied call without a result in the original, answered in the fork.
type unansweredCall struct {
	call     weft.ToolCall
	side     weft.Side
	depth    int
	parentID string
}

// copiedRows picks the rows a fork copies from a thread's rows (all depths, in seq order): those with
// seq ≤ cut that are not pending, and besides them every result of a copied assistant row's calls
// and every sub-prompt row under a copied row, so that no tool turn is cut in two. It returns them
// in seq order, each with its log id cleared (log rows stay the original's), and, by the id of the
// row after which it goes, the calls of copied rows that have no result anywhere.
func copiedRows(all []weft.Message, cut int64) ([]weft.Message, map[string][]unansweredCall) {
	in := make([]bool, len(all))
	ids := map[string]bool{}
	callers := map[string]string{} // call id → the id of the copied assistant row that made it
	resultOf := map[string]int{}   // call id → index of its result row
	for i, m := range all {
		if m.Role == weft.RoleTool && m.ToolCallID != "" {
			resultOf[m.ToolCallID] = i
		}
	}
	var add func(i int)
	add = func(i int) {
		m := all[i]
		if in[i] || m.Status == weft.MessagePending {
			return
		}
		in[i], ids[m.ID] = true, true
		for _, c := range m.ToolCalls {
			callers[c.ID] = m.ID
			if j, ok := resultOf[c.ID]; ok {
				add(j)
			}
		}
	}
	for i, m := range all {
		if m.Seq <= cut {
			add(i)
		}
	}
	// Sub-prompt rows hang under their caller's tool message, which may come after them.
	for changed := true; changed; {
		changed = false
		for i, m := range all {
			if !in[i] && m.ParentID != "" && ids[m.ParentID] && m.Status != weft.MessagePending {
				add(i)
				changed = true
			}
		}
	}
	// The last copied row of each assistant row's turn: its unanswered calls' results go after it.
	last := map[string]string{}
	var rows []weft.Message
	for i, m := range all {
		if !in[i] {
			continue
		}
		m.LogID = ""
		rows = append(rows, m)
		if len(m.ToolCalls) > 0 {
			last[m.ID] = m.ID
		}
		if caller, ok := callers[m.ToolCallID]; ok && m.Role == weft.RoleTool {
			last[caller] = m.ID
		}
	}
	unanswered := map[string][]unansweredCall{}
	for _, m := range rows {
		for _, c := range m.ToolCalls {
			if _, ok := resultOf[c.ID]; !ok {
				unanswered[last[m.ID]] = append(unanswered[last[m.ID]], unansweredCall{call: c, side: m.Side, depth: m.Depth, parentID: m.ParentID})
			}
		}
	}
	return rows, unanswered
}

// cutState is the run state of a fork cut at the original's seq cut, as the original's was when
// that row was its last, as far as the rows tell: the store keeps only the current state.
//   - Each side's window (the rows before it are the side's past turns) is the current one when
//     it is not after the cut; otherwise the side's last final reply (an assistant row without
//     tool calls) at or before the cut. Its turn count drops by the turns completed after the cut
//     (final replies; in an ai_human thread, the human's messages for side B).
//   - The side due next is the side of the last row when it is inside a turn (a reply with
//     calls, a result), the other side after a final reply, side A after a user's message.
//   - The fork is not stopped; what numbers things across the thread's life (queued tools,
//     stops, the immediate subagents already started) is kept as it is now.
//
// Windows are seqs: they are translated to the fork's, whose rows are renumbered from 1.
func cutState(cur runstate.State, all, rows []weft.Message, unanswered map[string][]unansweredCall, cut int64, aiHuman bool) runstate.State {
	// The fork's seq of the original's: each copied row's place, answers to open calls included.
	var origSeqs []int64 // by fork seq - 1: the original seq of the row, or that of the row it follows
	for _, m := range rows {
		origSeqs = append(origSeqs, m.Seq)
		for range unanswered[m.ID] {
			origSeqs = append(origSeqs, m.Seq)
		}
	}
	forkSeq := func(orig int64) int64 {
		n := int64(0)
		for i, o := range origSeqs {
			if o <= orig {
				n = int64(i + 1)
			}
		}
		return n
	}
	final := func(m *weft.Message, side weft.Side) bool {
		return m.Depth == 0 && m.Role == weft.RoleAssistant && m.Side == side && len(m.ToolCalls) == 0 && m.Status == weft.MessageCompleted
	}
	st := runstate.State{Side: weft.SideA, QueuedTools: cur.QueuedTools, Immediate: cur.Immediate, Stops: cur.Stops}
	for i, side := range []weft.Side{weft.SideA, weft.SideB} {
		c := cur.Sides[i]
		o := &st.Sides[i]
		if c.Window <= cut {
			o.Turns, o.Window, o.Handler, o.Idle = c.Turns, c.Window, min(c.Handler, cut), c.Idle
		} else {
			after := 0
			for j := range all {
				m := &all[j]
				switch {
				case m.Seq <= cut:
					if final(m, side) {
						o.Window = m.Seq
					}
				case final(m, side), aiHuman && side == weft.SideB && m.Depth == 0 && m.Role == weft.RoleUser:
					after++
				}
			}
			o.Turns, o.Handler = max(0, c.Turns-after), min(c.Handler, cut)
		}
		o.Window, o.Handler = forkSeq(o.Window), forkSeq(o.Handler)
	}
	for i := len(rows) - 1; i >= 0; i-- {
		m := &rows[i]
		if m.Depth > 0 {
			continue
		}
		switch {
		case m.Role == weft.RoleUser:
			st.Side = weft.SideA
		case final(m, m.Side):
			st.Side = m.Side.Other()
		case m.Side != "":
			st.Side = m.Side
			// Inside a turn: a tool was called in it.
			st.ToolCalled = true
		}
		break
	}
	return st
}

// copiedFile is a file (or directory, data nil) a fork copies.
type copiedFile struct {
	info weft.FileInfo
	data []byte
}

// readFiles reads a thread's whole filesystem, directories first.
func readFiles(ctx context.Context, st weft.Store, threadID string) ([]copiedFile, error) {
	fs := st.Files()
	var out []copiedFile
	dirs := []string{"/"}
	for len(dirs) > 0 {
		dir := dirs[0]
		dirs = dirs[1:]
		entries, err := fs.ReadDir(ctx, threadID, dir)
		if err != nil {
			return nil, err
		}
		for _, fi := range entries {
			if fi.IsDir {
				out = append(out, copiedFile{info: fi})
				dirs = append(dirs, fi.Path)
				continue
			}
			data, err := fs.ReadFile(ctx, threadID, fi.Path)
			if err != nil {
				return nil, err
			}
			out = append(out, copiedFile{info: fi, data: data})
		}
	}
	return out, nil
}

// writeCopy writes a fork's copied part in its creating transaction: the rows (with a result for
// each unanswered call), the call records of the copied rows, KV, files and the fork's events.
func writeCopy(tx weft.Tx, rows []weft.Message, unanswered map[string][]unansweredCall, calls []weft.ToolCallRecord,
	kv map[string]json.RawMessage, files []copiedFile, events []weft.EventRecord, now time.Time) error {
	copied := make(map[string]bool, len(rows))
	answers := map[string]string{} // call id → the fork's result row for a call the original left open
	var seqs [][2]int64            // (the original's seq, the fork's) of each copied row, in order
	for i := range rows {
		m := rows[i]
		if window.IsSummary(&m) {
			// A summary names the newest row it covers by seq: the fork's may differ.
			m.Metadata = maps.Clone(m.Metadata)
			through := window.MetaInt(&m, window.MetaSummaryThrough)
			var n int64
			for _, p := range seqs {
				if p[0] <= through {
					n = p[1]
				}
			}
			m.Metadata[window.MetaSummaryThrough] = n
		}
		orig := m.Seq
		m.ThreadID, m.Seq = "", 0
		if err := tx.InsertMessage(&m); err != nil {
			return err
		}
		seqs = append(seqs, [2]int64{orig, m.Seq})
		copied[m.ID] = true
		for _, u := range unanswered[m.ID] {
			tm := &weft.Message{Role: weft.RoleTool, Side: u.side, Name: u.call.Name, ToolCallID: u.call.ID,
				ToolStatus: weft.ToolError, Content: forkedCallResult, Status: weft.MessageCompleted,
				Depth: u.depth, ParentID: u.parentID, CreatedAt: now}
			if err := tx.InsertMessage(tm); err != nil {
				return err
			}
			answers[u.call.ID] = tm.ID
		}
	}
	for _, c := range calls {
		if !copied[c.MessageID] {
			continue
		}
		c.ThreadID, c.Seq = "", 0
		if id, ok := answers[c.CallID]; ok || c.Status != weft.CallDone {
			if ok {
				c.ResultMessageID = id
			}
			c.Status, c.FinishedAt = weft.CallDone, &now
		}
		if err := tx.PutToolCall(&c); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if err := tx.SetKV(k, kv[k]); err != nil {
			return err
		}
	}
	for _, f := range files {
		var err error
		if f.data == nil && f.info.IsDir {
			err = tx.Mkdir(f.info.Path)
		} else {
			info := f.info
			err = tx.WriteFile(&info, f.data)
		}
		if err != nil {
			return fmt.Errorf("file %s: %w", f.info.Path, err)
		}
	}
	if len(events) > 0 {
		return tx.AppendEvents(events)
	}
	return nil
}
