package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/pgtest"
)

func init() { verifyHistory = true }

// openWithThread opens a store in a schema of the test's own, with one thread.
func openWithThread(t *testing.T) (*Store, *weft.Thread) {
	t.Helper()
	_, dsn := pgtest.Schema(t)
	s, err := Open(context.Background(), dsn, Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	th := &weft.Thread{Agent: "agent"}
	if err := s.CreateThread(context.Background(), th, nil); err != nil {
		t.Fatal(err)
	}
	return s, th
}

// runOnce starts a run of the thread on s, runs fn (unless nil) in one transaction of the run and
// ends it; it returns the run start and whether its history came from the kept one.
func runOnce(t *testing.T, s *Store, threadID string, fn func(weft.Tx) error) (*weft.RunStart, bool) {
	t.Helper()
	ctx := context.Background()
	hits := s.hist.hits
	f, rs, err := s.BeginRun(ctx, threadID, "node", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	hit := s.hist.hits > hits
	if fn != nil {
		if err := s.Tx(ctx, threadID, &f, fn); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ReleaseLease(ctx, f); err != nil {
		t.Fatal(err)
	}
	return rs, hit
}

// TestHistoryKept: a run start on a node that started a run of the thread before reads only the
// messages added since, whoever added them, and the whole history again once any message of the
// thread was changed or removed — by this node, another one, or SQL from elsewhere — or the thread
// was deleted and made again under its id. verifyHistory is set, so every start from a kept
// history is also compared with the stored one; the contents are checked here as well.
func TestHistoryKept(t *testing.T) {
	ctx := context.Background()
	schema, dsn := pgtest.Schema(t)
	key := envcrypt.NewKey()
	open := func(history int) *Store {
		s, err := Open(ctx, dsn, Options{Key: key, HistoryCache: history})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(0), open(0)                            // two nodes
	sqlConn, err := pgx.Connect(ctx, pgtest.BaseURL(t)) // an operator's session: another search_path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlConn.Close(ctx) })
	th := &weft.Thread{ID: "thr_hist", Agent: "agent"}
	if err := a.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}

	// run starts a run on node s, checks what it starts from (contents and whether it was kept)
	// and runs fn in one transaction of the run, then ends it.
	run := func(s *Store, wantHit bool, want []string, fn func(tx weft.Tx) error) {
		t.Helper()
		rs, hit := runOnce(t, s, th.ID, fn)
		var got []string
		for _, m := range rs.Rows {
			got = append(got, m.Content)
		}
		if !slices.Equal(got, want) || rs.Messages != nil {
			t.Fatalf("run start: history %q (and %d messages), want %q", got, len(rs.Messages), want)
		}
		if hit != wantHit {
			t.Fatalf("run start: from the kept history %v, want %v", hit, wantHit)
		}
	}
	insert := func(contents ...string) func(weft.Tx) error {
		return func(tx weft.Tx) error {
			for _, c := range contents {
				if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: c}); err != nil {
					return err
				}
			}
			return nil
		}
	}
	var sub *weft.Message
	insertSub := func(tx weft.Tx) error { // a sub-prompt's message: never in a run's history
		sub = &weft.Message{Role: weft.RoleAssistant, Content: "sub", Depth: 1}
		return tx.InsertMessage(sub)
	}
	idOf := func(s *Store, content string) string {
		t.Helper()
		ms, err := s.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.Content == content {
				return m.ID
			}
		}
		t.Fatalf("no message %q", content)
		return ""
	}

	run(a, false, nil, insert("m1", "m2"))
	run(a, true, []string{"m1", "m2"}, insert("m3"))
	run(a, true, []string{"m1", "m2", "m3"}, insertSub)
	// Another node adds messages: they are read after the kept ones.
	run(b, false, []string{"m1", "m2", "m3"}, insert("m4"))
	run(a, true, []string{"m1", "m2", "m3", "m4"}, nil)
	// Another node changes one: the whole history is read.
	run(b, true, []string{"m1", "m2", "m3", "m4"}, func(tx weft.Tx) error {
		c := "m2 edited"
		return tx.UpdateMessage(idOf(b, "m2"), weft.MessageChange{Content: &c})
	})
	run(a, false, []string{"m1", "m2 edited", "m3", "m4"}, nil)
	// This node removes one.
	run(a, true, []string{"m1", "m2 edited", "m3", "m4"}, func(tx weft.Tx) error { return tx.DeleteMessage(idOf(a, "m1")) })
	run(a, false, []string{"m2 edited", "m3", "m4"}, nil)
	// A sub-prompt's message changes: it is not in the history, but the history is read again.
	run(a, true, []string{"m2 edited", "m3", "m4"}, func(tx weft.Tx) error {
		c := "sub edited"
		return tx.UpdateMessage(sub.ID, weft.MessageChange{Content: &c})
	})
	run(a, false, []string{"m2 edited", "m3", "m4"}, nil)
	// SQL from a session whose search_path does not name the schema.
	qualified := pgx.Identifier{schema, "messages"}.Sanitize()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := sqlConn.Exec(ctx, strings.ReplaceAll(q, "MESSAGES", qualified), args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE MESSAGES SET doc = json_build_object('id', id, 'role', role, 'content', 'm3 by hand', 'status', 'completed')
		WHERE thread_id = $1 AND id = $2`, th.ID, idOf(a, "m3"))
	run(a, false, []string{"m2 edited", "m3 by hand", "m4"}, nil)
	exec(`DELETE FROM MESSAGES WHERE thread_id = $1 AND id = $2`, th.ID, idOf(a, "m4"))
	run(a, false, []string{"m2 edited", "m3 by hand"}, nil)
	exec(`TRUNCATE MESSAGES`)
	run(a, false, nil, insert("after truncate"))
	run(a, true, []string{"after truncate"}, nil)

	// The thread is deleted and made again under its id, with as many messages as a kept
	// history would expect: its run start reads them.
	if err := b.DeleteThread(ctx, th.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateThread(ctx, &weft.Thread{ID: th.ID, Agent: "agent"}, nil); err != nil {
		t.Fatal(err)
	}
	run(b, false, nil, insert("new thread"))
	run(a, false, []string{"new thread"}, nil)

	// A node that keeps no history reads it whole each time.
	c := open(-1)
	run(c, false, []string{"new thread"}, nil)
	run(c, false, []string{"new thread"}, nil)

	// A history up to half the budget is kept; a larger one is read whole at every run start.
	d := open(64 << 10)
	for _, tc := range []struct {
		messages int
		kept     bool
	}{{6, true}, {12, false}} {
		th.ID = fmt.Sprint("thr_budget_", tc.messages)
		if err := d.CreateThread(ctx, &weft.Thread{ID: th.ID, Agent: "agent"}, nil); err != nil {
			t.Fatal(err)
		}
		var contents []string
		for i := range tc.messages {
			contents = append(contents, fmt.Sprintf("%d %03000d", i, 0))
		}
		run(d, false, nil, insert(contents...))
		run(d, true, contents, nil) // the empty history the first kept, and the messages after it
		run(d, tc.kept, contents, nil)
		run(d, tc.kept, contents, nil)
	}
}

// TestHistoryCheckCatchesADifference: verifyHistory fails a run start whose kept history is not the
// stored one (a change the cache did not see).
func TestHistoryCheckCatchesADifference(t *testing.T) {
	s, th := openWithThread(t)
	for i := range 2 {
		runOnce(t, s, th.ID, func(tx weft.Tx) error {
			return tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: fmt.Sprint("m", i)})
		})
	}
	e, ok := s.hist.get(th.ID)
	if !ok || len(e.rows) != 1 {
		t.Fatalf("kept %d messages (%v), want 1", len(e.rows), ok)
	}
	wrong := *e.rows[0]
	wrong.Content = "not what is stored"
	s.hist.put(th.ID, []*weft.Message{&wrong}, e.rev, e.docs)
	if _, _, err := s.BeginRun(context.Background(), th.ID, "node", time.Hour, nil); err == nil || !strings.Contains(err.Error(), "is not the stored one") {
		t.Fatalf("begin run from a wrong kept history: %v", err)
	}
}

// TestHistoryOfThreadsFromBeforeRevs: threads made before migration 0003 have msg_rev 0 (the
// column's first default); their histories are kept and followed like any other's.
func TestHistoryOfThreadsFromBeforeRevs(t *testing.T) {
	ctx := context.Background()
	s, th := openWithThread(t)
	var fresh int64
	if err := s.pool.QueryRow(ctx, "SELECT msg_rev FROM threads WHERE id = $1", th.ID).Scan(&fresh); err != nil || fresh < 1 {
		t.Fatalf("a new thread's msg_rev: %d (%v)", fresh, err)
	}
	if _, err := s.pool.Exec(ctx, "UPDATE threads SET msg_rev = 0 WHERE id = $1", th.ID); err != nil {
		t.Fatal(err)
	}
	step := func(wantHit bool, fn func(weft.Tx) error) {
		t.Helper()
		if _, hit := runOnce(t, s, th.ID, fn); hit != wantHit {
			t.Fatalf("from the kept history %v, want %v", hit, wantHit)
		}
	}
	var m *weft.Message
	step(false, func(tx weft.Tx) error {
		m = &weft.Message{Role: weft.RoleUser, Content: "old"}
		return tx.InsertMessage(m)
	})
	step(true, func(tx weft.Tx) error {
		c := "edited"
		return tx.UpdateMessage(m.ID, weft.MessageChange{Content: &c})
	})
	step(false, nil) // verifyHistory compares what it starts from with the stored history
	step(true, nil)
}
