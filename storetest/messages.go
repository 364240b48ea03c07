package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

func fullMessage() *weft.Message {
	return &weft.Message{
		Role: weft.RoleAssistant, Side: weft.SideB, Content: "hello", Name: "bot",
		ToolCalls:  []weft.ToolCall{{ID: "call_1", Name: "search", Arguments: `{"q":"x"}`}, {ID: "call_2", Name: "bad", Arguments: `{not json`}},
		ToolCallID: "call_0", ToolStatus: weft.ToolError, Status: weft.MessagePending, Silent: true, Depth: 1,
		ParentID: "msg_parent", Prompt: "main", Reasoning: "because",
		Attachments: []weft.Attachment{{ID: "att_1", Path: "/attachments/a.png", Name: "a.png", MimeType: "image/png", Size: 10, Width: 2, Height: 3, Description: "pic"}},
		LogID:       "log_1", RunID: "run_1",
		Metadata:  map[string]any{"n": 2, "s": "v", "deep": map[string]any{"l": []any{true, nil}}},
		CreatedAt: baseTime().In(time.FixedZone("X", 3600)).Add(123456789),
	}
}

func testMessageCRUD(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	m := fullMessage()
	insert(t, s, th.ID, m)
	if !strings.HasPrefix(m.ID, "msg_") || m.Seq != 1 || m.ThreadID != th.ID {
		t.Fatalf("insert assigned id %q seq %d thread %q", m.ID, m.Seq, m.ThreadID)
	}
	got, err := s.Message(ctx, th.ID, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := *fullMessage()
	want.ID, want.ThreadID, want.Seq = m.ID, th.ID, 1
	want.Metadata = map[string]any{"n": 2.0, "s": "v", "deep": map[string]any{"l": []any{true, nil}}}
	if !sameMessage(got, want) {
		t.Errorf("round trip:\n got %#v\nwant %#v", got, want)
	}
	// The caller's values are copied: changing them after insert or after reading changes nothing.
	m.ToolCalls[0].Name = "mutated"
	got.Attachments[0].Name = "mutated"
	got.Metadata["s"] = "mutated"
	if again, _ := s.Message(ctx, th.ID, m.ID); again.ToolCalls[0].Name != "search" || again.Attachments[0].Name != "a.png" || again.Metadata["s"] != "v" {
		t.Errorf("store shares memory with callers: %+v", again)
	}

	bare := &weft.Message{ID: "msg_explicit", Role: weft.RoleUser, Content: "plain"}
	insert(t, s, th.ID, bare)
	got, err = s.Message(ctx, th.ID, "msg_explicit")
	if err != nil || got.Seq != 2 || got.CreatedAt.IsZero() || got.ToolCalls != nil || got.Attachments != nil || got.Metadata != nil {
		t.Errorf("bare message: %#v, %v", got, err)
	}
	err = s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		return tx.InsertMessage(&weft.Message{ID: "msg_explicit", Role: weft.RoleUser})
	})
	wantCode(t, "duplicate message id", err, weft.EConflict)

	_, err = s.Message(ctx, th.ID, "msg_missing")
	wantErr(t, "Message(missing)", err, weft.ErrNotFound)
	err = s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.UpdateMessage("msg_missing", weft.MessageChange{}) })
	wantErr(t, "UpdateMessage(missing)", err, weft.ErrNotFound)
	err = s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.DeleteMessage("msg_missing") })
	wantErr(t, "DeleteMessage(missing)", err, weft.ErrNotFound)

	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.DeleteMessage("msg_explicit") })
	_, err = s.Message(ctx, th.ID, "msg_explicit")
	wantErr(t, "Message(deleted)", err, weft.ErrNotFound)
	// Seq is never reused, even after deleting the last row.
	next := &weft.Message{Role: weft.RoleUser, Content: "next"}
	insert(t, s, th.ID, next)
	if next.Seq != 3 {
		t.Errorf("seq after deleting the last row: %d, want 3", next.Seq)
	}
	// Insert, update and delete within one Tx.
	a, b := &weft.Message{Role: weft.RoleAssistant, Status: weft.MessagePending}, &weft.Message{Role: weft.RoleUser}
	done, text := weft.MessageCompleted, "streamed"
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		if err := tx.InsertMessage(a); err != nil {
			return err
		}
		if err := tx.InsertMessage(b); err != nil {
			return err
		}
		if err := tx.UpdateMessage(a.ID, weft.MessageChange{Content: &text, Status: &done}); err != nil {
			return err
		}
		if err := tx.DeleteMessage(b.ID); err != nil {
			return err
		}
		return tx.DeleteMessage(m.ID)
	})
	all, _ := s.Messages(ctx, th.ID, weft.MessageQuery{MaxDepth: 5})
	if !slices.Equal(seqs(all), []int64{3, 4}) || all[1].Content != text || all[1].Status != done {
		t.Errorf("after mixed Tx: %+v", all)
	}
	c := &weft.Message{Role: weft.RoleUser}
	insert(t, s, th.ID, c)
	if c.Seq != 6 {
		t.Errorf("seq after a Tx that inserted and deleted: %d, want 6", c.Seq)
	}
	if ms, err := s.Messages(ctx, "thr_missing", weft.MessageQuery{}); err != nil || len(ms) != 0 {
		t.Errorf("Messages(unknown thread) = %v, %v; want none", ms, err)
	}
}

