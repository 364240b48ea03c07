package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/pgtest"
)

// TestKnownRow: a run's transactions start from the row its last one left (one round trip); a
// row changed by another node in between makes the transaction run again on the row as read,
// with nothing of the first attempt written; a transaction that must send before its commit, or
// that fails at its commit, is still all or nothing; a lease taken by another node is lost.
func TestKnownRow(t *testing.T) {
	ctx := context.Background()
	_, dsn := pgtest.Schema(t)
	key := envcrypt.NewKey()
	open := func() *Store {
		s, err := Open(ctx, dsn, Options{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open() // two nodes
	th := &weft.Thread{Agent: "agent"}
	if err := a.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	f, _, err := a.BeginRun(ctx, th.ID, "node-a", time.Hour, &weft.QueuedMessage{ThreadID: th.ID, Content: "first"})
	if err != nil {
		t.Fatal(err)
	}
	// tx runs fn with the run's fence and reports whether it started from the known row and how
	// many times fn ran.
	tx := func(what string, fn func(weft.Tx) error) (fromKnown bool, runs int, err error) {
		t.Helper()
		fromKnown = a.known.get(th.ID, &f) != nil
		err = a.Tx(ctx, th.ID, &f, func(tx weft.Tx) error {
			runs++
			return fn(tx)
		})
		return fromKnown, runs, err
	}
	messages := func() []string {
		t.Helper()
		ms, err := a.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.Content)
		}
		return out
	}

	// The first transaction drains the queue BeginRun read and is known.
	var drained []weft.QueuedMessage
	m1 := &weft.Message{Role: weft.RoleUser, Content: "first"}
	fromKnown, runs, err := tx("drain", func(tx weft.Tx) error {
		var err error
		if drained, err = tx.DrainQueue(0); err != nil {
			return err
		}
		return tx.InsertMessage(m1)
	})
	if err != nil || !fromKnown || runs != 1 || len(drained) != 1 || m1.Seq != 1 {
		t.Fatalf("first transaction: known %v, runs %d, drained %d, seq %d, %v", fromKnown, runs, len(drained), m1.Seq, err)
	}

	// Another node queues a message and relabels the thread: the next transaction's guard fails,
	// and it runs again on the row as read.
	if err := b.PushQueue(ctx, &weft.QueuedMessage{ThreadID: th.ID, Content: "second"}); err != nil {
		t.Fatal(err)
	}
	label := "from b"
	if err := b.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Label: &label}) }); err != nil {
		t.Fatal(err)
	}
	m2 := &weft.Message{Role: weft.RoleAssistant, Content: "answer"}
	var queueSeq int64
	preview := "p"
	fromKnown, runs, err = tx("after another node", func(tx weft.Tx) error {
		var err error
		if drained, err = tx.DrainQueue(0); err != nil {
			return err
		}
		if queueSeq, err = tx.QueueSeq(); err != nil {
			return err
		}
		if err := tx.UpdateThread(weft.ThreadPatch{Preview: &preview}); err != nil {
			return err
		}
		return tx.InsertMessage(m2)
	})
	if err != nil || !fromKnown || runs != 2 || len(drained) != 1 || drained[0].Content != "second" || queueSeq != 2 || m2.Seq != 2 {
		t.Fatalf("stale transaction: known %v, runs %d, drained %+v, queue seq %d, seq %d, %v", fromKnown, runs, drained, queueSeq, m2.Seq, err)
	}
	if got, _ := a.Thread(ctx, th.ID); got.Label != label || got.Preview != preview {
		t.Errorf("thread after the rerun: label %q, preview %q", got.Label, got.Preview)
	}
	if got := messages(); len(got) != 2 {
		t.Errorf("messages after the rerun: %q (the first attempt wrote something?)", got)
	}

	// Known again: a read-modify-write sends before the commit (explicit BEGIN); failing after it
	// writes nothing.
	edited := "edited"
	boom := errors.New("boom")
	fromKnown, runs, err = tx("send then fail", func(tx weft.Tx) error {
		if err := tx.UpdateMessage(m1.ID, weft.MessageChange{Content: &edited}); err != nil {
			return err
		}
		if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "lost"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || !fromKnown || runs != 1 {
		t.Fatalf("send then fail: known %v, runs %d, %v", fromKnown, runs, err)
	}
	if got := messages(); len(got) != 2 || got[0] != "first" {
		t.Errorf("messages after a failed transaction: %q", got)
	}
	// A write queued before the send goes out with it, inside the explicit transaction: the
	// failure takes it back too.
	fromKnown, runs, err = tx("write, send, then fail", func(tx weft.Tx) error {
		if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "lost early"}); err != nil {
			return err
		}
		if err := tx.UpdateMessage(m1.ID, weft.MessageChange{Content: &edited}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || !fromKnown || runs != 1 {
		t.Fatalf("write, send, then fail: known %v, runs %d, %v", fromKnown, runs, err)
	}
	if got := messages(); len(got) != 2 || got[0] != "first" {
		t.Errorf("messages after a failed transaction that sent a write: %q", got)
	}
	fromKnown, runs, err = tx("send then commit", func(tx weft.Tx) error {
		return tx.UpdateMessage(m1.ID, weft.MessageChange{Content: &edited})
	})
	if err != nil || !fromKnown || runs != 1 {
		t.Fatalf("send then commit: known %v, runs %d, %v", fromKnown, runs, err)
	}

	// A conflict at the commit of an implicit transaction writes nothing either.
	fromKnown, _, err = tx("conflict", func(tx weft.Tx) error {
		if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "lost too"}); err != nil {
			return err
		}
		return tx.InsertMessage(&weft.Message{ID: m1.ID, Role: weft.RoleUser, Content: "same id"})
	})
	if weft.ErrorCode(err) != weft.EConflict || !fromKnown {
		t.Fatalf("conflict: known %v, %v", fromKnown, err)
	}
	if got := messages(); len(got) != 2 || got[0] != edited {
		t.Errorf("messages after a conflict: %q", got)
	}
	m3 := &weft.Message{Role: weft.RoleUser, Content: "third"}
	if _, runs, err = tx("after the conflict", func(tx weft.Tx) error { return tx.InsertMessage(m3) }); err != nil || runs != 1 || m3.Seq != 3 {
		t.Fatalf("after the conflict: runs %d, seq %d, %v", runs, m3.Seq, err)
	}

	// Another node takes the expired lease: the run's next transaction is refused.
	if _, err := b.pool.Exec(ctx, "UPDATE threads SET lease_expires_at = 1 WHERE id = $1", th.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AcquireLease(ctx, th.ID, "node-b", time.Hour); err != nil {
		t.Fatal(err)
	}
	_, _, err = tx("lease lost", func(tx weft.Tx) error {
		return tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "refused"})
	})
	if !errors.Is(err, weft.ErrLeaseLost) {
		t.Fatalf("after another node took the lease: %v", err)
	}
	if got := messages(); len(got) != 3 {
		t.Errorf("messages after the lease was lost: %q", got)
	}
}
