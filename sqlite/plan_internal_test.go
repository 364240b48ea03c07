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
		rows, err := s.rdb.QueryContext(t.Context(), "EXPLAIN QUERY PLAN SELECT doc FROM threads"+cond+" ORDER BY "+threadOrder[by]+" LIMIT ? OFFSET ?", append(args, 10, 0)...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if got := strings.Join(plan, "; "); !strings.Contains(got, "INDEX "+c.index) {
			t.Errorf("%s: plan %q does not use %s", c.name, got, c.index)
		}
	}
}