func testMessageChange(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	orig := fullMessage()
	insert(t, s, th.ID, orig)
	base, _ := s.Message(ctx, th.ID, orig.ID)
	content, status, reasoning, logID, silent := "new", weft.MessageFailed, "r2", "log_2", false
	calls := []weft.ToolCall{{ID: "call_9", Name: "n", Arguments: "{}"}}
	atts := []weft.Attachment{{ID: "att_2", Path: "/b.txt", Name: "b.txt", MimeType: "text/plain", Size: 1}}
	empty, noAtts := []weft.ToolCall{}, []weft.Attachment{}
	steps := []struct {
		name  string
		ch    weft.MessageChange
		apply func(*weft.Message)
	}{
		{"nothing", weft.MessageChange{}, func(*weft.Message) {}},
		{"content", weft.MessageChange{Content: &content}, func(m *weft.Message) { m.Content = content }},
		{"status", weft.MessageChange{Status: &status}, func(m *weft.Message) { m.Status = status }},
		{"tool calls", weft.MessageChange{ToolCalls: &calls}, func(m *weft.Message) { m.ToolCalls = calls }},
		{"clear tool calls", weft.MessageChange{ToolCalls: &empty}, func(m *weft.Message) { m.ToolCalls = nil }},
		{"attachments", weft.MessageChange{Attachments: &atts}, func(m *weft.Message) { m.Attachments = atts }},
		{"clear attachments", weft.MessageChange{Attachments: &noAtts}, func(m *weft.Message) { m.Attachments = nil }},
		{"metadata", weft.MessageChange{Metadata: map[string]any{"only": "this"}}, func(m *weft.Message) { m.Metadata = map[string]any{"only": "this"} }},
		{"silent", weft.MessageChange{Silent: &silent}, func(m *weft.Message) { m.Silent = silent }},
		{"reasoning", weft.MessageChange{Reasoning: &reasoning}, func(m *weft.Message) { m.Reasoning = reasoning }},
		{"log id", weft.MessageChange{LogID: &logID}, func(m *weft.Message) { m.LogID = logID }},
	}
	want := base
	for _, st := range steps {
		mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.UpdateMessage(orig.ID, st.ch) })
		st.apply(&want)
		got, err := s.Message(ctx, th.ID, orig.ID)
		if err != nil || !sameMessage(got, want) {
			t.Errorf("after %s:\n got %#v\nwant %#v (%v)", st.name, got, want, err)
		}
	}
}

func testMessageQuery(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	rows := []struct {
		role   weft.Role
		silent bool
		depth  int
	}{
		{weft.RoleSystem, false, 0}, {weft.RoleUser, false, 0}, {weft.RoleAssistant, true, 0}, {weft.RoleTool, false, 0},
		{weft.RoleAssistant, false, 1}, {weft.RoleTool, false, 1}, {weft.RoleAssistant, false, 2}, {weft.RoleUser, true, 0},
		{weft.RoleAssistant, false, 0},
	}
	for i, r := range rows {
		insert(t, s, th.ID, &weft.Message{Role: r.role, Silent: r.silent, Depth: r.depth, Content: fmt.Sprint(i + 1)})
	}
	cases := []struct {
		name string
		q    weft.MessageQuery
		want []int64
	}{
		{"default top level", weft.MessageQuery{}, []int64{1, 2, 3, 4, 8, 9}},
		{"exclude silent", weft.MessageQuery{ExcludeSilent: true}, []int64{1, 2, 4, 9}},
		{"depth 1", weft.MessageQuery{MaxDepth: 1}, []int64{1, 2, 3, 4, 5, 6, 8, 9}},
		{"depth 2", weft.MessageQuery{MaxDepth: 2}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"roles", weft.MessageQuery{Roles: []weft.Role{weft.RoleUser}}, []int64{2, 8}},
		{"roles silent", weft.MessageQuery{Roles: []weft.Role{weft.RoleUser, weft.RoleAssistant}, ExcludeSilent: true}, []int64{2, 9}},
		{"desc", weft.MessageQuery{Desc: true}, []int64{9, 8, 4, 3, 2, 1}},
		{"limit", weft.MessageQuery{Limit: 2}, []int64{1, 2}},
		{"offset", weft.MessageQuery{Limit: 2, Offset: 2}, []int64{3, 4}},
		{"desc offset", weft.MessageQuery{Desc: true, Limit: 2, Offset: 1}, []int64{8, 4}},
		{"after seq", weft.MessageQuery{AfterSeq: 3}, []int64{4, 8, 9}},
		{"after seq desc", weft.MessageQuery{AfterSeq: 3, Desc: true, Limit: 1}, []int64{9}},
		{"after seq deep", weft.MessageQuery{AfterSeq: 6, MaxDepth: 2}, []int64{7, 8, 9}},
		{"after end", weft.MessageQuery{AfterSeq: 9}, []int64{}},
		{"unlimited", weft.MessageQuery{Limit: -1, MaxDepth: 9}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}},
	}
	for _, c := range cases {
		got, err := s.Messages(ctx, th.ID, c.q)
		if err != nil || !slices.Equal(seqs(got), c.want) {
			t.Errorf("%s: got %v (%v), want %v", c.name, seqs(got), err, c.want)
		}
		for _, m := range got {
			if m.Content != fmt.Sprint(m.Seq) || m.ThreadID != th.ID {
				t.Errorf("%s: row %d has content %q thread %q", c.name, m.Seq, m.Content, m.ThreadID)
			}
		}
		// The count is of every row the query lists, whatever its page.
		all := c.q
		all.Limit, all.Offset = -1, 0
		listed, err := s.Messages(ctx, th.ID, all)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := s.CountMessages(ctx, th.ID, c.q); err != nil || n != len(listed) {
			t.Errorf("%s: counted %d (%v), listed %d", c.name, n, err, len(listed))
		}
	}
	if n, err := s.CountMessages(ctx, "thr_unknown", weft.MessageQuery{}); err != nil || n != 0 {
		t.Errorf("an unknown thread: counted %d (%v)", n, err)
	}
}

