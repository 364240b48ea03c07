// Package storetest is the conformance suite of weft.Store (storage.md §6): every back end runs it,
// the way testing/fstest checks an fs.FS, so that all of them behave identically.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// Run runs the whole suite. open must return a new, empty store on every call (subtests run in
// parallel, each with its own store); Run closes each store when its subtest ends.
func Run(t *testing.T, open func(t *testing.T) weft.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, weft.Store)
	}{
		{"EmptyStore", testEmptyStore},
		{"ThreadCreateGet", testThreadCreateGet},
		{"ThreadUpdate", testThreadUpdate},
		{"ThreadList", testThreadList},
		{"ThreadDeleteRecursive", testThreadDeleteRecursive},
		{"MessageCRUD", testMessageCRUD},
		{"MessageChange", testMessageChange},
		{"MessageQuery", testMessageQuery},
		{"MessageDefaultLimit", testMessageDefaultLimit},
		{"MessageSeqConcurrent", testMessageSeqConcurrent},
		{"ToolCalls", testToolCalls},
		{"QueueFIFO", testQueueFIFO},
		{"QueueConcurrentDrain", testQueueConcurrentDrain},
		{"DrainQueueUpTo", testDrainQueueUpTo},
		{"QueueSeq", testQueueSeq},
		{"TxPushQueue", testTxPushQueue},
		{"ExecState", testExecState},
		{"Logs", testLogs},
		{"KV", testKV},
		{"Events", testEvents},
		{"EventsConcurrent", testEventsConcurrent},
		{"FileRoundTrip", testFileRoundTrip},
		{"FileDirs", testFileDirs},
		{"FileRename", testFileRename},
		{"FilePaths", testFilePaths},
		{"FileGrep", testFileGrep},
		{"FileFind", testFileFind},
		{"Env", testEnv},
		{"TxAllOrNothing", testTxAllOrNothing},
		{"TxPanic", testTxPanic},
		{"TxReadsInside", testTxReadsInside},
		{"UnknownThread", testUnknownThread},
		{"FenceStale", testFenceStale},
		{"LeaseExpiry", testLeaseExpiry},
		{"TxReleaseLease", testTxReleaseLease},
		{"BeginRun", testBeginRun},
		{"Effects", testEffects},
		{"EffectClaimConcurrent", testEffectClaimConcurrent},
		{"EffectClaimExpiry", testEffectClaimExpiry},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

// --- helpers ---

func baseTime() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }

func newThread(t *testing.T, s weft.Store, mod func(*weft.Thread)) *weft.Thread {
	t.Helper()
	th := &weft.Thread{Agent: "agent"}
	if mod != nil {
		mod(th)
	}
	if err := s.CreateThread(t.Context(), th, nil); err != nil {
		t.Fatalf("CreateThread: %v", err)
	}
	return th
}

func mustTx(t *testing.T, s weft.Store, threadID string, fn func(weft.Tx) error) {
	t.Helper()
	mustTxFenced(t, s, threadID, nil, fn)
}

func mustTxFenced(t *testing.T, s weft.Store, threadID string, fence *weft.Fence, fn func(weft.Tx) error) {
	t.Helper()
	if err := s.Tx(t.Context(), threadID, fence, fn); err != nil {
		t.Fatalf("Tx on %s: %v", threadID, err)
	}
}

func insert(t *testing.T, s weft.Store, threadID string, msgs ...*weft.Message) {
	t.Helper()
	mustTx(t, s, threadID, func(tx weft.Tx) error {
		for _, m := range msgs {
			if err := tx.InsertMessage(m); err != nil {
				return err
			}
		}
		return nil
	})
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want %v", what, err, target)
	}
}

func wantCode(t *testing.T, what string, err error, code weft.Code) {
	t.Helper()
	if err == nil || weft.ErrorCode(err) != code {
		t.Errorf("%s: error %v (code %q), want code %q", what, err, weft.ErrorCode(err), code)
	}
}

func seqs(ms []weft.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

func threadIDs(ts []*weft.Thread) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// sameMessage compares messages, times by instant.
func sameMessage(a, b weft.Message) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return false
	}
	a.CreatedAt, b.CreatedAt = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

// --- threads ---

func testEmptyStore(t *testing.T, s weft.Store) {
	ts, total, err := s.Threads(t.Context(), weft.ThreadQuery{})
	if err != nil || total != 0 || len(ts) != 0 {
		t.Fatalf("fresh store: %v threads, total %d, %v", ts, total, err)
	}
	if _, err := s.Thread(t.Context(), "thr_missing"); !errors.Is(err, weft.ErrNotFound) {
		t.Fatalf("Thread on fresh store: %v", err)
	}
}

func testThreadCreateGet(t *testing.T, s weft.Store) {
	ctx := t.Context()
	root := newThread(t, s, func(th *weft.Thread) {
		th.UserID = "u1"
		th.Tags = []string{"x", "y"}
		th.Properties = map[string]any{"n": 2, "nested": map[string]any{"list": []any{1, "a"}}}
		th.Arguments = map[string]any{"topic": "go"}
	})
	if !strings.HasPrefix(root.ID, "thr_") || root.RootID != root.ID || root.OriginAgent != "agent" ||
		root.Status != weft.ThreadIdle || root.CreatedAt.IsZero() || !root.LastActivityAt.Equal(root.CreatedAt) {
		t.Fatalf("defaults not assigned: %+v", root)
	}
	got, err := s.Thread(ctx, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := *root
	want.Properties = map[string]any{"n": 2.0, "nested": map[string]any{"list": []any{1.0, "a"}}}
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) || !got.LastActivityAt.Equal(want.LastActivityAt) {
		t.Errorf("times: got %v/%v/%v want %v/%v/%v", got.CreatedAt, got.UpdatedAt, got.LastActivityAt, want.CreatedAt, want.UpdatedAt, want.LastActivityAt)
	}
	got.CreatedAt, got.UpdatedAt, got.LastActivityAt = time.Time{}, time.Time{}, time.Time{}
	want.CreatedAt, want.UpdatedAt, want.LastActivityAt = time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("Thread:\n got %#v\nwant %#v", *got, want)
	}

	bare := newThread(t, s, nil)
	got, err = s.Thread(ctx, bare.ID)
	if err != nil || got.Tags == nil || len(got.Tags) != 0 || got.Properties == nil || got.Arguments == nil {
		t.Errorf("nil tags/maps must come back empty, not nil: %#v, %v", got, err)
	}

	child := newThread(t, s, func(th *weft.Thread) { th.ParentID = root.ID })
	grand := newThread(t, s, func(th *weft.Thread) { th.ParentID = child.ID })
	if child.RootID != root.ID || grand.RootID != root.ID {
		t.Errorf("root ids: child %s grandchild %s, want %s", child.RootID, grand.RootID, root.ID)
	}
	if got, _ := s.Thread(ctx, grand.ID); got == nil || got.ParentID != child.ID || got.RootID != root.ID {
		t.Errorf("grandchild stored as %+v", got)
	}

	_, err = s.Thread(ctx, "thr_missing")
	wantErr(t, "Thread(missing)", err, weft.ErrNotFound)
	err = s.CreateThread(ctx, &weft.Thread{ID: root.ID, Agent: "agent"}, nil)
	wantCode(t, "CreateThread(existing id)", err, weft.EConflict)
	err = s.CreateThread(ctx, &weft.Thread{Agent: "agent", ParentID: "thr_missing"}, nil)
	wantErr(t, "CreateThread(missing parent)", err, weft.ErrNotFound)
	err = s.Tx(ctx, "thr_missing", nil, func(weft.Tx) error { return nil })
	wantErr(t, "Tx(missing thread)", err, weft.ErrNotFound)
}

func testThreadUpdate(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, func(th *weft.Thread) {
		th.Label, th.Tags = "old", []string{"keep"}
		th.CreatedAt = baseTime()
	})
	agent, label, preview := "other", "new label", "last words"
	status, reason := weft.ThreadStopped, weft.StopOnResponse
	act := baseTime().Add(time.Hour)
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		if err := tx.UpdateThread(weft.ThreadPatch{Label: &label, Tags: []string{"a", "b"}}); err != nil {
			return err
		}
		return tx.UpdateThread(weft.ThreadPatch{Agent: &agent, Status: &status, StopReason: &reason, LastActivityAt: &act,
			Preview: &preview, Properties: map[string]any{"p": true}, Arguments: map[string]any{"x": 1}})
	})
	got, err := s.Thread(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Agent != agent || got.OriginAgent != "agent" || got.Label != label || !slices.Equal(got.Tags, []string{"a", "b"}) ||
		got.Status != status || got.StopReason != reason || !got.LastActivityAt.Equal(act) || got.Preview != preview ||
		!reflect.DeepEqual(got.Properties, map[string]any{"p": true}) || !reflect.DeepEqual(got.Arguments, map[string]any{"x": 1.0}) {
		t.Errorf("after patch: %+v", got)
	}
	if !got.UpdatedAt.After(baseTime()) || !got.CreatedAt.Equal(baseTime()) {
		t.Errorf("times after patch: created %v updated %v", got.CreatedAt, got.UpdatedAt)
	}
	// An empty patch changes nothing but UpdatedAt.
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{}) })
	again, _ := s.Thread(ctx, th.ID)
	if again.Label != label || again.Status != status || !slices.Equal(again.Tags, got.Tags) {
		t.Errorf("empty patch changed fields: %+v", again)
	}
}

