package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

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

	f, rs, err := s.BeginRun(ctx, th.ID, "node-a", time.Hour, nil)
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
	_, _, err = s.BeginRun(ctx, th.ID, "node-b", time.Hour, nil)
	wantErr(t, "BeginRun while held", err, weft.ErrLeaseHeld)
	_, err = s.AcquireLease(ctx, th.ID, "node-b", time.Hour)
	wantErr(t, "AcquireLease while held by BeginRun", err, weft.ErrLeaseHeld)
	_, _, err = s.BeginRun(ctx, th.ID, "node-a", time.Hour, nil)
	wantErr(t, "BeginRun by the holder again", err, weft.ErrLeaseHeld)
	if err := s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error { return tx.SetExecState("run", json.RawMessage(`{"steps":3}`)) }); err != nil {
		t.Fatalf("Tx with BeginRun's fence: %v", err)
	}
	// Tokens grow across begin/release cycles, whichever way the lease is released.
	if err := s.ReleaseLease(ctx, f); err != nil {
		t.Fatal(err)
	}
	g, rs, err := s.BeginRun(ctx, th.ID, "node-b", time.Hour, nil)
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
	k, _, err := s.BeginRun(ctx, th.ID, "node-a", time.Hour, nil)
	if err != nil || k.Token <= h.Token {
		t.Fatalf("BeginRun over an expired lease: %+v, %v (previous token %d)", k, err, h.Token)
	}

	// A thread without a user loads no user env (not even the values of owner ""), and empty parts
	// come back empty.
	bare := newThread(t, s, nil)
	_, rs, err = s.BeginRun(ctx, bare.ID, "node-a", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Thread.ID != bare.ID || len(rs.ExecState) != 0 || len(rs.Messages) != 0 || len(rs.Queued) != 0 ||
		len(rs.ThreadEnv) != 0 || len(rs.UserEnv) != 0 || len(rs.InstanceEnv) != 1 {
		t.Errorf("BeginRun of a bare thread: %+v", rs)
	}

	_, rs, err = s.BeginRun(ctx, "thr_missing", "node-a", time.Hour, nil)
	wantErr(t, "BeginRun(unknown thread)", err, weft.ErrNotFound)
	if rs != nil {
		t.Errorf("BeginRun(unknown thread) returned %+v", rs)
	}
	c, cancel := context.WithCancel(ctx)
	cancel()
	other := newThread(t, s, nil)
	if _, _, err := s.BeginRun(c, other.ID, "node-a", time.Hour, nil); err == nil {
		t.Error("BeginRun with a cancelled context succeeded")
	}
	if _, err := s.AcquireLease(ctx, other.ID, "node-b", time.Hour); err != nil {
		t.Errorf("a failed BeginRun took the lease: %v", err)
	}
}

