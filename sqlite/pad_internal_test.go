package sqlite

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
)

// TestThreadPad: a new thread's row holds threadPad bytes of room (migration 0018) until the first
// write of its lease, which drops them in the statement that puts the user's message in the row.
func TestThreadPad(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "weft.db"), Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	pad := func() (n int64, null bool) {
		t.Helper()
		var l *int64
		if err := s.rdb.QueryRowContext(ctx, `SELECT length(pad) FROM threads WHERE id = ?`, th.ID).Scan(&l); err != nil {
			t.Fatal(err)
		}
		if l == nil {
			return 0, true
		}
		return *l, false
	}
	want, _ := strconv.ParseInt(threadPad, 10, 64)
	if n, null := pad(); null || n != want {
		t.Fatalf("a new thread's pad: %d bytes (NULL %v), want %d", n, null, want)
	}
	push := &weft.QueuedMessage{Role: weft.RoleUser, Content: "hi"}
	if _, _, err := s.BeginRun(ctx, th.ID, "node", time.Hour, push); err != nil {
		t.Fatal(err)
	}
	if n, null := pad(); !null {
		t.Fatalf("after BeginRun the pad is %d bytes, want none", n)
	}
}