func testThreadList(t *testing.T, s weft.Store) {
	ctx := t.Context()
	at := func(h int) time.Time { return baseTime().Add(time.Duration(h) * time.Hour) }
	t1 := newThread(t, s, func(th *weft.Thread) {
		th.UserID, th.Agent, th.Tags, th.Label, th.CreatedAt, th.LastActivityAt = "u1", "alpha", []string{"x"}, "Hello World", at(1), at(5)
	})
	t2 := newThread(t, s, func(th *weft.Thread) {
		th.UserID, th.Agent, th.Tags, th.Status, th.Preview, th.CreatedAt, th.LastActivityAt = "u1", "beta", []string{"x", "y"}, weft.ThreadRunning, "the QUICK fox", at(2), at(4)
	})
	t3 := newThread(t, s, func(th *weft.Thread) {
		th.UserID, th.Agent, th.Status, th.CreatedAt, th.LastActivityAt = "u2", "alpha", weft.ThreadFailed, at(3), at(6)
	})
	t4 := newThread(t, s, func(th *weft.Thread) {
		th.UserID, th.Agent, th.ParentID, th.Label, th.CreatedAt, th.LastActivityAt = "u1", "gamma", t1.ID, "sub", at(4), at(1)
	})
	for _, th := range []*weft.Thread{t1, t4} {
		if err := s.PushQueue(ctx, &weft.QueuedMessage{ThreadID: th.ID, Content: "waiting"}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		q     weft.ThreadQuery
		want  []*weft.Thread
		total int
	}{
		{"all by activity", weft.ThreadQuery{}, []*weft.Thread{t3, t1, t2, t4}, 4},
		{"activity explicit", weft.ThreadQuery{Sort: "activity"}, []*weft.Thread{t3, t1, t2, t4}, 4},
		{"created", weft.ThreadQuery{Sort: "created"}, []*weft.Thread{t4, t3, t2, t1}, 4},
		{"oldest", weft.ThreadQuery{Sort: "oldest"}, []*weft.Thread{t1, t2, t3, t4}, 4},
		{"user u1", weft.ThreadQuery{UserID: "u1"}, []*weft.Thread{t1, t2, t4}, 3},
		{"user u2", weft.ThreadQuery{UserID: "u2"}, []*weft.Thread{t3}, 1},
		{"user unknown", weft.ThreadQuery{UserID: "nobody"}, nil, 0},
		{"user u2 cannot see beta", weft.ThreadQuery{UserID: "u2", Agent: "beta"}, nil, 0},
		{"agent", weft.ThreadQuery{Agent: "alpha"}, []*weft.Thread{t3, t1}, 2},
		{"parent", weft.ThreadQuery{ParentID: t1.ID}, []*weft.Thread{t4}, 1},
		{"roots only", weft.ThreadQuery{RootsOnly: true}, []*weft.Thread{t3, t1, t2}, 3},
		{"tag y", weft.ThreadQuery{Tag: "y"}, []*weft.Thread{t2}, 1},
		{"tag x", weft.ThreadQuery{Tag: "x"}, []*weft.Thread{t1, t2}, 2},
		{"status", weft.ThreadQuery{Status: weft.ThreadRunning}, []*weft.Thread{t2}, 1},
		{"search preview", weft.ThreadQuery{Search: "quick"}, []*weft.Thread{t2}, 1},
		{"search label", weft.ThreadQuery{Search: "hello"}, []*weft.Thread{t1}, 1},
		{"search agent", weft.ThreadQuery{Search: "GAM"}, []*weft.Thread{t4}, 1},
		{"search and user", weft.ThreadQuery{Search: "alpha", UserID: "u1"}, []*weft.Thread{t1}, 1},
		{"page", weft.ThreadQuery{Sort: "oldest", Limit: 2, Offset: 1}, []*weft.Thread{t2, t3}, 4},
		{"page past end", weft.ThreadQuery{Sort: "oldest", Offset: 10}, nil, 4},
		{"queued", weft.ThreadQuery{Queued: true}, []*weft.Thread{t1, t4}, 2},
		{"queued roots", weft.ThreadQuery{Queued: true, RootsOnly: true}, []*weft.Thread{t1}, 1},
	}
	for _, c := range cases {
		got, total, err := s.Threads(ctx, c.q)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !slices.Equal(threadIDs(got), threadIDs(c.want)) || total != c.total {
			t.Errorf("%s: got %v total %d, want %v total %d", c.name, threadIDs(got), total, threadIDs(c.want), c.total)
		}
	}
	if got, _, _ := s.Threads(ctx, weft.ThreadQuery{ParentID: t1.ID}); len(got) == 1 && (got[0].UserID != "u1" || got[0].Label != "sub") {
		t.Errorf("listed thread fields: %+v", got[0])
	}
	_, _, err := s.Threads(ctx, weft.ThreadQuery{Sort: "bogus"})
	wantCode(t, "unknown sort", err, weft.EInvalid)
}

func testThreadDeleteRecursive(t *testing.T, s weft.Store) {
	ctx := t.Context()
	root := newThread(t, s, nil)
	c1 := newThread(t, s, func(th *weft.Thread) { th.ParentID = root.ID })
	gc := newThread(t, s, func(th *weft.Thread) { th.ParentID = c1.ID })
	c2 := newThread(t, s, func(th *weft.Thread) { th.ParentID = root.ID })
	other := newThread(t, s, nil)
	for _, th := range []*weft.Thread{root, gc, other} {
		mustTx(t, s, th.ID, func(tx weft.Tx) error {
			if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "hi"}); err != nil {
				return err
			}
			if err := tx.SetKV("k", json.RawMessage(`1`)); err != nil {
				return err
			}
			return tx.WriteFile(&weft.FileInfo{Path: "/f.txt"}, []byte("x"))
		})
		if err := s.SetEnv(ctx, weft.EnvThread, th.ID, []weft.EnvValue{{Name: "E", Value: "v", Type: weft.VarText}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteThread(ctx, root.ID); err != nil {
		t.Fatal(err)
	}
	for _, th := range []*weft.Thread{root, c1, gc, c2} {
		if _, err := s.Thread(ctx, th.ID); !errors.Is(err, weft.ErrNotFound) {
			t.Errorf("thread %s after delete: %v", th.ID, err)
		}
		if ms, _ := s.Messages(ctx, th.ID, weft.MessageQuery{}); len(ms) != 0 {
			t.Errorf("thread %s messages after delete: %d", th.ID, len(ms))
		}
		if _, found, _ := s.GetKV(ctx, th.ID, "k"); found {
			t.Errorf("thread %s kv after delete", th.ID)
		}
		if env, _ := s.Env(ctx, weft.EnvThread, th.ID); len(env) != 0 {
			t.Errorf("thread %s env after delete: %v", th.ID, env)
		}
		if _, err := s.Files().Stat(ctx, th.ID, "/f.txt"); err == nil {
			t.Errorf("thread %s file after delete", th.ID)
		}
	}
	if ts, total, _ := s.Threads(ctx, weft.ThreadQuery{}); total != 1 || ts[0].ID != other.ID {
		t.Errorf("after delete: %v (total %d), want only %s", threadIDs(ts), total, other.ID)
	}
	if ms, _ := s.Messages(ctx, other.ID, weft.MessageQuery{}); len(ms) != 1 {
		t.Errorf("unrelated thread lost its messages")
	}
	if env, _ := s.Env(ctx, weft.EnvThread, other.ID); len(env) != 1 {
		t.Errorf("unrelated thread lost its env")
	}
	wantErr(t, "DeleteThread(missing)", s.DeleteThread(ctx, root.ID), weft.ErrNotFound)
}

// --- messages ---

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

// --- tool calls, queue, exec state, logs, kv ---

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

func testExecState(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th, other := newThread(t, s, nil), newThread(t, s, nil)
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		if err := tx.SetExecState("side", json.RawMessage(`"a"`)); err != nil {
			return err
		}
		if err := tx.SetExecState("turns", json.RawMessage(`{"a":1,"b":2}`)); err != nil {
			return err
		}
		return tx.SetExecState("stop", json.RawMessage(`true`))
	})
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		if err := tx.SetExecState("stop", nil); err != nil {
			return err
		}
		return tx.SetExecState("side", json.RawMessage(`"b"`))
	})
	st, err := s.ExecState(ctx, th.ID)
	if err != nil || len(st) != 2 || !jsonEqual(st["side"], []byte(`"b"`)) || !jsonEqual(st["turns"], []byte(`{"b":2,"a":1}`)) {
		t.Errorf("exec state: %s, %v", st, err)
	}
	if st, _ := s.ExecState(ctx, other.ID); len(st) != 0 {
		t.Errorf("other thread sees exec state %s", st)
	}
	err = s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.SetExecState("bad", json.RawMessage(`{nope`)) })
	wantCode(t, "invalid JSON exec state", err, weft.EInvalid)
}

func fullLog(id string, depth int) *weft.LogEntry {
	f := func(v float64) *float64 { return &v }
	return &weft.LogEntry{
		ID: id, RunID: "run_1", MessageID: "msg_1", ParentLogID: "log_p", RetryOfLogID: "log_r", Kind: "llm",
		Provider: "openai", Model: "m", ModelID: "gpt-x", Prompt: "main", Side: weft.SideA, Depth: depth, StatusCode: 200,
		FinishReason: "stop", Error: "e", ErrorType: "t", ErrorOrigin: "o", IsComplete: true,
		InputTokens: 1, CachedTokens: 2, OutputTokens: 3, ReasoningTokens: 4, TotalTokens: 10,
		CostInput: f(0.5), CostCached: f(0), CostOutput: f(1.25), CostTotal: f(1.75),
		LatencyMS: 100, TimeToFirstTokenMS: 20, GenerationMS: 80,
		RequestBody: json.RawMessage(`{"messages":[]}`), ResponseBody: json.RawMessage(`{"ok":true}`),
		ToolsOffered: []string{"a", "b"}, ToolsCalled: []string{"a"}, QueuedTools: []string{"q"}, ToolChoice: "auto",
		CreatedAt: baseTime().Add(time.Duration(depth) * time.Second),
	}
}