// testBeginRunPush: BeginRun's push is queued in the transaction that takes the lease, and is
// among the queue it returns; with the lease held elsewhere the push still commits (for the
// holder) and the lease is untouched; a terminated or unknown thread refuses it, queueing nothing
// and taking no lease.
func testBeginRunPush(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	if err := s.PushQueue(ctx, &weft.QueuedMessage{ThreadID: th.ID, Content: "first"}); err != nil {
		t.Fatal(err)
	}
	push := &weft.QueuedMessage{ThreadID: th.ID, Content: "second", Metadata: map[string]any{"k": "v"}}
	f, rs, err := s.BeginRun(ctx, th.ID, "node-a", time.Hour, push)
	if err != nil {
		t.Fatalf("BeginRun with a push: %v", err)
	}
	if push.ID == "" || push.Seq == 0 || push.Role != weft.RoleUser || push.CreatedAt.IsZero() {
		t.Errorf("the push was not assigned its fields: %+v", push)
	}
	if len(rs.Queued) != 2 || rs.Queued[0].Content != "first" || rs.Queued[1].Content != "second" ||
		rs.Queued[1].ID != push.ID || rs.Queued[1].Seq != push.Seq || rs.Queued[1].Metadata["k"] != "v" {
		t.Fatalf("RunStart.Queued: %+v", rs.Queued)
	}
	// Held: another node's BeginRun with a push queues it and fails.
	late := &weft.QueuedMessage{ThreadID: th.ID, Content: "third"}
	_, _, err = s.BeginRun(ctx, th.ID, "node-b", time.Hour, late)
	wantErr(t, "BeginRun with a push on a held lease", err, weft.ErrLeaseHeld)
	queued, err := s.Queued(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(queued) != 3 || queued[2].ID != late.ID || queued[2].Seq != late.Seq || late.Seq <= push.Seq {
		t.Fatalf("after a push on a held lease the queue is %+v", queued)
	}
	// The queue's counter moved with it: the next push comes after.
	next := &weft.QueuedMessage{ThreadID: th.ID, Content: "fourth"}
	if err := s.PushQueue(ctx, next); err != nil || next.Seq <= late.Seq {
		t.Fatalf("a push after one on a held lease: seq %d (the held one's %d), %v", next.Seq, late.Seq, err)
	}
	// The lease is still node-a's.
	mustTxFenced(t, s, th.ID, &f, func(tx weft.Tx) error { return nil })

	// Terminated: nothing queued, no lease.
	other := newThread(t, s, nil)
	term := weft.ThreadTerminated
	mustTx(t, s, other.ID, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Status: &term}) })
	_, _, err = s.BeginRun(ctx, other.ID, "node-a", time.Hour, &weft.QueuedMessage{ThreadID: other.ID, Content: "no"})
	wantErr(t, "BeginRun with a push on a terminated thread", err, weft.ErrTerminated)
	if queued, err := s.Queued(ctx, other.ID); err != nil || len(queued) != 0 {
		t.Errorf("a terminated thread queued %+v (%v)", queued, err)
	}
	if g, err := s.AcquireLease(ctx, other.ID, "node-b", time.Hour); err != nil {
		t.Errorf("the refused BeginRun took the lease: %v", err)
	} else {
		_ = s.ReleaseLease(ctx, g)
	}
	_, _, err = s.BeginRun(ctx, "thr_missing", "node-a", time.Hour, &weft.QueuedMessage{ThreadID: "thr_missing", Content: "no"})
	wantErr(t, "BeginRun with a push on an unknown thread", err, weft.ErrNotFound)
}

