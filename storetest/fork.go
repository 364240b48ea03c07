package storetest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/weft-agents/weft"
)

// testCreateThreadTx: a thread created with writes lands with all of them at once (messages
// keeping their given ids and times, call records, KV, files, events, env, ForkedFrom) or, when
// the writes fail, not at all; its original's forks are listed by ThreadQuery.ForkedFrom.
func testCreateThreadTx(t *testing.T, s weft.Store) {
	ctx := t.Context()
	orig := newThread(t, s, nil)
	at := baseTime()
	fork := &weft.Thread{Agent: "agent", UserID: "u2", Tags: []string{"f"},
		ForkedFrom: &weft.ForkPoint{Thread: orig.ID, Message: "msg_d", Before: true}}
	msgs := []*weft.Message{
		{ID: "msg_a", Role: weft.RoleUser, Content: "hi", Status: weft.MessageCompleted, CreatedAt: at},
		{ID: "msg_b", Role: weft.RoleAssistant, ToolCalls: []weft.ToolCall{{ID: "c1", Name: "t", Arguments: "{}"}},
			Status: weft.MessageCompleted, CreatedAt: at.Add(1)},
		{ID: "msg_c", Role: weft.RoleTool, ToolCallID: "c1", Name: "t", Content: "ok", Status: weft.MessageCompleted, CreatedAt: at.Add(2)},
	}
	err := s.CreateThreadTx(ctx, fork, []weft.EnvValue{{Name: "K", Value: "v", Type: weft.VarSecret}}, func(tx weft.Tx) error {
		for _, m := range msgs {
			c := *m
			if err := tx.InsertMessage(&c); err != nil {
				return err
			}
		}
		if err := tx.PutToolCall(&weft.ToolCallRecord{CallID: "c1", MessageID: "msg_b", Name: "t", Arguments: "{}",
			Status: weft.CallDone, ResultMessageID: "msg_c"}); err != nil {
			return err
		}
		if err := tx.SetKV("k", []byte(`{"n":1}`)); err != nil {
			return err
		}
		if err := tx.WriteFile(&weft.FileInfo{Path: "/notes/a.txt"}, []byte("notes")); err != nil {
			return err
		}
		return tx.AppendEvents([]weft.EventRecord{{Type: "thread_forked", Data: []byte(`{"n":3}`)}})
	})
	if err != nil {
		t.Fatalf("CreateThreadTx: %v", err)
	}
	got, err := s.Thread(ctx, fork.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ForkedFrom == nil || *got.ForkedFrom != *fork.ForkedFrom || got.UserID != "u2" || got.RootID != fork.ID {
		t.Errorf("fork stored as %+v (forked_from %+v)", got, got.ForkedFrom)
	}
	rows, err := s.Messages(ctx, fork.ID, weft.MessageQuery{})
	if err != nil || len(rows) != 3 {
		t.Fatalf("fork's messages: %d, %v", len(rows), err)
	}
	for i, m := range rows {
		if m.ID != msgs[i].ID || m.Seq != int64(i+1) || !m.CreatedAt.Equal(msgs[i].CreatedAt) || m.Content != msgs[i].Content {
			t.Errorf("row %d: %+v, want id %s seq %d at %v", i, m, msgs[i].ID, i+1, msgs[i].CreatedAt)
		}
	}
	calls, err := s.ToolCalls(ctx, fork.ID)
	if err != nil || len(calls) != 1 || calls[0].ResultMessageID != "msg_c" || calls[0].Status != weft.CallDone {
		t.Errorf("fork's calls: %+v, %v", calls, err)
	}
	if v, ok, err := s.GetKV(ctx, fork.ID, "k"); err != nil || !ok || string(v) != `{"n":1}` {
		t.Errorf("fork's KV: %s %v %v", v, ok, err)
	}
	if b, err := s.Files().ReadFile(ctx, fork.ID, "/notes/a.txt"); err != nil || string(b) != "notes" {
		t.Errorf("fork's file: %q %v", b, err)
	}
	if evs, err := s.Events(ctx, fork.ID, 0, 0); err != nil || len(evs) != 1 || evs[0].Seq != 1 || evs[0].Type != "thread_forked" {
		t.Errorf("fork's events: %+v %v", evs, err)
	}
	if env, err := s.Env(ctx, weft.EnvThread, fork.ID); err != nil || len(env) != 1 || env[0].Value != "v" {
		t.Errorf("fork's env: %+v %v", env, err)
	}
	// The thread goes on as any other: a new row follows the copied ones.
	insert(t, s, fork.ID, &weft.Message{Role: weft.RoleUser, Content: "next", Status: weft.MessageCompleted})
	if rows, _ := s.Messages(ctx, fork.ID, weft.MessageQuery{}); len(rows) != 4 || rows[3].Seq != 4 {
		t.Errorf("after the fork: %d rows", len(rows))
	}

	forks, n, err := s.Threads(ctx, weft.ThreadQuery{ForkedFrom: orig.ID})
	if err != nil || n != 1 || len(forks) != 1 || forks[0].ID != fork.ID {
		t.Errorf("forks of %s: %v (%d), %v", orig.ID, threadIDs(forks), n, err)
	}
	if forks, _, _ := s.Threads(ctx, weft.ThreadQuery{ForkedFrom: fork.ID}); len(forks) != 0 {
		t.Errorf("a thread without forks lists %v", threadIDs(forks))
	}
	// UpdateThread keeps the link.
	mustTx(t, s, fork.ID, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Label: new("renamed")}) })
	if got, _ := s.Thread(ctx, fork.ID); got == nil || !reflect.DeepEqual(got.ForkedFrom, fork.ForkedFrom) || got.Label != "renamed" {
		t.Errorf("after UpdateThread: %+v", got)
	}

	// A failing fn stores nothing: no thread, no env, no rows.
	boom := errors.New("boom")
	failed := &weft.Thread{Agent: "agent", ForkedFrom: &weft.ForkPoint{Thread: orig.ID, Message: "msg_a"}}
	err = s.CreateThreadTx(ctx, failed, []weft.EnvValue{{Name: "K", Value: "v", Type: weft.VarText}}, func(tx weft.Tx) error {
		if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "x", Status: weft.MessageCompleted}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failing CreateThreadTx: %v, want boom", err)
	}
	_, err = s.Thread(ctx, failed.ID)
	wantErr(t, "the failed fork", err, weft.ErrNotFound)
	if env, _ := s.Env(ctx, weft.EnvThread, failed.ID); len(env) != 0 {
		t.Errorf("the failed fork left env %+v", env)
	}
	if forks, _, _ := s.Threads(ctx, weft.ThreadQuery{ForkedFrom: orig.ID}); len(forks) != 1 {
		t.Errorf("forks after a failed one: %v", threadIDs(forks))
	}
	// A fork outlives its original, and keeps naming it.
	if err := s.DeleteThread(ctx, orig.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Thread(ctx, fork.ID); err != nil || got.ForkedFrom == nil || got.ForkedFrom.Thread != orig.ID {
		t.Errorf("the fork after its original was deleted: %+v, %v", got, err)
	}
	if rows, _ := s.Messages(ctx, fork.ID, weft.MessageQuery{}); len(rows) != 4 {
		t.Errorf("the fork's rows after its original was deleted: %d", len(rows))
	}
	// A fork point without its message is refused.
	err = s.CreateThreadTx(ctx, &weft.Thread{Agent: "agent", ForkedFrom: &weft.ForkPoint{Thread: orig.ID}}, nil,
		func(weft.Tx) error { return nil })
	wantCode(t, "forked_from without a message", err, weft.EInvalid)
}
