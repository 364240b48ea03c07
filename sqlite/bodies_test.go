package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/sqlstore"
	"github.com/weft-agents/weft/internal/storecontract"
)

// request is the body of a model call on a conversation of n messages, as a provider would send
// it: the tools, then every message so far, then the call's options. Consecutive calls of one
// prompt share everything up to their last common message.
func request(prompt string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"prompt":%q,"tools":[{"name":"lookup","parameters":{"type":"object"}}],"messages":[`, prompt)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":"message %d of the conversation, %s"}`, i, strings.Repeat("x", 150))
	}
	b.WriteString(`],"temperature":0.2}`)
	return b.String()
}

func putLog(t *testing.T, s *Store, thread, id, body string) {
	t.Helper()
	if err := s.Tx(t.Context(), thread, nil, func(tx weft.Tx) error {
		return tx.PutLog(&weft.LogEntry{ID: id, Kind: "llm", RequestBody: []byte(body), ResponseBody: []byte(`{"id":"` + id + `"}`)})
	}); err != nil {
		t.Fatal(err)
	}
}

// stored reads what the logs table holds for a log's request body.
func stored(t *testing.T, s *Store, thread, id string) (base string, shared, rest int) {
	t.Helper()
	if err := s.row(t.Context(), `SELECT request_base, request_prefix, length(request_body) FROM logs WHERE thread_num = (SELECT num FROM threads WHERE id = ?) AND id = ?`,
		[]any{&base, &shared, &rest}, thread, id); err != nil {
		t.Fatal(err)
	}
	return base, shared, rest
}

// TestRequestBodiesShared: every log returns the body it was given, while a body is stored as
// what it does not share with an earlier one of its thread — for alternating prompts too, across
// a reopen, past the chain limit, and when a base is replaced.
func TestRequestBodiesShared(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "weft.db")
	key := envcrypt.NewKey()
	s, err := Open(ctx, path, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	put := func(id, body string) {
		putLog(t, s, th.ID, id, body)
		want[id] = body
	}
	check := func(when string) {
		t.Helper()
		for id, body := range want {
			l, err := s.Log(ctx, th.ID, id)
			if err != nil {
				t.Fatalf("%s: %s: %v", when, id, err)
			}
			if string(l.RequestBody) != body || string(l.ResponseBody) != `{"id":"`+id+`"}` {
				t.Fatalf("%s: %s: request body of %d bytes, want %d", when, id, len(l.RequestBody), len(body))
			}
		}
	}

	put("log_empty", "")
	put("log_small", `{"tiny":true}`)
	// A conversation's calls, with a sub-prompt's calls between the main prompt's.
	for i := range 20 {
		put(fmt.Sprintf("log_main_%02d", i), request("main", 2*i+1))
		if i%5 == 4 {
			put(fmt.Sprintf("log_sub_%02d", i), request("sub", i))
		}
	}
	check("written")
	base, shared, rest := stored(t, s, th.ID, "log_main_00")
	if base != "" || shared != 0 || rest != len(want["log_main_00"]) {
		t.Errorf("first body stored on %q (%d bytes shared, %d stored)", base, shared, rest)
	}
	base, shared, rest = stored(t, s, th.ID, "log_main_19")
	if base != "log_main_18" || rest > 2*200+100 {
		t.Errorf("log_main_19 stored on %q, %d bytes shared, %d stored; want on log_main_18 with two messages' bytes stored", base, shared, rest)
	}
	if base, _, _ = stored(t, s, th.ID, "log_main_05"); base != "log_main_04" {
		t.Errorf("the main prompt's call after a sub-prompt's is stored on %q, want log_main_04 (its last call)", base)
	}
	if base, _, _ = stored(t, s, th.ID, "log_small"); base != "" {
		t.Errorf("a body sharing nothing worth it is stored on %q", base)
	}
	var total, whole int
	if err := s.row(ctx, `SELECT sum(length(request_body)), sum(CASE WHEN request_base = '' THEN 1 ELSE 0 END) FROM logs WHERE thread_num = (SELECT num FROM threads WHERE id = ?)`,
		[]any{&total, &whole}, th.ID); err != nil {
		t.Fatal(err)
	}
	all := 0
	for _, b := range want {
		all += len(b)
	}
	if total*5 > all {
		t.Errorf("request bodies stored in %d bytes of %d", total, all)
	}

	// Reopened, nothing is kept: the writer reads the thread's last body back and the next body
	// is stored on it; all read back.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, path, Options{Key: key}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("reopened")
	put("log_sub_20", request("sub", 20))
	if base, _, _ = stored(t, s, th.ID, "log_sub_20"); base != "log_sub_19" {
		t.Errorf("after a reopen a body is stored on %q, want the thread's last log (log_sub_19), read back", base)
	}
	put("log_main_20", request("main", 41))
	put("log_main_21", request("main", 43))
	if base, _, _ = stored(t, s, th.ID, "log_main_21"); base != "log_main_20" {
		t.Errorf("log_main_21 stored on %q, want log_main_20", base)
	}

	// Replacing a base stores its dependents whole first: they read as before.
	put("log_main_10", `{"replaced":true}`)
	check("a base replaced")
	if base, _, _ = stored(t, s, th.ID, "log_main_11"); base != "" {
		t.Errorf("the dependent of a replaced log is stored on %q", base)
	}

	// A chain never passes storecontract.MaxBodyChain bases.
	for i := range storecontract.MaxBodyChain + 10 {
		put(fmt.Sprintf("log_long_%03d", i), request("long", i+1))
	}
	check("a long chain")
	var longest int
	if err := s.row(ctx, `WITH RECURSIVE c(id, base, k) AS (SELECT id, request_base, 0 FROM logs WHERE thread_num = (SELECT num FROM threads WHERE id = ?1)
			UNION ALL SELECT c.id, l.request_base, c.k + 1 FROM c JOIN logs l ON l.thread_num = (SELECT num FROM threads WHERE id = ?1) AND l.id = c.base)
		SELECT max(k) FROM c`, []any{&longest}, th.ID); err != nil {
		t.Fatal(err)
	}
	if longest > storecontract.MaxBodyChain || longest < storecontract.MaxBodyChain/2 {
		t.Errorf("longest chain %d bases, want at most %d (and bodies stored on others)", longest, storecontract.MaxBodyChain)
	}
}