func testMessageDefaultLimit(t *testing.T, s weft.Store) {
	th := newThread(t, s, nil)
	msgs := make([]*weft.Message, 105)
	for i := range msgs {
		msgs[i] = &weft.Message{Role: weft.RoleUser}
	}
	insert(t, s, th.ID, msgs...)
	if got, _ := s.Messages(t.Context(), th.ID, weft.MessageQuery{}); len(got) != 100 || got[99].Seq != 100 {
		t.Errorf("default limit: %d rows", len(got))
	}
	if got, _ := s.Messages(t.Context(), th.ID, weft.MessageQuery{Limit: 200}); len(got) != 105 {
		t.Errorf("limit 200: %d rows", len(got))
	}
}

func testMessageSeqConcurrent(t *testing.T, s weft.Store) {
	const writers, each = 16, 20
	th := newThread(t, s, nil)
	var wg sync.WaitGroup
	got := make([][]int64, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				m := &weft.Message{Role: weft.RoleUser, Content: fmt.Sprintf("%d/%d", w, i)}
				if err := s.Tx(t.Context(), th.ID, nil, func(tx weft.Tx) error { return tx.InsertMessage(m) }); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				got[w] = append(got[w], m.Seq)
			}
		})
	}
	wg.Wait()
	all, err := s.Messages(t.Context(), th.ID, weft.MessageQuery{Limit: writers * each * 2})
	if err != nil || len(all) != writers*each {
		t.Fatalf("stored %d rows (%v), want %d", len(all), err, writers*each)
	}
	ids := map[string]bool{}
	for i, m := range all {
		if m.Seq != int64(i+1) {
			t.Fatalf("row %d has seq %d: not gap-free", i, m.Seq)
		}
		ids[m.ID] = true
	}
	if len(ids) != len(all) {
		t.Errorf("duplicate message ids")
	}
	var assigned []int64
	for w := range got {
		if !slices.IsSorted(got[w]) {
			t.Errorf("writer %d saw seqs out of order: %v", w, got[w])
		}
		assigned = append(assigned, got[w]...)
	}
	slices.Sort(assigned)
	if len(slices.Compact(assigned)) != writers*each {
		t.Errorf("assigned seqs are not unique")
	}
}

