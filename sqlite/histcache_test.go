package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/weft-agents/weft"
)

// Every BeginRun of this package's tests that takes a history from the cache also reads it from
// the database and fails when they differ.
func init() { verifyHistory = true }

// histHits is how many BeginRuns s's writer served from its kept histories.
func histHits(s *Store) int {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.w.rows.hist.hits
}

// TestHistoryCacheFollowsChanges: a run starts from the history the writer keeps, and every
// change of a thread's messages — inserted, replaced or deleted in a Tx, fenced or not; written
// by another process; rolled back; the thread deleted — is in the next run's history. Each case
// checks the history was taken from the cache where it should be, and the run's messages against
// the store's (BeginRun itself compares the kept history with the database's, verifyHistory).
func TestHistoryCacheFollowsChanges(t *testing.T) {
	ctx := t.Context()
	insert := func(content string, depth int) func(weft.Tx) error {
		return func(tx weft.Tx) error {
			return tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: content, Depth: depth})
		}
	}
	// run begins a run on th and ends it, and returns its messages' contents, checking them
	// against the store's and whether the history came from the cache.
	run := func(t *testing.T, s *Store, th string, fromCache bool) []string {
		t.Helper()
		before := histHits(s)
		f, rs, err := s.BeginRun(ctx, th, "node-a", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseLease(ctx, f); err != nil {
			t.Fatal(err)
		}
		if got := histHits(s) > before; got != fromCache {
			t.Errorf("history from the cache: %v, want %v", got, fromCache)
		}
		if rs.Messages != nil {
			t.Error("BeginRun set Messages; its history is in Rows")
		}
		var got []string
		for _, m := range rs.Rows {
			got = append(got, m.Content)
		}
		stored, err := s.Messages(ctx, th, weft.MessageQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, m := range stored {
			if m.Depth <= 0 {
				want = append(want, m.Content)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("the run starts from %q, the store holds %q", got, want)
		}
		return got
	}
	newThread := func(t *testing.T, s *Store) string {
		t.Helper()
		th := &weft.Thread{Agent: "a"}
		if err := s.CreateThread(ctx, th, nil); err != nil {
			t.Fatal(err)
		}
		return th.ID
	}
	mustTx := func(t *testing.T, s *Store, th string, f *weft.Fence, fn func(weft.Tx) error) {
		t.Helper()
		if err := s.Tx(ctx, th, f, fn); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a large message kept as its doc has it", func(t *testing.T) {
		s := openFile(t).(*Store)
		th := newThread(t, s)
		big := strings.Repeat("lorem ipsum ", bigDoc/12+1)
		mustTx(t, s, th, nil, func(tx weft.Tx) error {
			return tx.InsertMessage(&weft.Message{Role: weft.RoleAssistant, Content: big, Reasoning: "why", Name: "n",
				ToolCalls: []weft.ToolCall{{ID: "call_1", Name: "echo", Arguments: `{"a":1}`}}, Metadata: map[string]any{"k": 1.5},
				Attachments: []weft.Attachment{{ID: "att_1", Path: "/attachments/a.png", Name: "a.png", MimeType: "image/png", Size: 3}}})
		})
		mustTx(t, s, th, nil, insert("small", 0))
		if got := run(t, s, th, true); len(got) != 2 || got[0] != big {
			t.Fatalf("history of %d messages", len(got))
		}
	})
	t.Run("kept from creation through inserts", func(t *testing.T) {
		s := openFile(t).(*Store)
		th := newThread(t, s)
		mustTx(t, s, th, nil, insert("one", 0))
		mustTx(t, s, th, nil, insert("nested", 1)) // not a run's history
		mustTx(t, s, th, nil, func(tx weft.Tx) error {
			if err := insert("two", 0)(tx); err != nil {
				return err
			}
			return insert("three", 0)(tx)
		})
		if got := run(t, s, th, true); len(got) != 3 {
			t.Fatalf("history %q", got)
		}
		// A run's own fenced steps append as they commit.
		f, _, err := s.BeginRun(ctx, th, "node-a", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		mustTx(t, s, th, &f, insert("four", 0))
		if err := s.ReleaseLease(ctx, f); err != nil {
			t.Fatal(err)
		}
		run(t, s, th, true)
	})

	// The kept copy of an inserted message is what reading it back gives, field for field
	// (BeginRun compares them, verifyHistory), whatever fields it has, and stays so when the
	// caller changes its message after the insert.
	t.Run("every field of an inserted message", func(t *testing.T) {
		s := openFile(t).(*Store)
		th := newThread(t, s)
		run(t, s, th, true)
		at := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.FixedZone("X", 3600))
		full := &weft.Message{Role: weft.RoleAssistant, Side: weft.SideA, Content: "text", Name: "n",
			ToolCalls:  []weft.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"id":42}`}, {ID: "c2"}},
			ToolCallID: "c0", ToolStatus: weft.ToolStatus("error"), Status: weft.MessageStatus("completed"), Silent: true,
			ParentID: "msg_parent", Prompt: "p", Reasoning: "r", LogID: "log_1", RunID: "run_1",
			Attachments: []weft.Attachment{{ID: "a1", Path: "/attachments/x.png", Name: "x.png", MimeType: "image/png", Size: 3, Width: 2, Height: 1}},
			Metadata:    map[string]any{"n": 1, "nested": map[string]any{"list": []int{1, 2}}, "raw": "s"},
			CreatedAt:   at}
		bare := &weft.Message{Role: weft.RoleUser, Content: "", ToolCalls: []weft.ToolCall{}, Metadata: map[string]any{}}
		mustTx(t, s, th, nil, func(tx weft.Tx) error {
			if err := tx.InsertMessage(full); err != nil {
				return err
			}
			return tx.InsertMessage(bare)
		})
		full.ToolCalls[0].Name, full.Attachments[0].Name, full.Metadata["n"] = "changed", "changed", 2
		run(t, s, th, true) // fails when a kept message differs from the stored one
	})

	t.Run("replaced and deleted messages", func(t *testing.T) {
		s := openFile(t).(*Store)
		th := newThread(t, s)
		m := &weft.Message{Role: weft.RoleUser, Content: "draft"}
		mustTx(t, s, th, nil, func(tx weft.Tx) error { return tx.InsertMessage(m) })
		run(t, s, th, true)
		text := "final"
		mustTx(t, s, th, nil, func(tx weft.Tx) error { return tx.UpdateMessage(m.ID, weft.MessageChange{Content: &text}) })
		if got := run(t, s, th, false); got[0] != "final" {
			t.Fatalf("after the update the run starts from %q", got)
		}
		run(t, s, th, true) // read back, kept again
		mustTx(t, s, th, nil, func(tx weft.Tx) error {
			if err := tx.DeleteMessage(m.ID); err != nil {
				return err
			}
			return insert("after", 0)(tx)
		})
		if got := run(t, s, th, false); !slices.Equal(got, []string{"after"}) {
			t.Fatalf("after the delete the run starts from %q", got)
		}
	})

	t.Run("a rolled-back Tx", func(t *testing.T) {
		s := openFile(t).(*Store)
		th := newThread(t, s)
		run(t, s, th, true)
		boom := errors.New("boom")
		err := s.Tx(ctx, th, nil, func(tx weft.Tx) error {
			if err := insert("never", 0)(tx); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if got := run(t, s, th, false); len(got) != 0 {
			t.Fatalf("a rolled-back insert is in the history: %q", got)
		}
	})

	t.Run("written by another process", func(t *testing.T) {
		a, b, _, _ := twoStores(t)
		th := newThread(t, a)
		mustTx(t, a, th, nil, insert("from a", 0))
		run(t, a, th, true)
		mustTx(t, b, th, nil, insert("from b", 0))
		if got := run(t, a, th, false); !slices.Equal(got, []string{"from a", "from b"}) {
			t.Fatalf("after another process's insert the run starts from %q", got)
		}
	})

	t.Run("a deleted thread's id", func(t *testing.T) {
		s := openFile(t).(*Store)
		th := newThread(t, s)
		mustTx(t, s, th, nil, insert("old", 0))
		run(t, s, th, true)
		if err := s.DeleteThread(ctx, th); err != nil {
			t.Fatal(err)
		}
		again := &weft.Thread{ID: th, Agent: "a"}
		if err := s.CreateThread(ctx, again, nil); err != nil {
			t.Fatal(err)
		}
		if got := run(t, s, th, true); len(got) != 0 {
			t.Fatalf("a new thread with a deleted one's id starts from %q", got)
		}
	})

	t.Run("budget", func(t *testing.T) {
		s, err := Open(ctx, filepath.Join(t.TempDir(), "weft.db"), Options{Key: make([]byte, 32), HistoryCache: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		var ths []string
		for i := range 40 {
			th := newThread(t, s)
			mustTx(t, s, th, nil, insert(fmt.Sprintf("%d %03000d", i, 0), 0))
			ths = append(ths, th)
		}
		s.wmu.Lock()
		kept, bytes := s.w.rows.hist.lru.Len(), s.w.rows.hist.lru.Bytes()
		s.wmu.Unlock()
		if bytes > 64<<10 || kept >= 40 || kept == 0 {
			t.Fatalf("%d histories in %d bytes kept within a 64 KiB budget", kept, bytes)
		}
		run(t, s, ths[len(ths)-1], true) // the most recent stays
		run(t, s, ths[0], false)         // the oldest went first
		// A history up to half the budget is kept; a larger one is read at every run start.
		for _, c := range []struct {
			messages int
			kept     bool
		}{{6, true}, {12, false}} {
			th := newThread(t, s)
			for i := range c.messages {
				mustTx(t, s, th, nil, insert(fmt.Sprintf("%d %03000d", i, 0), 0))
			}
			run(t, s, th, c.kept)
			run(t, s, th, c.kept)
		}
		off, err := Open(ctx, filepath.Join(t.TempDir(), "off.db"), Options{Key: make([]byte, 32), HistoryCache: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { off.Close() })
		th := newThread(t, off)
		run(t, off, th, false)
		run(t, off, th, false)
	})
}

// TestHistoryCheckCatchesADifference: the check the tests rely on fails a run whose kept history
// is not the stored one.
func TestHistoryCheckCatchesADifference(t *testing.T) {
	ctx := t.Context()
	s := openFile(t).(*Store)
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		return tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "stored"})
	}); err != nil {
		t.Fatal(err)
	}
	stored, err := s.Messages(ctx, th.ID, weft.MessageQuery{})
	if err != nil || len(stored) != 1 {
		t.Fatal(stored, err)
	}
	other := stored[0]
	other.Content = "kept"
	for name, kept := range map[string][]*weft.Message{"none": nil, "another content": {&other}, "the same": {&stored[0]}} {
		s.wmu.Lock()
		s.w.rows.hist.put(th.ID, kept, 0)
		s.wmu.Unlock()
		_, _, err := s.BeginRun(ctx, th.ID, "node-a", time.Minute, nil)
		if name == "the same" {
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		} else if err == nil {
			t.Fatalf("%s: a run started from a kept history that differs from the stored one", name)
		}
	}
}

// TestKeptCopyOwnsItsText: the kept copy of a message holds its text in a buffer of its own,
// within the doc's length, so that a history does not keep alive the larger strings a caller's
// text may be part of.
func TestKeptCopyOwnsItsText(t *testing.T) {
	body := `{"content":"the answer","id":"call_1","args":"{}"}` // a response body the text was cut from
	m := &weft.Message{ID: "msg_1", Role: weft.RoleAssistant, Content: body[12:22], LogID: "log_1",
		ToolCalls:   []weft.ToolCall{{ID: body[30:36], Name: "lookup", Arguments: body[46:48]}},
		Attachments: []weft.Attachment{{ID: "a1", Path: "/attachments/a.txt", Name: "a.txt", MimeType: "text/plain"}}}
	at := time.Now()
	doc := messageDoc(m, 1, at, nil)
	k, err := keptCopy(m, at, nil, len(doc))
	if err != nil {
		t.Fatal(err)
	}
	texts := func(m *weft.Message) []string {
		out := []string{m.ID, m.Content, m.LogID}
		for _, c := range m.ToolCalls {
			out = append(out, c.ID, c.Name, c.Arguments)
		}
		for _, a := range m.Attachments {
			out = append(out, a.ID, a.Path, a.Name, a.MimeType)
		}
		return out
	}
	orig, kept := texts(m), texts(k)
	if !slices.Equal(orig, kept) {
		t.Fatalf("kept %q, want %q", kept, orig)
	}
	first := unsafe.StringData(kept[0])
	for i, s := range kept {
		p := unsafe.StringData(s)
		if p == unsafe.StringData(orig[i]) {
			t.Errorf("kept text %q shares the caller's string", s)
		}
		if off := uintptr(unsafe.Pointer(p)) - uintptr(unsafe.Pointer(first)); off+uintptr(len(s)) > uintptr(len(doc)) {
			t.Errorf("kept text %q lies %d bytes past the first, beyond the doc's %d", s, off, len(doc))
		}
	}
}
