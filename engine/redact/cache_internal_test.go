package redact

import (
	"sync"
	"testing"
)

// TestCacheFor: the same values, in any order, split across lists, repeated or beside values too
// short to redact, give the Redactor built the first time; other values give another, which
// redacts them and not the first ones; no value gives the shared Redactor of none.
func TestCacheFor(t *testing.T) {
	c := NewCache(4)
	first := c.For([]string{"alpha-secret", "beta-secret"}, []string{"key"})
	for _, lists := range [][][]string{
		{{"beta-secret", "alpha-secret"}},
		{{"alpha-secret"}, {"beta-secret", "alpha-secret", "abc"}},
	} {
		if got := c.For(lists...); got != first {
			t.Errorf("For(%q) built another Redactor", lists)
		}
	}
	if got := first.String("alpha-secret beta-secret key"); got != "[redacted] [redacted] key" {
		t.Errorf("the first redacts %q", got)
	}
	other := c.For([]string{"alpha-secret", "gamma-secret"})
	if other == first {
		t.Fatal("other values gave the first Redactor")
	}
	if got := other.String("alpha-secret beta-secret gamma-secret"); got != "[redacted] beta-secret [redacted]" {
		t.Errorf("the other redacts %q", got)
	}
	if r := c.For(nil, []string{"abc"}); r != none || !r.Empty() {
		t.Errorf("no value gave %v", r)
	}
}

// TestCacheSlotTaken: values that take another's slot (a cache of one slot) get a Redactor of
// their own, and the older values one of theirs again; readers on many goroutines get correct ones.
func TestCacheSlotTaken(t *testing.T) {
	c := NewCache(1)
	sets := [][]string{{"first-secret"}, {"second-secret"}, {"third-secret"}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				s := sets[(g+i)%len(sets)]
				want := "[redacted] first-secret"
				if s[0] == "first-secret" {
					want = "[redacted] [redacted]"
				}
				if got := c.For(s).String(s[0] + " first-secret"); got != want {
					t.Errorf("For(%q) redacts %q", s, got)
					return
				}
			}
		})
	}
	wg.Wait()
}