func testToolCalls(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	msg := &weft.Message{Role: weft.RoleAssistant, ToolCalls: []weft.ToolCall{{ID: "c1", Name: "a"}, {ID: "c2", Name: "b"}}}
	c1 := &weft.ToolCallRecord{CallID: "c1", Name: "a", Arguments: `{"x":1}`, Status: weft.CallPending}
	c2 := &weft.ToolCallRecord{CallID: "c2", Name: "b", Arguments: `{}`}
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		if err := tx.InsertMessage(msg); err != nil {
			return err
		}
		c1.MessageID, c2.MessageID = msg.ID, msg.ID
		if err := tx.PutToolCall(c1); err != nil {
			return err
		}
		return tx.PutToolCall(c2)
	})
	if c1.Seq != 1 || c2.Seq != 2 || c2.Status != weft.CallPending || c1.ThreadID != th.ID {
		t.Fatalf("put assigned seq %d/%d status %q thread %q", c1.Seq, c2.Seq, c2.Status, c1.ThreadID)
	}
	list := func(st ...weft.CallStatus) []string {
		rs, err := s.ToolCalls(ctx, th.ID, st...)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rs {
			ids = append(ids, r.CallID+":"+string(r.Status))
		}
		return ids
	}
	if got := list(); !slices.Equal(got, []string{"c1:pending", "c2:pending"}) {
		t.Errorf("all calls: %v", got)
	}
	started := baseTime().Add(time.Second)
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		c1.Status, c1.StartedAt = weft.CallRunning, &started
		return tx.PutToolCall(c1)
	})
	if got := list(weft.CallRunning); !slices.Equal(got, []string{"c1:running"}) {
		t.Errorf("running: %v", got)
	}
	if got := list(weft.CallPending); !slices.Equal(got, []string{"c2:pending"}) {
		t.Errorf("pending: %v", got)
	}
	if got := list(weft.CallPending, weft.CallRunning); !slices.Equal(got, []string{"c1:running", "c2:pending"}) {
		t.Errorf("pending+running: %v", got)
	}
	finished := started.Add(time.Second)
	res := &weft.Message{Role: weft.RoleTool, ToolCallID: "c1", Content: "ok"}
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		if err := tx.InsertMessage(res); err != nil {
			return err
		}
		c1.Status, c1.ResultMessageID, c1.FinishedAt = weft.CallDone, res.ID, &finished
		c1.Idempotent, c1.Meta = true, json.RawMessage(`{"child":"thr_x"}`)
		return tx.PutToolCall(c1)
	})
	rs, _ := s.ToolCalls(ctx, th.ID, weft.CallDone)
	if len(rs) != 1 {
		t.Fatalf("done: %v", rs)
	}
	r := rs[0]
	if r.ThreadID != th.ID || r.CallID != "c1" || r.MessageID != msg.ID || r.Name != "a" || r.Arguments != `{"x":1}` || r.Seq != 1 ||
		r.ResultMessageID != res.ID || !r.Idempotent || !jsonEqual(r.Meta, []byte(`{"child":"thr_x"}`)) ||
		r.StartedAt == nil || !r.StartedAt.Equal(started) || r.FinishedAt == nil || !r.FinishedAt.Equal(finished) {
		t.Errorf("done record: %+v", r)
	}
	if got := list(); !slices.Equal(got, []string{"c1:done", "c2:pending"}) {
		t.Errorf("all after done: %v", got)
	}
	c3 := &weft.ToolCallRecord{CallID: "c3", Name: "c", Status: weft.CallPending}
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.PutToolCall(c3) })
	if c3.Seq != 3 {
		t.Errorf("third call seq %d", c3.Seq)
	}
	if rs, _ := s.ToolCalls(ctx, th.ID); len(rs) == 3 && (rs[1].Meta != nil || rs[1].StartedAt != nil) {
		t.Errorf("unset meta/times must be nil: %+v", rs[1])
	}
	// A call keeps the seq of its first put whatever seq a later record carries; a new call takes
	// the next one.
	for _, c := range []struct {
		rec  *weft.ToolCallRecord
		want int64
	}{
		{&weft.ToolCallRecord{CallID: "c2", Name: "b", Status: weft.CallRunning}, 2},
		{&weft.ToolCallRecord{CallID: "c1", Name: "a", Status: weft.CallDone, Seq: 99}, 1},
		{&weft.ToolCallRecord{CallID: "c4", Name: "d", Status: weft.CallPending, Seq: 2}, 4},
	} {
		mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.PutToolCall(c.rec) })
		if c.rec.Seq != c.want {
			t.Errorf("put %s carrying a stale seq: seq %d, want %d", c.rec.CallID, c.rec.Seq, c.want)
		}
	}
	if rs, _ := s.ToolCalls(ctx, th.ID); len(rs) != 4 || rs[0].CallID != "c1" || rs[1].CallID != "c2" || rs[1].Status != weft.CallRunning ||
		rs[3].CallID != "c4" || rs[3].Seq != 4 {
		t.Errorf("calls after re-puts: %+v", rs)
	}
	err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.PutToolCall(&weft.ToolCallRecord{Name: "x"}) })
	wantCode(t, "call without id", err, weft.EInvalid)
	if rs, err := s.ToolCalls(ctx, "thr_missing"); err != nil || len(rs) != 0 {
		t.Errorf("ToolCalls(unknown thread) = %v, %v", rs, err)
	}
}