// testBeginRunPushAlone: a message BeginRun queues on an empty queue is queued like any other
// (a store may keep such a message apart, as SQLite's does in the thread row): Queued and Threads'
// Queued filter list it; the next BeginRun, after the run ended without draining it, returns it
// ahead of a later push; DrainQueue takes it and the later pushes in seq order, honouring upTo,
// in a fenced Tx and in an unfenced one; a failed Tx leaves it queued.
func testBeginRunPushAlone(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	// One message queued and drained before: the queue is empty, its counter is not.
	if err := s.PushQueue(ctx, &weft.QueuedMessage{ThreadID: th.ID, Content: "before"}); err != nil {
		t.Fatal(err)
	}
	mustTx(t, s, th.ID, func(tx weft.Tx) error { _, err := tx.DrainQueue(0); return err })

	push := &weft.QueuedMessage{ThreadID: th.ID, Content: "alone", Metadata: map[string]any{"k": "v"}}
	f, rs, err := s.BeginRun(ctx, th.ID, "node-a", time.Hour, push)
	if err != nil {
		t.Fatalf("BeginRun with a push on an empty queue: %v", err)
	}
	if push.Seq != 2 || len(rs.Queued) != 1 || rs.Queued[0].ID != push.ID || rs.Queued[0].Seq != 2 || rs.Queued[0].Metadata["k"] != "v" {
		t.Fatalf("push %+v, RunStart.Queued %+v", push, rs.Queued)
	}
	listed := func(what string, want ...string) {
		t.Helper()
		q, err := s.Queued(ctx, th.ID)
		if err != nil {
			t.Fatalf("%s: Queued: %v", what, err)
		}
		var got []string
		for _, m := range q {
			got = append(got, m.Content)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Queued lists %q, want %q", what, got, want)
		}
		ths, _, err := s.Threads(ctx, weft.ThreadQuery{Queued: true})
		if err != nil {
			t.Fatalf("%s: Threads: %v", what, err)
		}
		if has := slices.Contains(threadIDs(ths), th.ID); has != (len(want) > 0) {
			t.Errorf("%s: Threads(Queued) lists the thread: %v, want %v", what, has, len(want) > 0)
		}
	}
	listed("after BeginRun's push", "alone")

	// A push during the run goes after it.
	later := &weft.QueuedMessage{ThreadID: th.ID, Content: "later"}
	if err := s.PushQueue(ctx, later); err != nil || later.Seq != 3 {
		t.Fatalf("a push during the run: seq %d, %v", later.Seq, err)
	}
	listed("after a push during the run", "alone", "later")

	// A Tx that fails after draining leaves both queued.
	boom := errors.New("boom")
	err = s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error {
		if got, err := tx.DrainQueue(0); err != nil || len(got) != 2 {
			t.Errorf("DrainQueue(0) in the failing Tx: %d messages, %v", len(got), err)
		}
		return boom
	})
	wantErr(t, "the failing Tx", err, boom)
	listed("after a failed drain", "alone", "later")

	// The run ends without draining (as a crashed one would): the next run starts with both.
	if err := s.ReleaseLease(ctx, f); err != nil {
		t.Fatal(err)
	}
	g, rs, err := s.BeginRun(ctx, th.ID, "node-b", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Queued) != 2 || rs.Queued[0].ID != push.ID || rs.Queued[1].ID != later.ID {
		t.Fatalf("the next run's RunStart.Queued: %+v", rs.Queued)
	}
	mustTxFenced(t, s, th.ID, &g, func(tx weft.Tx) error {
		if got, err := tx.DrainQueue(1); err != nil || len(got) != 0 {
			t.Errorf("DrainQueue(1): %+v, %v; want nothing", got, err)
		}
		got, err := tx.DrainQueue(2)
		if err != nil || len(got) != 1 || got[0].ID != push.ID || got[0].Content != "alone" || got[0].Metadata["k"] != "v" {
			t.Errorf("DrainQueue(2): %+v, %v; want the first push", got, err)
		}
		return err
	})
	listed("after draining up to the first", "later")
	mustTxFenced(t, s, th.ID, &g, func(tx weft.Tx) error {
		got, err := tx.DrainQueue(0)
		if err != nil || len(got) != 1 || got[0].ID != later.ID {
			t.Errorf("DrainQueue(0): %+v, %v; want the later push", got, err)
		}
		return err
	})
	listed("after draining all")
	if err := s.ReleaseLease(ctx, g); err != nil {
		t.Fatal(err)
	}

	// An unfenced Tx drains it too.
	again := &weft.QueuedMessage{ThreadID: th.ID, Content: "again"}
	h, _, err := s.BeginRun(ctx, th.ID, "node-a", time.Hour, again)
	if err != nil {
		t.Fatal(err)
	}
	listed("after another BeginRun's push", "again")
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		got, err := tx.DrainQueue(0)
		if err != nil || len(got) != 1 || got[0].ID != again.ID {
			t.Errorf("an unfenced DrainQueue(0): %+v, %v", got, err)
		}
		return err
	})
	listed("after an unfenced drain")
	// The run's next Tx sees the queue as the unfenced one left it.
	mustTxFenced(t, s, th.ID, &h, func(tx weft.Tx) error {
		got, err := tx.DrainQueue(0)
		if err != nil || len(got) != 0 {
			t.Errorf("the run's DrainQueue after an unfenced drain: %+v, %v", got, err)
		}
		return err
	})
}

