package sqlstore

import (
	"slices"
	"testing"
)

func TestLRU(t *testing.T) {
	keys := func(c *LRU[int]) []string {
		var out []string
		for el := c.lru.Front(); el != nil; el = el.Next() {
			out = append(out, el.Value.(*lruEntry[int]).key)
		}
		return out
	}
	tests := []struct {
		name  string
		limit int
		do    func(c *LRU[int])
		want  []string // most recently used first
		bytes int
	}{
		{"kept within the budget", 10, func(c *LRU[int]) { c.Put("a", 1, 4); c.Put("b", 2, 4) }, []string{"b", "a"}, 8},
		{"the least recently used goes first", 10, func(c *LRU[int]) {
			c.Put("a", 1, 4)
			c.Put("b", 2, 4)
			c.Get("a")
			c.Put("c", 3, 4)
		}, []string{"c", "a"}, 8},
		{"an update that grows evicts others", 10, func(c *LRU[int]) {
			c.Put("a", 1, 4)
			c.Put("b", 2, 4)
			c.Update("a", 1, 9)
		}, []string{"a"}, 9},
		{"a value over the budget is not kept", 10, func(c *LRU[int]) { c.Put("a", 1, 4); c.Put("b", 2, 11) }, []string{"a"}, 4},
		{"a put replaces", 10, func(c *LRU[int]) { c.Put("a", 1, 4); c.Put("a", 2, 6) }, []string{"a"}, 6},
		{"no budget, nothing kept", 0, func(c *LRU[int]) { c.Put("a", 1, 0) }, nil, 0},
		{"drop and clear", 10, func(c *LRU[int]) {
			c.Put("a", 1, 4)
			c.Put("b", 2, 4)
			c.Drop("a")
			c.Clear()
			c.Put("c", 3, 1)
		}, []string{"c"}, 1},
		{"update of a key not kept does nothing", 10, func(c *LRU[int]) { c.Update("a", 1, 4); c.Grow("a", 2) }, nil, 0},
		{"growing evicts others first", 10, func(c *LRU[int]) {
			c.Put("a", 1, 4)
			c.Put("b", 2, 4)
			if n := c.Grow("a", 3); n != 7 {
				t.Errorf("grown to %d bytes, want 7", n)
			}
		}, []string{"a"}, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &LRU[int]{Limit: tc.limit}
			tc.do(c)
			if got := keys(c); !slices.Equal(got, tc.want) || c.Bytes() != tc.bytes || c.Len() != len(tc.want) {
				t.Errorf("kept %v in %d bytes (%d keys), want %v in %d", got, c.Bytes(), c.Len(), tc.want, tc.bytes)
			}
			for _, k := range tc.want {
				if _, ok := c.Get(k); !ok {
					t.Errorf("%s listed but not found", k)
				}
			}
		})
	}
}
