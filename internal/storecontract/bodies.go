package storecontract

import (
	"fmt"
	"strings"
)

// Request bodies stored on earlier ones. A model call's log carries the request the provider
// sent: the whole conversation so far. Stored as it is, a thread of n messages would store O(n)
// bytes a call, O(n²) over its life (a 1,000-turn chat stored 285 MiB of logs for 0.5 MiB of
// messages). Consecutive requests of a thread share most of their text, so every store keeps a
// body as the bytes it shares with an earlier body of the thread (its base) and the rest, a chain
// of bases at most MaxBodyChain long.
const (
	MaxBodyChain = 256 // bases followed to read a body
	MinShared    = 128 // bytes a body must share with its base
)

// BestBase returns which of n candidate bases (the newest last; candidate(i) gives its text and
// the length of its chain) body shares the longest prefix with, and how many bytes; -1 when none
// is worth a base: less than MinShared bytes shared, or chains MaxBodyChain long already.
func BestBase(n int, candidate func(i int) (text string, chain int), body string) (best, shared int) {
	best = -1
	for i := n - 1; i >= 0; i-- {
		text, chain := candidate(i)
		if chain >= MaxBodyChain {
			continue
		}
		if k := CommonPrefix(text, body); k > shared {
			best, shared = i, k
			if k >= len(body)-len(body)/8 {
				break // the most recent candidates come first; this one is good enough
			}
		}
	}
	if shared < MinShared {
		return -1, 0
	}
	return best, shared
}

// CommonPrefix returns the length in bytes of the longest common prefix of a and b, comparing
// 64 bytes at a time while they agree.
func CommonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+64 <= n && a[i:i+64] == b[i:i+64] {
		i += 64
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// BodyLink is one row of a body's chain.
type BodyLink struct {
	Base   string
	Shared int
	Rest   string
}

// JoinBody rebuilds a request body from its chain (the log's row first, its whole base last) in
// one pass: the body's bytes beyond each link's shared part are that link's rest, the others its
// base's, so each link gives at most one piece and every byte is copied once.
func JoinBody(log string, links []BodyLink) (string, error) {
	if len(links) == 0 {
		return "", fmt.Errorf("request body of log %s: no row", log)
	}
	if last := links[len(links)-1]; last.Base != "" {
		return "", fmt.Errorf("request body of log %s: base %s missing or its chain too long", log, last.Base)
	}
	if len(links) == 1 {
		return links[0].Rest, nil
	}
	n := links[0].Shared + len(links[0].Rest) // bytes of the body still to place, from its start
	pieces := make([]string, 0, len(links))   // last piece first
	for _, l := range links {
		if l.Base == "" {
			l.Shared = 0 // a whole body shares nothing (older rows may say otherwise)
		}
		if l.Shared < 0 || n-l.Shared > len(l.Rest) {
			return "", fmt.Errorf("request body of log %s: a base of %d bytes where %d are needed", log, l.Shared+len(l.Rest), n)
		}
		if n > l.Shared {
			pieces = append(pieces, l.Rest[:n-l.Shared])
			n = l.Shared
		}
	}
	var b strings.Builder
	b.Grow(links[0].Shared + len(links[0].Rest))
	for i := len(pieces) - 1; i >= 0; i-- {
		b.WriteString(pieces[i])
	}
	return b.String(), nil
}
