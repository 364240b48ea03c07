package memstore

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// TestRequestBodiesShared: logs read back the request bodies they were given, while the store
// keeps each as what it does not share with an earlier one — replaced, rolled back or not.
func TestRequestBodiesShared(t *testing.T) {
	ctx := t.Context()
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	request := func(prompt string, n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"prompt":%q,"messages":[`, prompt)
		for i := range n {
			fmt.Fprintf(&b, `{"content":"message %d %s"},`, i, strings.Repeat("x", 150))
		}
		b.WriteString(`{}]}`)
		return b.String()
	}
	want := map[string]string{}
	put := func(id, body string) error {
		return s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
			if err := tx.PutLog(&weft.LogEntry{ID: id, RequestBody: []byte(body)}); err != nil {
				return err
			}
			want[id] = body
			return nil
		})
	}
	for i := range 40 {
		if err := put(fmt.Sprint("log_main_", i), request("main", 2*i+1)); err != nil {
			t.Fatal(err)
		}
		if i%9 == 8 {
			if err := put(fmt.Sprint("log_sub_", i), request("sub", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	failed := errors.New("failed")
	if err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		tx.PutLog(&weft.LogEntry{ID: "log_gone", RequestBody: []byte(request("main", 90))})
		return failed
	}); !errors.Is(err, failed) {
		t.Fatal(err)
	}
	if err := put("log_main_3", `{"replaced":true}`); err != nil {
		t.Fatal(err)
	}
	if err := put("log_main_4", ""); err != nil {
		t.Fatal(err)
	}
	for id, body := range want {
		l, err := s.Log(ctx, th.ID, id)
		if err != nil || string(l.RequestBody) != body {
			t.Fatalf("%s: %d bytes, want %d (%v)", id, len(l.RequestBody), len(body), err)
		}
	}
	kept, all := 0, 0
	s.lookup(th.ID).mu.RLock()
	for _, b := range s.lookup(th.ID).reqBodies {
		kept += len(b.rest)
	}
	s.lookup(th.ID).mu.RUnlock()
	for _, b := range want {
		all += len(b)
	}
	if kept*5 > all {
		t.Errorf("request bodies kept in %d bytes of %d", kept, all)
	}
	if _, err := s.Log(ctx, th.ID, "log_gone"); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("rolled-back log: %v", err)
	}
}