func testLogs(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		for i, d := range []int{0, 1, 0, 2} {
			if err := tx.PutLog(fullLog(fmt.Sprintf("log_%d", i+1), d)); err != nil {
				return err
			}
		}
		return nil
	})
	got, err := s.Log(ctx, th.ID, "log_2")
	if err != nil {
		t.Fatal(err)
	}
	want := *fullLog("log_2", 1)
	want.ThreadID = th.ID
	if !got.CreatedAt.Equal(want.CreatedAt) || !jsonEqual(got.RequestBody, want.RequestBody) || !jsonEqual(got.ResponseBody, want.ResponseBody) {
		t.Errorf("log times/bodies: %v %s %s", got.CreatedAt, got.RequestBody, got.ResponseBody)
	}
	got.CreatedAt, want.CreatedAt = time.Time{}, time.Time{}
	got.RequestBody, got.ResponseBody, want.RequestBody, want.ResponseBody = nil, nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Log:\n got %#v\nwant %#v", got, want)
	}
	// Replacing a row keeps its place; listing omits bodies.
	repl := fullLog("log_1", 0)
	repl.Error, repl.IsComplete, repl.CostTotal, repl.ToolsCalled = "", false, nil, nil
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.PutLog(repl) })
	ids := func(q weft.LogQuery) []string {
		ls, err := s.Logs(ctx, th.ID, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range ls {
			if l.RequestBody != nil || l.ResponseBody != nil {
				t.Errorf("Logs returned bodies for %s", l.ID)
			}
			out = append(out, l.ID)
		}
		return out
	}
	if got := ids(weft.LogQuery{MaxDepth: 5}); !slices.Equal(got, []string{"log_1", "log_2", "log_3", "log_4"}) {
		t.Errorf("all logs: %v", got)
	}
	if got := ids(weft.LogQuery{}); !slices.Equal(got, []string{"log_1", "log_3"}) {
		t.Errorf("top-level logs: %v", got)
	}
	if got := ids(weft.LogQuery{MaxDepth: 5, Limit: 2, Offset: 1}); !slices.Equal(got, []string{"log_2", "log_3"}) {
		t.Errorf("paged logs: %v", got)
	}
	l1, _ := s.Log(ctx, th.ID, "log_1")
	if l1.Error != "" || l1.IsComplete || l1.CostTotal != nil || l1.ToolsCalled != nil || l1.CostInput == nil || *l1.CostInput != 0.5 {
		t.Errorf("replaced log: %+v", l1)
	}
	auto := &weft.LogEntry{Kind: "tool_error"}
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.PutLog(auto) })
	if !strings.HasPrefix(auto.ID, "log_") || auto.CreatedAt.IsZero() || auto.ThreadID != th.ID {
		t.Errorf("PutLog defaults: %+v", auto)
	}
	_, err = s.Log(ctx, th.ID, "log_missing")
	wantErr(t, "Log(missing)", err, weft.ErrNotFound)
}

func testEvents(t *testing.T, s weft.Store) {
	ctx := t.Context()
	a, b := newThread(t, s, nil), newThread(t, s, nil)
	if evs, err := s.Events(ctx, a.ID, 0, 0); err != nil || len(evs) != 0 {
		t.Fatalf("Events of a new thread: %v %v", evs, err)
	}
	_, err := s.Events(ctx, "thr_missing", 0, 0)
	wantErr(t, "Events of an unknown thread", err, weft.ErrNotFound)
	batch := []weft.EventRecord{{Type: "run_started", Data: json.RawMessage(`{"run_id":"r1"}`)}, {Type: "message", Data: json.RawMessage(`{"n":1}`)}}
	mustTx(t, s, a.ID, func(tx weft.Tx) error { return tx.AppendEvents(batch) })
	if batch[0].Seq != 1 || batch[1].Seq != 2 || batch[0].ThreadID != a.ID || batch[1].CreatedAt.IsZero() {
		t.Errorf("AppendEvents assigned %+v", batch)
	}
	mustTx(t, s, b.ID, func(tx weft.Tx) error { return tx.AppendEvents([]weft.EventRecord{{Type: "other"}}) })
	// A failed transaction appends nothing and uses no seq.
	err = s.Tx(ctx, a.ID, nil, func(tx weft.Tx) error {
		if err := tx.AppendEvents([]weft.EventRecord{{Type: "lost"}}); err != nil {
			return err
		}
		return errors.New("rolled back")
	})
	if err == nil {
		t.Fatal("a failing Tx succeeded")
	}
	mustTx(t, s, a.ID, func(tx weft.Tx) error {
		if err := tx.AppendEvents([]weft.EventRecord{{Type: "step_started"}}); err != nil {
			return err
		}
		return tx.AppendEvents([]weft.EventRecord{{Type: "run_stopped", Data: json.RawMessage(`{"reason":"done"}`)}})
	})
	evs, err := s.Events(ctx, a.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%d:%s:%s", e.Seq, e.Type, e.Data))
	}
	want := []string{`1:run_started:{"run_id":"r1"}`, `2:message:{"n":1}`, "3:step_started:null", `4:run_stopped:{"reason":"done"}`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Events = %v, want %v", got, want)
	}
	if evs, _ := s.Events(ctx, a.ID, 2, 1); len(evs) != 1 || evs[0].Seq != 3 {
		t.Errorf("Events after 2, limit 1: %+v", evs)
	}
	if evs, _ := s.Events(ctx, a.ID, 4, 0); len(evs) != 0 {
		t.Errorf("Events after the last: %+v", evs)
	}
	if evs, _ := s.Events(ctx, b.ID, 0, 0); len(evs) != 1 || evs[0].Seq != 1 || evs[0].Type != "other" {
		t.Errorf("thread b's events: %+v", evs)
	}
	// A stale fence appends nothing.
	f, err := s.AcquireLease(ctx, a.ID, "n1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	stale := f
	stale.Token--
	err = s.Tx(ctx, a.ID, &stale, func(tx weft.Tx) error { return tx.AppendEvents([]weft.EventRecord{{Type: "fenced"}}) })
	wantErr(t, "AppendEvents with a stale fence", err, weft.ErrLeaseLost)
	mustTxFenced(t, s, a.ID, &f, func(tx weft.Tx) error { return tx.AppendEvents([]weft.EventRecord{{Type: "fenced"}}) })
	if evs, _ := s.Events(ctx, a.ID, 4, 0); len(evs) != 1 || evs[0].Seq != 5 {
		t.Errorf("after a stale and a live fence: %+v", evs)
	}
	if err := s.DeleteThread(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.Events(ctx, a.ID, 0, 0)
	wantErr(t, "Events of a deleted thread", err, weft.ErrNotFound)
}

// testEventsConcurrent: 16 writers appending to one thread get a gap-free, unique numbering.
func testEventsConcurrent(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	const writers, each = 16, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
					return tx.AppendEvents([]weft.EventRecord{{Type: fmt.Sprintf("w%d-%d", w, i)}})
				})
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	evs, err := s.Events(ctx, th.ID, 0, 1000)
	if err != nil || len(evs) != writers*each {
		t.Fatalf("Events: %d %v", len(evs), err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
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

func testKV(t *testing.T, s weft.Store) {
	ctx := t.Context()
	a, b := newThread(t, s, nil), newThread(t, s, nil)
	vals := map[string]string{"obj": `{"x":[1,2,{"y":null}],"s":"é"}`, "str": `"text"`, "num": `42`}
	mustTx(t, s, a.ID, func(tx weft.Tx) error {
		for k, v := range vals {
			if err := tx.SetKV(k, json.RawMessage(v)); err != nil {
				return err
			}
		}
		return nil
	})
	mustTx(t, s, b.ID, func(tx weft.Tx) error { return tx.SetKV("obj", json.RawMessage(`"b's"`)) })
	for k, v := range vals {
		got, found, err := s.GetKV(ctx, a.ID, k)
		if err != nil || !found || !jsonEqual(got, []byte(v)) {
			t.Errorf("GetKV %s = %s %v %v, want %s", k, got, found, err, v)
		}
	}
	if got, _, _ := s.GetKV(ctx, b.ID, "obj"); !jsonEqual(got, []byte(`"b's"`)) {
		t.Errorf("thread b sees %s", got)
	}
	if _, found, _ := s.GetKV(ctx, b.ID, "num"); found {
		t.Error("thread b sees thread a's key")
	}
	mustTx(t, s, a.ID, func(tx weft.Tx) error { return tx.SetKV("num", nil) })
	if _, found, err := s.GetKV(ctx, a.ID, "num"); found || err != nil {
		t.Errorf("deleted key: found %v, %v", found, err)
	}
	all, err := s.ListKV(ctx, a.ID)
	if err != nil || len(all) != 2 || !jsonEqual(all["str"], []byte(`"text"`)) {
		t.Errorf("ListKV: %s %v", all, err)
	}
	err = s.Tx(ctx, a.ID, nil, func(tx weft.Tx) error { return tx.SetKV("bad", json.RawMessage(`{`)) })
	wantCode(t, "invalid JSON value", err, weft.EInvalid)
	err = s.Tx(ctx, a.ID, nil, func(tx weft.Tx) error { return tx.SetKV("", json.RawMessage(`1`)) })
	wantCode(t, "empty key", err, weft.EInvalid)
	err = s.Tx(ctx, a.ID, nil, func(tx weft.Tx) error { return tx.SetKV(strings.Repeat("k", 257), json.RawMessage(`1`)) })
	wantCode(t, "long key", err, weft.EInvalid)
}

// --- files ---

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func writeFile(t *testing.T, s weft.Store, threadID, p string, data []byte, mime string) weft.FileInfo {
	t.Helper()
	fi := weft.FileInfo{Path: p, MimeType: mime}
	mustTx(t, s, threadID, func(tx weft.Tx) error { return tx.WriteFile(&fi, data) })
	return fi
}

func testFileRoundTrip(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	fs := s.Files()
	sizes := []int{0, 1, weft.ChunkSize, weft.ChunkSize + 1, 10 << 20}
	var total int64
	for _, n := range sizes {
		data := pattern(n)
		p := fmt.Sprintf("/data/f%d.bin", n)
		fi := writeFile(t, s, th.ID, p, data, "application/octet-stream")
		if fi.Path != p || fi.Name != fmt.Sprintf("f%d.bin", n) || fi.Size != int64(n) || fi.CreatedAt.IsZero() {
			t.Errorf("WriteFile set %+v", fi)
		}
		total += int64(n)
		got, err := fs.ReadFile(ctx, th.ID, p)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("ReadFile %d B: %d B back, %v", n, len(got), err)
		}
		rc, err := fs.Open(ctx, th.ID, p)
		if err != nil {
			t.Fatalf("Open %d B: %v", n, err)
		}
		got, err = io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("Open %d B: %d B back, %v", n, len(got), err)
		}
		st, err := fs.Stat(ctx, th.ID, p)
		if err != nil || st.Size != int64(n) || st.IsDir || st.MimeType != "application/octet-stream" {
			t.Errorf("Stat %d B: %+v %v", n, st, err)
		}
	}
	if u, err := fs.Usage(ctx, th.ID); err != nil || u.Files != len(sizes) || u.Bytes != total {
		t.Errorf("Usage: %+v %v, want %d files %d bytes", u, err, len(sizes), total)
	}
	// Replacing a file switches between chunked and inline storage and keeps its creation time.
	p := fmt.Sprintf("/data/f%d.bin", 10<<20)
	before, _ := fs.Stat(ctx, th.ID, p)
	writeFile(t, s, th.ID, p, []byte("small now"), "text/plain")
	if got, _ := fs.ReadFile(ctx, th.ID, p); string(got) != "small now" {
		t.Errorf("replaced chunked file reads %d B", len(got))
	}
	after, _ := fs.Stat(ctx, th.ID, p)
	if !after.CreatedAt.Equal(before.CreatedAt) || after.Size != 9 || after.MimeType != "text/plain" {
		t.Errorf("replaced file: %+v", after)
	}
	big := pattern(weft.ChunkSize*2 + 5)
	writeFile(t, s, th.ID, "/data/f1.bin", big, "")
	if got, _ := fs.ReadFile(ctx, th.ID, "/data/f1.bin"); !bytes.Equal(got, big) {
		t.Errorf("inline file replaced by chunked reads %d B", len(got))
	}
	// Metadata and image fields round-trip.
	fi := weft.FileInfo{Path: "/img.png", MimeType: "image/png", Width: 4, Height: 3, Description: "a dot", Metadata: map[string]any{"k": 1}}
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.WriteFile(&fi, []byte{0x89, 'P', 'N', 'G'}) })
	st, err := fs.Stat(ctx, th.ID, "/img.png")
	if err != nil || st.Width != 4 || st.Height != 3 || st.Description != "a dot" || !reflect.DeepEqual(st.Metadata, map[string]any{"k": 1.0}) || st.Name != "img.png" {
		t.Errorf("image stat: %+v %v", st, err)
	}
	if fi := writeFile(t, s, th.ID, "/notes.md", []byte("# hi"), ""); !strings.HasPrefix(fi.MimeType, "text/markdown") {
		t.Errorf("detected MIME of .md: %q", fi.MimeType)
	}
	_, err = fs.ReadFile(ctx, th.ID, "/missing")
	wantErr(t, "ReadFile(missing)", err, weft.ErrNotFound)
	_, err = fs.Open(ctx, th.ID, "/missing")
	wantErr(t, "Open(missing)", err, weft.ErrNotFound)
}

