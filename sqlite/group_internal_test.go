package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
)

// TestGroupCommit: concurrent writes are committed together, and each keeps the atomicity of a
// transaction of its own: a write that fails or panics leaves nothing behind and does not affect
// the writes it shared a commit with; a panic reaches only its own caller.
func TestGroupCommit(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "weft.db"), Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const writers, each = 40, 25
	threads := make([]*weft.Thread, writers)
	for i := range threads {
		threads[i] = &weft.Thread{Agent: "a"}
		if err := s.CreateThread(t.Context(), threads[i], nil); err != nil {
			t.Fatal(err)
		}
	}
	s.wmu.Lock()
	before := s.ckpt.commits
	s.wmu.Unlock()
	errBoom := errors.New("boom")
	var wg sync.WaitGroup
	outcomes := make([][]string, writers)
	for w := range writers {
		wg.Go(func() {
			for j := range each {
				kind := []string{"ok", "ok", "fail", "ok", "panic"}[(w+j)%5]
				var got string
				func() {
					defer func() {
						if p := recover(); p != nil {
							got = fmt.Sprint("panic:", p)
						}
					}()
					err := s.Tx(t.Context(), threads[w].ID, nil, func(tx weft.Tx) error {
						if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: fmt.Sprintf("%s %d", kind, j), Status: weft.MessageCompleted}); err != nil {
							return err
						}
						switch kind {
						case "fail":
							return errBoom
						case "panic":
							panic("exploded")
						}
						return nil
					})
					switch {
					case errors.Is(err, errBoom):
						got = "fail"
					case err == nil:
						got = "ok"
					default:
						got = "error: " + err.Error()
					}
				}()
				if want := map[string]string{"ok": "ok", "fail": "fail", "panic": "panic:exploded"}[kind]; got != want {
					t.Errorf("writer %d write %d (%s): got %q", w, j, kind, got)
				}
				outcomes[w] = append(outcomes[w], kind)
			}
		})
	}
	wg.Wait()
	for w, th := range threads {
		msgs, err := s.Messages(t.Context(), th.ID, weft.MessageQuery{Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for j, kind := range outcomes[w] {
			if kind == "ok" {
				want = append(want, fmt.Sprintf("ok %d", j))
			}
		}
		var got []string
		for i, m := range msgs {
			got = append(got, m.Content)
			if m.Seq != int64(i+1) {
				t.Errorf("thread %d: seq %d at %d (a rolled-back write left a gap or a duplicate)", w, m.Seq, i)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("thread %d: stored %v, want %v", w, got, want)
		}
	}
	s.wmu.Lock()
	commits := s.ckpt.commits - before
	s.wmu.Unlock()
	if commits >= writers*each {
		t.Errorf("%d commits for %d writes: nothing was grouped", commits, writers*each)
	}
	t.Logf("%d writes in %d commits", writers*each, commits)
}

// TestGroupRunsTogether: writes that wait together run once each, with no savepoint, in one
// commit; when one of them fails, the group is rolled back and runs again one savepoint each, so
// the others still commit (those that ran before it having run twice) and the failed one leaves
// nothing.
func TestGroupRunsTogether(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "weft.db"), Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(t.Context(), th, nil); err != nil {
		t.Fatal(err)
	}
	errBoom := errors.New("boom")
	cases := []struct {
		name    string
		failing int // index of the write that fails, -1 for none
	}{
		{"all succeed", -1},
		{"one fails", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const n = 5
			before, err := s.Messages(t.Context(), th.ID, weft.MessageQuery{Limit: -1})
			if err != nil {
				t.Fatal(err)
			}
			runs := make([]int, n)
			errs := make([]error, n)
			// The write connection is held, so the writes queue: the first leads and waits for it,
			// the others pile up behind it and are committed as one group once it is free.
			s.wmu.Lock()
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					errs[i] = s.Tx(t.Context(), th.ID, nil, func(tx weft.Tx) error {
						runs[i]++
						if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: fmt.Sprint(i), Status: weft.MessageCompleted}); err != nil {
							return err
						}
						if i == c.failing {
							return errBoom
						}
						return nil
					})
				})
				for { // one at a time: the first leads (its batch taken), the others queue in order
					s.group.mu.Lock()
					leading, queued := s.group.leading, len(s.group.pending)
					s.group.mu.Unlock()
					if leading && queued == i {
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
			for { // all but the leader's wait in one group
				s.group.mu.Lock()
				queued := len(s.group.pending)
				s.group.mu.Unlock()
				if queued == n-1 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			s.ckpt.commits = 0
			s.wmu.Unlock()
			wg.Wait()
			s.wmu.Lock()
			commits := s.ckpt.commits
			s.wmu.Unlock()
			if commits != 2 {
				t.Errorf("%d commits, want 2 (the leader's write, then the group)", commits)
			}
			want := 0
			for i := range n {
				switch {
				case i == c.failing:
					if !errors.Is(errs[i], errBoom) {
						t.Errorf("write %d: %v, want boom", i, errs[i])
					}
				case errs[i] != nil:
					t.Errorf("write %d: %v", i, errs[i])
				default:
					want++
					wantRuns := 1
					if i > 0 && i < c.failing {
						wantRuns = 2 // rolled back with the group, then run again
					}
					if runs[i] != wantRuns {
						t.Errorf("write %d ran %d times, want %d", i, runs[i], wantRuns)
					}
				}
			}
			after, err := s.Messages(t.Context(), th.ID, weft.MessageQuery{Limit: -1})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(after) - len(before); got != want {
				t.Errorf("%d messages stored, want %d", got, want)
			}
			for _, m := range after[len(before):] {
				if m.Content == fmt.Sprint(c.failing) {
					t.Errorf("the failed write's message was stored")
				}
			}
		})
	}
}
