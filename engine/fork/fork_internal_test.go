package fork

import (
	"context"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/window"
	"github.com/weft-agents/weft/memstore"
)

// TestForkRenumbers: a fork that skips a row (pending) and gathers a tool turn's late result
// renumbers its rows, and a summary row's covered seq follows its row; a call left open is
// answered right after its turn's last copied row.
func TestForkRenumbers(t *testing.T) {
	ctx := context.Background()
	all := []weft.Message{
		{ID: "m1", Seq: 1, Role: weft.RoleUser, Side: weft.SideB, Content: "q", Status: weft.MessageCompleted},
		{ID: "m2", Seq: 2, Role: weft.RoleAssistant, Side: weft.SideA, Status: weft.MessagePending},
		{ID: "m3", Seq: 3, Role: weft.RoleAssistant, Side: weft.SideA, Content: "a", Status: weft.MessageCompleted, LogID: "log_1"},
		{ID: "m4", Seq: 4, Role: weft.RoleSystem, Content: "summary", Silent: true, Status: weft.MessageCompleted,
			Metadata: map[string]any{window.MetaSummary: true, window.MetaSummaryThrough: float64(3), window.MetaSummaryThroughID: "m3"}},
		{ID: "m5", Seq: 5, Role: weft.RoleAssistant, Side: weft.SideA, Status: weft.MessageCompleted,
			ToolCalls: []weft.ToolCall{{ID: "c1", Name: "t"}, {ID: "c2", Name: "t"}, {ID: "c3", Name: "t"}}},
		{ID: "m6", Seq: 6, Role: weft.RoleTool, Side: weft.SideA, ToolCallID: "c1", Content: "r1", Status: weft.MessageCompleted},
		{ID: "m7", Seq: 7, Role: weft.RoleUser, Side: weft.SideB, Content: "later", Status: weft.MessageCompleted},
		{ID: "m8", Seq: 8, Role: weft.RoleTool, Side: weft.SideA, ToolCallID: "c2", Content: "r2", Status: weft.MessageCompleted},
	}
	rows, open := copiedRows(all, 6) // at the first result
	var ids []string
	for _, m := range rows {
		ids = append(ids, m.ID)
		if m.LogID != "" {
			t.Errorf("%s keeps log id %s", m.ID, m.LogID)
		}
	}
	if got := ids; len(got) != 6 || got[0] != "m1" || got[1] != "m3" || got[4] != "m6" || got[5] != "m8" {
		t.Fatalf("copied rows %v, want m1 m3 m4 m5 m6 m8", got)
	}
	if len(open["m8"]) != 1 || open["m8"][0].call.ID != "c3" {
		t.Fatalf("open calls %+v, want c3 after m8", open)
	}
	st, _ := memstore.New(memstore.Options{})
	fork := &weft.Thread{Agent: "a"}
	err := st.CreateThreadTx(ctx, fork, nil, func(tx weft.Tx) error {
		return writeCopy(tx, rows, open, nil, nil, nil, nil, time.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := st.Messages(ctx, fork.ID, weft.MessageQuery{Limit: -1})
	want := []string{"m1", "m3", "m4", "m5", "m6", "m8", "c3"}
	if len(got) != len(want) {
		t.Fatalf("fork rows: %+v", got)
	}
	for i, m := range got {
		name := m.ID
		if m.ToolCallID == "c3" {
			name = "c3"
		}
		if name != want[i] || m.Seq != int64(i+1) {
			t.Errorf("row %d: %s seq %d, want %s seq %d", i, name, m.Seq, want[i], i+1)
		}
	}
	if through := window.MetaInt(&got[2], window.MetaSummaryThrough); through != 2 {
		t.Errorf("the summary covers through seq %d in the fork, want 2 (m3's)", through)
	}
	if got[6].Content != forkedCallResult || got[6].ToolStatus != weft.ToolError {
		t.Errorf("the open call's answer: %+v", got[6])
	}
}
