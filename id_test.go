package weft_test

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

func TestNewID(t *testing.T) {
	re := regexp.MustCompile(`^msg_[0-9a-hjkmnp-tv-z]{26}$`)
	seen := map[string]bool{}
	var ids []string
	for i := range 10000 {
		id := weft.NewID("msg_")
		if !re.MatchString(id) || seen[id] {
			t.Fatalf("id %d: %q (duplicate=%v)", i, id, seen[id])
		}
		seen[id] = true
		if i%1000 == 0 {
			ids = append(ids, id)
			time.Sleep(2 * time.Millisecond)
		}
	}
	if !slices.IsSorted(ids) {
		t.Errorf("ids made milliseconds apart sort by time: %v", ids)
	}
}

func BenchmarkNewID(b *testing.B) {
	for b.Loop() {
		weft.NewID("msg_")
	}
}
