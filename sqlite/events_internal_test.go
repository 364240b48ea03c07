package sqlite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
)

// appendBatches appends each batch of events to th in a Tx of its own and returns every event as
// the store numbered it.
func appendBatches(t *testing.T, s *Store, th string, batches [][]weft.EventRecord) []weft.EventRecord {
	t.Helper()
	var all []weft.EventRecord
	for _, b := range batches {
		evs := append([]weft.EventRecord(nil), b...)
		if err := s.Tx(t.Context(), th, nil, func(tx weft.Tx) error { return tx.AppendEvents(evs) }); err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
	}
	return all
}

// storeWithThread opens a store on a new file, closed with the test, holding one thread.
func storeWithThread(t *testing.T) (*Store, *weft.Thread) {
	t.Helper()
	s, err := Open(t.Context(), t.TempDir()+"/weft.db", Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(t.Context(), th, nil); err != nil {
		t.Fatal(err)
	}
	return s, th
}

func sameEvents(got, want []weft.EventRecord) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d events, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ThreadID != w.ThreadID || g.Seq != w.Seq || g.Type != w.Type || !bytes.Equal(g.Data, w.Data) || !g.CreatedAt.Equal(w.CreatedAt) {
			return fmt.Errorf("event %d is %+v, want %+v", i, g, w)
		}
	}
	return nil
}

// TestEventRows: a Tx's events take one row, a lone event's its own columns and several packed;
// every cursor and limit reads exactly the events after the cursor, across packed rows.
func TestEventRows(t *testing.T) {
	ctx := t.Context()
	s, th := storeWithThread(t)
	at := time.Unix(1700000000, 123456789).UTC()
	ev := func(typ, data string) weft.EventRecord {
		at = at.Add(time.Second)
		return weft.EventRecord{Type: typ, Data: json.RawMessage(data), CreatedAt: at}
	}
	batches := [][]weft.EventRecord{
		{ev("run_started", `{"run_id":"r1"}`)},
		{ev("step_started", `{}`), ev("llm_request", `{"log_id":"l1"}`), ev("message", `{"message":{"content":"a\u0000b"}}`)},
		{ev("", `{}`)},                    // a lone event of no type is packed
		{ev("tool_started", "\x00\xff{")}, // data is kept as given
		{ev("a", ""), ev("", `null`)},     // no data is null; no type survives packing
		{{Type: "clocked", Data: json.RawMessage(`1`)}, ev("b", `2`), ev("c", `3`), ev("d", `4`), ev("e", `5`)},
	}
	want := appendBatches(t, s, th.ID, batches)
	for i := range want {
		if want[i].Seq != int64(i+1) {
			t.Fatalf("event %d numbered %d", i, want[i].Seq)
		}
		if want[i].CreatedAt.IsZero() {
			t.Fatalf("event %d has no time", i)
		}
	}
	if string(want[6].Data) != "null" {
		t.Errorf("an event without data stored %q, want null", want[6].Data)
	}
	var rows, plain int
	if err := s.row(ctx, `SELECT count(*), count(type) FROM events`, []any{&rows, &plain}); err != nil {
		t.Fatal(err)
	}
	if rows != len(batches) || plain != 2 {
		t.Errorf("%d rows (%d of one event), want %d (2)", rows, plain, len(batches))
	}
	for after := int64(0); after <= int64(len(want))+1; after++ {
		for _, limit := range []int{1, 2, 3, 4, 1000} {
			got, err := s.Events(ctx, th.ID, after, limit)
			if err != nil {
				t.Fatal(err)
			}
			exp := want[min(int(after), len(want)):]
			exp = exp[:min(limit, len(exp))]
			if err := sameEvents(got, exp); err != nil {
				t.Errorf("after %d, limit %d: %v", after, limit, err)
			}
		}
	}
}

