package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// TestThreadListPlans: each listing Threads serves from an index reads it through that index,
// among them a user's threads by activity through threads_user_activity, which indexes only
// threads with a user (migration 0008) and so is usable only with its condition in the query.
func TestThreadListPlans(t *testing.T) {
	key := make([]byte, 32)
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "plan.db"), Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cases := []struct {
		name  string
		q     weft.ThreadQuery
		index string
	}{
		{"a user's, by activity", weft.ThreadQuery{UserID: "u1"}, "threads_user_activity"},
		{"a user's, by activity, of an agent", weft.ThreadQuery{UserID: "u1", Agent: "a"}, "threads_user_activity"},
		{"all, by activity", weft.ThreadQuery{}, "threads_activity"},
		{"a parent's", weft.ThreadQuery{ParentID: "thr_x"}, "threads_parent"},
	}
	for _, c := range cases {
		by, err := storecontract.ParseThreadSort(c.q.Sort)
		if err != nil {
			t.Fatal(err)
		}
		cond, args := threadsWhere(c.q)
		got := queryPlan(t, s, "SELECT doc FROM threads"+cond+" ORDER BY "+threadOrder[by]+" LIMIT ? OFFSET ?", append(args, 10, 0)...)
		if !strings.Contains(got, "INDEX "+c.index) {
			t.Errorf("%s: plan %q does not use %s", c.name, got, c.index)
		}
	}
}

// TestThreadRowPlans: the reads of a thread's messages, calls and logs by its id find its number
// through the id's index once, then seek its rows by number (migration 0012): none scans a table.
func TestThreadRowPlans(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "plan.db"), Options{Key: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, c := range []struct {
		name, q string
		args    []any
	}{
		{"messages", qMessagesAsc, []any{"thr_x", 0, 0, 0, "", 10, 0}},
		{"count of messages", qCountMessages, []any{"thr_x", 0, 0, 0, ""}},
		{"a message by id", qMessage, []any{"thr_x", "msg_x"}},
		{"logs", `SELECT id, doc FROM logs WHERE thread_num = ` + numOf1 + ` AND depth <= ?2 AND n > ?3 ORDER BY n LIMIT ?4 OFFSET ?5`, []any{"thr_x", 0, 0, 10, 0}},
		{"tool calls", `SELECT call_id FROM tool_calls WHERE thread_num = ` + numOf1 + ` ORDER BY seq`, []any{"thr_x"}},
		{"the run start", qRunStart, []any{"thr_x"}},
		{"events", qEvents, []any{"thr_x", 0, 10}},
	} {
		got := queryPlan(t, s, c.q, c.args...)
		for _, table := range []string{"messages", "tool_calls", "logs", "threads", "events"} {
			if strings.Contains(got, "SCAN "+table) {
				t.Errorf("%s: plan %q scans %s", c.name, got, table)
			}
		}
		if c.q != qRunStart && !strings.Contains(got, "SEARCH threads USING COVERING INDEX sqlite_autoindex_threads_1 (id=?)") {
			t.Errorf("%s: plan %q does not find the thread's number by its id", c.name, got)
		}
	}
}

// TestEventPlans: a run's writes of a thread's events and their reads seek the thread's rows
// through events_seq (migration 0013), whose entries hold the seq: the last seq is read from the
// index alone.
func TestEventPlans(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "plan.db"), Options{Key: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, c := range []struct {
		name, q, want string
		args          []any
	}{
		{"events", qEvents, "SEARCH events USING INDEX events_seq (thread_num=? AND seq>?)", []any{"thr_x", 0, 10}},
		{"the last seq", qEventSeq, "SEARCH events USING COVERING INDEX events_seq (thread_num=?)", []any{1}},
		{"pruning", qPruneEvent, "SEARCH events USING INDEX events_seq (thread_num=? AND seq<?)", []any{1, 5}},
	} {
		if got := queryPlan(t, s, c.q, c.args...); !strings.Contains(got, c.want) {
			t.Errorf("%s: plan %q, want %q", c.name, got, c.want)
		}
	}
}

// queryPlan returns the details of q's query plan, joined by "; ".
func queryPlan(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.rdb.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}
