package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

func fullLog(id string, depth int) *weft.LogEntry {
	f := func(v float64) *float64 { return &v }
	return &weft.LogEntry{
		ID: id, RunID: "run_1", MessageID: "msg_1", ParentLogID: "log_p", RetryOfLogID: "log_r", Kind: "llm",
		Provider: "openai", Model: "m", ModelID: "gpt-x", Prompt: "main", Side: weft.SideA, Depth: depth, StatusCode: 200,
		FinishReason: "stop", Error: "e", ErrorType: "t", ErrorOrigin: "o", IsComplete: true,
		InputTokens: 1, CachedTokens: 2, OutputTokens: 3, ReasoningTokens: 4, TotalTokens: 10,
		CostInput: f(0.5), CostCached: f(0), CostOutput: f(1.25), CostTotal: f(1.75),
		LatencyMS: 100, TimeToFirstTokenMS: 20, GenerationMS: 80,
		RequestBody: json.RawMessage(`{"messages":[]}`), ResponseBody: json.RawMessage(`{"ok":true}`),
		ToolsOffered: []string{"a", "b"}, ToolsCalled: []string{"a"}, QueuedTools: []string{"q"}, ToolChoice: "auto",
		CreatedAt: baseTime().Add(time.Duration(depth) * time.Second),
	}
}

func testLogs(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	mustTx(t, s, th.ID, func(tx weft.Tx) error {
		for i, d := range []int{0, 1, 0, 2} {
			if err := tx.PutLog(fullLog(fmt.Sprintf("log_%d", i+1), d)); err != nil {
				return err
			}
		}
		return nil
	})
	got, err := s.Log(ctx, th.ID, "log_2")
	if err != nil {
		t.Fatal(err)
	}
	want := *fullLog("log_2", 1)
	want.ThreadID = th.ID
	if !got.CreatedAt.Equal(want.CreatedAt) || !jsonEqual(got.RequestBody, want.RequestBody) || !jsonEqual(got.ResponseBody, want.ResponseBody) {
		t.Errorf("log times/bodies: %v %s %s", got.CreatedAt, got.RequestBody, got.ResponseBody)
	}
	got.CreatedAt, want.CreatedAt = time.Time{}, time.Time{}
	got.RequestBody, got.ResponseBody, want.RequestBody, want.ResponseBody = nil, nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Log:\n got %#v\nwant %#v", got, want)
	}
	// Replacing a row keeps its place; listing omits bodies.
	repl := fullLog("log_1", 0)
	repl.Error, repl.IsComplete, repl.CostTotal, repl.ToolsCalled = "", false, nil, nil
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.PutLog(repl) })
	ids := func(q weft.LogQuery) []string {
		ls, err := s.Logs(ctx, th.ID, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range ls {
			if l.RequestBody != nil || l.ResponseBody != nil {
				t.Errorf("Logs returned bodies for %s", l.ID)
			}
			out = append(out, l.ID)
		}
		return out
	}
	if got := ids(weft.LogQuery{MaxDepth: 5}); !slices.Equal(got, []string{"log_1", "log_2", "log_3", "log_4"}) {
		t.Errorf("all logs: %v", got)
	}
	if got := ids(weft.LogQuery{}); !slices.Equal(got, []string{"log_1", "log_3"}) {
		t.Errorf("top-level logs: %v", got)
	}
	if got := ids(weft.LogQuery{MaxDepth: 5, Limit: 2, Offset: 1}); !slices.Equal(got, []string{"log_2", "log_3"}) {
		t.Errorf("paged logs: %v", got)
	}
	// The rows after one (the replaced log_1 kept its place).
	for _, c := range []struct {
		q    weft.LogQuery
		want []string
	}{
		{weft.LogQuery{MaxDepth: 5, AfterID: "log_1"}, []string{"log_2", "log_3", "log_4"}},
		{weft.LogQuery{MaxDepth: 5, AfterID: "log_2", Limit: 1}, []string{"log_3"}},
		{weft.LogQuery{MaxDepth: 5, AfterID: "log_2", Offset: 1}, []string{"log_4"}},
		{weft.LogQuery{AfterID: "log_1"}, []string{"log_3"}},
		{weft.LogQuery{MaxDepth: 5, AfterID: "log_4"}, nil},
	} {
		if got := ids(c.q); !slices.Equal(got, c.want) {
			t.Errorf("logs %+v: %v, want %v", c.q, got, c.want)
		}
	}
	for _, thread := range []string{th.ID, "thr_unknown"} {
		_, err := s.Logs(ctx, thread, weft.LogQuery{AfterID: "log_missing"})
		wantErr(t, "Logs(after a missing row)", err, weft.ErrNotFound)
	}
	l1, _ := s.Log(ctx, th.ID, "log_1")
	if l1.Error != "" || l1.IsComplete || l1.CostTotal != nil || l1.ToolsCalled != nil || l1.CostInput == nil || *l1.CostInput != 0.5 {
		t.Errorf("replaced log: %+v", l1)
	}
	auto := &weft.LogEntry{Kind: "tool_error"}
	mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.PutLog(auto) })
	if !strings.HasPrefix(auto.ID, "log_") || auto.CreatedAt.IsZero() || auto.ThreadID != th.ID {
		t.Errorf("PutLog defaults: %+v", auto)
	}
	_, err = s.Log(ctx, th.ID, "log_missing")
	wantErr(t, "Log(missing)", err, weft.ErrNotFound)
}

