package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/weft-agents/weft"
)

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