func names(fis []weft.FileInfo) []string {
	out := make([]string, len(fis))
	for i, f := range fis {
		out[i] = f.Name
	}
	return out
}

func paths(fis []weft.FileInfo) []string {
	out := make([]string, len(fis))
	for i, f := range fis {
		out[i] = f.Path
	}
	return out
}

func testFileDirs(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	fs := s.Files()
	writeFile(t, s, th.ID, "/a/b/c.txt", []byte("c"), "")
	for _, d := range []string{"/", "/a", "/a/b"} {
		if st, err := fs.Stat(ctx, th.ID, d); err != nil || !st.IsDir || st.Path != d {
			t.Errorf("Stat(%s) = %+v, %v; want a directory", d, st, err)
		}
	}
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		if err := tx.Mkdir("/a/x/y"); err != nil {
			return err
		}
		return tx.Mkdir("/a/x") // existing: fine
	})
	writeFile(t, s, th.ID, "/a/z.txt", []byte("z"), "")
	writeFile(t, s, th.ID, "/a/m.txt", []byte("m"), "")
	if got, err := fs.ReadDir(ctx, th.ID, "/"); err != nil || !slices.Equal(names(got), []string{"a"}) {
		t.Errorf("ReadDir(/) = %v, %v", names(got), err)
	}
	got, err := fs.ReadDir(ctx, th.ID, "/a")
	if err != nil || !slices.Equal(names(got), []string{"b", "m.txt", "x", "z.txt"}) || !slices.Equal(paths(got), []string{"/a/b", "/a/m.txt", "/a/x", "/a/z.txt"}) {
		t.Errorf("ReadDir(/a) = %v, %v", paths(got), err)
	} else if !got[0].IsDir || got[1].IsDir || got[1].Size != 1 {
		t.Errorf("ReadDir(/a) entries: %+v", got)
	}
	_, err = fs.ReadDir(ctx, th.ID, "/nope")
	wantErr(t, "ReadDir(missing)", err, weft.ErrNotFound)
	if _, err := fs.ReadDir(ctx, th.ID, "/a/m.txt"); err == nil {
		t.Error("ReadDir of a file succeeded")
	}
	tx := func(fn func(weft.Tx) error) error { return s.Tx(ctx, th.ID, nil, fn) }
	wantCode(t, "RemoveDir(non-empty)", tx(func(tx weft.Tx) error { return tx.RemoveDir("/a", false) }), weft.EConflict)
	wantCode(t, "WriteFile below a file", tx(func(tx weft.Tx) error {
		return tx.WriteFile(&weft.FileInfo{Path: "/a/m.txt/inner"}, []byte("x"))
	}), weft.EConflict)
	wantCode(t, "WriteFile onto a directory", tx(func(tx weft.Tx) error { return tx.WriteFile(&weft.FileInfo{Path: "/a/x"}, nil) }), weft.EConflict)
	wantCode(t, "Mkdir onto a file", tx(func(tx weft.Tx) error { return tx.Mkdir("/a/m.txt") }), weft.EConflict)
	if err := tx(func(tx weft.Tx) error { return tx.RemoveFile("/a/x") }); err == nil {
		t.Error("RemoveFile of a directory succeeded")
	}
	if err := tx(func(tx weft.Tx) error { return tx.RemoveDir("/a/m.txt", false) }); err == nil {
		t.Error("RemoveDir of a file succeeded")
	}
	wantErr(t, "RemoveFile(missing)", tx(func(tx weft.Tx) error { return tx.RemoveFile("/a/none") }), weft.ErrNotFound)
	wantErr(t, "RemoveDir(missing)", tx(func(tx weft.Tx) error { return tx.RemoveDir("/none", true) }), weft.ErrNotFound)
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		if err := tx.RemoveDir("/a/x/y", false); err != nil {
			return err
		}
		return tx.RemoveFile("/a/m.txt")
	})
	if got, _ := fs.ReadDir(ctx, th.ID, "/a"); !slices.Equal(names(got), []string{"b", "x", "z.txt"}) {
		t.Errorf("after removals: %v", names(got))
	}
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.RemoveDir("/a", true) })
	_, err = fs.Stat(ctx, th.ID, "/a/b/c.txt")
	wantErr(t, "Stat after recursive RemoveDir", err, weft.ErrNotFound)
	if u, _ := fs.Usage(ctx, th.ID); u.Files != 0 || u.Bytes != 0 {
		t.Errorf("usage after removing everything: %+v", u)
	}
	if got, err := fs.ReadDir(ctx, th.ID, "/"); err != nil || len(got) != 0 {
		t.Errorf("ReadDir(/) of an empty filesystem = %v, %v", got, err)
	}
}