func testEvents(t *testing.T, s weft.Store) {
	ctx := t.Context()
	a, b := newThread(t, s, nil), newThread(t, s, nil)
	if evs, err := s.Events(ctx, a.ID, 0, 0); err != nil || len(evs) != 0 {
		t.Fatalf("Events of a new thread: %v %v", evs, err)
	}
	_, err := s.Events(ctx, "thr_missing", 0, 0)
	wantErr(t, "Events of an unknown thread", err, weft.ErrNotFound)
	batch := []weft.EventRecord{{Type: "run_started", Data: json.RawMessage(`{"run_id":"r1"}`)}, {Type: "message", Data: json.RawMessage(`{"n":1}`)}}
	mustTx(t, s, a.ID, func(tx weft.Tx) error { return tx.AppendEvents(batch) })
	if batch[0].Seq != 1 || batch[1].Seq != 2 || batch[0].ThreadID != a.ID || batch[1].CreatedAt.IsZero() {
		t.Errorf("AppendEvents assigned %+v", batch)
	}
	mustTx(t, s, b.ID, func(tx weft.Tx) error { return tx.AppendEvents([]weft.EventRecord{{Type: "other"}}) })
	// A failed transaction appends nothing and uses no seq.
	err = s.Tx(ctx, a.ID, nil, func(tx weft.Tx) error {
		if err := tx.AppendEvents([]weft.EventRecord{{Type: "lost"}}); err != nil {
			return err
		}
		return errors.New("rolled back")
	})
	if err == nil {
		t.Fatal("a failing Tx succeeded")
	}
	mustTx(t, s, a.ID, func(tx weft.Tx) error {
		if err := tx.AppendEvents([]weft.EventRecord{{Type: "step_started"}}); err != nil {
			return err
		}
		return tx.AppendEvents([]weft.EventRecord{{Type: "run_stopped", Data: json.RawMessage(`{"reason":"done"}`)}})
	})
	evs, err := s.Events(ctx, a.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%d:%s:%s", e.Seq, e.Type, e.Data))
	}
	want := []string{`1:run_started:{"run_id":"r1"}`, `2:message:{"n":1}`, "3:step_started:null", `4:run_stopped:{"reason":"done"}`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Events = %v, want %v", got, want)
	}
	if evs, _ := s.Events(ctx, a.ID, 2, 1); len(evs) != 1 || evs[0].Seq != 3 {
		t.Errorf("Events after 2, limit 1: %+v", evs)
	}
	if evs, _ := s.Events(ctx, a.ID, 4, 0); len(evs) != 0 {
		t.Errorf("Events after the last: %+v", evs)
	}
	if evs, _ := s.Events(ctx, b.ID, 0, 0); len(evs) != 1 || evs[0].Seq != 1 || evs[0].Type != "other" {
		t.Errorf("thread b's events: %+v", evs)
	}
	// Several events of one transaction read back whole, from every cursor, at every limit.
	at := time.Unix(1764300000, 123456789)
	more := []weft.EventRecord{{Type: "x", Data: json.RawMessage(`{"k": "é <&>"}`), CreatedAt: at},
		{Type: "y", Data: json.RawMessage(`[1, 2]`), CreatedAt: at.Add(time.Millisecond)}, {Type: "z", CreatedAt: at.Add(time.Second)}}
	mustTx(t, s, b.ID, func(tx weft.Tx) error { return tx.AppendEvents(more) })
	wantB := []string{"1:other:null", `2:x:{"k": "é <&>"}`, "3:y:[1, 2]", "4:z:null"}
	for after := range 5 {
		for _, limit := range []int{1, 2, 3, 0} {
			evs, err := s.Events(ctx, b.ID, int64(after), limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, fmt.Sprintf("%d:%s:%s", e.Seq, e.Type, e.Data))
				if e.Seq > 1 && !e.CreatedAt.Equal(more[e.Seq-2].CreatedAt) {
					t.Errorf("event %d created at %v, appended with %v", e.Seq, e.CreatedAt, more[e.Seq-2].CreatedAt)
				}
			}
			want := wantB[min(after, len(wantB)):]
			if limit > 0 {
				want = want[:min(limit, len(want))]
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("thread b's events after %d, limit %d: %v, want %v", after, limit, got, want)
			}
		}
	}
	// A stale fence appends nothing.
	f, err := s.AcquireLease(ctx, a.ID, "n1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	stale := f
	stale.Token--
	err = s.Tx(ctx, a.ID, &stale, func(tx weft.Tx) error { return tx.AppendEvents([]weft.EventRecord{{Type: "fenced"}}) })
	wantErr(t, "AppendEvents with a stale fence", err, weft.ErrLeaseLost)
	mustTxFenced(t, s, a.ID, &f, func(tx weft.Tx) error { return tx.AppendEvents([]weft.EventRecord{{Type: "fenced"}}) })
	if evs, _ := s.Events(ctx, a.ID, 4, 0); len(evs) != 1 || evs[0].Seq != 5 {
		t.Errorf("after a stale and a live fence: %+v", evs)
	}
	if err := s.DeleteThread(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.Events(ctx, a.ID, 0, 0)
	wantErr(t, "Events of a deleted thread", err, weft.ErrNotFound)
}

// testEventsConcurrent: 16 writers appending to one thread get a gap-free, unique numbering.
func testEventsConcurrent(t *testing.T, s weft.Store) {
	ctx := t.Context()
	th := newThread(t, s, nil)
	const writers, each = 16, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
					return tx.AppendEvents([]weft.EventRecord{{Type: fmt.Sprintf("w%d-%d", w, i)}})
				})
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	evs, err := s.Events(ctx, th.ID, 0, 1000)
	if err != nil || len(evs) != writers*each {
		t.Fatalf("Events: %d %v", len(evs), err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

// testLastEvents: LastEvents finds the newest event of each type asked for among the newest, with
// its payload, whether the events were appended alone, several at once or beside a big one.
func testLastEvents(t *testing.T, s weft.Store) {
	ctx := t.Context()
	_, _, err := s.LastEvents(ctx, "thr_missing", 10, "x")
	wantErr(t, "LastEvents of an unknown thread", err, weft.ErrNotFound)
	th := newThread(t, s, nil)
	if last, evs, err := s.LastEvents(ctx, th.ID, 10, "run_stopped"); err != nil || last != 0 || len(evs) != 0 {
		t.Fatalf("LastEvents of a new thread: %d %+v %v", last, evs, err)
	}
	big := json.RawMessage(`{"content":"` + strings.Repeat("x", 100<<10) + `"}`)
	ev := func(typ, data string) weft.EventRecord {
		return weft.EventRecord{Type: typ, Data: json.RawMessage(data)}
	}
	for _, batch := range [][]weft.EventRecord{
		{ev("run_stopped", `{"n":1}`)}, // 1: outside the window below
		{ev("run_started", `{"n":2}`), ev("step_started", `{"n":3}`)},
		{ev("context_trimmed", `{"n":4}`)},
		{ev("step_started", `{"n":5}`), {Type: "message", Data: big}, ev("run_stopped", `{"n":7}`), ev("step_completed", `{"n":8}`)},
		{{Type: "message", Data: big}},
		{ev("run_started", `{"n":10}`), {Type: "message", Data: big}},
	} {
		mustTx(t, s, th.ID, func(tx weft.Tx) error { return tx.AppendEvents(batch) })
	}
	summary := func(evs []weft.EventRecord) string {
		var out []string
		for _, e := range evs {
			d := string(e.Data)
			if len(d) > 20 {
				d = fmt.Sprintf("%d bytes", len(d))
			}
			out = append(out, fmt.Sprintf("%d:%s:%s", e.Seq, e.Type, d))
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		within int64
		types  []string
		want   string
	}{
		{256, []string{"run_stopped", "run_started", "context_trimmed"}, `4:context_trimmed:{"n":4} 7:run_stopped:{"n":7} 10:run_started:{"n":10}`},
		{256, []string{"message"}, "11:message:102414 bytes"},
		{256, []string{"step_started", "nothing"}, `5:step_started:{"n":5}`},
		{8, []string{"run_stopped", "context_trimmed", "step_started"}, `4:context_trimmed:{"n":4} 5:step_started:{"n":5} 7:run_stopped:{"n":7}`},
		{7, []string{"run_stopped", "context_trimmed", "step_started"}, `5:step_started:{"n":5} 7:run_stopped:{"n":7}`},
		{1, []string{"run_stopped", "message"}, "11:message:102414 bytes"},
		{256, nil, ""},
	} {
		last, evs, err := s.LastEvents(ctx, th.ID, tc.within, tc.types...)
		if err != nil || last != 11 {
			t.Fatalf("LastEvents(%d, %v): last %d, %v", tc.within, tc.types, last, err)
		}
		if got := summary(evs); got != tc.want {
			t.Errorf("LastEvents(%d, %v) = %s, want %s", tc.within, tc.types, got, tc.want)
		}
		for _, e := range evs {
			if e.ThreadID != th.ID || e.CreatedAt.IsZero() {
				t.Errorf("LastEvents: event %d: thread %q, created %v", e.Seq, e.ThreadID, e.CreatedAt)
			}
		}
	}
	// The big events read back in their places.
	all, err := s.Events(ctx, th.ID, 0, 0)
	if err != nil || len(all) != 11 {
		t.Fatalf("Events: %d %v", len(all), err)
	}
	for i, e := range all {
		if e.Seq != int64(i+1) || (e.Type == "message") != (len(e.Data) == len(big)) {
			t.Errorf("Events: #%d is %d:%s of %d bytes", i, e.Seq, e.Type, len(e.Data))
		}
	}
	if evs, _ := s.Events(ctx, th.ID, 5, 2); summary(evs) != `6:message:102414 bytes 7:run_stopped:{"n":7}` {
		t.Errorf("Events after 5, limit 2: %s", summary(evs))
	}
}