// testPushLimit: a push with MaxMessages refuses a thread whose newest message has that seq
// (ThreadFullError, nothing queued), by PushQueue and by BeginRun (no lease taken either), and
// queues to a shorter one.
func testPushLimit(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		for _, c := range []string{"a", "b", "c"} {
			if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: c}); err != nil {
				return err
			}
		}
		return nil
	})
	if err := s.PushQueue(ctx, &weft.QueuedMessage{ThreadID: th.ID, Content: "fits", MaxMessages: 4}); err != nil {
		t.Fatalf("a push below the limit: %v", err)
	}
	full := func(what string, err error) {
		t.Helper()
		var tf *weft.ThreadFullError
		if !errors.As(err, &tf) || !errors.Is(err, weft.ErrThreadFull) || tf.ThreadID != th.ID || tf.Messages != 3 {
			t.Errorf("%s: %v, want a ThreadFullError of 3 messages", what, err)
		}
	}
	full("PushQueue at the limit", s.PushQueue(ctx, &weft.QueuedMessage{ThreadID: th.ID, Content: "no", MaxMessages: 3}))
	_, _, err := s.BeginRun(ctx, th.ID, "node-a", time.Hour, &weft.QueuedMessage{ThreadID: th.ID, Content: "no", MaxMessages: 2})
	full("BeginRun's push over the limit", err)
	if q, err := s.Queued(ctx, th.ID); err != nil || len(q) != 1 || q[0].Content != "fits" {
		t.Errorf("queued %+v (%v), want only the one that fit", q, err)
	}
	f, err := s.AcquireLease(ctx, th.ID, "node-b", time.Hour)
	if err != nil {
		t.Fatalf("the refused BeginRun took the lease: %v", err)
	}
	_ = s.ReleaseLease(ctx, f)
	if _, rs, err := s.BeginRun(ctx, th.ID, "node-a", time.Hour, &weft.QueuedMessage{ThreadID: th.ID, Content: "fits too", MaxMessages: 4}); err != nil || len(rs.Queued) != 2 {
		t.Errorf("BeginRun's push below the limit: %v", err)
	}
}