// TestEventRowsPruned: events appended several a Tx are pruned as one a Tx were: the newest
// weft.EventWindow at least are kept, gap-free, and the log does not grow without bound.
func TestEventRowsPruned(t *testing.T) {
	ctx := t.Context()
	s, th := storeWithThread(t)
	var batches [][]weft.EventRecord
	total := 0
	for total < weft.EventWindow+3000 {
		n := 1 + len(batches)%7
		b := make([]weft.EventRecord, n)
		for i := range b {
			b[i] = weft.EventRecord{Type: "e", Data: json.RawMessage(fmt.Sprint(total + i + 1))}
		}
		batches, total = append(batches, b), total+n
	}
	appendBatches(t, s, th.ID, batches)
	var kept []weft.EventRecord
	for after := int64(0); ; {
		page, err := s.Events(ctx, th.ID, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		kept, after = append(kept, page...), page[len(page)-1].Seq
	}
	last := kept[len(kept)-1].Seq
	if last != int64(total) || len(kept) < weft.EventWindow || len(kept) > weft.EventWindow+1024+7 {
		t.Fatalf("kept %d events up to %d of %d, want the newest %d and at most 1,031 more", len(kept), last, total, weft.EventWindow)
	}
	for i, e := range kept {
		if e.Seq != kept[0].Seq+int64(i) || string(e.Data) != fmt.Sprint(e.Seq) {
			t.Fatalf("kept event %d: seq %d data %s", i, e.Seq, e.Data)
		}
	}
}

// TestEventsNumbered: migration 0013 keeps every thread's events, each a row keyed by the
// thread's number; they read back as they were, the next are numbered after them, and they go
// with their thread.
func TestEventsNumbered(t *testing.T) {
	ctx := t.Context()
	var stmts []string
	want := map[string][]weft.EventRecord{}
	for _, th := range []string{"thr_a", "thr_b"} {
		for seq := int64(1); seq <= 3; seq++ {
			e := weft.EventRecord{ThreadID: th, Seq: seq, Type: "type_" + th, Data: json.RawMessage(fmt.Sprintf(`"%s %d"`, th, seq)),
				CreatedAt: time.Unix(0, seq*1000)}
			if seq == 2 {
				e.Data = json.RawMessage("\x00nul") // blobs are copied as they are
			}
			want[th] = append(want[th], e)
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO events (thread_id, seq, type, data, created_at) VALUES ('%s', %d, '%s', x'%x', %d)`,
				th, seq, e.Type, []byte(e.Data), e.CreatedAt.UnixNano()))
		}
	}
	path, db := oldDatabase(t, 13, stmts...)
	db.Close()
	s, err := Open(ctx, path, Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for th, evs := range want {
		got, err := s.Events(ctx, th, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameEvents(got, evs); err != nil {
			t.Errorf("%s: %v", th, err)
		}
		if got, err := s.Events(ctx, th, 1, 1); err != nil || sameEvents(got, evs[1:2]) != nil {
			t.Errorf("%s after 1: %+v, %v", th, got, err)
		}
	}
	more := appendBatches(t, s, "thr_a", [][]weft.EventRecord{{{Type: "x"}, {Type: "y"}}})
	if more[0].Seq != 4 || more[1].Seq != 5 {
		t.Errorf("the next events numbered %d, %d, want 4, 5", more[0].Seq, more[1].Seq)
	}
	if err := s.DeleteThread(ctx, "thr_a"); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := s.row(ctx, `SELECT count(*) FROM events`, []any{&rows}); err != nil || rows != 3 {
		t.Errorf("%d event rows after deleting thr_a (%v), want thr_b's 3", rows, err)
	}
	if got, err := s.Events(ctx, "thr_b", 0, 0); err != nil || sameEvents(got, want["thr_b"]) != nil {
		t.Errorf("thr_b after deleting thr_a: %+v, %v", got, err)
	}
}

// FuzzEventsDoc: whatever a packed row holds, reading it never panics, and what it reads is
// numbered without gaps up to the row's seq; events packed read back as they were.
func FuzzEventsDoc(f *testing.F) {
	recs := []weft.EventRecord{
		{Type: "message", Data: json.RawMessage(`{"message":{}}`), CreatedAt: time.Unix(1, 2)},
		{Type: "", Data: json.RawMessage("\x00"), CreatedAt: time.Unix(-5, 0)},
	}
	doc := string(eventsDoc(recs))
	f.Add(doc, int64(2), "run_started", []byte(`{}`), int64(7))
	f.Add(doc[:len(doc)-3], int64(9), "", []byte{}, int64(0))
	f.Add("\x01\x00", int64(1), "x", []byte("\xff"), int64(-1))
	f.Add("", int64(0), "y", []byte("null"), int64(1))
	f.Fuzz(func(t *testing.T, doc string, last int64, typ string, data []byte, at int64) {
		got, err := decodeEvents(doc, last, "thr", nil)
		if err == nil {
			if len(got) == 0 {
				t.Fatal("no events and no error")
			}
			for i, e := range got {
				if e.Seq != last-int64(len(got)-1-i) || e.Seq < 1 || e.ThreadID != "thr" {
					t.Fatalf("event %d of %d up to %d: seq %d, thread %q", i, len(got), last, e.Seq, e.ThreadID)
				}
			}
		}
		if len(data) == 0 {
			data = []byte("null") // as AppendEvents stores it
		}
		in := []weft.EventRecord{{Type: typ, Data: data, CreatedAt: time.Unix(0, at)}, {Type: "next", Data: json.RawMessage(`1`)}}
		if at == 0 {
			in[0].CreatedAt = time.Time{}
		}
		back, err := decodeEvents(string(eventsDoc(in)), 10, "thr", nil)
		if err != nil || len(back) != 2 || back[0].Type != typ || !bytes.Equal(back[0].Data, data) || !back[0].CreatedAt.Equal(in[0].CreatedAt) ||
			back[0].Seq != 9 || back[1].Type != "next" {
			t.Fatalf("packed %+v, read %+v, %v", in, back, err)
		}
	})
}
