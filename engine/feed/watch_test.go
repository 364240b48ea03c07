package feed

import (
	"context"
	"strconv"
	"testing"
)

// TestWatchDropsASlowReader: a watch that falls more than maxWatched events behind gives what it
// queued and then ErrSlowSubscriber, while the other watch keeps every event; an event of another
// type reaches neither, and thread subscriptions do not see what Announce gives.
func TestWatchDropsASlowReader(t *testing.T) {
	var s Subscribers
	slow, fast := s.Watch("thread_updated"), s.Watch("thread_updated")
	defer slow.Close()
	defer fast.Close()
	thread := s.add(&Subscription{key: subKey{id: "0"}, limit: maxQueued})
	defer s.Remove(thread)
	var got []Event
	for i := range maxWatched + 10 {
		s.PublishAll([]Event{{Type: "message_chunk", ThreadID: strconv.Itoa(i)}})
		s.Announce(Event{Type: "thread_updated", ThreadID: strconv.Itoa(i)})
		if i%100 == 0 {
			<-fast.Ready()
			var err error
			if got, err = fast.Next(context.Background(), got); err != nil {
				t.Fatal(err)
			}
		}
	}
	<-slow.Ready()
	evs, err := slow.Next(context.Background(), nil)
	if len(evs) != maxWatched || err != ErrSlowSubscriber {
		t.Errorf("the slow watch gave %d events and %v", len(evs), err)
	}
	<-fast.Ready()
	got, err = fast.Next(context.Background(), got)
	if err != nil || len(got) != maxWatched+10 {
		t.Fatalf("the fast watch gave %d events and %v", len(got), err)
	}
	for i, ev := range got {
		if ev.ThreadID != strconv.Itoa(i) || ev.Type != "thread_updated" {
			t.Fatalf("event %d is %s of %s", i, ev.Type, ev.ThreadID)
		}
	}
	if q, _, _ := thread.Take(nil); len(q) != 1 || q[0].Type != "message_chunk" {
		t.Errorf("the thread's subscription took %v, want its one chunk", q)
	}
}

// TestWatchCloses: closing the watches leaves no subscription.
func TestWatchCloses(t *testing.T) {
	var s Subscribers
	a, b := s.Watch("x"), s.Watch("y")
	a.Close()
	b.Close()
	if s.Active() || s.watches.Load() != 0 || len(s.by) != 0 {
		t.Errorf("%d subscriptions (%d watches) left after closing both", s.n.Load(), s.watches.Load())
	}
}