func testQueueFIFO(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	var pushed []*weft.QueuedMessage
	for i := range 5 {
		q := &weft.QueuedMessage{ThreadID: th.ID, Content: fmt.Sprint(i)}
		if i == 2 {
			q.Role, q.Silent = weft.RoleSystem, true
			q.Attachments = []weft.Attachment{{ID: "att", Path: "/a.txt", Name: "a.txt", MimeType: "text/plain", Size: 3}}
			q.Metadata = map[string]any{"from": "parent", "n": 1}
		}
		if err := s.PushQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		pushed = append(pushed, q)
	}
	if pushed[0].ID == "" || pushed[0].Role != weft.RoleUser || pushed[0].CreatedAt.IsZero() || pushed[4].Seq <= pushed[0].Seq {
		t.Fatalf("push assigned %+v / %+v", pushed[0], pushed[4])
	}
	check := func(what string, got []weft.QueuedMessage) {
		t.Helper()
		if len(got) != len(pushed) {
			t.Fatalf("%s: %d rows, want %d", what, len(got), len(pushed))
		}
		for i, g := range got {
			p := pushed[i]
			if g.ID != p.ID || g.Seq != p.Seq || g.Content != p.Content || g.Role != p.Role || g.ThreadID != th.ID ||
				g.Silent != p.Silent || !reflect.DeepEqual(g.Attachments, p.Attachments) || !g.CreatedAt.Equal(p.CreatedAt) {
				t.Errorf("%s row %d: got %+v want %+v", what, i, g, *p)
			}
		}
		if !reflect.DeepEqual(got[2].Metadata, map[string]any{"from": "parent", "n": 1.0}) {
			t.Errorf("%s metadata: %v", what, got[2].Metadata)
		}
	}
	q, err := s.Queued(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	check("Queued", q)
	// A failing drain leaves the queue alone.
	boom := errors.New("boom")
	err = s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		if _, err := tx.DrainQueue(0); err != nil {
			return err
		}
		return boom
	})
	wantErr(t, "failing drain", err, boom)
	var drained, again []weft.QueuedMessage
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		var err error
		if drained, err = tx.DrainQueue(0); err != nil {
			return err
		}
		again, err = tx.DrainQueue(0)
		return err
	})
	check("DrainQueue", drained)
	if len(again) != 0 {
		t.Errorf("second drain in one Tx returned %d rows", len(again))
	}
	if q, _ := s.Queued(ctx, th.ID); len(q) != 0 {
		t.Errorf("queue after drain: %v", q)
	}
	later := &weft.QueuedMessage{ThreadID: th.ID, Content: "later"}
	if err := s.PushQueue(ctx, later); err != nil || later.Seq <= pushed[4].Seq {
		t.Errorf("push after drain: seq %d, %v", later.Seq, err)
	}
	wantErr(t, "PushQueue(unknown thread)", s.PushQueue(ctx, &weft.QueuedMessage{ThreadID: "thr_missing"}), weft.ErrNotFound)

	// A terminated thread refuses messages, and the refused push assigns no seq.
	terminated := weft.ThreadTerminated
	if err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		return tx.UpdateThread(weft.ThreadPatch{Status: &terminated})
	}); err != nil {
		t.Fatal(err)
	}
	refused := &weft.QueuedMessage{ThreadID: th.ID, Content: "too late"}
	if err := s.PushQueue(ctx, refused); weft.ErrorCode(err) != weft.EConflict || refused.Seq != 0 {
		t.Errorf("PushQueue on a terminated thread: seq %d, %v; want EConflict", refused.Seq, err)
	}
	if q, _ := s.Queued(ctx, th.ID); len(q) != 1 || q[0].Content != "later" {
		t.Errorf("queue after a refused push: %+v", q)
	}
}

func testQueueConcurrentDrain(t *testing.T, s weft.Store) {
	const pushers, each, drainers = 4, 25, 4
	th := newThread(t, s, nil)
	var (
		mu      sync.Mutex
		batches [][]weft.QueuedMessage
		count   int
		pushing sync.WaitGroup
		done    = make(chan struct{})
	)
	for p := range pushers {
		pushing.Go(func() {
			for i := range each {
				if err := s.PushQueue(t.Context(), &weft.QueuedMessage{ThreadID: th.ID, Content: fmt.Sprintf("%d/%02d", p, i)}); err != nil {
					t.Errorf("push: %v", err)
					return
				}
			}
		})
	}
	var draining sync.WaitGroup
	for d := range drainers {
		draining.Go(func() {
			for {
				// Odd drainers take only the rows they saw (at most 3), as a run drains what it showed
				// the model; even ones drain everything.
				var upTo int64
				if d%2 == 1 {
					seen, err := s.Queued(t.Context(), th.ID)
					if err != nil {
						t.Errorf("queued: %v", err)
						return
					}
					if len(seen) == 0 {
						time.Sleep(100 * time.Microsecond)
						select {
						case <-done:
							return
						default:
							continue
						}
					}
					upTo = seen[min(len(seen), 3)-1].Seq
				}
				var got []weft.QueuedMessage
				err := s.Tx(t.Context(), th.ID, nil, func(tx weft.Tx) error {
					var err error
					got, err = tx.DrainQueue(upTo)
					if upTo > 0 && len(got) > 0 && got[len(got)-1].Seq > upTo {
						t.Errorf("DrainQueue(%d) returned seq %d", upTo, got[len(got)-1].Seq)
					}
					return err
				})
				if err != nil {
					t.Errorf("drain: %v", err)
					return
				}
				mu.Lock()
				if len(got) > 0 {
					batches = append(batches, got)
					count += len(got)
				}
				finished := count == pushers*each
				mu.Unlock()
				select {
				case <-done:
					return
				default:
				}
				if finished {
					close(done)
					return
				}
				if len(got) == 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
		})
	}
	pushing.Wait()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		close(done)
		t.Error("drainers did not collect every row in time")
	}
	draining.Wait()
	seen := map[string]int{}
	perPusher := map[string][]string{}
	slices.SortFunc(batches, func(a, b []weft.QueuedMessage) int { return int(a[0].Seq - b[0].Seq) })
	var lastSeq int64
	for _, b := range batches {
		for _, q := range b {
			if q.Seq <= lastSeq {
				t.Fatalf("drained batches overlap or are out of order at seq %d", q.Seq)
			}
			lastSeq = q.Seq
			seen[q.ID]++
			p, i, _ := strings.Cut(q.Content, "/")
			perPusher[p] = append(perPusher[p], i)
		}
	}
	if len(seen) != pushers*each {
		t.Errorf("drained %d distinct rows, want %d", len(seen), pushers*each)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("row %s drained %d times", id, n)
		}
	}
	for p, items := range perPusher {
		if !slices.IsSorted(items) {
			t.Errorf("pusher %s rows drained out of order: %v", p, items)
		}
	}
	if q, _ := s.Queued(t.Context(), th.ID); len(q) != 0 {
		t.Errorf("%d rows left in the queue", len(q))
	}
}

