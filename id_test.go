package weft_test

import (
	"regexp"
	"slices"
	"sync"
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

// TestNewIDIncreases: the ids one process makes increase strictly, within a millisecond and across
// goroutines, so that each is greater than every id made before it.
func TestNewIDIncreases(t *testing.T) {
	const goroutines, each = 4, 5000
	var wg sync.WaitGroup
	got := make([][]string, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				got[g] = append(got[g], weft.NewID("x_"))
			}
		})
	}
	wg.Wait()
	all := map[string]bool{}
	for g, ids := range got {
		for i, id := range ids {
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("goroutine %d: id %d %q is not above the one before, %q", g, i, id, ids[i-1])
			}
			if all[id] {
				t.Fatalf("id %q made twice", id)
			}
			all[id] = true
		}
	}
	// Ids of different prefixes share the order: the bits after the prefix increase.
	a, b := weft.NewID("thr_"), weft.NewID("msg_")
	if a[len("thr_"):] >= b[len("msg_"):] {
		t.Errorf("thr_ id %q then msg_ id %q: the second's bits are not greater", a, b)
	}
}

func BenchmarkNewID(b *testing.B) {
	for b.Loop() {
		weft.NewID("msg_")
	}
}
