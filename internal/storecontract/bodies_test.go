package storecontract

import (
	"fmt"
	"testing"
)

// FuzzRequestBodyChain: bodies stored each on the one before (as PutLog stores a thread's calls)
// read back as they were written.
func FuzzRequestBodyChain(f *testing.F) {
	f.Add("abc", "abcdef", "abx", "")
	f.Add(`{"messages":[{"a":1}]}`, `{"messages":[{"a":1},{"b":2}]}`, `{"messages":[{"a":1},{"b":2},{"c":3}]}`, `{"other":[]}`)
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		bodies := []string{a, b, c, d}
		links := []BodyLink{{Rest: a}} // the log's own row first, its whole base last
		for i := 1; i < len(bodies); i++ {
			n := CommonPrefix(bodies[i-1], bodies[i])
			if n > len(bodies[i-1]) || n > len(bodies[i]) || bodies[i-1][:n] != bodies[i][:n] ||
				(n < len(bodies[i-1]) && n < len(bodies[i]) && bodies[i-1][n] == bodies[i][n]) {
				t.Fatalf("CommonPrefix(%q, %q) = %d", bodies[i-1], bodies[i], n)
			}
			links = append([]BodyLink{{Base: fmt.Sprint("log_", i-1), Shared: n, Rest: bodies[i][n:]}}, links...)
			got, err := JoinBody("log", links)
			if err != nil || got != bodies[i] {
				t.Fatalf("body %d: %q, %v; want %q", i, got, err, bodies[i])
			}
		}
	})
}
