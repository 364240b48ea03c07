package memstore

import (
	"github.com/weft-agents/weft/internal/sqlstore"
)

// A log's request body holds the whole conversation so far; kept whole, a thread of n messages
// would hold O(n²) bytes of them. A body is kept instead as the bytes it shares with an earlier
// body of the thread and the rest (as the SQL stores keep it, internal/sqlstore/bodies.go), by
// pointer: a body node never changes, so one others are kept on stays as it was when its log is
// replaced.
type memBody struct {
	base   *memBody // nil: rest is the whole body
	shared int
	rest   string
	chain  int // bases below this one
}

// recentBody is a body the thread's next ones may be kept on, with its whole text.
type recentBody struct {
	node *memBody
	full string
}

// keptRecent is how many of a thread's last bodies are candidates.
const keptRecent = 2

// bodyOn returns the node keeping body, on the candidate sharing the longest prefix with it when
// that is worth it.
func bodyOn(body string, candidates ...[]recentBody) *memBody {
	var best *memBody
	shared := 0
	for _, list := range candidates {
		for _, c := range list {
			if c.node.chain >= sqlstore.MaxBodyChain {
				continue
			}
			if n := sqlstore.CommonPrefix(c.full, body); n > shared {
				best, shared = c.node, n
			}
		}
	}
	if best == nil || shared < sqlstore.MinShared {
		return &memBody{rest: body}
	}
	return &memBody{base: best, shared: shared, rest: body[shared:], chain: best.chain + 1}
}

// text rebuilds the whole body.
func (b *memBody) text() (string, error) {
	var links []sqlstore.BodyLink
	for n := b; n != nil; n = n.base {
		l := sqlstore.BodyLink{Shared: n.shared, Rest: n.rest}
		if n.base != nil {
			l.Base = "base"
		}
		links = append(links, l)
	}
	return sqlstore.JoinBody("", links)
}
