package feed

import (
	"slices"
	"testing"

	"github.com/weft-agents/weft"
)

// TestStopWatches: a watch of a thread (Ask's) is told that thread's stops only, in order, as is
// every other watch of it; removing them leaves none.
func TestStopWatches(t *testing.T) {
	var w StopWatches
	answer := &weft.Message{Content: "answer"}
	w.Note("root", weft.StopInfo{Seq: 9}, 0, nil) // none watching: dropped
	a, b := w.Add("root"), w.Add("root")
	w.Note("child", weft.StopInfo{Seq: 1}, 1, &weft.Message{Content: "the child's"})
	w.Note("root", weft.StopInfo{Seq: 1}, 2, answer)
	w.Note("root", weft.StopInfo{Seq: 2}, 0, nil) // a run that stored no reply keeps the last
	for _, sw := range []*StopWatch{a, b} {
		stops, redactions, reply := w.Taken(sw)
		var seqs []int
		for _, s := range stops {
			seqs = append(seqs, s.Seq)
		}
		if !slices.Equal(seqs, []int{1, 2}) || redactions != 2 || reply != answer {
			t.Errorf("the watch was told stops %v, %d redactions and reply %v, want [1 2], 2 and %q", seqs, redactions, reply, answer.Content)
		}
	}
	w.Remove(a)
	w.Remove(b)
	if n := w.n.Load(); n != 0 || len(w.by) != 0 {
		t.Errorf("%d watches (%d threads) left after removing both", n, len(w.by))
	}
}