// testQueueSeq: a Tx reports the seq of the newest message ever queued, fenced or not; draining does
// not lower it.
func testQueueSeq(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	seqIn := func(fence *weft.Fence) int64 {
		t.Helper()
		var seq int64
		mustTxFenced(t, s, th.ID, fence, func(tx weft.Tx) error {
			var err error
			seq, err = tx.QueueSeq()
			return err
		})
		return seq
	}
	if got := seqIn(nil); got != 0 {
		t.Fatalf("QueueSeq of a thread never queued to = %d, want 0", got)
	}
	var last int64
	for i := range 3 {
		q := &weft.QueuedMessage{ThreadID: th.ID, Content: fmt.Sprint(i)}
		if err := s.PushQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		last = q.Seq
	}
	fence, err := s.AcquireLease(ctx, th.ID, "node-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*weft.Fence{nil, &fence} {
		if got := seqIn(f); got != last {
			t.Fatalf("QueueSeq after 3 pushes (fenced %v) = %d, want %d", f != nil, got, last)
		}
	}
	var drainedSeq int64
	mustTxFenced(t, s, th.ID, &fence, func(tx weft.Tx) error {
		if _, err := tx.DrainQueue(0); err != nil {
			return err
		}
		var err error
		drainedSeq, err = tx.QueueSeq()
		return err
	})
	if drainedSeq != last || seqIn(&fence) != last {
		t.Fatalf("QueueSeq after draining = %d in the Tx, %d after; want %d", drainedSeq, seqIn(&fence), last)
	}
	q := &weft.QueuedMessage{ThreadID: th.ID, Content: "late"}
	if err := s.PushQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if got := seqIn(&fence); got != q.Seq || q.Seq <= last {
		t.Fatalf("QueueSeq after a later push = %d, want its seq %d (above %d)", got, q.Seq, last)
	}
}

func testDrainQueueUpTo(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	push := func(content string) *weft.QueuedMessage {
		t.Helper()
		q := &weft.QueuedMessage{ThreadID: th.ID, Content: content}
		if err := s.PushQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		return q
	}
	var pushed []*weft.QueuedMessage
	for i := range 5 {
		pushed = append(pushed, push(fmt.Sprint(i)))
	}
	contents := func(qs []weft.QueuedMessage) string {
		var b []string
		for _, q := range qs {
			b = append(b, q.Content)
		}
		return strings.Join(b, ",")
	}
	queued := func() string {
		t.Helper()
		qs, err := s.Queued(ctx, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		return contents(qs)
	}
	// A failing partial drain leaves every row.
	boom := errors.New("boom")
	err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		if got, err := tx.DrainQueue(pushed[1].Seq); err != nil || contents(got) != "0,1" {
			t.Errorf("DrainQueue(seq of row 1) = %q, %v", contents(got), err)
		}
		return boom
	})
	wantErr(t, "failing partial drain", err, boom)
	if got := queued(); got != "0,1,2,3,4" {
		t.Errorf("queue after a failing drain: %s", got)
	}
	// Partial drains within one Tx continue where the previous one stopped, in order.
	var first, again, second []weft.QueuedMessage
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		var err error
		if first, err = tx.DrainQueue(pushed[1].Seq); err != nil {
			return err
		}
		if again, err = tx.DrainQueue(pushed[1].Seq); err != nil {
			return err
		}
		second, err = tx.DrainQueue(pushed[3].Seq)
		return err
	})
	if contents(first) != "0,1" || len(again) != 0 || contents(second) != "2,3" {
		t.Errorf("partial drains: %q, %q, %q; want 0,1 / none / 2,3", contents(first), contents(again), contents(second))
	}
	if len(first) == 2 && (first[0].Seq != pushed[0].Seq || first[1].ID != pushed[1].ID || first[0].ThreadID != th.ID) {
		t.Errorf("drained rows: %+v", first)
	}
	if got := queued(); got != "4" {
		t.Errorf("queue after partial drains: %q, want 4", got)
	}
	// A bound below every row drains nothing; rows pushed later stay behind a bound they exceed.
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		got, err := tx.DrainQueue(pushed[3].Seq)
		if err == nil && len(got) != 0 {
			t.Errorf("DrainQueue below the queue returned %q", contents(got))
		}
		return err
	})
	late := push("5")
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		got, err := tx.DrainQueue(pushed[4].Seq)
		if err == nil && contents(got) != "4" {
			t.Errorf("DrainQueue(seq of row 4) = %q, want 4", contents(got))
		}
		return err
	})
	if got := queued(); got != "5" {
		t.Errorf("queue: %q, want 5", got)
	}
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		got, err := tx.DrainQueue(-1)
		if err == nil && (contents(got) != "5" || got[0].Seq != late.Seq) {
			t.Errorf("DrainQueue(-1) = %+v, want the row pushed last", got)
		}
		return err
	})
	if got := queued(); got != "" {
		t.Errorf("queue after draining all: %q", got)
	}
}