func testFileRename(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	fs := s.Files()
	writeFile(t, s, th.ID, "/x/a.txt", []byte("aaa"), "")
	writeFile(t, s, th.ID, "/x/b.txt", []byte("bbb"), "")
	big := pattern(weft.ChunkSize + 10)
	writeFile(t, s, th.ID, "/x/big.bin", big, "")
	tx := func(fn func(weft.Tx) error) error { return s.Tx(ctx, th.ID, nil, fn) }
	wantCode(t, "Rename onto existing", tx(func(tx weft.Tx) error { return tx.RenameFile("/x/a.txt", "/x/b.txt") }), weft.EConflict)
	wantErr(t, "Rename(missing)", tx(func(tx weft.Tx) error { return tx.RenameFile("/x/none", "/x/c") }), weft.ErrNotFound)
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.RenameFile("/x/a.txt", "/y/z/c.txt") })
	if got, err := fs.ReadFile(ctx, th.ID, "/y/z/c.txt"); err != nil || string(got) != "aaa" {
		t.Errorf("renamed file: %q %v", got, err)
	}
	if st, err := fs.Stat(ctx, th.ID, "/y/z/c.txt"); err != nil || st.Name != "c.txt" || st.Path != "/y/z/c.txt" {
		t.Errorf("renamed stat: %+v %v", st, err)
	}
	_, err := fs.Stat(ctx, th.ID, "/x/a.txt")
	wantErr(t, "old path after rename", err, weft.ErrNotFound)
	// Directories move with their contents, chunked files included.
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.RenameFile("/x", "/w") })
	if got, err := fs.ReadFile(ctx, th.ID, "/w/big.bin"); err != nil || !bytes.Equal(got, big) {
		t.Errorf("moved chunked file: %d B, %v", len(got), err)
	}
	if got, _ := fs.ReadDir(ctx, th.ID, "/w"); !slices.Equal(paths(got), []string{"/w/b.txt", "/w/big.bin"}) {
		t.Errorf("moved dir lists %v", paths(got))
	}
	if _, err := fs.Stat(ctx, th.ID, "/x/b.txt"); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("old dir content after move: %v", err)
	}
	if err := tx(func(tx weft.Tx) error { return tx.RenameFile("/w", "/w/sub") }); err == nil {
		t.Error("moving a directory into itself succeeded")
	}
}

func testFilePaths(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	fs := s.Files()
	for _, p := range []string{"", "rel/a.txt", "../x", "/../x", "/a/../../x", "/a//b", "/a\x00b", `/a\b`, "/" + strings.Repeat("x", 1024)} {
		err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.WriteFile(&weft.FileInfo{Path: p}, []byte("x")) })
		wantErr(t, fmt.Sprintf("WriteFile(%q)", p), err, weft.ErrInvalidPath)
		_, err = fs.Stat(ctx, th.ID, p)
		wantErr(t, fmt.Sprintf("Stat(%q)", p), err, weft.ErrInvalidPath)
		_, err = fs.ReadFile(ctx, th.ID, p)
		wantErr(t, fmt.Sprintf("ReadFile(%q)", p), err, weft.ErrInvalidPath)
	}
	err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.RenameFile("/a", "/../b") })
	wantErr(t, "RenameFile to an escaping path", err, weft.ErrInvalidPath)
	fi := writeFile(t, s, th.ID, "/a/./b/../c.txt/", []byte("x"), "")
	if fi.Path != "/a/c.txt" {
		t.Errorf("cleaned path %q, want /a/c.txt", fi.Path)
	}
	if got, err := fs.ReadFile(ctx, th.ID, "/a/b/../c.txt"); err != nil || string(got) != "x" {
		t.Errorf("read via uncleaned path: %q %v", got, err)
	}
	if u, _ := fs.Usage(ctx, th.ID); u.Files != 1 {
		t.Errorf("invalid writes stored files: %+v", u)
	}
}

func testFileGrep(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	writeFile(t, s, th.ID, "/docs/a.md", []byte("alpha\nBeta\nalphabet\n"), "")
	writeFile(t, s, th.ID, "/docs/sub/b.txt", []byte("gamma\r\nALPHA one\nlast alpha"), "")
	writeFile(t, s, th.ID, "/src/c.go", []byte("package alpha"), "")
	writeFile(t, s, th.ID, "/docs/e.json", []byte(`{"alpha": 1}`), "application/json")
	writeFile(t, s, th.ID, "/bin/d.bin", []byte("alpha"), "application/octet-stream")
	big := append(bytes.Repeat([]byte("filler line\n"), weft.ChunkSize/12+10), []byte("needle alpha at the end\n")...)
	writeFile(t, s, th.ID, "/big/log.txt", big, "text/plain")
	bigLine := len(bytes.Split(big, []byte("\n"))) - 1
	str := func(ms []weft.GrepMatch) []string {
		out := []string{}
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%s:%d:%s", m.Path, m.Line, m.Text))
		}
		return out
	}
	cases := []struct {
		name    string
		pattern string
		o       weft.GrepOptions
		want    []string
	}{
		{"plain", "alpha", weft.GrepOptions{}, []string{
			fmt.Sprintf("/big/log.txt:%d:needle alpha at the end", bigLine),
			"/docs/a.md:1:alpha", "/docs/a.md:3:alphabet", `/docs/e.json:1:{"alpha": 1}`, "/docs/sub/b.txt:3:last alpha", "/src/c.go:1:package alpha"}},
		{"ignore case", "^alpha", weft.GrepOptions{IgnoreCase: true, Path: "/docs/sub"}, []string{"/docs/sub/b.txt:2:ALPHA one"}},
		{"regexp", `^(al|Be)\w+$`, weft.GrepOptions{Path: "/docs"}, []string{"/docs/a.md:1:alpha", "/docs/a.md:2:Beta", "/docs/a.md:3:alphabet"}},
		{"path prefix is a directory", "alpha", weft.GrepOptions{Path: "/doc"}, []string{}},
		{"glob", "alpha", weft.GrepOptions{Glob: "**/*.md"}, []string{"/docs/a.md:1:alpha", "/docs/a.md:3:alphabet"}},
		{"max results", "alpha", weft.GrepOptions{MaxResults: 2}, []string{fmt.Sprintf("/big/log.txt:%d:needle alpha at the end", bigLine), "/docs/a.md:1:alpha"}},
		{"none", "zebra", weft.GrepOptions{}, []string{}},
	}
	for _, c := range cases {
		got, err := s.Files().Grep(ctx, th.ID, c.pattern, c.o)
		if err != nil || !slices.Equal(str(got), c.want) {
			t.Errorf("%s: got %q (%v)\nwant %q", c.name, str(got), err, c.want)
		}
	}
	_, err := s.Files().Grep(ctx, th.ID, "(", weft.GrepOptions{})
	wantCode(t, "bad pattern", err, weft.EInvalid)
}

func testFileFind(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	for _, p := range []string{"/a.md", "/docs/x.md", "/docs/sub/y.md", "/docs/z.txt", "/other/deep/er/q.md"} {
		writeFile(t, s, th.ID, p, []byte(p), "")
	}
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.Mkdir("/docs/empty.md") })
	cases := []struct {
		glob string
		want []string
	}{
		{"**/*.md", []string{"/a.md", "/docs/sub/y.md", "/docs/x.md", "/other/deep/er/q.md"}},
		{"/docs/*.md", []string{"/docs/x.md"}},
		{"docs/**", []string{"/docs/sub/y.md", "/docs/x.md", "/docs/z.txt"}},
		{"/other/**/q.md", []string{"/other/deep/er/q.md"}},
		{"*.md", []string{"/a.md"}},
		{"/docs/?.txt", []string{"/docs/z.txt"}},
		{"/nothing/**", []string{}},
	}
	for _, c := range cases {
		got, err := s.Files().Find(ctx, th.ID, c.glob)
		if err != nil || !slices.Equal(paths(got), c.want) {
			t.Errorf("Find(%q) = %v (%v), want %v", c.glob, paths(got), err, c.want)
		}
	}
	_, err := s.Files().Find(ctx, th.ID, "/[")
	wantCode(t, "bad glob", err, weft.EInvalid)
}

// --- env ---

