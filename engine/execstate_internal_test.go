package engine

import (
	"encoding/json"
	"testing"

	"github.com/weft-agents/weft"
)

// TestExecStateEncode: the written-out encoder produces exactly what encoding/json does.
func TestExecStateEncode(t *testing.T) {
	for _, s := range []execState{
		{},
		{Side: weft.SideA, TurnsA: 3, WindowA: 21, WindowB: 20},
		{Stopped: true, Side: weft.SideB, TurnsA: 1, TurnsB: 2, WindowA: -1, WindowB: 1 << 40, ToolCalled: true, QueuedTools: 4,
			HandlerA: 9, HandlerB: 10, IdleA: true, IdleB: true, Immediate: []string{"a:p", `q"<&>\` + "\x01é"}, Stops: 7},
		{Immediate: []string{}},
	} {
		want, _ := json.Marshal(&s)
		if got := s.encode(); string(got) != string(want) {
			t.Errorf("encode = %s, want %s", got, want)
		}
	}
}

func FuzzExecStateEncode(f *testing.F) {
	f.Add(true, "A", 1, 2, int64(3), int64(4), true, 5, int64(6), int64(7), true, false, "x:y", 8)
	f.Fuzz(func(t *testing.T, stopped bool, side string, ta, tb int, wa, wb int64, called bool, qt int, ha, hb int64, ia, ib bool, imm string, stops int) {
		s := execState{Stopped: stopped, Side: weft.Side(side), TurnsA: ta, TurnsB: tb, WindowA: wa, WindowB: wb, ToolCalled: called,
			QueuedTools: qt, HandlerA: ha, HandlerB: hb, IdleA: ia, IdleB: ib, Stops: stops}
		if imm != "" {
			s.Immediate = []string{imm, imm + "2"}
		}
		want, _ := json.Marshal(&s)
		if got := s.encode(); string(got) != string(want) {
			t.Fatalf("encode = %s, want %s", got, want)
		}
	})
}

func BenchmarkExecStateEncode(b *testing.B) {
	s := execState{Side: weft.SideA, TurnsA: 3, TurnsB: 2, WindowA: 21, WindowB: 20, ToolCalled: true, Stops: 4}
	b.Run("written_out", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = s.encode()
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(&s)
		}
	})
}