// testTxPushQueue: a message queued inside a transaction lands with the transaction's files or not
// at all; a terminated thread refuses it and the whole transaction.
func testTxPushQueue(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	f := &weft.FileInfo{Path: "/attachments/a.txt", Name: "a.txt", MimeType: "text/plain", Size: 3}
	q := &weft.QueuedMessage{ID: "msg_q1", Role: weft.RoleUser, Content: "see file",
		Attachments: []weft.Attachment{{ID: "att_1", Path: f.Path, Name: f.Name, MimeType: f.MimeType, Size: 3}}}
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		if err := tx.WriteFile(f, []byte("abc")); err != nil {
			return err
		}
		return tx.PushQueue(q)
	})
	queued, err := s.Queued(ctx, th.ID)
	if err != nil || len(queued) != 1 || queued[0].ID != "msg_q1" || queued[0].Seq != 1 || q.Seq != 1 || len(queued[0].Attachments) != 1 {
		t.Fatalf("Queued = %+v, %v (q.Seq %d)", queued, err, q.Seq)
	}
	if b, err := s.Files().ReadFile(ctx, th.ID, f.Path); err != nil || string(b) != "abc" {
		t.Errorf("file: %q %v", b, err)
	}
	var seq int64
	mustTx(t, s, th.ID, func(tx weft.Tx) error { var err error; seq, err = tx.QueueSeq(); return err })
	if seq != 1 {
		t.Errorf("QueueSeq after a pushed message = %d", seq)
	}
	// A failing transaction queues nothing and writes no file.
	g := &weft.FileInfo{Path: "/attachments/b.txt", Name: "b.txt", MimeType: "text/plain", Size: 1}
	err = s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		if err := tx.WriteFile(g, []byte("b")); err != nil {
			return err
		}
		if err := tx.PushQueue(&weft.QueuedMessage{ID: "msg_q2", Role: weft.RoleUser, Content: "lost"}); err != nil {
			return err
		}
		return errors.New("crash")
	})
	if err == nil {
		t.Fatal("a failing Tx succeeded")
	}
	if queued, _ := s.Queued(ctx, th.ID); len(queued) != 1 {
		t.Errorf("a failed Tx queued: %+v", queued)
	}
	if _, err := s.Files().Stat(ctx, th.ID, g.Path); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("a failed Tx wrote its file: %v", err)
	}
	// A terminated thread refuses the message, and the transaction's file with it.
	term := weft.ThreadTerminated
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Status: &term}) })
	err = s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		if err := tx.WriteFile(g, []byte("b")); err != nil {
			return err
		}
		return tx.PushQueue(&weft.QueuedMessage{ID: "msg_q3", Role: weft.RoleUser, Content: "late"})
	})
	wantErr(t, "PushQueue on a terminated thread", err, weft.ErrTerminated)
	if _, err := s.Files().Stat(ctx, th.ID, g.Path); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("a refused message left its file: %v", err)
	}
}

