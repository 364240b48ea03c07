package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
)

// callRows reads where a thread's calls are: whether its row holds open calls, and the
// tool_calls rows' statuses by id.
func callRows(t *testing.T, s *Store, id string) (open bool, stored map[string]string) {
	t.Helper()
	if err := s.rdb.QueryRowContext(t.Context(), `SELECT calls IS NOT NULL FROM threads WHERE id = ?`, id).Scan(&open); err != nil {
		t.Fatal(err)
	}
	rows, err := s.rdb.QueryContext(t.Context(), `SELECT call_id, status FROM tool_calls WHERE thread_num = (SELECT num FROM threads WHERE id = ?)`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	stored = map[string]string{}
	for rows.Next() {
		var c, st string
		if err := rows.Scan(&c, &st); err != nil {
			t.Fatal(err)
		}
		stored[c] = st
	}
	return open, stored
}

// TestOpenCallsThroughATurn: a turn's call waits in the thread row from the reply's step, goes to
// tool_calls with its result, and leaves the row at the run's end (migration 0017); a store opened
// again (nothing kept) lists it from either place and drops a stale entry at the row's next write.
func TestOpenCallsThroughATurn(t *testing.T) {
	ctx := t.Context()
	path, key := filepath.Join(t.TempDir(), "weft.db"), envcrypt.NewKey()
	s, err := Open(ctx, path, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	listed := func(s *Store, want string) {
		t.Helper()
		cs, err := s.ToolCalls(ctx, th.ID)
		if err != nil || len(cs) != 1 || cs[0].CallID != "c1" || string(cs[0].Status) != want || cs[0].Seq != 1 {
			t.Errorf("calls %+v, %v; want c1 %s", cs, err, want)
		}
	}
	where := func(s *Store, wantOpen bool, wantStored string) {
		t.Helper()
		open, stored := callRows(t, s, th.ID)
		if open != wantOpen || stored["c1"] != wantStored || len(stored) > 1 {
			t.Errorf("open calls in the row %v, tool_calls %v; want %v, c1 %q", open, stored, wantOpen, wantStored)
		}
	}
	f, _, err := s.BeginRun(ctx, th.ID, "node", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	running := weft.ThreadRunning
	if err := s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error {
		if err := tx.UpdateThread(weft.ThreadPatch{Status: &running}); err != nil {
			return err
		}
		m := &weft.Message{Role: weft.RoleAssistant, ToolCalls: []weft.ToolCall{{ID: "c1", Name: "t"}}}
		if err := tx.InsertMessage(m); err != nil {
			return err
		}
		return tx.PutToolCall(&weft.ToolCallRecord{CallID: "c1", MessageID: m.ID, Name: "t", Status: weft.CallRunning})
	}); err != nil {
		t.Fatal(err)
	}
	where(s, true, "")
	listed(s, "running")
	// As after a crash: the store opened again lists the open call, and the result moves it.
	s.Close()
	if s, err = Open(ctx, path, Options{Key: key}); err != nil {
		t.Fatal(err)
	}
	listed(s, "running")
	if err := s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error {
		if err := tx.InsertMessage(&weft.Message{Role: weft.RoleTool, ToolCallID: "c1", Content: "ok"}); err != nil {
			return err
		}
		return tx.PutToolCall(&weft.ToolCallRecord{CallID: "c1", Name: "t", Status: weft.CallDone, Seq: 1})
	}); err != nil {
		t.Fatal(err)
	}
	where(s, true, "done") // the row's entry stale
	listed(s, "done")
	s.Close()
	if s, err = Open(ctx, path, Options{Key: key}); err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	listed(s, "done")
	// The run's end writes the row: the stale entry goes, found stale in tool_calls (nothing kept).
	idle := weft.ThreadIdle
	if err := s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error {
		if err := tx.UpdateThread(weft.ThreadPatch{Status: &idle}); err != nil {
			return err
		}
		return tx.ReleaseLease()
	}); err != nil {
		t.Fatal(err)
	}
	where(s, false, "done")
	listed(s, "done")

	// The same turn in one store, what it keeps: the run's end leaves the row without calls.
	f, _, err = s.BeginRun(ctx, th.ID, "node", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range []weft.CallStatus{weft.CallRunning, weft.CallDone} {
		if err := s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error {
			if i == 0 {
				if err := tx.SetExecState("run", []byte(`{"step":1}`)); err != nil {
					return err
				}
			}
			return tx.PutToolCall(&weft.ToolCallRecord{CallID: "c2", Name: "t", Status: st})
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error { return tx.ReleaseLease() }); err != nil {
		t.Fatal(err)
	}
	if open, stored := callRows(t, s, th.ID); open || stored["c2"] != "done" {
		t.Errorf("after a second run: open calls in the row %v, tool_calls %v", open, stored)
	}
	// A new reply that names a stored call again (a model that numbers its calls per reply)
	// changes that call, keeping its seq, whether the ids of tool_calls are kept or read.
	for i, reopen := range []bool{false, true, false} {
		if reopen {
			s.Close()
			if s, err = Open(ctx, path, Options{Key: key}); err != nil {
				t.Fatal(err)
			}
		}
		f, _, err = s.BeginRun(ctx, th.ID, "node", time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := &weft.ToolCallRecord{CallID: "c1", Name: "t", Status: weft.CallRunning}
		if err := s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error {
			if err := tx.SetExecState("run", []byte(`{"step":2}`)); err != nil {
				return err
			}
			if err := tx.PutToolCall(c); err != nil {
				return err
			}
			return tx.ReleaseLease()
		}); err != nil {
			t.Fatal(err)
		}
		cs, err := s.ToolCalls(ctx, th.ID)
		if err != nil || c.Seq != 1 || len(cs) != 2 || cs[0].CallID != "c1" || cs[0].Seq != 1 || cs[0].Status != weft.CallRunning {
			t.Errorf("%d: c1 put again: seq %d; calls %+v, %v", i, c.Seq, cs, err)
		}
		if err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
			return tx.PutToolCall(&weft.ToolCallRecord{CallID: "c1", Name: "t", Status: weft.CallDone})
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenCallsMigrated: a database from before migration 17 opens with no open calls and lists
// its calls as before.
func TestOpenCallsMigrated(t *testing.T) {
	ctx := t.Context()
	path, key := filepath.Join(t.TempDir(), "weft.db"), envcrypt.NewKey()
	s, err := Open(ctx, path, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	// Put twice: the second put, writing no row, stores the call in tool_calls, as every call was
	// before migration 17.
	for _, st := range []weft.CallStatus{weft.CallRunning, weft.CallDone} {
		if err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
			return tx.PutToolCall(&weft.ToolCallRecord{CallID: "c1", Name: "t", Status: st})
		}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	db := rawDB(t, path)
	for _, q := range []string{`ALTER TABLE threads DROP COLUMN pad`, `ALTER TABLE threads DROP COLUMN calls`, `DELETE FROM schema_migrations WHERE version >= 17`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	if s, err = Open(ctx, path, Options{Key: key}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if open, stored := callRows(t, s, th.ID); open || stored["c1"] != "done" {
		t.Errorf("migrated: open calls in the row %v, tool_calls %v", open, stored)
	}
	if cs, err := s.ToolCalls(ctx, th.ID); err != nil || len(cs) != 1 || cs[0].Status != weft.CallDone {
		t.Errorf("migrated calls %+v, %v", cs, err)
	}
}

// TestOpenCallsManyStored: a thread with more tool_calls rows than the writer keeps the ids of
// looks each new call up; a call put again keeps its seq, a new one takes the next.
func TestOpenCallsManyStored(t *testing.T) {
	ctx := t.Context()
	path, key := filepath.Join(t.TempDir(), "weft.db"), envcrypt.NewKey()
	s, err := Open(ctx, path, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	put := func(id string) int64 {
		t.Helper()
		c := &weft.ToolCallRecord{CallID: id, Name: "t", Status: weft.CallRunning}
		if err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
			if err := tx.SetExecState("run", []byte(`{"id":"`+id+`"}`)); err != nil {
				return err
			}
			return tx.PutToolCall(c)
		}); err != nil {
			t.Fatal(err)
		}
		return c.Seq
	}
	n := maxKeptCallIDs + 10
	for i := range n {
		if seq := put(fmt.Sprintf("c%03d", i)); seq != int64(i+1) {
			t.Fatalf("call %d: seq %d", i, seq)
		}
	}
	for i, reopen := range []bool{false, true} {
		if reopen {
			s.Close()
			if s, err = Open(ctx, path, Options{Key: key}); err != nil {
				t.Fatal(err)
			}
		}
		if seq := put(fmt.Sprintf("c%03d", 5+i)); seq != int64(6+i) {
			t.Errorf("a stored call put again: seq %d, want %d", seq, 6+i)
		}
		if seq := put(fmt.Sprintf("new%d", i)); seq != int64(n+1+i) {
			t.Errorf("a new call: seq %d, want %d", seq, n+1+i)
		}
	}
	cs, err := s.ToolCalls(ctx, th.ID)
	if err != nil || len(cs) != n+2 {
		t.Fatalf("%d calls, %v; want %d", len(cs), err, n+2)
	}
	for i, c := range cs {
		if c.Seq != int64(i+1) {
			t.Errorf("call %d: %+v", i, c)
		}
	}
	if _, stored := callRows(t, s, th.ID); len(stored) <= maxKeptCallIDs {
		t.Errorf("only %d calls in tool_calls", len(stored))
	}
}
