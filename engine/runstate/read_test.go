package runstate_test

import (
	"context"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/runstate"
	"github.com/weft-agents/weft/memstore"
)

// TestRead: a run's start read without the lease holds the thread, its run state, its env and —
// only when asked — its rows; an unknown thread is the store's error.
func TestRead(t *testing.T) {
	ctx := context.Background()
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	th := &weft.Thread{ID: "thr_read", RootID: "thr_read", Agent: "a"}
	if err := st.CreateThread(ctx, th, []weft.EnvValue{{Name: "REGION", Value: "eu", Type: weft.VarText}}); err != nil {
		t.Fatal(err)
	}
	s := runstate.State{Side: weft.SideB}
	if err := st.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		if err := tx.SetExecState(runstate.Key, s.Encode()); err != nil {
			return err
		}
		return tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "hi", Status: weft.MessageCompleted})
	}); err != nil {
		t.Fatal(err)
	}
	start, err := runstate.Read(ctx, st, th.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := runstate.Decode(start.ExecState[runstate.Key])
	if err != nil || got.Side != weft.SideB || start.Thread.ID != th.ID || len(start.Messages) != 0 ||
		len(start.ThreadEnv) != 1 || start.ThreadEnv[0].Value != "eu" {
		t.Errorf("Read without rows = %+v (state %+v, %v)", start, got, err)
	}
	if start, err = runstate.Read(ctx, st, th.ID, true); err != nil || len(start.Messages) != 1 {
		t.Errorf("Read with rows: %v, %+v", err, start)
	}
	if _, err := runstate.Read(ctx, st, "thr_unknown", false); weft.ErrorCode(err) != weft.ENotFound {
		t.Errorf("Read of an unknown thread: %v", err)
	}
}
