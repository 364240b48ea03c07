package engine

import (
	"slices"
	"testing"
)

// TestSubscriptionKeeps: a subscription of one thread's stops (Ask's) queues only those, from its
// tree, in order; an ordinary one of the same tree queues every event.
func TestSubscriptionKeeps(t *testing.T) {
	var s subscribers
	tree := subKey{tree: true, id: "root"}
	stops := s.addStops(tree, "root")
	all := s.add(tree, false)
	evs := []Event{
		{Type: "run_started", ThreadID: "root", RootID: "root"},
		{Type: "run_stopped", ThreadID: "child", RootID: "root", Data: map[string]any{"seq": 1}},
		{Type: "run_stopped", ThreadID: "root", RootID: "root", Data: map[string]any{"seq": 1}},
		{Type: "run_stopped", ThreadID: "root", RootID: "other"},
		{Type: "message", ThreadID: "root", RootID: "root"},
		{Type: "run_stopped", ThreadID: "root", RootID: "root", Data: map[string]any{"seq": 2}},
	}
	s.publishAll(evs)
	got, _, _ := stops.take(nil)
	var seqs []any
	for _, ev := range got {
		seqs = append(seqs, ev.Data["seq"])
	}
	if want := []any{1, 2}; !slices.Equal(seqs, want) {
		t.Errorf("the stops subscription queued stops %v, want %v", seqs, want)
	}
	if got, _, _ := all.take(nil); len(got) != 5 {
		t.Errorf("the ordinary subscription queued %d events, want the tree's 5", len(got))
	}
	s.remove(stops)
	s.remove(all)
	if n := s.n.Load(); n != 0 {
		t.Errorf("%d subscriptions left after removing both", n)
	}
}