func testEnv(t *testing.T, s weft.Store) {
	ctx := t.Context()
	set := func(scope weft.EnvScope, owner string, vs ...weft.EnvValue) {
		t.Helper()
		if err := s.SetEnv(ctx, scope, owner, vs); err != nil {
			t.Fatalf("SetEnv: %v", err)
		}
	}
	get := func(scope weft.EnvScope, owner string) string {
		t.Helper()
		vs, err := s.Env(ctx, scope, owner)
		if err != nil {
			t.Fatalf("Env: %v", err)
		}
		var b []string
		for _, v := range vs {
			if v.UpdatedAt.IsZero() || v.Delete {
				t.Errorf("value %s: %+v", v.Name, v)
			}
			b = append(b, v.Name+"="+v.Value+":"+string(v.Type))
		}
		return strings.Join(b, " ")
	}
	set(weft.EnvUser, "u1", weft.EnvValue{Name: "B", Value: "text-b", Type: weft.VarText},
		weft.EnvValue{Name: "A", Value: "sk-secret-a", Type: weft.VarSecret}, weft.EnvValue{Name: "C", Value: "untyped"})
	if got := get(weft.EnvUser, "u1"); got != "A=sk-secret-a:secret B=text-b:text C=untyped:secret" {
		t.Errorf("user env: %s", got)
	}
	set(weft.EnvUser, "u1", weft.EnvValue{Name: "A", Value: "sk-rotated", Type: weft.VarSecret}, weft.EnvValue{Name: "B", Delete: true},
		weft.EnvValue{Name: "unicode", Value: "ключ ✓", Type: weft.VarText})
	if got := get(weft.EnvUser, "u1"); got != "A=sk-rotated:secret C=untyped:secret unicode=ключ ✓:text" {
		t.Errorf("user env after update: %s", got)
	}
	if got := get(weft.EnvUser, "u2"); got != "" {
		t.Errorf("other user sees %s", got)
	}
	set(weft.EnvInstance, "", weft.EnvValue{Name: "A", Value: "instance", Type: weft.VarText})
	if got := get(weft.EnvInstance, ""); got != "A=instance:text" {
		t.Errorf("instance env: %s", got)
	}
	th := &weft.Thread{Agent: "agent"}
	if err := s.CreateThread(ctx, th, []weft.EnvValue{{Name: "T", Value: "thread-value", Type: weft.VarSecret}}); err != nil {
		t.Fatal(err)
	}
	if got := get(weft.EnvThread, th.ID); got != "T=thread-value:secret" {
		t.Errorf("thread env from CreateThread: %s", got)
	}
	wantCode(t, "unknown scope", s.SetEnv(ctx, "galaxy", "x", []weft.EnvValue{{Name: "A", Value: "v"}}), weft.EInvalid)
	wantCode(t, "unknown type", s.SetEnv(ctx, weft.EnvUser, "u1", []weft.EnvValue{{Name: "A", Value: "v", Type: "number"}}), weft.EInvalid)
	wantCode(t, "empty name", s.SetEnv(ctx, weft.EnvUser, "u1", []weft.EnvValue{{Value: "v"}}), weft.EInvalid)
	bad := &weft.Thread{Agent: "agent"}
	if err := s.CreateThread(ctx, bad, []weft.EnvValue{{Name: "", Value: "v"}}); err == nil {
		t.Error("CreateThread accepted an env value without a name")
	} else if _, err := s.Thread(ctx, bad.ID); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("failed CreateThread stored the thread: %v", err)
	}
}

// --- transactions and leases ---

// writeEverything performs one write of every kind on the thread.
func writeEverything(tx weft.Tx) error {
	label := "changed"
	for _, err := range []error{
		tx.UpdateThread(weft.ThreadPatch{Label: &label}),
		tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "x"}),
		tx.PutToolCall(&weft.ToolCallRecord{CallID: "c1", Name: "t"}),
		tx.SetExecState("k", json.RawMessage(`1`)),
		tx.PutLog(&weft.LogEntry{ID: "log_x", Kind: "llm"}),
		tx.SetKV("k", json.RawMessage(`1`)),
		tx.WriteFile(&weft.FileInfo{Path: "/d/f.txt"}, []byte("x")),
		tx.Mkdir("/e"),
		tx.RemoveFile("/keep.txt"),
	} {
		if err != nil {
			return err
		}
	}
	_, err := tx.DrainQueue(0)
	return err
}

// checkUntouched verifies that no write of writeEverything is visible.
func checkUntouched(t *testing.T, s weft.Store, threadID string) {
	t.Helper()
	ctx := t.Context()
	if th, _ := s.Thread(ctx, threadID); th == nil || th.Label != "" {
		t.Errorf("thread label changed: %+v", th)
	}
	if ms, _ := s.Messages(ctx, threadID, weft.MessageQuery{}); len(ms) != 0 {
		t.Errorf("%d messages visible", len(ms))
	}
	if cs, _ := s.ToolCalls(ctx, threadID); len(cs) != 0 {
		t.Errorf("tool calls visible: %v", cs)
	}
	if st, _ := s.ExecState(ctx, threadID); len(st) != 0 {
		t.Errorf("exec state visible: %s", st)
	}
	if _, err := s.Log(ctx, threadID, "log_x"); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("log visible: %v", err)
	}
	if _, found, _ := s.GetKV(ctx, threadID, "k"); found {
		t.Error("kv visible")
	}
	if _, err := s.Files().Stat(ctx, threadID, "/d/f.txt"); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("file visible: %v", err)
	}
	if _, err := s.Files().Stat(ctx, threadID, "/e"); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("dir visible: %v", err)
	}
	if _, err := s.Files().Stat(ctx, threadID, "/keep.txt"); err != nil {
		t.Errorf("removed file gone: %v", err)
	}
	if q, _ := s.Queued(ctx, threadID); len(q) != 1 {
		t.Errorf("queue has %d rows, want 1", len(q))
	}
}

// prepare gives a thread one file and one queued message for writeEverything to consume.
func prepare(t *testing.T, s weft.Store) *weft.Thread {
	th := newThread(t, s, nil)
	writeFile(t, s, th.ID, "/keep.txt", []byte("keep"), "")
	if err := s.PushQueue(t.Context(), &weft.QueuedMessage{ThreadID: th.ID, Content: "queued"}); err != nil {
		t.Fatal(err)
	}
	return th
}

func testTxAllOrNothing(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := prepare(t, s)
	boom := errors.New("boom")
	err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		if err := writeEverything(tx); err != nil {
			t.Errorf("writes failed: %v", err)
		}
		return boom
	})
	wantErr(t, "failing Tx", err, boom)
	checkUntouched(t, s, th.ID)
	m := &weft.Message{Role: weft.RoleUser}
	insert(t, s, th.ID, m)
	if m.Seq != 1 {
		t.Errorf("seq after a rolled-back insert: %d, want 1", m.Seq)
	}
	c, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Tx(c, th.ID, nil, func(tx weft.Tx) error { return writeEverything(tx) }); err == nil {
		t.Error("Tx with a cancelled context succeeded")
	}
}

func testTxPanic(t *testing.T, s weft.Store) {
	th := prepare(t, s)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic in fn was swallowed")
			}
		}()
		_ = s.Tx(t.Context(), th.ID, nil, func(tx weft.Tx) error {
			_ = writeEverything(tx)
			panic("fn panics")
		})
	}()
	checkUntouched(t, s, th.ID)
	insert(t, s, th.ID, &weft.Message{Role: weft.RoleUser}) // the thread is not left locked
}

func testTxReadsInside(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	insert(t, s, th.ID, &weft.Message{Role: weft.RoleUser, Content: "committed"})
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "staged"}); err != nil {
			return err
		}
		// Reads inside fn see committed data only, and do not deadlock.
		ms, err := s.Messages(ctx, th.ID, weft.MessageQuery{})
		if err != nil || len(ms) != 1 || ms[0].Content != "committed" {
			t.Errorf("read inside Tx: %v %v", ms, err)
		}
		_, err = s.Thread(ctx, th.ID)
		return err
	})
	if ms, _ := s.Messages(ctx, th.ID, weft.MessageQuery{}); len(ms) != 2 {
		t.Errorf("after Tx: %d messages", len(ms))
	}
}

func testUnknownThread(t *testing.T, s weft.Store) {
	ctx := t.Context()
	const id = "thr_unknown"
	// Lists are empty; single things are ErrNotFound; writes are ErrNotFound.
	if ms, err := s.Messages(ctx, id, weft.MessageQuery{}); err != nil || len(ms) != 0 {
		t.Errorf("Messages: %v %v", ms, err)
	}
	if cs, err := s.ToolCalls(ctx, id); err != nil || len(cs) != 0 {
		t.Errorf("ToolCalls: %v %v", cs, err)
	}
	if st, err := s.ExecState(ctx, id); err != nil || len(st) != 0 {
		t.Errorf("ExecState: %v %v", st, err)
	}
	if q, err := s.Queued(ctx, id); err != nil || len(q) != 0 {
		t.Errorf("Queued: %v %v", q, err)
	}
	if ls, err := s.Logs(ctx, id, weft.LogQuery{}); err != nil || len(ls) != 0 {
		t.Errorf("Logs: %v %v", ls, err)
	}
	if _, found, err := s.GetKV(ctx, id, "k"); err != nil || found {
		t.Errorf("GetKV: %v %v", found, err)
	}
	if kv, err := s.ListKV(ctx, id); err != nil || len(kv) != 0 {
		t.Errorf("ListKV: %v %v", kv, err)
	}
	if u, err := s.Files().Usage(ctx, id); err != nil || u.Files != 0 {
		t.Errorf("Usage: %v %v", u, err)
	}
	if fs, err := s.Files().Find(ctx, id, "**"); err != nil || len(fs) != 0 {
		t.Errorf("Find: %v %v", fs, err)
	}
	if gs, err := s.Files().Grep(ctx, id, "x", weft.GrepOptions{}); err != nil || len(gs) != 0 {
		t.Errorf("Grep: %v %v", gs, err)
	}
	_, err := s.Message(ctx, id, "msg_x")
	wantErr(t, "Message", err, weft.ErrNotFound)
	_, err = s.Log(ctx, id, "log_x")
	wantErr(t, "Log", err, weft.ErrNotFound)
	_, err = s.Files().Stat(ctx, id, "/")
	wantErr(t, "Stat(/)", err, weft.ErrNotFound)
	_, err = s.Files().ReadDir(ctx, id, "/")
	wantErr(t, "ReadDir(/)", err, weft.ErrNotFound)
	_, err = s.Files().ReadFile(ctx, id, "/f")
	wantErr(t, "ReadFile", err, weft.ErrNotFound)
	// A deleted thread is unknown too.
	th := newThread(t, s, nil)
	if err := s.DeleteThread(ctx, th.ID); err != nil {
		t.Fatal(err)
	}
	err = s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.InsertMessage(&weft.Message{Role: weft.RoleUser}) })
	wantErr(t, "Tx on a deleted thread", err, weft.ErrNotFound)
	wantErr(t, "PushQueue on a deleted thread", s.PushQueue(ctx, &weft.QueuedMessage{ThreadID: th.ID}), weft.ErrNotFound)
}

