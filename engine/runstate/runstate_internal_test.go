package runstate

import (
	"encoding/json"
	"testing"

	"github.com/weft-agents/weft"
)

// TestExecStateEncode: the written-out encoder produces exactly what encoding/json does.
func TestExecStateEncode(t *testing.T) {
	for _, s := range []State{
		{},
		{Side: weft.SideA, Sides: [2]SideState{{Turns: 3, Window: 21}, {Window: 20}}},
		{Stopped: true, Side: weft.SideB, Sides: [2]SideState{{Turns: 1, Window: -1, Handler: 9, Idle: true}, {Turns: 2, Window: 1 << 40, Handler: 10, Idle: true}},
			ToolCalled: true, QueuedTools: 4, Immediate: []string{"a:p", `q"<&>\` + "\x01é"}, Stops: 7},
		{Immediate: []string{}},
	} {
		want, _ := json.Marshal(s.doc())
		if got := s.Encode(); string(got) != string(want) {
			t.Errorf("encode = %s, want %s", got, want)
		}
	}
}

func FuzzExecStateEncode(f *testing.F) {
	f.Add(true, "A", 1, 2, int64(3), int64(4), true, 5, int64(6), int64(7), true, false, "x:y", 8)
	f.Fuzz(func(t *testing.T, stopped bool, side string, ta, tb int, wa, wb int64, called bool, qt int, ha, hb int64, ia, ib bool, imm string, stops int) {
		s := State{Stopped: stopped, Side: weft.Side(side), Sides: [2]SideState{{Turns: ta, Window: wa, Handler: ha, Idle: ia},
			{Turns: tb, Window: wb, Handler: hb, Idle: ib}}, ToolCalled: called, QueuedTools: qt, Stops: stops}
		if imm != "" {
			s.Immediate = []string{imm, imm + "2"}
		}
		want, _ := json.Marshal(s.doc())
		if got := s.Encode(); string(got) != string(want) {
			t.Fatalf("encode = %s, want %s", got, want)
		}
	})
}

func BenchmarkExecStateEncode(b *testing.B) {
	s := State{Side: weft.SideA, Sides: [2]SideState{{Turns: 3, Window: 21}, {Turns: 2, Window: 20}}, ToolCalled: true, Stops: 4}
	b.Run("written_out", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = s.Encode()
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(s.doc())
		}
	})
}