// testPushIfBusy: a push with IfBusyReject is refused (a BusyError, nothing queued) while the
// thread's lease is live or its status running, by PushQueue and by Tx.PushQueue, and queued
// otherwise; a message's IfBusy is kept with it (Queued, DrainQueue, BeginRun).
func testPushIfBusy(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	reject := func(content string) *weft.QueuedMessage {
		return &weft.QueuedMessage{ThreadID: th.ID, Content: content, IfBusy: weft.IfBusyReject}
	}
	busy := func(what string, err error) {
		t.Helper()
		var be *weft.BusyError
		if !errors.As(err, &be) || !errors.Is(err, weft.ErrBusy) || be.ThreadID != th.ID || weft.ErrorCode(err) != weft.EConflict {
			t.Errorf("%s: %v, want a BusyError", what, err)
		}
	}
	if err := s.PushQueue(ctx, reject("idle")); err != nil {
		t.Fatalf("a reject push to an idle thread: %v", err)
	}
	f, err := s.AcquireLease(ctx, th.ID, "node-a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	busy("PushQueue while the lease is held", s.PushQueue(ctx, reject("leased")))
	busy("Tx.PushQueue while the lease is held", s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		if err := tx.SetKV("k", json.RawMessage(`1`)); err != nil {
			return err
		}
		return tx.PushQueue(reject("leased, in a tx"))
	}))
	if _, found, err := s.GetKV(ctx, th.ID, "k"); err != nil || found {
		t.Errorf("the refused Tx wrote its other writes: found %v, %v", found, err)
	}
	if err := s.PushQueue(ctx, &weft.QueuedMessage{ThreadID: th.ID, Content: "interrupt", IfBusy: weft.IfBusyInterrupt}); err != nil {
		t.Fatalf("an interrupt push while the lease is held: %v", err)
	}
	if err := s.ReleaseLease(ctx, f); err != nil {
		t.Fatal(err)
	}
	running := weft.ThreadRunning
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Status: &running}) })
	busy("PushQueue to a running thread without a lease", s.PushQueue(ctx, reject("running")))
	idle := weft.ThreadIdle
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Status: &idle}) })
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.PushQueue(reject("idle again, in a tx")) })
	q, err := s.Queued(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range q {
		got = append(got, m.Content+":"+string(m.IfBusy))
	}
	if want := []string{"idle:reject", "interrupt:interrupt", "idle again, in a tx:reject"}; !slices.Equal(got, want) {
		t.Errorf("queued %q, want %q", got, want)
	}
	f, rs, err := s.BeginRun(ctx, th.ID, "node-a", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.ReleaseLease(ctx, f)
	if len(rs.Queued) != 3 || rs.Queued[1].IfBusy != weft.IfBusyInterrupt {
		t.Errorf("BeginRun's queue %+v, want the interrupt message's IfBusy kept", rs.Queued)
	}
}

// testBeginRunTree: RunStart tells whether the thread has children and when an effect of any
// thread is next claimable, a pending one at its RunAt, a claimed one when its claim expires.
func testBeginRunTree(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := &weft.Thread{Agent: "agent"}
	other := &weft.Thread{Agent: "agent"}
	for _, x := range []*weft.Thread{th, other} {
		if err := s.CreateThread(ctx, x, nil); err != nil {
			t.Fatal(err)
		}
	}
	begin := func(what string, children bool, due time.Time) {
		t.Helper()
		f, rs, err := s.BeginRun(ctx, th.ID, "node-a", time.Hour, nil)
		if err != nil {
			t.Fatalf("%s: BeginRun: %v", what, err)
		}
		defer s.ReleaseLease(ctx, f)
		if rs.Children != children {
			t.Errorf("%s: Children = %v, want %v", what, rs.Children, children)
		}
		if !rs.EffectsDue.Equal(due) {
			t.Errorf("%s: EffectsDue = %v, want %v", what, rs.EffectsDue, due)
		}
	}
	begin("alone", false, time.Time{})
	if err := s.CreateThread(ctx, &weft.Thread{Agent: "agent", ParentID: other.ID}, nil); err != nil {
		t.Fatal(err)
	}
	begin("another thread's child", false, time.Time{})
	if err := s.CreateThread(ctx, &weft.Thread{Agent: "agent", ParentID: th.ID}, nil); err != nil {
		t.Fatal(err)
	}
	begin("a child", true, time.Time{})

	now := time.Now().UTC().Truncate(time.Millisecond)
	later := schedule(t, s, &weft.EffectRecord{ThreadID: other.ID, Name: "later", RunAt: now.Add(2 * time.Hour)})
	begin("an effect of another thread", true, later.RunAt)
	sooner := schedule(t, s, &weft.EffectRecord{ThreadID: th.ID, Name: "sooner", RunAt: now.Add(time.Hour)})
	begin("a sooner effect", true, sooner.RunAt)
	schedule(t, s, &weft.EffectRecord{ThreadID: th.ID, Name: "due", RunAt: now.Add(-time.Hour)})
	begin("a due effect", true, now.Add(-time.Hour))
	got := claim(t, s, "node-b", 1, time.Minute)
	if len(got) != 1 || got[0].Name != "due" || got[0].ClaimExpiresAt == nil {
		t.Fatalf("claimed %+v", got)
	}
	begin("a claim", true, *got[0].ClaimExpiresAt)
	if err := s.FinishEffect(ctx, got[0].ID, weft.EffectCompleted, "", time.Time{}); err != nil {
		t.Fatal(err)
	}
	begin("a finished claim", true, sooner.RunAt)
}