// TestRequestBodyBaseNotKeptPastRollback: a log whose Tx rolled back is no base, and a log another
// process replaced is not either (its kept body differs).
func TestRequestBodyBaseNotKeptPastRollback(t *testing.T) {
	ctx := t.Context()
	s, other, _, _ := twoStores(t)
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	putLog(t, s, th.ID, "log_1", request("main", 3))
	failed := errors.New("the step failed")
	err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		if err := tx.PutLog(&weft.LogEntry{ID: "log_gone", RequestBody: []byte(request("main", 5))}); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatal(err)
	}
	putLog(t, s, th.ID, "log_2", request("main", 7))
	if base, _, _ := stored(t, s, th.ID, "log_2"); base != "" && base != "log_1" {
		t.Errorf("log_2 stored on %q", base)
	}
	// Another process replaces log_2 with another body; this one's next body must not use its own
	// copy of log_2's.
	putLog(t, other, th.ID, "log_2", request("other", 7))
	putLog(t, s, th.ID, "log_3", request("main", 9))
	for id, body := range map[string]string{"log_1": request("main", 3), "log_2": request("other", 7), "log_3": request("main", 9)} {
		l, err := s.Log(ctx, th.ID, id)
		if err != nil || string(l.RequestBody) != body {
			t.Errorf("%s: %d bytes, want %d (%v)", id, len(l.RequestBody), len(body), err)
		}
	}
	if _, err := s.Log(ctx, th.ID, "log_gone"); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("the rolled-back log: %v", err)
	}
}

// TestRequestBodyCheckCatchesADifference: with verifyHistory (this package's tests), a kept body
// that is not the stored one fails the write instead of storing a wrong body.
func TestRequestBodyCheckCatchesADifference(t *testing.T) {
	ctx := t.Context()
	s := openFile(t).(*Store)
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	putLog(t, s, th.ID, "log_1", request("main", 3))
	s.wmu.Lock()
	s.w.rows.bodies.Add(th.ID, sqlstore.KeptBody{ID: "log_1", Body: request("main", 4)})
	s.wmu.Unlock()
	err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		return tx.PutLog(&weft.LogEntry{ID: "log_2", RequestBody: []byte(request("main", 5))})
	})
	if err == nil || !strings.Contains(err.Error(), "kept request body") {
		t.Fatalf("a wrong kept body was used: %v", err)
	}
}
