package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
)

// activityColumns reads a thread row's indexed activity and the activity left pending.
func activityColumns(t *testing.T, s *Store, id string) (indexed, pending int64) {
	t.Helper()
	if err := s.rdb.QueryRowContext(t.Context(), `SELECT last_activity_at, pending_activity_at FROM threads WHERE id = ?`, id).
		Scan(&indexed, &pending); err != nil {
		t.Fatal(err)
	}
	return indexed, pending
}

// TestActivityLeftToRunEnd: a run's steps leave the thread's activity pending in its row, the
// index untouched, and the run's end indexes it (migration 0016); a thread's doc has it at once.
func TestActivityLeftToRunEnd(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "weft.db"), Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	th := &weft.Thread{Agent: "a", LastActivityAt: t0}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	push := &weft.QueuedMessage{Role: weft.RoleUser, Content: "hi"}
	f, _, err := s.BeginRun(ctx, th.ID, "node", time.Hour, push)
	if err != nil {
		t.Fatal(err)
	}
	running := weft.ThreadRunning
	for i, step := range []time.Time{t0.Add(time.Second), t0.Add(time.Second), t0.Add(2 * time.Second)} {
		err := s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error {
			if i == 0 {
				if _, err := tx.DrainQueue(push.Seq); err != nil {
					return err
				}
			}
			if err := tx.UpdateThread(weft.ThreadPatch{Status: &running, LastActivityAt: &step}); err != nil {
				return err
			}
			return tx.InsertMessage(&weft.Message{Role: weft.RoleAssistant, Content: "step"})
		})
		if err != nil {
			t.Fatal(err)
		}
		if indexed, pending := activityColumns(t, s, th.ID); indexed != t0.UnixNano() || pending != step.UnixNano() {
			t.Errorf("step %d: indexed %d, pending %d; want %d, %d", i, indexed, pending, t0.UnixNano(), step.UnixNano())
		}
		if got, err := s.Thread(ctx, th.ID); err != nil || !got.LastActivityAt.Equal(step) {
			t.Errorf("step %d: thread %+v, %v; want activity %v", i, got, err, step)
		}
	}
	// The run's end sets a status and no activity, and releases the lease.
	idle := weft.ThreadIdle
	if err := s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error {
		if err := tx.UpdateThread(weft.ThreadPatch{Status: &idle}); err != nil {
			return err
		}
		return tx.ReleaseLease()
	}); err != nil {
		t.Fatal(err)
	}
	end := t0.Add(2 * time.Second).UnixNano()
	if indexed, pending := activityColumns(t, s, th.ID); indexed != end || pending != 0 {
		t.Errorf("after the run: indexed %d, pending %d; want %d, 0", indexed, pending, end)
	}
	// The next run starts from the row the last left (kept idle): nothing pending.
	f, _, err = s.BeginRun(ctx, th.ID, "node", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error { return tx.ReleaseLease() }); err != nil {
		t.Fatal(err)
	}
	if indexed, pending := activityColumns(t, s, th.ID); indexed != end || pending != 0 {
		t.Errorf("after an empty run: indexed %d, pending %d; want %d, 0", indexed, pending, end)
	}
}

// TestPendingActivityMigrated: a database from before migration 16 opens with nothing pending,
// lists by activity as before, and its threads' runs leave their activity to their ends.
func TestPendingActivityMigrated(t *testing.T) {
	ctx := t.Context()
	path, key := filepath.Join(t.TempDir(), "weft.db"), envcrypt.NewKey()
	s, err := Open(ctx, path, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var ids []string
	for i := range 3 {
		th := &weft.Thread{Agent: "a", UserID: "u", LastActivityAt: t0.Add(time.Duration(i) * time.Second)}
		if err := s.CreateThread(ctx, th, nil); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ID)
	}
	s.Close()
	// Back to the schema of migration 15, the rows kept.
	db := rawDB(t, path)
	for _, q := range []string{`ALTER TABLE threads DROP COLUMN pad`, `ALTER TABLE threads DROP COLUMN calls`, `ALTER TABLE threads DROP COLUMN pending_activity_at`,
		`DELETE FROM schema_migrations WHERE version >= 16`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s, err = Open(ctx, path, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, id := range ids {
		if indexed, pending := activityColumns(t, s, id); indexed != t0.Add(time.Duration(i)*time.Second).UnixNano() || pending != 0 {
			t.Errorf("migrated thread %d: indexed %d, pending %d", i, indexed, pending)
		}
	}
	listed := func(want ...string) {
		t.Helper()
		for _, q := range []weft.ThreadQuery{{}, {UserID: "u"}} {
			got, _, err := s.Threads(ctx, q)
			var gotIDs []string
			for _, th := range got {
				gotIDs = append(gotIDs, th.ID)
			}
			if err != nil || len(gotIDs) != len(want) {
				t.Fatalf("listed %v, %v; want %v", gotIDs, err, want)
			}
			for i := range want {
				if gotIDs[i] != want[i] {
					t.Errorf("listed %v by %+v, want %v", gotIDs, q, want)
					break
				}
			}
		}
	}
	listed(ids[2], ids[1], ids[0])
	f, err := s.AcquireLease(ctx, ids[0], "node", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	running, later := weft.ThreadRunning, t0.Add(time.Minute)
	if err := s.Tx(ctx, ids[0], &f, func(tx weft.Tx) error {
		return tx.UpdateThread(weft.ThreadPatch{Status: &running, LastActivityAt: &later})
	}); err != nil {
		t.Fatal(err)
	}
	if _, pending := activityColumns(t, s, ids[0]); pending != later.UnixNano() {
		t.Errorf("a migrated thread's step left %d pending, want %d", pending, later.UnixNano())
	}
	if err := s.ReleaseLease(ctx, f); err != nil {
		t.Fatal(err)
	}
	listed(ids[0], ids[2], ids[1])
}

// rawDB opens the database file at path without a Store.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	return db
}