func testFenceStale(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := prepare(t, s)
	f, err := s.AcquireLease(ctx, th.ID, "node-a", time.Hour)
	if err != nil || f.Token <= 0 || f.Node != "node-a" || f.ThreadID != th.ID {
		t.Fatalf("AcquireLease = %+v, %v", f, err)
	}
	_, err = s.AcquireLease(ctx, th.ID, "node-b", time.Hour)
	wantErr(t, "AcquireLease while held", err, weft.ErrLeaseHeld)
	_, err = s.AcquireLease(ctx, th.ID, "node-a", time.Hour)
	wantErr(t, "AcquireLease by the holder again", err, weft.ErrLeaseHeld)
	for _, bad := range []weft.Fence{{Node: "node-a", Token: f.Token - 1, ThreadID: th.ID}, {Node: "node-a", Token: f.Token + 1, ThreadID: th.ID}, {Node: "node-b", Token: f.Token, ThreadID: th.ID}} {
		err := s.Tx(ctx, th.ID, &bad, writeEverything)
		wantErr(t, fmt.Sprintf("Tx with fence %+v", bad), err, weft.ErrLeaseLost)
		wantErr(t, "RenewLease with a stale fence", s.RenewLease(ctx, bad, time.Hour), weft.ErrLeaseLost)
	}
	checkUntouched(t, s, th.ID)
	if err := s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error { return tx.InsertMessage(&weft.Message{Role: weft.RoleUser}) }); err != nil {
		t.Fatalf("Tx with the live fence: %v", err)
	}
	if err := s.RenewLease(ctx, f, time.Hour); err != nil {
		t.Fatalf("RenewLease: %v", err)
	}
	if err := s.ReleaseLease(ctx, f); err != nil {
		t.Fatal(err)
	}
	err = s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error { return nil })
	wantErr(t, "Tx after release", err, weft.ErrLeaseLost)
	if err := s.ReleaseLease(ctx, f); err != nil {
		t.Errorf("second release: %v", err)
	}
	g, err := s.AcquireLease(ctx, th.ID, "node-b", time.Hour)
	if err != nil || g.Token <= f.Token {
		t.Fatalf("acquire after release: %+v, %v (previous token %d)", g, err, f.Token)
	}
	_, err = s.AcquireLease(ctx, "thr_missing", "node-a", time.Hour)
	wantErr(t, "AcquireLease(unknown thread)", err, weft.ErrNotFound)
}

func testLeaseExpiry(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := prepare(t, s)
	old, err := s.AcquireLease(ctx, th.ID, "node-a", 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	err = s.Tx(ctx, th.ID, &old, writeEverything)
	wantErr(t, "Tx on an expired lease", err, weft.ErrLeaseLost)
	checkUntouched(t, s, th.ID)
	f, err := s.AcquireLease(ctx, th.ID, "node-b", time.Hour)
	if err != nil || f.Token <= old.Token {
		t.Fatalf("takeover: %+v, %v (old token %d)", f, err, old.Token)
	}
	err = s.Tx(ctx, th.ID, &old, writeEverything)
	wantErr(t, "Tx with the old owner's fence", err, weft.ErrLeaseLost)
	wantErr(t, "RenewLease by the old owner", s.RenewLease(ctx, old, time.Hour), weft.ErrLeaseLost)
	if err := s.ReleaseLease(ctx, old); err != nil {
		t.Errorf("stale release: %v", err)
	}
	checkUntouched(t, s, th.ID)
	if err := s.Tx(ctx, th.ID, &f, writeEverything); err != nil {
		t.Fatalf("Tx by the new owner: %v", err)
	}
	if ms, _ := s.Messages(ctx, th.ID, weft.MessageQuery{}); len(ms) != 1 {
		t.Errorf("new owner's write not visible")
	}
}

func testTxReleaseLease(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	f, err := s.AcquireLease(ctx, th.ID, "node-a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// A failing Tx releases nothing and writes nothing.
	boom := errors.New("boom")
	err = s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error {
		if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "lost"}); err != nil {
			return err
		}
		if err := tx.ReleaseLease(); err != nil {
			return err
		}
		return boom
	})
	wantErr(t, "failing Tx with ReleaseLease", err, boom)
	_, err = s.AcquireLease(ctx, th.ID, "node-b", time.Hour)
	wantErr(t, "AcquireLease after a failed release", err, weft.ErrLeaseHeld)
	if err := s.RenewLease(ctx, f, time.Hour); err != nil {
		t.Errorf("lease lost by a failed release: %v", err)
	}
	// A committed one releases the lease together with its writes.
	final := &weft.Message{Role: weft.RoleAssistant, Content: "done"}
	err = s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error {
		if err := tx.ReleaseLease(); err != nil {
			return err
		}
		return tx.InsertMessage(final) // writes after ReleaseLease still belong to the Tx
	})
	if err != nil {
		t.Fatalf("Tx with ReleaseLease: %v", err)
	}
	if ms, _ := s.Messages(ctx, th.ID, weft.MessageQuery{}); len(ms) != 1 || ms[0].ID != final.ID {
		t.Errorf("messages after the releasing Tx: %+v", ms)
	}
	g, err := s.AcquireLease(ctx, th.ID, "node-b", time.Hour)
	if err != nil || g.Token <= f.Token {
		t.Fatalf("AcquireLease after the releasing Tx: %+v, %v (previous token %d)", g, err, f.Token)
	}
	err = s.Tx(ctx, th.ID, &f, func(weft.Tx) error { return nil })
	wantErr(t, "Tx with the released fence", err, weft.ErrLeaseLost)
	// Without a fence, ReleaseLease is a no-op.
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.ReleaseLease() })
	_, err = s.AcquireLease(ctx, th.ID, "node-c", time.Hour)
	wantErr(t, "AcquireLease after an unfenced ReleaseLease", err, weft.ErrLeaseHeld)
	// A fence without ThreadID is the Tx's own thread.
	own := g
	own.ThreadID = ""
	if err := s.Tx(ctx, th.ID, &own, func(tx weft.Tx) error { return tx.ReleaseLease() }); err != nil {
		t.Fatalf("Tx with a fence without thread id: %v", err)
	}
	h, err := s.AcquireLease(ctx, th.ID, "node-c", time.Hour)
	if err != nil || h.Token <= g.Token {
		t.Fatalf("AcquireLease after releasing an own-thread fence: %+v, %v", h, err)
	}
	// A Tx on a child thread under the parent's fence releases the parent's lease.
	child := newThread(t, s, func(c *weft.Thread) { c.ParentID = th.ID })
	if err := s.Tx(ctx, child.ID, &h, func(tx weft.Tx) error {
		if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser}); err != nil {
			return err
		}
		return tx.ReleaseLease()
	}); err != nil {
		t.Fatalf("child Tx releasing the parent's lease: %v", err)
	}
	if k, err := s.AcquireLease(ctx, th.ID, "node-a", time.Hour); err != nil || k.Token <= h.Token {
		t.Errorf("AcquireLease of the parent after the child Tx released it: %+v, %v", k, err)
	}
	if k, err := s.AcquireLease(ctx, child.ID, "node-a", time.Hour); err != nil {
		t.Errorf("child's own lease: %+v, %v", k, err)
	}
}

// sameEnv compares env values, times by instant.
func sameEnv(a, b []weft.EnvValue) bool {
	return slices.EqualFunc(a, b, func(x, y weft.EnvValue) bool {
		return x.Name == y.Name && x.Value == y.Value && x.Type == y.Type && x.Delete == y.Delete && x.UpdatedAt.Equal(y.UpdatedAt)
	})
}

