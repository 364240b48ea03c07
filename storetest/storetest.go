// Package storetest is the conformance suite of weft.Store: every back end runs it, the way
// testing/fstest checks an fs.FS, so that all of them behave identically.
package storetest

import (
	"encoding/json"
	"errors"
	"reflect"
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
		{"ActivityAfterRuns", testActivityAfterRuns},
		{"ThreadDeleteRecursive", testThreadDeleteRecursive},
		{"CreateThreadTx", testCreateThreadTx},
		{"MessageCRUD", testMessageCRUD},
		{"MessageChange", testMessageChange},
		{"MessageQuery", testMessageQuery},
		{"MessageDefaultLimit", testMessageDefaultLimit},
		{"MessageSeqConcurrent", testMessageSeqConcurrent},
		{"ToolCalls", testToolCalls},
		{"ToolCallsInRun", testToolCallsInRun},
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
		{"LastEvents", testLastEvents},
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
		{"BeginRunPush", testBeginRunPush},
		{"BeginRunPushAlone", testBeginRunPushAlone},
		{"BeginRunTree", testBeginRunTree},
		{"PushLimit", testPushLimit},
		{"PushIfBusy", testPushIfBusy},
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

func testEmptyStore(t *testing.T, s weft.Store) {
	ts, total, err := s.Threads(t.Context(), weft.ThreadQuery{})
	if err != nil || total != 0 || len(ts) != 0 {
		t.Fatalf("fresh store: %v threads, total %d, %v", ts, total, err)
	}
	if _, err := s.Thread(t.Context(), "thr_missing"); !errors.Is(err, weft.ErrNotFound) {
		t.Fatalf("Thread on fresh store: %v", err)
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