// testToolCallsInRun: a run's calls as its steps put them — with the thread's changes, in a Tx
// that changes nothing else, a reply of many calls, a Tx that fails — list once each, with their
// latest record and first seq, whether the run is under way or over.
func testToolCallsInRun(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	f, _, err := s.BeginRun(ctx, th.ID, "node", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // call id -> status
	seqs := map[string]int64{}  // call id -> the seq of its first put
	var order []string
	check := func(when string) {
		t.Helper()
		rs, err := s.ToolCalls(ctx, th.ID)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		var got []string
		for i, r := range rs {
			got = append(got, r.CallID+":"+string(r.Status))
			if r.Seq != seqs[r.CallID] || i > 0 && r.Seq <= rs[i-1].Seq || r.Name != "n_"+r.CallID || r.ThreadID != th.ID {
				t.Errorf("%s: call %d: %+v", when, i, r)
			}
		}
		var exp []string
		for _, id := range order {
			exp = append(exp, id+":"+want[id])
		}
		if !slices.Equal(got, exp) {
			t.Errorf("%s: calls %v, want %v", when, got, exp)
		}
		for _, st := range []weft.CallStatus{weft.CallRunning, weft.CallDone} {
			rs, err := s.ToolCalls(ctx, th.ID, st)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, id := range order {
				if want[id] == string(st) {
					n++
				}
			}
			if len(rs) != n {
				t.Errorf("%s: %d calls %s, want %d", when, len(rs), st, n)
			}
			for _, r := range rs {
				if string(r.Status) != string(st) {
					t.Errorf("%s: listed as %s: %+v", when, st, r)
				}
			}
		}
	}
	// A store may assign a call's seq when the Tx commits: settle reads them after each Tx.
	pending := map[string]*weft.ToolCallRecord{}
	put := func(tx weft.Tx, id string, st weft.CallStatus) error {
		c := &weft.ToolCallRecord{CallID: id, Name: "n_" + id, Arguments: "{}", Status: st}
		if err := tx.PutToolCall(c); err != nil {
			return err
		}
		if _, ok := want[id]; !ok {
			order = append(order, id)
		}
		want[id], pending[id] = string(st), c
		return nil
	}
	settle := func() {
		t.Helper()
		for id, c := range pending {
			if first, ok := seqs[id]; !ok {
				seqs[id] = c.Seq
			} else if c.Seq != first {
				t.Errorf("put %s again: seq %d, want its first %d", id, c.Seq, first)
			}
		}
		clear(pending)
	}
	running := weft.ThreadRunning
	step := func(fn func(tx weft.Tx) error) {
		t.Helper()
		mustTxFenced(t, s, th.ID, &f, fn)
		settle()
	}
	// A reply with its call, the thread changed too; then its result alone.
	step(func(tx weft.Tx) error {
		if err := tx.UpdateThread(weft.ThreadPatch{Status: &running}); err != nil {
			return err
		}
		return put(tx, "a", weft.CallRunning)
	})
	check("the reply's call")
	step(func(tx weft.Tx) error { return put(tx, "a", weft.CallDone) })
	check("its result")
	// A reply of twelve calls, each then done, some with the thread's changes.
	step(func(tx weft.Tx) error {
		if err := tx.SetExecState("run", json.RawMessage(`{"step":2}`)); err != nil {
			return err
		}
		for i := range 12 {
			if err := put(tx, fmt.Sprintf("b%02d", i), weft.CallRunning); err != nil {
				return err
			}
		}
		return nil
	})
	check("a reply of twelve calls")
	for i := range 12 {
		step(func(tx weft.Tx) error {
			if i%3 == 0 {
				state := json.RawMessage(fmt.Sprintf(`{"step":%d}`, 3+i))
				if err := tx.SetExecState("run", state); err != nil {
					return err
				}
			}
			return put(tx, fmt.Sprintf("b%02d", i), weft.CallDone)
		})
		check(fmt.Sprintf("call b%02d done", i))
	}
	// A Tx that fails leaves the calls as they were.
	failed := errors.New("fail")
	err = s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error {
		c := &weft.ToolCallRecord{CallID: "a", Name: "n_a", Arguments: "{}", Status: weft.CallRunning}
		if err := tx.PutToolCall(c); err != nil {
			return err
		}
		if err := tx.PutToolCall(&weft.ToolCallRecord{CallID: "z", Name: "n_z", Status: weft.CallRunning}); err != nil {
			return err
		}
		if err := tx.SetExecState("run", json.RawMessage(`{"step":99}`)); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("failing Tx: %v", err)
	}
	check("after a failed Tx")
	// A last reply's call, and the run's end with the thread's changes.
	step(func(tx weft.Tx) error {
		if err := tx.SetExecState("run", json.RawMessage(`{"step":100}`)); err != nil {
			return err
		}
		return put(tx, "c", weft.CallRunning)
	})
	idle := weft.ThreadIdle
	step(func(tx weft.Tx) error {
		if err := put(tx, "c", weft.CallDone); err != nil {
			return err
		}
		if err := tx.UpdateThread(weft.ThreadPatch{Status: &idle}); err != nil {
			return err
		}
		return tx.ReleaseLease()
	})
	check("after the run")
	// An unfenced Tx changes a call, with and without the thread's changes.
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return put(tx, "b03", weft.CallRunning) })
	settle()
	check("an unfenced change")
	label := "l"
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		if err := tx.UpdateThread(weft.ThreadPatch{Label: &label}); err != nil {
			return err
		}
		return put(tx, "d", weft.CallPending)
	})
	settle()
	check("an unfenced new call with the thread's changes")
}
