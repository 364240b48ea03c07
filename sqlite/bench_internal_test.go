package sqlite

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
)

// BenchmarkTx3Writes is the baseline of the storage budget: one Tx with three small writes.
func BenchmarkTx3Writes(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "weft.db"), Options{Key: envcrypt.NewKey()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(b.Context(), th, nil); err != nil {
		b.Fatal(err)
	}
	v := json.RawMessage(`{"n":1}`)
	b.ReportAllocs()
	for b.Loop() {
		err := s.Tx(b.Context(), th.ID, nil, func(tx weft.Tx) error {
			if err := tx.SetExecState("a", v); err != nil {
				return err
			}
			if err := tx.SetExecState("b", v); err != nil {
				return err
			}
			return tx.SetKV("c", v)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// benchThread opens a store on a file with one thread, unchecked: verifyHistory reads everything
// again at each use.
func benchThread(b *testing.B) (*Store, string) {
	verify := verifyHistory
	verifyHistory = false
	b.Cleanup(func() { verifyHistory = verify })
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "weft.db"), Options{Key: envcrypt.NewKey()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(b.Context(), th, nil); err != nil {
		b.Fatal(err)
	}
	return s, th.ID
}

// BenchmarkRunStart: a run's start and end (BeginRun, then a Tx that releases the lease) on a
// thread of 21 messages, the next run of a conversation. kept: the row its last run left is kept
// (rowcache.go), as when that run ended in this process; read: the row is read each time.
func BenchmarkRunStart(b *testing.B) {
	for _, kept := range []bool{true, false} {
		name := "read"
		if kept {
			name = "kept"
		}
		b.Run(name, func(b *testing.B) {
			ctx := b.Context()
			s, id := benchThread(b)
			th := &weft.Thread{ID: id}
			if err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
				for i := range 21 {
					if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: strings.Repeat("x", 200), Seq: int64(i)}); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if !kept {
					s.wmu.Lock()
					clear(s.w.rows.idle)
					s.wmu.Unlock()
				}
				f, _, err := s.BeginRun(ctx, th.ID, "node-a", time.Minute, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Tx(ctx, th.ID, &f, func(tx weft.Tx) error { return tx.ReleaseLease() }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLongThreadStep: a step of a conversation 1,000 turns long, as the store sees it — the
// user's message, the model's answer and the call's log, whose request body (as providers report
// it) holds every message so far — in one Tx. stored-B/op is what the step adds to the logs
// table's request bodies.
func BenchmarkLongThreadStep(b *testing.B) {
	// kept: the writer keeps the thread's last bodies; evicted: it keeps none at each step (a
	// restart, or a thread pushed out of the budget by others), and reads the last one back.
	for _, evicted := range []bool{false, true} {
		name := "kept"
		if evicted {
			name = "evicted"
		}
		b.Run(name, func(b *testing.B) { longThreadStep(b, evicted) })
	}
}

func longThreadStep(b *testing.B, evicted bool) {
	ctx := b.Context()
	s, id := benchThread(b)
	th := &weft.Thread{ID: id}
	var body []byte // the request so far, without its closing "]}"
	body = append(body, `{"model":"m","tools":[{"name":"lookup","parameters":{"type":"object"}}],"messages":[`...)
	turn := func(i int) error {
		user := fmt.Sprintf("question %d: %s", i, strings.Repeat("q", 200))
		answer := fmt.Sprintf("answer %d: %s", i, strings.Repeat("a", 200))
		return s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
			if err := tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: user}); err != nil {
				return err
			}
			if i > 0 {
				body = append(body, ',')
			}
			body = fmt.Appendf(body, `{"role":"user","content":%q}`, user)
			req := append(body[:len(body):len(body)], "]}"...)
			if err := tx.InsertMessage(&weft.Message{Role: weft.RoleAssistant, Content: answer}); err != nil {
				return err
			}
			body = fmt.Appendf(body, `,{"role":"assistant","content":%q}`, answer)
			return tx.PutLog(&weft.LogEntry{Kind: "llm", RequestBody: req, ResponseBody: []byte(`{"choices":[]}`)})
		})
	}
	const prior = 1000
	for i := range prior {
		if err := turn(i); err != nil {
			b.Fatal(err)
		}
	}
	storedBytes := func() float64 {
		var n int64
		if err := s.row(ctx, `SELECT sum(length(request_body)) FROM logs WHERE thread_num = (SELECT num FROM threads WHERE id = ?)`, []any{&n}, th.ID); err != nil {
			b.Fatal(err)
		}
		return float64(n)
	}
	before := storedBytes()
	i := prior
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if evicted {
			s.wmu.Lock()
			s.w.rows.bodies.Clear()
			s.wmu.Unlock()
		}
		if err := turn(i); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.StopTimer()
	b.ReportMetric((storedBytes()-before)/float64(b.N), "stored-B/op")
	b.ReportMetric(float64(len(body)), "request-B")
}

// BenchmarkMessageByID: a message looked up by id in a thread of 10,000, through the thread's
// entries in messages_seq, reading its rows (migration 0011); and an insert of an id that is not
// above the thread's greatest (a queued message drained after newer ones, or an id the caller
// chose), looked for in the writer's kept history (kept) or, without it, among the rows (stored).
// Ids the engine makes are above the greatest and are not looked for.
func BenchmarkMessageByID(b *testing.B) {
	ctx := b.Context()
	s, id := benchThread(b)
	var ids []string
	if err := s.Tx(ctx, id, nil, func(tx weft.Tx) error {
		for range 10000 {
			m := &weft.Message{Role: weft.RoleUser, Content: strings.Repeat("x", 200)}
			if err := tx.InsertMessage(m); err != nil {
				return err
			}
			ids = append(ids, m.ID)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.Run("Message", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Message(ctx, id, ids[5000]); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, kept := range []bool{true, false} {
		name := "insert-below-greatest/stored"
		if kept {
			name = "insert-below-greatest/kept"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if !kept {
					s.wmu.Lock()
					s.w.rows.hist.clear()
					s.wmu.Unlock()
				}
				n++
				low := fmt.Sprintf("msg_0%d-%t", n, kept) // below every id NewID makes
				err := s.Tx(ctx, id, nil, func(tx weft.Tx) error {
					return tx.InsertMessage(&weft.Message{ID: low, Role: weft.RoleUser})
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
