package storetest

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

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
