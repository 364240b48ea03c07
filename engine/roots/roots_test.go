package roots_test

import (
	"context"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/roots"
	"github.com/weft-agents/weft/memstore"
)

// TestFind: a root put in the cache is found without reading the store, unless the caller needs
// the thread; a child is not remembered, and its root is read from its thread; an unknown thread
// is the store's error.
func TestFind(t *testing.T) {
	ctx := context.Background()
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root := &weft.Thread{ID: "thr_root", RootID: "thr_root", Agent: "a"}
	child := &weft.Thread{ID: "thr_child", RootID: "thr_root", ParentID: "thr_root", Agent: "a"}
	for _, th := range []*weft.Thread{root, child} {
		if err := st.CreateThread(ctx, th, nil); err != nil {
			t.Fatal(err)
		}
	}
	c := roots.New()
	if c.Known(root.ID) {
		t.Fatal("an empty cache knows a thread")
	}
	if id, th, err := c.Find(ctx, st, root.ID, false); err != nil || id != root.ID || th == nil {
		t.Fatalf("first Find = %q, %v, %v; want the root, read", id, th, err)
	}
	if id, th, err := c.Find(ctx, st, root.ID, false); err != nil || id != root.ID || th != nil {
		t.Errorf("Find of a remembered root = %q, %v, %v; want the root, not read", id, th, err)
	}
	if _, th, _ := c.Find(ctx, st, root.ID, true); th == nil {
		t.Errorf("Find of the thread itself did not read it")
	}
	c.Put(child)
	if c.Known(child.ID) {
		t.Errorf("a child is remembered as a root")
	}
	if id, th, err := c.Find(ctx, st, child.ID, false); err != nil || id != root.ID || th == nil {
		t.Errorf("Find of a child = %q, %v, %v; want its root, read", id, th, err)
	}
	if _, _, err := c.Find(ctx, st, "thr_unknown", false); weft.ErrorCode(err) != weft.ENotFound {
		t.Errorf("Find of an unknown thread: %v, want ENotFound", err)
	}
}
