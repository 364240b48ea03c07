package journal_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/feed"
	"github.com/weft-agents/weft/engine/journal"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/memstore"
)

// host is a run as its journal sees it: its redactor, and the rows its cache noted.
type host struct {
	red     *redact.Redactor
	drained []*weft.Message
}

func (h *host) Redactor() *redact.Redactor   { return h.red }
func (h *host) Drained(rows []*weft.Message) { h.drained = append(h.drained, rows...) }

// started is a run's journal on a new thread with a queued message holding the secret.
func started(t *testing.T) (*journal.Journal, *host, weft.Store, *[]journal.Event) {
	t.Helper()
	ctx := context.Background()
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	th := &weft.Thread{ID: weft.NewID("thr_"), Agent: "a", OriginAgent: "a", Status: weft.ThreadIdle}
	if err := st.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	push := &weft.QueuedMessage{ID: weft.NewID("msg_"), ThreadID: th.ID, Role: weft.RoleUser, Content: "token " + secret}
	fence, start, err := st.BeginRun(ctx, th.ID, "node", time.Minute, push)
	if err != nil {
		t.Fatal(err)
	}
	var published []journal.Event
	red := redact.New([]string{secret})
	c := journal.NewCommitter(journal.Config{Store: st, Clock: weft.SystemClock{}, RecordEvents: true, Subscribers: new(feed.Subscribers),
		OnEvent: func(ev journal.Event) { published = append(published, ev) },
		Secrets: secrets{red}})
	h := &host{red: red}
	j := new(journal.Journal)
	j.Init(ctx, &c, h, start.Thread, fence, start.Queued)
	return j, h, st, &published
}

// TestJournalRecordsWithTheRowAndPublishesAfterCommit checks that a run's transaction stores the
// messages it drained with their message events (redacted) and the events waiting in its outbox,
// that nothing is published before it commits, and that the run's cache and the subscribers hear
// of it once it has; a transaction that fails records and publishes nothing, and its events wait
// for the next.
func TestJournalRecordsWithTheRowAndPublishesAfterCommit(t *testing.T) {
	j, h, st, published := started(t)
	ctx := context.Background()
	qs := j.Unread()
	if len(qs) != 1 {
		t.Fatalf("%d messages queued, want 1", len(qs))
	}
	q := qs[0]
	m := &weft.Message{ID: q.ID, Role: q.Role, Content: q.Content, Status: weft.MessageCompleted, Side: weft.SideB}
	j.Take(m, q.Seq)
	j.Emit("step_started", payload.Fields{"n": 1})

	failed := errors.New("failed")
	if err := j.Tx(func(weft.Tx) error { j.Stage(j.Event("staged", nil)); return failed }); !errors.Is(err, failed) {
		t.Fatalf("Tx: %v, want the function's error", err)
	}
	if len(*published) != 0 || len(h.drained) != 0 {
		t.Fatalf("a failed transaction published %d events and noted %d rows", len(*published), len(h.drained))
	}

	err := j.Tx(func(weft.Tx) error {
		if len(*published) != 0 {
			t.Error("events were published before the transaction committed")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.drained) != 1 || h.drained[0] != m || m.Seq == 0 || strings.Contains(m.Content, secret) {
		t.Fatalf("the run noted %v, want its drained row stored and redacted", h.drained)
	}
	recs, err := st.Events(ctx, m.ThreadID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range recs {
		types = append(types, r.Type)
		if strings.Contains(string(r.Data), "tok") && !strings.Contains(string(r.Data), "[redacted]") {
			t.Errorf("event %s holds the secret: %s", r.Type, r.Data)
		}
	}
	if got := strings.Join(types, ","); got != "step_started,message" {
		t.Errorf("recorded %s, want the outbox's step_started then the row's message (not the failed run's staged)", got)
	}
	if len(*published) != 2 || (*published)[0].Seq != recs[0].Seq || (*published)[1].Seq != recs[1].Seq {
		t.Errorf("published %+v, want the recorded events with their seqs", *published)
	}
	if j.Waiting() {
		t.Error("the queue still waits after its message was stored")
	}
}

// TestJournalHoldsTheEndAndFinishes checks that the events of the transaction that records the
// run's end are published only by PublishHeld, and that Finish records what the run emitted
// after it outside the run.
func TestJournalHoldsTheEndAndFinishes(t *testing.T) {
	j, _, st, published := started(t)
	ctx := context.Background()
	j.Unread()
	err := j.Tx(func(tx weft.Tx) error {
		j.StageEnd(j.Event("run_stopped", nil))
		return j.Release(tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !j.EndRecorded() || len(*published) != 0 {
		t.Fatalf("EndRecorded %v with %d events published, want the end recorded and held", j.EndRecorded(), len(*published))
	}
	j.PublishHeld()
	if len(*published) != 1 || (*published)[0].Type != "run_stopped" {
		t.Fatalf("published %+v, want the held run_stopped", *published)
	}
	j.Emit("late", nil) // a tool's goroutine, after the run's last transaction
	j.Finish()
	j.Emit("later", nil)
	recs, err := st.Events(ctx, (*published)[0].ThreadID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range recs {
		types = append(types, r.Type)
	}
	if got := strings.Join(types, ","); got != "run_stopped,late,later" {
		t.Errorf("recorded %s, want run_stopped then what came after the run", got)
	}
}
