package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

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
