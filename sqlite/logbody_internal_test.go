package sqlite

import (
	"context"
	"strings"
	"testing"
	"unsafe"

	"github.com/weft-agents/weft"
)

// TestPutLogKeepsLargeBodyUncopied: the request body a log keeps for the next request's shared
// prefix is the caller's bytes when it is large (a 20 MiB message's request was copied once more),
// a copy when it is short; the stored log reads back the same either way.
func TestPutLogKeepsLargeBodyUncopied(t *testing.T) {
	ctx := context.Background()
	s := openFile(t).(*Store)
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		size int
		kept bool
	}{{bigDoc + 10, true}, {100, false}} {
		body := []byte(`{"input":"` + strings.Repeat("x", c.size) + `"}`)
		l := &weft.LogEntry{RequestBody: body}
		if err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.PutLog(l) }); err != nil {
			t.Fatal(err)
		}
		// (A short body is no base worth sharing: Base finds none.)
		k, _, ok := s.w.rows.bodies.Base(th.ID, string(body))
		if c.kept && (!ok || k.ID != l.ID || k.Body != string(body)) {
			t.Fatalf("%d bytes: the body kept is %.40q (%v)", len(body), k.Body, ok)
		}
		if same := ok && unsafe.StringData(k.Body) == unsafe.SliceData(body); same != c.kept {
			t.Fatalf("%d bytes: kept as the caller's bytes: %v, want %v", len(body), same, c.kept)
		}
		got, err := s.Log(ctx, th.ID, l.ID)
		if err != nil || string(got.RequestBody) != string(body) {
			t.Fatalf("%d bytes: read back %d bytes (%v)", len(body), len(got.RequestBody), err)
		}
	}
}
