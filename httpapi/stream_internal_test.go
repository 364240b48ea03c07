package httpapi

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// TestFrameFromEncodedPayload: a frame built from the payload's recorded encoding says exactly
// what the one encoded from Data says.
func TestFrameFromEncodedPayload(t *testing.T) {
	msg := weft.Message{ID: "msg_1", Role: weft.RoleAssistant, Content: "a <b> & \"c\"\n", Depth: 1}
	cases := []struct {
		name string
		ev   engine.Event
	}{
		{"message", engine.Event{Type: "message", ThreadID: "thr_1", Seq: 7, Data: map[string]any{"message": msg}}},
		{"empty payload", engine.Event{Type: "run_started", ThreadID: "thr_1", Seq: 2, Data: map[string]any{}}},
		{"nil payload", engine.Event{Type: "thread_created", ThreadID: "thr_1", Seq: 1}},
		{"payload with a frame key", engine.Event{Type: "run_stopped", ThreadID: "thr_1", Seq: 9, Data: map[string]any{"seq": 4, "reason": "completed"}}},
		{"not recorded", engine.Event{Type: "message_chunk", ThreadID: "thr_1", Data: map[string]any{"delta": "x"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := decodeFrame(t, frame(tc.ev))
			ev := tc.ev
			if ev.Seq > 0 {
				enc, err := json.Marshal(ev.Data)
				if err != nil {
					t.Fatal(err)
				}
				ev.Encoded = enc
			}
			if got := decodeFrame(t, frame(ev)); !reflect.DeepEqual(got, want) {
				t.Errorf("from the encoding:\n%v\nfrom Data:\n%v", got, want)
			}
		})
	}
}

func decodeFrame(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("frame %s: %v", b, err)
	}
	return m
}

func TestMessageVisibility(t *testing.T) {
	cases := []struct {
		name   string
		v      any
		silent bool
		depth  int
	}{
		{"live", weft.Message{Silent: true, Depth: 2}, true, 2},
		{"pointer", &weft.Message{Depth: 1}, false, 1},
		{"replayed", map[string]any{"silent": true, "depth": float64(3)}, true, 3},
		{"absent", nil, false, 0},
	}
	for _, tc := range cases {
		if s, d := messageVisibility(tc.v); s != tc.silent || d != tc.depth {
			t.Errorf("%s: %v %d, want %v %d", tc.name, s, d, tc.silent, tc.depth)
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "run_stopped", "thr_01m8c8", "a\"b", `back\slash`, "<tag>&", "tab\there", "é ünïcode", "\u2028", "\x7f"} {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
}

// TestHubDropsASlowFeed: a feed that falls more than hubBuffer behind is dropped, gives what it
// buffered and then ErrSlowSubscriber, while the other feed keeps every event.
func TestHubDropsASlowFeed(t *testing.T) {
	h := NewHub()
	all := func(engine.Event) bool { return true }
	slow, fast := h.follow(all), h.follow(all)
	defer slow.Close()
	defer fast.Close()
	var got []engine.Event
	for i := range hubBuffer + 10 {
		h.Publish(engine.Event{Type: "thread_updated", ThreadID: strconv.Itoa(i)})
		if i%100 == 0 {
			<-fast.Ready()
			var err error
			if got, err = fast.Next(context.Background(), got); err != nil {
				t.Fatal(err)
			}
		}
	}
	if h.Len() != 1 {
		t.Errorf("%d feeds left, want the fast one", h.Len())
	}
	<-slow.Ready()
	evs, err := slow.Next(context.Background(), nil)
	if len(evs) != hubBuffer || err != ErrSlowSubscriber {
		t.Errorf("the slow feed gave %d events and %v", len(evs), err)
	}
	<-fast.Ready()
	got, err = fast.Next(context.Background(), got)
	if err != nil || len(got) != hubBuffer+10 {
		t.Fatalf("the fast feed gave %d events and %v", len(got), err)
	}
	for i, ev := range got {
		if ev.ThreadID != strconv.Itoa(i) {
			t.Fatalf("event %d is %s", i, ev.ThreadID)
		}
	}
}