func testBeginRun(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := &weft.Thread{Agent: "agent", UserID: "u1", Tags: []string{"t"}, Properties: map[string]any{"p": 1}, Label: "run me"}
	if err := s.CreateThread(ctx, th, []weft.EnvValue{{Name: "T", Value: "thread-secret"}, {Name: "A", Value: "a", Type: weft.VarText}}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		scope weft.EnvScope
		owner string
		name  string
	}{{weft.EnvUser, "u1", "U"}, {weft.EnvUser, "u2", "OTHER"}, {weft.EnvUser, "", "NOBODY"}, {weft.EnvInstance, "", "I"},
		{weft.EnvThread, "thr_other", "X"}} {
		if err := s.SetEnv(ctx, e.scope, e.owner, []weft.EnvValue{{Name: e.name, Value: e.name + "-value"}}); err != nil {
			t.Fatal(err)
		}
	}
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		for i, m := range []*weft.Message{
			{Role: weft.RoleUser, Content: "hi", Status: weft.MessageCompleted},
			{Role: weft.RoleAssistant, Content: "sub", Depth: 1},
			{Role: weft.RoleAssistant, Content: "calling", ToolCalls: []weft.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}},
				Metadata: map[string]any{"k": "v"}},
			{Role: weft.RoleTool, ToolCallID: "c1", Content: "result", Silent: true},
			{Role: weft.RoleUser, Content: "deeper", Depth: 2},
			{Role: weft.RoleAssistant, Content: "", Status: weft.MessagePending},
			{Role: weft.RoleAssistant, Content: "failed", Status: weft.MessageFailed},
			{Role: weft.RoleUser, Content: "3:odd\x00bytes\xff ✓", Name: "12:"},
		} {
			m.Side = weft.SideA
			if i%2 == 1 {
				m.Side = weft.SideB
			}
			if err := tx.InsertMessage(m); err != nil {
				return err
			}
		}
		if err := tx.SetExecState("run", json.RawMessage(`{"steps":2}`)); err != nil {
			return err
		}
		return tx.SetExecState("ключ:2", json.RawMessage(`["1:x", "\u0000"]`))
	})
	for _, c := range []string{"q1", "q2"} {
		if err := s.PushQueue(ctx, &weft.QueuedMessage{ThreadID: th.ID, Content: c, Metadata: map[string]any{"c": c}}); err != nil {
			t.Fatal(err)
		}
	}

	f, rs, err := s.BeginRun(ctx, th.ID, "node-a", time.Hour)
	if err != nil {
		t.Fatalf("BeginRun: %v", err)
	}
	if f.Node != "node-a" || f.ThreadID != th.ID || f.Token <= 0 || rs == nil {
		t.Fatalf("BeginRun = %+v, %v", f, rs)
	}
	// Everything equals what the separate reads return.
	wantThread, _ := s.Thread(ctx, th.ID)
	if rs.Thread == nil || !rs.Thread.CreatedAt.Equal(wantThread.CreatedAt) || !rs.Thread.UpdatedAt.Equal(wantThread.UpdatedAt) ||
		!rs.Thread.LastActivityAt.Equal(wantThread.LastActivityAt) {
		t.Errorf("thread: %+v\nwant %+v", rs.Thread, wantThread)
	} else {
		got, want := *rs.Thread, *wantThread
		got.CreatedAt, got.UpdatedAt, got.LastActivityAt = time.Time{}, time.Time{}, time.Time{}
		want.CreatedAt, want.UpdatedAt, want.LastActivityAt = time.Time{}, time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("thread:\n got %#v\nwant %#v", got, want)
		}
	}
	wantExec, _ := s.ExecState(ctx, th.ID)
	if len(rs.ExecState) != 2 || !reflect.DeepEqual(rs.ExecState, wantExec) {
		t.Errorf("exec state: %s, want %s", rs.ExecState, wantExec)
	}
	wantMsgs, _ := s.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	if rs.Rows != nil {
		if rs.Messages != nil {
			t.Errorf("RunStart sets both Messages and Rows")
		}
		rs.Messages = make([]weft.Message, len(rs.Rows))
		for i, m := range rs.Rows {
			rs.Messages[i] = *m
		}
	}
	if !slices.Equal(seqs(rs.Messages), []int64{1, 3, 4, 6, 7, 8}) || !slices.Equal(seqs(wantMsgs), seqs(rs.Messages)) {
		t.Errorf("messages: seqs %v, want %v (as Messages returns)", seqs(rs.Messages), seqs(wantMsgs))
	} else {
		for i := range rs.Messages {
			if !sameMessage(rs.Messages[i], wantMsgs[i]) {
				t.Errorf("message %d:\n got %+v\nwant %+v", rs.Messages[i].Seq, rs.Messages[i], wantMsgs[i])
			}
		}
	}
	wantQueue, _ := s.Queued(ctx, th.ID)
	if len(rs.Queued) != 2 || !reflect.DeepEqual(rs.Queued, wantQueue) {
		t.Errorf("queued: %+v\nwant %+v", rs.Queued, wantQueue)
	}
	for _, c := range []struct {
		name  string
		got   []weft.EnvValue
		scope weft.EnvScope
		owner string
		names string
	}{{"thread env", rs.ThreadEnv, weft.EnvThread, th.ID, "A,T"}, {"user env", rs.UserEnv, weft.EnvUser, "u1", "U"},
		{"instance env", rs.InstanceEnv, weft.EnvInstance, "", "I"}} {
		want, _ := s.Env(ctx, c.scope, c.owner)
		var names []string
		for _, v := range c.got {
			names = append(names, v.Name)
		}
		if !sameEnv(c.got, want) || strings.Join(names, ",") != c.names {
			t.Errorf("%s: %+v, want %+v (%s)", c.name, c.got, want, c.names)
		}
	}
	// The result is the caller's: changing it changes nothing stored.
	rs.Thread.Tags[0] = "mutated"
	rs.Thread.Properties["p"] = "mutated"
	rs.ExecState["run"][2] = 'X'
	if rs.Rows == nil {
		rs.Messages[1].Metadata["k"] = "mutated"
		rs.Messages[1].ToolCalls[0].Name = "mutated"
	}
	rs.Queued[0].Metadata["c"] = "mutated"
	if again, _ := s.Thread(ctx, th.ID); again.Tags[0] != "t" || again.Properties["p"] != 1.0 {
		t.Errorf("thread shares memory with a RunStart: %+v", again)
	}
	if again, _ := s.ExecState(ctx, th.ID); !jsonEqual(again["run"], []byte(`{"steps":2}`)) {
		t.Errorf("exec state shares memory with a RunStart: %s", again["run"])
	}
	if again, _ := s.Messages(ctx, th.ID, weft.MessageQuery{}); again[1].Metadata["k"] != "v" || again[1].ToolCalls[0].Name != "f" {
		t.Errorf("messages share memory with a RunStart: %+v", again[1])
	}
	if again, _ := s.Queued(ctx, th.ID); again[0].Metadata["c"] != "q1" {
		t.Errorf("queue shares memory with a RunStart: %+v", again[0])
	}
	if rs.Rows != nil {
		// Shared rows are a snapshot: a later update replaces the stored row, never changes it.
		shared := rs.Rows[1]
		err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
			return tx.UpdateMessage(shared.ID, weft.MessageChange{Metadata: map[string]any{"k": "updated"}})
		})
		if err != nil {
			t.Fatal(err)
		}
		if shared.Metadata["k"] != "v" {
			t.Errorf("a shared RunStart row changed in place: %+v", shared.Metadata)
		}
		if again, _ := s.Messages(ctx, th.ID, weft.MessageQuery{}); again[1].Metadata["k"] != "updated" {
			t.Errorf("update not stored: %+v", again[1].Metadata)
		}
	}

	// The lease is taken: nobody else, and not the holder again, can take it.
	_, _, err = s.BeginRun(ctx, th.ID, "node-b", time.Hour)
	wantErr(t, "BeginRun while held", err, weft.ErrLeaseHeld)
	_, err = s.AcquireLease(ctx, th.ID, "node-b", time.Hour)
	wantErr(t, "AcquireLease while held by BeginRun", err, weft.ErrLeaseHeld)
	_, _, err = s.BeginRun(ctx, th.ID, "node-a", time.Hour)
	wantErr(t, "BeginRun by the holder again", err, weft.ErrLeaseHeld)
	if err := s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error { return tx.SetExecState("run", json.RawMessage(`{"steps":3}`)) }); err != nil {
		t.Fatalf("Tx with BeginRun's fence: %v", err)
	}
	// Tokens grow across begin/release cycles, whichever way the lease is released.
	if err := s.ReleaseLease(ctx, f); err != nil {
		t.Fatal(err)
	}
	g, rs, err := s.BeginRun(ctx, th.ID, "node-b", time.Hour)
	if err != nil || g.Token <= f.Token || g.Node != "node-b" {
		t.Fatalf("BeginRun after release: %+v, %v (previous token %d)", g, err, f.Token)
	}
	if !jsonEqual(rs.ExecState["run"], []byte(`{"steps":3}`)) {
		t.Errorf("BeginRun does not see the last commit: %s", rs.ExecState["run"])
	}
	if err := s.Tx(ctx, th.ID, &g, func(tx weft.Tx) error { return tx.ReleaseLease() }); err != nil {
		t.Fatal(err)
	}
	h, err := s.AcquireLease(ctx, th.ID, "node-c", 20*time.Millisecond)
	if err != nil || h.Token <= g.Token {
		t.Fatalf("AcquireLease after a releasing Tx: %+v, %v (previous token %d)", h, err, g.Token)
	}
	// An expired lease is taken over.
	time.Sleep(40 * time.Millisecond)
	k, _, err := s.BeginRun(ctx, th.ID, "node-a", time.Hour)
	if err != nil || k.Token <= h.Token {
		t.Fatalf("BeginRun over an expired lease: %+v, %v (previous token %d)", k, err, h.Token)
	}

	// A thread without a user loads no user env (not even the values of owner ""), and empty parts
	// come back empty.
	bare := newThread(t, s, nil)
	_, rs, err = s.BeginRun(ctx, bare.ID, "node-a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Thread.ID != bare.ID || len(rs.ExecState) != 0 || len(rs.Messages) != 0 || len(rs.Queued) != 0 ||
		len(rs.ThreadEnv) != 0 || len(rs.UserEnv) != 0 || len(rs.InstanceEnv) != 1 {
		t.Errorf("BeginRun of a bare thread: %+v", rs)
	}

	_, rs, err = s.BeginRun(ctx, "thr_missing", "node-a", time.Hour)
	wantErr(t, "BeginRun(unknown thread)", err, weft.ErrNotFound)
	if rs != nil {
		t.Errorf("BeginRun(unknown thread) returned %+v", rs)
	}
	c, cancel := context.WithCancel(ctx)
	cancel()
	other := newThread(t, s, nil)
	if _, _, err := s.BeginRun(c, other.ID, "node-a", time.Hour); err == nil {
		t.Error("BeginRun with a cancelled context succeeded")
	}
	if _, err := s.AcquireLease(ctx, other.ID, "node-b", time.Hour); err != nil {
		t.Errorf("a failed BeginRun took the lease: %v", err)
	}
}
