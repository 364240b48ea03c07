package aguiapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/internal/turn"
	"github.com/weft-agents/weft/internal/turn/turntest"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts")

// TestGolden: a turn as AG-UI events: live, with the thread's state at the start and, changed,
// at the end; resumed during its second model call, after a MESSAGES_SNAPSHOT of the conversation
// up to the turn's message; and stopped at a call of the client's tool lookup, which
// RUN_FINISHED leaves pending.
func TestGolden(t *testing.T) {
	var parked []engine.Event
	for _, ev := range turntest.Events() {
		if ev.Type == "tool_started" {
			break
		}
		parked = append(parked, ev)
	}
	parked = append(parked, engine.Event{Type: "run_stopped", Seq: 99, Data: engine.RunStopped{RunID: "run_1", Reason: weft.StopAwaitingApproval}})
	cases := []struct {
		file   string
		reader turn.Reader
		events []engine.Event
		tr     translator
	}{
		{"run.golden", turn.Reader{Input: turntest.Input}, turntest.Events(), translator{state: changingState()}},
		{"resumed.golden", turn.Reader{Input: turntest.Input, AfterInput: true, ResumeAt: 13}, turntest.Events(), translator{messages: []map[string]any{
			{"id": "u1", "role": "user", "content": "Hello"},
			{"id": "msg_0", "role": "assistant", "content": "Hi."},
			{"id": "u2", "role": "user", "content": "Where is order 42?"}}}},
		{"parked.golden", turn.Reader{Input: turntest.Input}, parked, translator{clientTools: map[string]bool{"lookup": true}}},
	}
	for _, c := range cases {
		tr := &c.tr
		tr.threadID, tr.runID = "t1", "r1"
		var b bytes.Buffer
		emit := func(evs []map[string]any) {
			for _, ev := range evs {
				enc, _ := json.Marshal(ev)
				b.Write(enc)
				b.WriteByte('\n')
			}
		}
		emit(tr.start())
		var parts []turn.Part
		for _, ev := range c.events {
			parts = c.reader.Read(ev, parts[:0])
			for _, p := range parts {
				emit(tr.read(p))
			}
		}
		path := filepath.Join("testdata", c.file)
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -update writes it)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s differs:\n%s", c.file, b.Bytes())
		}
	}
}

// changingState is a thread's state that a tool of the turn changed.
func changingState() func() any {
	calls := 0
	return func() any {
		calls++
		if calls == 1 {
			return map[string]any{"order": map[string]any{"id": 42}}
		}
		return map[string]any{"order": map[string]any{"id": 42, "status": "shipped"}}
	}
}
