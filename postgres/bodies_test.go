package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/postgres"
)

// request is the body of a model call on a conversation of n messages, as a provider sends it.
func request(prompt string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"prompt":%q,"tools":[{"name":"lookup"}],"messages":[`, prompt)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":"message %d, %s"}`, i, strings.Repeat("x", 150))
	}
	b.WriteString(`],"temperature":0.2}`)
	return b.String()
}

// TestRequestBodiesShared: each log reads back the request body it was given while bodies are
// stored as what they do not share with an earlier one — across two nodes writing the thread in
// turn (a node's first body stored on the thread's last, read back), a log replaced, and a
// transaction rolled back.
func TestRequestBodiesShared(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	ctx := context.Background()
	key := envcrypt.NewKey()
	var nodes [2]*postgres.Store
	for i := range nodes {
		s, err := postgres.Open(ctx, dsn, postgres.Options{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		nodes[i] = s
	}
	th := &weft.Thread{Agent: "a"}
	if err := nodes[0].CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	put := func(s *postgres.Store, id, body string) {
		t.Helper()
		if err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
			return tx.PutLog(&weft.LogEntry{ID: id, Kind: "llm", RequestBody: []byte(body), ResponseBody: []byte(`{"id":"` + id + `"}`)})
		}); err != nil {
			t.Fatal(err)
		}
		want[id] = body
	}
	for i := range 30 {
		put(nodes[i/10%2], fmt.Sprintf("log_main_%02d", i), request("main", 2*i+1)) // ten calls on each node in turn
		if i%7 == 6 {
			put(nodes[0], fmt.Sprintf("log_sub_%02d", i), request("sub", i))
		}
	}
	put(nodes[1], "log_main_05", `{"replaced":true}`)
	failed := errors.New("the step failed")
	if err := nodes[0].Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		if err := tx.PutLog(&weft.LogEntry{ID: "log_gone", RequestBody: []byte(request("main", 61))}); err != nil {
			return err
		}
		return failed
	}); !errors.Is(err, failed) {
		t.Fatal(err)
	}
	put(nodes[0], "log_main_30", request("main", 63))
	put(nodes[0], "log_empty", "")
	for id, body := range want {
		for _, s := range nodes {
			l, err := s.Log(ctx, th.ID, id)
			if err != nil || string(l.RequestBody) != body || string(l.ResponseBody) != `{"id":"`+id+`"}` {
				t.Fatalf("%s: request body of %d bytes, want %d (%v)", id, len(l.RequestBody), len(body), err)
			}
		}
	}
	if _, err := nodes[0].Log(ctx, th.ID, "log_gone"); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("the rolled-back log: %v", err)
	}
	var stored, whole, all int
	if err := nodes[0].Pool().QueryRow(ctx, `SELECT sum(length(rest)), count(*) FILTER (WHERE base = '') FROM log_bodies WHERE thread_id = $1`,
		th.ID).Scan(&stored, &whole); err != nil {
		t.Fatal(err)
	}
	for _, b := range want {
		all += len(b)
	}
	// Whole: the first, the sub-prompt's first and the replacement's; a node's first reads the
	// thread's last body back.
	if stored*5 > all || whole > 4 {
		t.Errorf("request bodies stored in %d bytes of %d, %d whole", stored, all, whole)
	}
	var base string
	if err := nodes[0].Pool().QueryRow(ctx, `SELECT b.base FROM logs l JOIN log_bodies b ON b.thread_id = l.thread_id AND b.id = l.request_ref
		WHERE l.thread_id = $1 AND l.id = 'log_main_10'`, th.ID).Scan(&base); err != nil || base == "" {
		t.Errorf("the other node's first body is stored whole (%v): it should be on the thread's last one, read back", err)
	}
	if err := nodes[0].DeleteThread(ctx, th.ID); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := nodes[0].Pool().QueryRow(ctx, `SELECT count(*) FROM log_bodies`).Scan(&left); err != nil || left != 0 {
		t.Errorf("body rows left after the thread's deletion: %d, %v", left, err)
	}
}
