package memstore

import (
	"github.com/weft-agents/weft/internal/storecontract"
)

// A log's request body holds the whole conversation so far; kept whole, a thread of n messages
// would hold O(n²) bytes of them. A body is kept instead as the bytes it shares with an earlier
// body of the thread and the rest (as the SQL stores keep it, internal/storecontract/bodies.go), by
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

// bodyOn returns the node keeping body, on the candidate (the newest last) worth it
// (storecontract.BestBase).
func bodyOn(body string, candidates []recentBody) *memBody {
	i, shared := storecontract.BestBase(len(candidates), func(i int) (string, int) { return candidates[i].full, candidates[i].node.chain }, body)
	if i < 0 {
		return &memBody{rest: body}
	}
	best := candidates[i].node
	return &memBody{base: best, shared: shared, rest: body[shared:], chain: best.chain + 1}
}

// text rebuilds the whole body.
func (b *memBody) text() (string, error) {
	var links []storecontract.BodyLink
	for n := b; n != nil; n = n.base {
		l := storecontract.BodyLink{Shared: n.shared, Rest: n.rest}
		if n.base != nil {
			l.Base = "base"
		}
		links = append(links, l)
	}
	return storecontract.JoinBody("", links)
}
