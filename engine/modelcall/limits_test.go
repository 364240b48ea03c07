package modelcall

import (
	"sync"
	"testing"
)

// TestLearnedLimitKeepsTheSmallest: a limit learned stays unless a smaller one is learned, also
// when refusals of several runs teach limits at once.
func TestLearnedLimitKeepsTheSmallest(t *testing.T) {
	var ms Models
	if got := ms.Learned("m"); got != 0 {
		t.Fatalf("nothing learned: %d", got)
	}
	ms.limits.learn("m", 1000)
	ms.limits.learn("m", 2000)
	ms.limits.learn("other", 50)
	if got := ms.Learned("m"); got != 1000 {
		t.Errorf("m = %d, want 1000", got)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms.limits.learn("m", 900-i)
			_ = ms.Learned("m")
		}()
	}
	wg.Wait()
	if got, other := ms.Learned("m"), ms.Learned("other"); got != 885 || other != 50 {
		t.Errorf("m = %d, want 885; other = %d, want 50", got, other)
	}
}
